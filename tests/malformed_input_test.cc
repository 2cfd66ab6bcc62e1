// Malformed input never crashes the readers: every field of a JSON model,
// replaced by a value of another kind or removed, and rule files with words
// dropped, repeated, cut or added to, each give a model (or rules) or an error
// that names the file. What reads correctly also type-checks and evaluates
// without a crash. (The ONNX reader's counterpart is in onnx_test.cc.)
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "nlohmann/json.hpp"
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"

namespace saturn::tensor {
namespace {

using Json = nlohmann::json;

// Conv (seeded weight, bias given as data) -> Relu -> Split -> Add -> MaxPool:
// most of the format's fields, in a graph small enough to evaluate at once.
Graph conv_model() {
  GraphBuilder b("m");
  Value x = b.input("x", {1, 2, 6, 6});
  Value w = b.weight("w", {4, 2, 3, 3});
  Value bias =
      b.weight("b", Tensor(TensorType{DType::kFloat32, {4}}, std::vector<float>{1, 2, 3, 4}));
  Value h = b.relu(b.conv(x, w, bias, {.pads = {1, 1, 1, 1}}));
  std::vector<Value> halves = b.split(h, 1, {2, 2});
  b.output(b.max_pool(b.add(halves[0], halves[1]), {.kernel = {2, 2}, .strides = {2, 2}}), "y");
  absl::StatusOr<Graph> g = b.build();
  EXPECT_TRUE(g.ok()) << message(g.status());
  return *g;
}

// Every place in `doc`, as a JSON pointer (the root excepted).
void collect_pointers(const Json& doc, const Json::json_pointer& at,
                      std::vector<Json::json_pointer>& out) {
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      out.push_back(at / key);
      collect_pointers(value, at / key, out);
    }
  } else if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      out.push_back(at / i);
      collect_pointers(doc[i], at / i, out);
    }
  }
}

// The result of reading a changed model: an error that names the file, or
// a model that type-checks and evaluates (if it is small).
void expect_model_or_named_error(const std::string& text, const std::string& change) {
  absl::StatusOr<Graph> g;
  ASSERT_NO_THROW(g = parse_json_model(text, "m.json")) << change;
  if (!g.ok()) {
    EXPECT_TRUE(message(g.status()).starts_with("m.json")) << change << ": " << message(g.status());
    return;
  }
  absl::StatusOr<std::vector<ValueType>> types = infer_types(*g);
  ASSERT_TRUE(types.ok()) << change << ": " << message(types.status());
  std::int64_t bytes = 0;
  for (const ValueType& t : *types) bytes += t.num_bytes();
  if (bytes > (1 << 24)) return;  // a model this reader accepts, too large to run here
  absl::StatusOr<std::vector<Tensor>> out;
  ASSERT_NO_THROW(out = evaluate(*g, random_inputs(*g, 1))) << change;
}

TEST(MalformedInput, EveryChangedFieldOfAJsonModelIsAModelOrANamedError) {
  const Json doc = Json::parse(to_json_model(conv_model()));
  std::vector<Json::json_pointer> places;
  collect_pointers(doc, Json::json_pointer(), places);
  ASSERT_GT(places.size(), 50u);
  const std::vector<Json> replacements = {nullptr,
                                          true,
                                          0,
                                          -1,
                                          3,
                                          std::int64_t{1} << 40,
                                          -(std::int64_t{1} << 40),
                                          1.5,
                                          "",
                                          "x",
                                          "float32",
                                          Json::array(),
                                          Json::array({0}),
                                          Json::array({-1, 2}),
                                          Json::object()};
  int checked = 0;
  for (const Json::json_pointer& place : places) {
    for (const Json& r : replacements) {
      Json changed = doc;
      changed[place] = r;
      expect_model_or_named_error(changed.dump(), place.to_string() + " = " + r.dump());
      ++checked;
    }
    Json removed = doc;
    Json& parent = removed[place.parent_pointer()];
    if (parent.is_object()) {
      parent.erase(place.back());
    } else {
      parent.erase(static_cast<std::size_t>(std::stoul(place.back())));
    }
    expect_model_or_named_error(removed.dump(), place.to_string() + " removed");
    ++checked;
  }
  EXPECT_GT(checked, 800);
}

// `text` with one to three random edits, each inside one line: a word
// dropped, repeated from elsewhere in the line or cut short, or one of
// `pieces` inserted.
std::string edit_lines(const std::string& text, const std::vector<std::string>& pieces,
                       std::mt19937_64& rng) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
    std::string& line = lines[rng() % lines.size()];
    std::vector<std::string> words;
    std::istringstream split(line);
    for (std::string w; split >> w;) words.push_back(w);
    if (words.empty()) words.push_back("");
    const std::size_t i = rng() % words.size();
    switch (rng() % 4) {
      case 0:
        words.erase(words.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case 1:
        words[i] = words[rng() % words.size()];
        break;
      case 2:
        words[i].resize(rng() % (words[i].size() + 1));
        break;
      default:
        words[i].insert(rng() % (words[i].size() + 1), pieces[rng() % pieces.size()]);
        break;
    }
    line.clear();
    for (const std::string& w : words) line += (line.empty() ? "" : " ") + w;
  }
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(MalformedInput, RuleFilesWithChangedWordsAreRulesOrNamedErrors) {
  TensorLanguage language;
  const ConditionRegistry conditions = tensor_conditions();
  const std::vector<std::string> pieces = {
      "(",     ")",   "{",    "}",     "=", ",",  ":",
      "=>",    "<=>", "?",    "?x",    "0", "-1", "99999999999999999999",
      "1e999", "if",  "rule", "group", "#", "\"", "Conv",
      "Relu"};
  std::mt19937_64 rng(7);
  int checked = 0, parsed = 0;
  for (const EmbeddedFile& file : shipped_tensor_rules()) {
    const std::string text(file.text);
    ASSERT_TRUE(parse_rules(text, "r.rules", language, conditions).ok()) << file.name;
    for (int trial = 0; trial < 80; ++trial) {
      const std::string changed = edit_lines(text, pieces, rng);
      absl::StatusOr<RuleSet> rules;
      ASSERT_NO_THROW(rules = parse_rules(changed, "r.rules", language, conditions)) << changed;
      if (rules.ok()) {
        ++parsed;
      } else {
        EXPECT_TRUE(message(rules.status()).starts_with("r.rules:")) << message(rules.status());
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 400);
  // Some edits leave valid rules (a repeated word in a comment, say), most do not.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, checked);
}

}  // namespace
}  // namespace saturn::tensor
