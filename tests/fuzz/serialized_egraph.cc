// egraph-serialize files (extraction-gym's format): parsed, turned into an
// extraction problem and extracted by the greedy extractors.
#include "saturn/egraph/serialize.h"
#include "saturn/extract/extractor.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  absl::StatusOr<SerializedEGraph> s = parse_serialized(fuzz::as_text(data, size), "fuzz.json");
  if (!s.ok()) return 0;
  const ExtractionProblem p = problem_from_serialized(*s);
  (void)TreeExtractor().extract(p);
  (void)DagGreedyExtractor().extract(p);
  return 0;
}
