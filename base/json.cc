#include "saturn/base/json.h"

#include "fmt/format.h"

namespace saturn {

std::string text_position(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

absl::StatusOr<nlohmann::json> parse_json(std::string_view text, std::string_view file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(fmt::format(
        "{}:{}: not valid JSON", file, text_position(text, e.byte == 0 ? 0 : e.byte - 1)));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range: a number that overflows a double. The message says which
    // ("[json.exception.out_of_range.406] number overflow parsing '1e999'").
    std::string_view what = e.what();
    if (const std::size_t end = what.find("] "); end != std::string_view::npos)
      what.remove_prefix(end + 2);
    return absl::InvalidArgumentError(fmt::format("{}: not valid JSON: {}", file, what));
  }
}

}  // namespace saturn
