// S-expressions as saturn writes terms, patterns and rules:
//
//   (+ x (* 2 y))
//   (conv{strides=[2,2], act=relu} ?input ?weight)
//
// An atom may carry an attribute block `{key=value, ...}`; values are
// numbers, words, "strings", ?variables or lists `[1,2]`. Comments run from
// `#` or `;` to the end of the line. Errors name file:line:column.
//
//   SExprReader reader(text, "rules/math.rules");
//   absl::StatusOr<SExpr> e = reader.read();
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"

namespace saturn {

struct SourceLoc {
  int line = 1;
  int column = 1;
};

struct SExprAttr;

struct SExpr {
  enum class Kind { kAtom, kString, kList, kVector };

  Kind kind = Kind::kAtom;
  std::string text;          // kAtom, kString
  std::vector<SExpr> items;  // kList, kVector
  // `{...}` after an atom (also the head atom of a list).
  std::vector<SExprAttr> attrs;
  bool has_attrs = false;
  SourceLoc loc;

  bool is_atom() const { return kind == Kind::kAtom; }
  bool is_list() const { return kind == Kind::kList; }
  // `?name` atoms are pattern variables.
  bool is_variable() const { return kind == Kind::kAtom && text.size() > 1 && text[0] == '?'; }
  // The head of a list (its first item), or the atom itself.
  const SExpr& head() const { return kind == Kind::kList ? items.front() : *this; }
};

// One `key=value` of an atom's attributes (a struct rather than a std::pair:
// a pair of an incomplete SExpr is not allowed inside SExpr itself).
struct SExprAttr {
  std::string first;  // the key
  SExpr second;       // the value
};

// Reads tokens and S-expressions from a text, tracking line and column.
class SExprReader {
 public:
  SExprReader(std::string_view text, std::string source_name);

  // Skips blanks and comments; true when nothing is left.
  bool at_end();
  // Reads the next S-expression.
  absl::StatusOr<SExpr> read();
  // The next bare word (an atom without attributes, or one of the
  // punctuation tokens `:`, `,`, `=>`, `<=>`), without consuming it.
  std::string peek_word();
  // Consumes `word` if it comes next.
  bool accept(std::string_view word);
  SourceLoc location();
  const std::string& source_name() const { return source_; }
  // The next token quoted, or "end of file", for error messages.
  std::string describe_next();
  // "file:line:column: message".
  absl::Status error(SourceLoc loc, std::string_view message) const;

 private:
  absl::StatusOr<SExpr> read_atom_or_string();
  absl::StatusOr<SExpr> read_attr_value();
  absl::Status read_attrs(SExpr& atom);
  void skip_blank();
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void advance();

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  SourceLoc loc_;
};

// Converts an attribute value read from text: integers, floats, words and
// strings, and lists of integers.
absl::StatusOr<AttrValue> to_attr_value(const SExpr& value, const SExprReader& reader);

}  // namespace saturn
