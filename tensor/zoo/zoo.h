// The model zoo: C++ builders for the benchmark models, at the sizes of
// TENSAT's benchmarks (BERT, NasRNN, ResNeXt-50, NasNet-A, Inception-v3,
// VGG-19, SqueezeNet 1.1, ResNet-50, MobileNet-v2, GPT-2 small) so that
// results compare, and for scale: BERT and a LLaMA-style decoder of any
// depth, and a Swin Transformer (windowed attention).
// Weights are seeded random values.
//
//   for (const ZooModel& m : zoo_models()) fmt::print("{}\n", m.name);
//   absl::StatusOr<Graph> g = build_zoo_model("resnet50");
//   absl::StatusOr<Graph> deep = build_zoo_model("llama:64");   // 64 layers
#pragma once

#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn::tensor {

struct ZooModel {
  std::string_view name;         // e.g. "resnet50"
  std::string_view description;  // one line: architecture and sizes
  absl::StatusOr<Graph> (*build)();
  // A model with a depth parameter: "NAME:N" builds it with N (layers, or
  // blocks of a stage); null for the others.
  absl::StatusOr<Graph> (*build_sized)(int) = nullptr;
};

std::span<const ZooModel> zoo_models();
// The named model, or NotFound listing the known names. "NAME:N" sizes a
// model with a depth parameter: "llama:64" is the LLaMA-style decoder with
// 64 layers, "bert:24" BERT-large, "swin:18" Swin-S.
absl::StatusOr<Graph> build_zoo_model(std::string_view name);

// The builders (one file each in tensor/zoo/).
inline constexpr int kDefaultBertLayers = 8, kMaxBertLayers = 48;
absl::StatusOr<Graph> build_bert();  // kDefaultBertLayers layers
absl::StatusOr<Graph> build_bert(int layers);
absl::StatusOr<Graph> build_nasrnn();
absl::StatusOr<Graph> build_resnext50();
absl::StatusOr<Graph> build_nasnet_a();
absl::StatusOr<Graph> build_inception_v3();
absl::StatusOr<Graph> build_vgg19();
absl::StatusOr<Graph> build_squeezenet();
absl::StatusOr<Graph> build_resnet50();
absl::StatusOr<Graph> build_mobilenet_v2();
absl::StatusOr<Graph> build_gpt2();
inline constexpr int kDefaultLlamaLayers = 8, kMaxLlamaLayers = 80;
absl::StatusOr<Graph> build_llama();  // kDefaultLlamaLayers layers
absl::StatusOr<Graph> build_llama(int layers);
// Swin-T (6 blocks in the third stage) or another depth of that stage.
inline constexpr int kDefaultSwinBlocks = 6, kMaxSwinBlocks = 160;
absl::StatusOr<Graph> build_swin();
absl::StatusOr<Graph> build_swin(int third_stage_blocks);

}  // namespace saturn::tensor
