// Device profiles: reading them, and the shipped ones (compiled in).
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/base/embedded.h"
#include "saturn/base/file.h"
#include "saturn/base/json.h"
#include "saturn/costmodel/cost_model.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "nlohmann/json.hpp"

namespace saturn {

std::span<const EmbeddedFile> shipped_device_profiles();  // generated (CMakeLists.txt)

absl::StatusOr<DeviceProfile> parse_device_profile(std::string_view text, std::string_view file) {
  absl::StatusOr<nlohmann::json> j = parse_json(text, file);
  if (!j.ok()) return j.status();
  if (!j->is_object())
    return absl::InvalidArgumentError(fmt::format("{}: a device profile is a JSON object", file));
  DeviceProfile p;
  for (auto [key, field] : {std::pair{"name", &p.name}, std::pair{"source", &p.source}}) {
    auto it = j->find(key);
    if (it == j->end()) continue;
    if (!it->is_string())
      return absl::InvalidArgumentError(fmt::format("{}: {} must be a string", file, key));
    *field = it->get<std::string>();
  }
  for (auto [key, field] :
       {std::pair{"peak_gflops", &p.peak_gflops}, std::pair{"bandwidth_gbs", &p.bandwidth_gbs},
        std::pair{"launch_overhead_us", &p.launch_overhead_us}}) {
    auto it = j->find(key);
    if (it == j->end() || !it->is_number() || it->get<double>() < 0 ||
        (it->get<double>() == 0 && std::string_view(key) != "launch_overhead_us")) {
      return absl::InvalidArgumentError(fmt::format("{}: {} must be a positive number", file, key));
    }
    *field = it->get<double>();
  }
  if (auto it = j->find("cache_mb"); it != j->end()) {
    if (!it->is_number() || it->get<double>() < 0)
      return absl::InvalidArgumentError(
          fmt::format("{}: cache_mb must be a number of megabytes, at least 0", file));
    p.cache_mb = it->get<double>();
  }
  return p;
}

absl::StatusOr<DeviceProfile> load_device_profile(const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_device_profile(*text, path);
}

absl::StatusOr<DeviceProfile> shipped_device_profile(std::string_view name) {
  const std::string file = fmt::format("costmodel/profiles/{}.json", name);
  std::vector<std::string_view> names;
  for (const EmbeddedFile& f : shipped_device_profiles()) {
    if (f.name == file) return parse_device_profile(f.text, f.name);
    std::string_view stem = f.name.substr(f.name.rfind('/') + 1);
    names.push_back(stem.substr(0, stem.rfind(".json")));
  }
  return absl::NotFoundError(
      fmt::format("no shipped device profile '{}' (there are: {})", name, fmt::join(names, ", ")));
}

}  // namespace saturn
