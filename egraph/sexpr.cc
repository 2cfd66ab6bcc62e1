#include "saturn/egraph/sexpr.h"

#include <cctype>
#include <charconv>

#include "fmt/format.h"

namespace saturn {

namespace {

bool is_delimiter(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == '{' ||
         c == '}' || c == '[' || c == ']' || c == ',' || c == '"' || c == '#' || c == ';' ||
         c == '=' || c == ':' || c == '\0';
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

SExprReader::SExprReader(std::string_view text, std::string source_name)
    : text_(text), source_(std::move(source_name)) {}

void SExprReader::advance() {
  if (text_[pos_] == '\n') {
    ++loc_.line;
    loc_.column = 1;
  } else {
    ++loc_.column;
  }
  ++pos_;
}

void SExprReader::skip_blank() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '#' || c == ';') {
      while (pos_ < text_.size() && text_[pos_] != '\n') advance();
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      advance();
    } else {
      break;
    }
  }
}

bool SExprReader::at_end() {
  skip_blank();
  return pos_ >= text_.size();
}

SourceLoc SExprReader::location() {
  skip_blank();
  return loc_;
}

absl::Status SExprReader::error(SourceLoc loc, std::string_view message) const {
  return absl::InvalidArgumentError(
      fmt::format("{}:{}:{}: {}", source_, loc.line, loc.column, message));
}

std::string SExprReader::describe_next() {
  if (at_end()) return "end of file";
  std::size_t end = pos_ + 1;
  if (!is_delimiter(text_[pos_])) {
    while (end < text_.size() && !is_delimiter(text_[end])) ++end;
  }
  return fmt::format("'{}'", text_.substr(pos_, end - pos_));
}

std::string SExprReader::peek_word() {
  skip_blank();
  if (pos_ >= text_.size()) return "";
  char c = text_[pos_];
  if (c == ':' || c == ',') return std::string(1, c);
  if (text_.substr(pos_, 2) == "=>") return "=>";
  if (text_.substr(pos_, 3) == "<=>") return "<=>";
  if (is_delimiter(c)) return "";
  std::size_t end = pos_;
  while (end < text_.size() && !is_delimiter(text_[end])) ++end;
  // "<" starts "<=>"; an atom may not run into '='.
  return std::string(text_.substr(pos_, end - pos_));
}

bool SExprReader::accept(std::string_view word) {
  if (peek_word() != word) return false;
  for (std::size_t i = 0; i < word.size(); ++i) advance();
  return true;
}

absl::StatusOr<SExpr> SExprReader::read() {
  skip_blank();
  const SourceLoc start = loc_;
  if (pos_ >= text_.size()) return error(start, "expected an expression but found end of file");
  char c = peek();
  if (c == '(') {
    advance();
    SExpr list;
    list.kind = SExpr::Kind::kList;
    list.loc = start;
    skip_blank();
    if (peek() == '(' || peek() == ')') {
      return error(loc_, fmt::format("expected an operator name but found {}", describe_next()));
    }
    while (true) {
      skip_blank();
      if (pos_ >= text_.size()) {
        return error(loc_, fmt::format("expected ')' to close the list opened at {}:{} but found "
                                       "end of file",
                                       start.line, start.column));
      }
      if (peek() == ')') {
        advance();
        break;
      }
      if (peek() == '=' || peek() == ',' || peek() == ':' || peek_word() == "<=>") {
        std::string word = peek_word();
        return error(loc_, fmt::format("expected ')' to close the list opened at {}:{} but found "
                                       "'{}'",
                                       start.line, start.column, word.empty() ? "=" : word));
      }
      absl::StatusOr<SExpr> item = read();
      if (!item.ok()) return item.status();
      list.items.push_back(*std::move(item));
    }
    return list;
  }
  if (c == ')' || c == '}' || c == ']' || c == '{' || c == '[' || c == ',' || c == '=' ||
      c == ':') {
    return error(start, fmt::format("expected an expression but found {}", describe_next()));
  }
  return read_atom_or_string();
}

absl::StatusOr<SExpr> SExprReader::read_atom_or_string() {
  SExpr atom;
  atom.loc = loc_;
  if (peek() == '"') {
    atom.kind = SExpr::Kind::kString;
    advance();
    while (pos_ < text_.size() && peek() != '"' && peek() != '\n') {
      atom.text += peek();
      advance();
    }
    if (peek() != '"') return error(atom.loc, "unterminated string");
    advance();
    return atom;
  }
  while (!is_delimiter(peek())) {
    atom.text += peek();
    advance();
  }
  if (atom.text.empty()) {
    return error(atom.loc, fmt::format("expected an expression but found {}", describe_next()));
  }
  if (peek() == '{') {
    absl::Status s = read_attrs(atom);
    if (!s.ok()) return s;
  }
  return atom;
}

absl::Status SExprReader::read_attrs(SExpr& atom) {
  const SourceLoc open = loc_;
  advance();  // '{'
  atom.has_attrs = true;
  while (true) {
    skip_blank();
    if (peek() == '}') {
      advance();
      return absl::OkStatus();
    }
    if (!atom.attrs.empty()) {
      if (peek() != ',') {
        return error(loc_, fmt::format("expected ',' or '}}' in the attributes opened at {}:{} "
                                       "but found {}",
                                       open.line, open.column, describe_next()));
      }
      advance();
      skip_blank();
    }
    const SourceLoc key_loc = loc_;
    std::string key;
    while (!is_delimiter(peek())) {
      key += peek();
      advance();
    }
    if (key.empty()) {
      return error(key_loc,
                   fmt::format("expected an attribute name but found {}", describe_next()));
    }
    skip_blank();
    if (peek() != '=') {
      return error(loc_, fmt::format("expected '=' after attribute '{}' but found {}", key,
                                     describe_next()));
    }
    advance();
    for (const auto& [k, v] : atom.attrs) {
      if (k == key) return error(key_loc, fmt::format("attribute '{}' given twice", key));
    }
    absl::StatusOr<SExpr> value = read_attr_value();
    if (!value.ok()) return value.status();
    atom.attrs.push_back({std::move(key), *std::move(value)});
  }
}

absl::StatusOr<SExpr> SExprReader::read_attr_value() {
  skip_blank();
  if (peek() == '(') return read();  // a function call: (fn ?a ?b)
  if (peek() == '[') {
    SExpr vec;
    vec.kind = SExpr::Kind::kVector;
    vec.loc = loc_;
    advance();
    while (true) {
      skip_blank();
      if (peek() == ']') {
        advance();
        return vec;
      }
      if (!vec.items.empty() && peek() == ',') {
        advance();
        skip_blank();
      }
      if (pos_ >= text_.size()) return error(loc_, "expected ']' but found end of file");
      absl::StatusOr<SExpr> item = read_atom_or_string();
      if (!item.ok()) return item.status();
      vec.items.push_back(*std::move(item));
    }
  }
  if (pos_ >= text_.size() || (is_delimiter(peek()) && peek() != '"')) {
    return error(loc_, fmt::format("expected an attribute value but found {}", describe_next()));
  }
  return read_atom_or_string();
}

absl::StatusOr<AttrValue> to_attr_value(const SExpr& value, const SExprReader& reader) {
  switch (value.kind) {
    case SExpr::Kind::kString:
      return AttrValue(value.text);
    case SExpr::Kind::kAtom:
      if (auto i = parse_int(value.text)) return AttrValue(*i);
      if (auto d = parse_double(value.text)) return AttrValue(*d);
      return AttrValue(value.text);
    case SExpr::Kind::kVector: {
      std::vector<std::int64_t> ints;
      for (const SExpr& item : value.items) {
        auto i = item.is_atom() ? parse_int(item.text) : std::nullopt;
        if (!i) return reader.error(item.loc, "expected an integer in the list");
        ints.push_back(*i);
      }
      return AttrValue(std::move(ints));
    }
    case SExpr::Kind::kList:
      break;
  }
  return reader.error(value.loc, "expected an attribute value");
}

}  // namespace saturn
