// ONNX -> IR: Einsum as ReduceSum, Transpose, Reshape and MatMul.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor::onnx_io {

// An Einsum of one operand is a ReduceSum of the letters not in the output
// and a Transpose; of two, the canonical operators, one form for every
// spelling of a contraction: a letter in one operand only and not in the
// output is summed away (ReduceSum); the kept letters before the last of
// each side become batch axes of the product (the other operand holding 1
// there) and the contracted letters merge into one axis, so the operands
// are transposed to [batch, kept, contracted] and [batch, kept but the
// last, contracted, last kept] and reshaped; then a MatMul, and the product
// transposed to the output's order. P i k,
// P k j -> P i j is a MatMul alone; P i k, P j k -> P i j one of the first
// operand and the second transposed (attention's scores as MaxViT spells
// them). An ellipsis, an implicit output, a letter twice in a term or
// sizes that disagree stay opaque.
std::optional<Mapped> Importer::map_einsum(KnownNode& node) {
  std::optional<std::string> equation = node.attrs.s("equation");
  const int operands = static_cast<int>(node.in.size());
  if (!equation || operands < 1 || operands > 2) return std::nullopt;
  std::optional<std::vector<std::string>> terms = einsum_terms(*equation);
  if (!terms || static_cast<int>(terms->size()) != operands + 1) return std::nullopt;
  std::string a = (*terms)[0], b = operands == 2 ? (*terms)[1] : "";
  const std::string& out = terms->back();
  std::vector<Dims> operand_dims;
  for (int k = 0; k < operands; ++k) operand_dims.push_back(node.dims(k));
  std::optional<std::map<char, std::int64_t>> sizes = einsum_sizes(*terms, operand_dims);
  if (!sizes) return std::nullopt;
  std::map<char, std::int64_t>& size = *sizes;
  auto has = [](const std::string& term, char c) { return term.find(c) != std::string::npos; };
  int step = 0;
  auto add = [&](const Mapped& m) -> std::optional<int> {
    absl::StatusOr<int> id = append(m.op, m.attributes, m.inputs,
                                    fmt::format("{}/einsum{}", node.proto.output(0), step++));
    return id.ok() ? std::optional(*id) : std::nullopt;
  };
  auto dims_of = [&](const std::string& letters) {
    Dims d;
    for (char c : letters) d.push_back(size[c]);
    return d;
  };
  // Letters in one operand only and not in the output, summed away.
  auto summed = [&](std::string& term, const std::string& other, int x) -> std::optional<int> {
    Ints axes;
    std::string kept;
    for (std::size_t i = 0; i < term.size(); ++i) {
      if (has(other, term[i]) || has(out, term[i]))
        kept += term[i];
      else
        axes.push_back(static_cast<std::int64_t>(i));
    }
    if (axes.empty()) return x;
    term = kept;
    return add(Mapped{Op::kReduceSum, {{"axes", axes}, {"keepdims", std::int64_t{0}}}, {x}});
  };
  // `x` (letters `from`) transposed to `to`; it composes with a Transpose
  // before it, as any imported Transpose does.
  auto arranged = [&](int x, const std::string& from, const std::string& to) -> std::optional<int> {
    Ints perm;
    for (char c : to) perm.push_back(static_cast<std::int64_t>(from.find(c)));
    if (std::ranges::is_sorted(perm)) return x;
    Mapped t{Op::kTranspose, {{"perm", perm}}, {x}};
    compose_layout(t, t.attributes);
    if (t.op == Op::kIdentity) return t.inputs[0];
    return add(t);
  };
  auto reshaped = [&](int x, const Dims& to) -> std::optional<int> {
    if (types_[x].parts[0].dims == to) return x;
    return add(Mapped{Op::kReshape, {{"shape", to}}, {x}});
  };
  std::optional<int> x = summed(a, b, node.in[0]);
  if (x && operands == 1) {  // a sum over some letters, a transpose
    if (a == out) return Mapped{Op::kIdentity, {}, {*x}};
    Ints perm;
    for (char c : out) perm.push_back(static_cast<std::int64_t>(a.find(c)));
    return Mapped{Op::kTranspose, {{"perm", perm}}, {*x}};
  }
  std::optional<int> y = x ? summed(b, a, node.in[1]) : std::nullopt;
  if (!y) return std::nullopt;
  std::string batch, left, right, contracted;
  for (char c : a) {
    if (!has(b, c))
      left += c;
    else
      (has(out, c) ? batch : contracted) += c;
  }
  for (char c : b) {
    if (!has(a, c)) right += c;
  }
  const std::string left_rest = left.empty() ? "" : left.substr(0, left.size() - 1);
  const std::string right_rest = right.empty() ? "" : right.substr(0, right.size() - 1);
  const std::string left_last = left.empty() ? "" : left.substr(left.size() - 1);
  const std::string right_last = right.empty() ? "" : right.substr(right.size() - 1);
  std::int64_t inner = 1;
  for (char c : contracted) inner *= size[c];
  Dims da = dims_of(batch), db = dims_of(batch);
  for (char c : left_rest) da.push_back(size[c]), db.push_back(1);
  for (char c : right_rest) da.push_back(1), db.push_back(size[c]);
  da.insert(da.end(), {left.empty() ? 1 : size[left.back()], inner});
  db.insert(db.end(), {inner, right.empty() ? 1 : size[right.back()]});
  x = arranged(*x, a, batch + left + contracted);
  if (x) x = reshaped(*x, da);
  y = arranged(*y, b, batch + right_rest + contracted + right_last);
  if (y) y = reshaped(*y, db);
  if (!x || !y) return std::nullopt;
  // The product's letters; where a side kept none, its axis of 1 goes.
  const std::string product = batch + left_rest + right_rest + left_last + right_last;
  Mapped m{Op::kMatMul, {}, {*x, *y}};
  if (left.empty() || right.empty()) {
    std::optional<int> p = add(m);
    if (!p) return std::nullopt;
    m = Mapped{Op::kReshape, {{"shape", dims_of(product)}}, {*p}};
  }
  if (product != out) {
    std::optional<int> p = add(m);
    if (!p) return std::nullopt;
    Ints perm;
    for (char c : out) perm.push_back(static_cast<std::int64_t>(product.find(c)));
    m = Mapped{Op::kTranspose, {{"perm", perm}}, {*p}};
  }
  return m;
}

}  // namespace saturn::tensor::onnx_io
