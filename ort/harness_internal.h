// Internal to ort/ (saturn's interface to it is ort/runtime.h): what the
// bridge's files share, the harness subprocess and its timing of models.
//
//   harness.cc              the subprocess (`python ort_run.py`), its options,
//                           timing in batches and passes, TempDir,
//                           shell_quote
//   verify.cc               runtime_file, verify_models, the report's lines
//   timing_model.cc         the single-operator models calibrate() times and
//                           the attribution of their kernels (is_image)
//   profiler_correction.cc  the ProfilerCorrection's measurement
//   signatures.cc           the operator signatures calibrate() times (see
//                           signatures.h)
//   weight_kernels.cc       the products of quantized weights calibrate()
//                           times with uint8 and with int8 weights
//   calibrate.cc            calibrate(): the measured cost table
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/types.h"

namespace saturn::ort {

// The options' ranges, checked before the harness is started.
absl::Status check_options(const RuntimeOptions& options);

// Runs `python ort_run.py ARGS...` and parses what it prints.
absl::StatusOr<nlohmann::json> run_harness(const std::vector<std::string>& args,
                                           const RuntimeOptions& options);

// Times `files` with the harness's "time" command, one result per file (an
// "error" field where onnxruntime could not run it). The files go to the
// harness in batches, each in a fresh process, and when onnxruntime crashes
// on a batch its files are timed one by one, so that one model that crashes
// it costs only its own entry.
absl::StatusOr<nlohmann::json> time_models(const std::vector<std::string>& files,
                                           const RuntimeOptions& options);

// Times `files` in `options.passes` passes (see CalibrationOptions::passes)
// and keeps, per file, the result of the pass whose kernels took least.
absl::StatusOr<nlohmann::json> time_models_fastest(const std::vector<std::string>& files,
                                                   const CalibrationOptions& options);

// A time (`key`) of a model as time_models reports it; nothing where
// onnxruntime could not run the model.
std::optional<double> reported_us(const nlohmann::json& model, const char* key);
std::optional<double> kernel_us(const nlohmann::json& model);

// Whether `t` is a 4-D float tensor, the layout (NCHW) onnxruntime's CPU
// provider runs convolution chains in its blocked form.
bool is_image(const tensor::TensorType& t);
bool is_image(const tensor::ValueType& t);

// Measures the ProfilerCorrection: chains of alternating Relu and Tanh of 64
// values, 16 and 216 operators long, timed with the profiler (their kernel
// time) and without (their runs' wall time). Per operator the longer chain
// adds, the kernel time less the wall time is the excess, and the wall time
// is the floor. The profiler's excess grows when the machine slows down (it
// measured 3.4-9 us), so the two timings alternate, in rounds that each see
// the machine at one speed, and the median round counts.
absl::StatusOr<ProfilerCorrection> measure_profiler_correction(const TempDir& dir,
                                                               const CalibrationOptions& options);

// The distinct shapes of the products of quantized weights in `graphs` (a
// MatMul, Gemm or ungrouped Conv between a DequantizeLinear of its
// activation and one of weights, which onnxruntime runs as an integer
// kernel), the `limit` largest by multiply-adds. Graphs whose types cannot
// be inferred are passed over.
std::vector<tensor::MatrixProduct> quantized_product_shapes(
    const std::vector<const tensor::Graph*>& graphs, std::size_t limit);

// A QLinearMatMul of `shape` with uint8 activations and a weight of type
// `weight` (uint8 or int8): onnxruntime runs it in its U8U8 or U8S8 kernel.
tensor::Graph weight_type_model(const tensor::MatrixProduct& shape, tensor::DType weight,
                                std::string name);

// One product's kernel times with uint8 and with int8 weights (nothing
// where onnxruntime could not run that model).
struct WeightTypeTiming {
  tensor::MatrixProduct shape;
  std::optional<double> uint8_us, int8_us;
};

// What a uint8 weight's kernel takes beyond an int8 one's per multiply-add,
// in microseconds (0 where it is no slower): the median over `timings` of
// the products onnxruntime ran both ways, or nothing when there is none.
std::optional<double> unsigned_weight_us_per_mac(const std::vector<WeightTypeTiming>& timings);

}  // namespace saturn::ort
