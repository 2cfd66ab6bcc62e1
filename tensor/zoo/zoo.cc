#include "saturn/tensor/zoo/zoo.h"

#include <array>
#include <string>

#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace saturn::tensor {

std::span<const ZooModel> zoo_models() {
  static const std::array<ZooModel, 12> models = {{
      {"bert", "BERT encoder: 8 layers (bert:L for L; bert:24 is BERT-large), sequence 64, "
               "hidden 1024, 16 heads",
       build_bert, build_bert},
      {"nasrnn", "NasRNN: 5 recurrent steps of a NAS cell, hidden 512", build_nasrnn},
      {"resnext50", "ResNeXt-50 (32x4d) at 224x224", build_resnext50},
      {"nasnet_a", "NasNet-A: 3 x (5 normal + 1 reduction) cells", build_nasnet_a},
      {"inception_v3", "Inception-v3 at 299x299", build_inception_v3},
      {"vgg19", "VGG-19 at 224x224", build_vgg19},
      {"squeezenet", "SqueezeNet 1.1 at 224x224", build_squeezenet},
      {"resnet50", "ResNet-50 at 224x224", build_resnet50},
      {"mobilenet_v2", "MobileNet-v2 at 224x224", build_mobilenet_v2},
      {"gpt2", "GPT-2 small: 12 decoder layers, hidden 768, 12 heads, sequence 128, causal",
       build_gpt2},
      {"llama",
       "LLaMA-style decoder: 8 layers (llama:L for L), hidden 256, RMSNorm, rotary, "
       "grouped-query attention, SwiGLU, sequence 64",
       build_llama, build_llama},
      {"swin",
       "Swin-T at 224x224: stages of 2, 2, 6 and 2 blocks (swin:D for D in the third; "
       "swin:18 is Swin-S), shifted 7x7 windows",
       build_swin, build_swin},
  }};
  return models;
}

absl::StatusOr<Graph> build_zoo_model(std::string_view name) {
  const std::size_t colon = name.find(':');
  const std::string_view base = name.substr(0, colon);
  std::string known;
  for (const ZooModel& m : zoo_models()) {
    if (!known.empty()) known += ", ";
    known += m.name;
    if (m.name != base) continue;
    if (colon == std::string_view::npos) return m.build();
    if (m.build_sized == nullptr)
      return absl::InvalidArgumentError(
          fmt::format("zoo model '{}': '{}' has no depth to set after ':'", name, base));
    int depth = 0;
    if (!absl::SimpleAtoi(std::string(name.substr(colon + 1)), &depth))
      return absl::InvalidArgumentError(
          fmt::format("zoo model '{}': the depth after '{}:' is not a number", name, base));
    return m.build_sized(depth);
  }
  return absl::NotFoundError(fmt::format("no zoo model '{}' (known: {})", name, known));
}

}  // namespace saturn::tensor
