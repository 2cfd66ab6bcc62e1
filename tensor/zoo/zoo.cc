#include "tensor/zoo/zoo.h"

#include <array>
#include <string>

#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace saturn::tensor {

std::span<const ZooModel> zoo_models() {
  static const std::array<ZooModel, 11> models = {{
      {"bert", "BERT encoder: 8 layers, sequence 64, hidden 1024, 16 heads", build_bert},
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
       build_llama},
  }};
  return models;
}

absl::StatusOr<Graph> build_zoo_model(std::string_view name) {
  if (name.starts_with("llama:")) {
    int layers = 0;
    if (!absl::SimpleAtoi(absl::string_view(name.data() + 6, name.size() - 6), &layers))
      return absl::InvalidArgumentError(
          fmt::format("zoo model '{}': the layer count after 'llama:' is not a number", name));
    return build_llama(layers);
  }
  std::string known;
  for (const ZooModel& m : zoo_models()) {
    if (m.name == name) return m.build();
    if (!known.empty()) known += ", ";
    known += m.name;
  }
  return absl::NotFoundError(fmt::format("no zoo model '{}' (known: {})", name, known));
}

}  // namespace saturn::tensor
