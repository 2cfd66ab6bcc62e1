// The exact extractor from several threads at once, as parallel region
// searches call it: CBC's solve reads its options through process-wide
// state, so unguarded solves garbled each other's options (printing "No
// match for off" on stdout, and now and then crashing). Every answer must
// be the one a lone solve gives, and nothing may reach stdout.
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "saturn/base/status.h"
#include "saturn/extract/extractor.h"
#include "saturn/egraph/serialize.h"
#include "gtest/gtest.h"

namespace saturn {
namespace {

TEST(IlpThreads, ConcurrentSolvesMatchLoneOnesAndPrintNothing) {
  std::vector<ExtractionProblem> problems;
  for (const auto& e :
       std::filesystem::directory_iterator(SATURN_TEST_DATA "/extraction-gym/egg")) {
    if (e.path().extension() != ".json" || std::filesystem::file_size(e.path()) > 70'000) continue;
    absl::StatusOr<SerializedEGraph> s = read_serialized(e.path().string());
    ASSERT_TRUE(s.ok()) << message(s.status());
    problems.push_back(problem_from_serialized(*s));
  }
  ASSERT_GE(problems.size(), 20u);
  // Straight to CBC (no reduced-cost fixing, no derivation search), and
  // with the defaults (Clp's LP relaxations first).
  for (const IlpOptions& options :
       {IlpOptions{.time_limit_seconds = 5, .reduced_cost_rounds = 0, .search_share = 0},
        IlpOptions{.time_limit_seconds = 5}}) {
    const IlpExtractor ilp(options);
    std::vector<double> alone;
    for (const ExtractionProblem& p : problems) alone.push_back(ilp.extract(p).dag_cost);

    constexpr int kThreads = 4, kRounds = 5;
    std::vector<std::vector<double>> found(kThreads);
    testing::internal::CaptureStdout();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < kRounds; ++round)
          for (const ExtractionProblem& p : problems) found[t].push_back(ilp.extract(p).dag_cost);
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(found[t].size(), problems.size() * kRounds);
      for (std::size_t i = 0; i < found[t].size(); ++i)
        EXPECT_DOUBLE_EQ(found[t][i], alone[i % problems.size()])
            << "thread " << t << ", run " << i;
    }
  }
}

}  // namespace
}  // namespace saturn
