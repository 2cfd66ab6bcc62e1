// Files compiled into the libraries (saturn_embed_files in CMakeLists.txt):
// the shipped rule files and device profiles, so that an installed or moved
// program needs no source tree beside it.
//
//   for (const EmbeddedFile& f : shipped_tensor_rules())
//     parse_rules(f.text, f.name, ...);   // f.name: "rules/tensor/conv.rules"
#pragma once

#include <string_view>

namespace saturn {

struct EmbeddedFile {
  std::string_view name;  // the path in the repository it was made from
  std::string_view text;
};

}  // namespace saturn
