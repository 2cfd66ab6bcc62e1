// bench/calibrate_cpu: measures this machine's roofline figures and prints
// a device profile (costmodel/profiles/cpu-2core.json was made with it):
//
//   peak_gflops         a 1024^3 MatMul in the reference interpreter's
//                       blocked, TBB-parallel kernel (best of 3)
//   bandwidth_gbs       a parallel triad a = b + s * c over 3 x 64 MiB
//                       arrays (best of 5; 12 bytes moved per element)
//   launch_overhead_us  median time of a one-element Relu through the
//                       kernel dispatch (10,000 runs)
//   cache_mb            the last-level cache as sysfs reports it
//                       (/sys/devices/system/cpu/cpu0/cache; 0 if absent)
//
//   build/bench/calibrate_cpu [-o PROFILE.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "oneapi/tbb/parallel_for.h"
#include "saturn/tensor/interpreter/kernels.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The size of cpu0's highest-level cache in MB (10^6 bytes), 0 if sysfs
// does not say. sysfs writes sizes like "32768K".
double last_level_cache_mb() {
  namespace fs = std::filesystem;
  std::error_code ec;
  int best_level = 0;
  double best_mb = 0;
  for (const fs::directory_entry& e :
       fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (!e.path().filename().string().starts_with("index")) continue;
    int level = 0;
    std::string size;
    std::ifstream(e.path() / "level") >> level;
    std::ifstream(e.path() / "size") >> size;
    if (size.empty() || level <= best_level) continue;
    double value = std::strtod(size.c_str(), nullptr);
    if (size.back() == 'K') value *= 1024;
    if (size.back() == 'M') value *= 1024 * 1024;
    best_level = level;
    best_mb = value / 1e6;
  }
  return best_mb;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace saturn::tensor;
  std::string out_path;
  CLI::App app{"Measure this machine's roofline figures (a device profile)", "calibrate_cpu"};
  app.add_option("-o", out_path, "write the profile to PROFILE.json");
  if (std::optional<int> exit = saturn::parse_command_line(app, argc, argv)) return *exit;
  const std::int64_t n = 1024;
  Tensor a = random_tensor(TensorType{DType::kFloat32, {n, n}}, 1, -1, 1);
  Tensor b = random_tensor(TensorType{DType::kFloat32, {n, n}}, 2, -1, 1);
  double best_matmul = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto t = Clock::now();
    (void)evaluate_op(Op::kMatMul, {}, std::vector<Tensor>{a, b});
    best_matmul = std::min(best_matmul, since(t));
  }
  const double gflops = 2.0 * n * n * n / best_matmul / 1e9;

  const std::size_t len = 16u << 20;  // 64 MiB of floats per array
  std::vector<float> x(len, 1.0f), y(len, 2.0f), z(len, 0.0f);
  double best_triad = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, len, 1 << 16),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t i = r.begin(); i < r.end(); ++i) z[i] = x[i] + 0.5f * y[i];
                      });
    best_triad = std::min(best_triad, since(t));
  }
  const double gbs = 12.0 * static_cast<double>(len) / best_triad / 1e9;

  Tensor one = Tensor::scalar(1.0f);
  std::vector<double> times;
  for (int rep = 0; rep < 10000; ++rep) {
    auto t = Clock::now();
    (void)evaluate_op(Op::kRelu, {}, std::vector<Tensor>{one});
    times.push_back(since(t));
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  const double launch_us = times[times.size() / 2] * 1e6;

  std::string json = fmt::format(
      "{{\n  \"name\": \"cpu-2core\",\n  \"peak_gflops\": {:.2f},\n  \"bandwidth_gbs\": {:.2f},\n"
      "  \"launch_overhead_us\": {:.3f},\n  \"cache_mb\": {:.2f},\n  \"source\": \"measured by "
      "bench/calibrate_cpu on this machine: 1024^3 MatMul in saturn's kernel, parallel triad over "
      "3 x 64 MiB, median one-element Relu, last-level cache from sysfs\"\n}}\n",
      gflops, gbs, launch_us, last_level_cache_mb());
  fmt::print("{}", json);
  if (!out_path.empty()) {
    absl::Status s = saturn::write_text_file(out_path, json);
    if (!s.ok()) {
      fmt::print(stderr, "calibrate_cpu: {}\n", saturn::message(s));
      return 1;
    }
  }
  return 0;
}
