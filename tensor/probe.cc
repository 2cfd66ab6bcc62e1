#include "saturn/tensor/probe.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <iterator>
#include <numeric>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kPrimes[] = {7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47};

std::int64_t product(const Dims& dims, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < to; ++k) p *= dims[k];
  return p;
}

// `dims` with `unknown` (-1) taking what is left of `total`, or nullopt when
// it does not divide.
std::optional<Dims> fill_rest(Dims dims, std::size_t unknown, std::int64_t total) {
  const std::int64_t known = product(dims, 0, unknown) * product(dims, unknown + 1, dims.size());
  if (known <= 0 || total % known != 0) return std::nullopt;
  dims[unknown] = total / known;
  return dims;
}

// A Slice's ends with those that run to the end of a following axis open.
Attributes open_slice_ends(Attributes attributes, const Dims& base, const Dims& probe) {
  Ints axes = *attributes.get_ints("axes"), ends = *attributes.get_ints("ends");
  const Ints& starts = *attributes.get_ints("starts");
  const Ints& steps = *attributes.get_ints("steps");
  for (std::size_t k = 0; k < ends.size(); ++k) {
    const std::int64_t axis =
        normalize_axis(axes.empty() ? static_cast<std::int64_t>(k) : axes[k], base.size())
            .value_or(0);
    const std::int64_t step = steps.empty() ? 1 : steps[k];
    if (base[axis] == probe[axis] || step <= 0) continue;
    const SliceRange range = slice_range(base[axis], starts[k], ends[k], step);
    if (range.count > 0 && range.start + range.count * step >= base[axis]) ends[k] = INT64_MAX;
  }
  attributes.set("ends", ends);
  return attributes;
}

}  // namespace

ProbeSizes probe_sizes(const Symbols& symbols) {
  ProbeSizes out;
  std::size_t k = 0;
  for (const auto& [symbol, size] : symbols.sizes)
    out[symbol] = size + kPrimes[k++ % std::size(kPrimes)];
  return out;
}

std::vector<SymbolSize> ordered_symbol_sizes(const Symbols& symbols, const ProbeSizes& sizes) {
  std::vector<std::string> order;
  const auto add = [&](const std::string& symbol) {
    if (symbols.sizes.contains(symbol) && std::ranges::find(order, symbol) == order.end())
      order.push_back(symbol);
  };
  for (const auto& [input, axes] : symbols.axes) {
    for (const std::string& axis : axes) {
      for (std::size_t from = 0; from <= axis.size();) {
        const std::size_t star = std::min(axis.find('*', from), axis.size());
        add(axis.substr(from, star - from));
        from = star + 1;
      }
    }
  }
  for (const auto& [symbol, size] : symbols.sizes) add(symbol);
  std::vector<SymbolSize> out;
  for (const std::string& symbol : order) out.push_back({symbols.sizes.at(symbol), sizes.at(symbol)});
  return out;
}

std::optional<std::int64_t> axis_size(std::string_view axis, const ProbeSizes& sizes) {
  if (axis.empty() || axis == "?") return std::nullopt;
  std::int64_t size = 1;
  while (!axis.empty()) {
    const std::size_t star = axis.find('*');
    auto it = sizes.find(std::string(axis.substr(0, star)));
    if (it == sizes.end()) return std::nullopt;
    size *= it->second;
    axis = star == std::string_view::npos ? std::string_view() : axis.substr(star + 1);
  }
  return size;
}

std::string axis_expression(std::int64_t base, std::int64_t probe, const Symbols& symbols,
                            const ProbeSizes& probe_sizes) {
  if (base == probe) return "";
  for (const auto& [a, a_base] : symbols.sizes) {
    if (a_base == base && probe_sizes.at(a) == probe) return a;
    for (const auto& [b, b_base] : symbols.sizes) {
      if (b < a) continue;
      if (a_base * b_base == base && probe_sizes.at(a) * probe_sizes.at(b) == probe)
        return a + "*" + b;
    }
  }
  return "?";
}

std::optional<ValueType> probe_input_type(const Symbols& symbols, const ProbeSizes& probe_sizes,
                                          const std::string& name, const ValueType& base) {
  auto it = symbols.axes.find(name);
  if (it == symbols.axes.end() || base.is_tuple) return base;
  ValueType probe = base;
  Dims& dims = probe.parts[0].dims;
  for (std::size_t a = 0; a < dims.size() && a < it->second.size(); ++a) {
    const std::string& axis = it->second[a];
    if (axis.empty()) continue;
    std::optional<std::int64_t> size = axis_size(axis, probe_sizes);
    if (!size) return std::nullopt;
    dims[a] = *size;
  }
  return probe;
}

std::optional<ValueType> opaque_probe_type(const Attributes& attributes, const ValueType& base) {
  const Ints* shapes = attributes.get_ints(std::string(kProbeShapes));
  if (shapes == nullptr) return std::nullopt;
  ValueType probe = base;
  std::size_t i = 0;
  for (TensorType& part : probe.parts) {
    if (i >= shapes->size()) return std::nullopt;
    const std::int64_t rank = (*shapes)[i++];
    if (rank != static_cast<std::int64_t>(part.dims.size()) || i + rank > shapes->size())
      return std::nullopt;
    part.dims.assign(shapes->begin() + i, shapes->begin() + i + rank);
    i += rank;
  }
  return probe;
}

std::vector<std::optional<ValueType>> probe_types(const Graph& graph,
                                                  const std::vector<ValueType>& types) {
  const ProbeSizes sizes = probe_sizes(graph.symbols);
  const std::vector<SymbolSize> symbols = ordered_symbol_sizes(graph.symbols, sizes);
  std::vector<std::optional<ValueType>> probe(graph.nodes.size());
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op == Op::kInput) {
      probe[i] = probe_input_type(graph.symbols, sizes, *n.attributes.get_string("name"), types[i]);
      continue;
    }
    if (n.op == Op::kOpaque) {
      probe[i] = opaque_probe_type(n.attributes, types[i]);
      continue;
    }
    std::vector<ValueType> base_in, probe_in;
    bool known = true;
    for (int x : n.inputs) {
      known = known && probe[x].has_value();
      if (!known) break;
      base_in.push_back(types[x]);
      probe_in.push_back(*probe[x]);
    }
    if (!known) continue;
    absl::StatusOr<ProbedNode> p = probe_node_type(n.op, n.attributes, base_in, probe_in, types[i],
                                                   default_domain_opset(graph.opsets), symbols);
    if (p.ok()) probe[i] = std::move(p->type);
  }
  return probe;
}

namespace {

// A reshape whose one following input axis `axis` merged a symbol with
// fixed axes (a batch flattened with the tokens, [B*N, C], or sequence-first
// [N*B, C]) and whose output splits them apart again: the output axis that
// takes the rest is the one whose axes before and after it hold the merged
// axis's fixed parts before and after the symbol. The fixed part is the
// greatest common divisor of the axis at both sizes (the probe sizes keep
// the symbol's own parts coprime).
std::optional<GenericReshape> split_merged_axis(const Dims& in_base, const Dims& in_probe,
                                                const Dims& out_base, std::size_t axis) {
  const std::int64_t fixed = std::gcd(in_base[axis], in_probe[axis]);
  const std::int64_t before = product(in_base, 0, axis);
  const std::int64_t after = product(in_base, axis + 1, in_base.size());
  if (fixed <= 0 || before <= 0) return std::nullopt;
  for (std::size_t j = 0; j < out_base.size(); ++j) {
    const std::int64_t out_before = product(out_base, 0, j);
    if (out_base[j] * fixed != in_base[axis] || out_before % before != 0) continue;
    const std::int64_t outer = out_before / before;  // the fixed part before the symbol
    if (outer == 0 || fixed % outer != 0 ||
        product(out_base, j + 1, out_base.size()) != fixed / outer * after)
      continue;
    std::optional<Dims> probe = fill_rest(out_base, j, product(in_probe, 0, in_probe.size()));
    if (!probe) continue;
    GenericReshape r{out_base, std::move(*probe)};
    r.shape[j] = -1;
    return r;
  }
  return std::nullopt;
}

// A reshape that splits input axis `axis`, which holds several symbols (a
// batch merged with its tokens, [B*S, C]), into output axes of their own
// ([B, S, C]). At a batch of 1 a -1 alone would give the tokens' axis the
// whole merged size at other sizes (a consistent shape, another layout).
// The run of output axes that holds the input axis gives each symbol, in
// order, the next axis whose base size is the symbol's; the other axes of
// the run hold the fixed part. The last symbol's axis is -1 and the others
// are read at run time.
std::optional<GenericReshape> split_symbols(const Dims& in_base, const Dims& in_probe,
                                            const Dims& out_base, std::size_t axis,
                                            std::span<const SymbolSize> symbols) {
  constexpr std::size_t kMaxSymbols = 8;
  if (symbols.size() < 2 || symbols.size() > kMaxSymbols) return std::nullopt;
  // The symbols the axis holds: the one subset of two or more whose sizes,
  // times the same fixed part, give the axis at both sizes.
  std::optional<unsigned> held;
  for (unsigned mask = 1; mask < (1u << symbols.size()); ++mask) {
    if (std::popcount(mask) < 2) continue;
    std::int64_t base = 1, probe = 1;
    for (std::size_t s = 0; s < symbols.size(); ++s) {
      if (mask & (1u << s)) base *= symbols[s].base, probe *= symbols[s].probe;
    }
    if (base <= 0 || in_base[axis] % base != 0 || in_base[axis] / base * probe != in_probe[axis])
      continue;
    if (held) return std::nullopt;  // ambiguous
    held = mask;
  }
  if (!held) return std::nullopt;
  // The widest run of output axes whose product is the input axis's, after
  // axes whose product is that of the input axes before it.
  const std::int64_t before = product(in_base, 0, axis);
  std::size_t first = 0;
  while (first < out_base.size() && product(out_base, 0, first) != before) ++first;
  std::size_t last = first;  // one past the run
  for (std::size_t j = first; j <= out_base.size(); ++j) {
    if (product(out_base, first, j) == in_base[axis]) last = j;
  }
  if (first >= out_base.size() || product(out_base, first, last) != in_base[axis])
    return std::nullopt;
  GenericReshape r{out_base, out_base};
  std::size_t next = first;
  std::optional<std::size_t> last_taken;
  for (std::size_t s = 0; s < symbols.size(); ++s) {
    if (!(*held & (1u << s))) continue;
    while (next < last && out_base[next] != symbols[s].base) ++next;
    if (next == last) return std::nullopt;
    r.shape[next] = kAxisAtRunTime;
    r.probe[next] = symbols[s].probe;
    last_taken = next++;
  }
  r.shape[*last_taken] = -1;
  if (product(r.probe, 0, r.probe.size()) != product(in_probe, 0, in_probe.size()))
    return std::nullopt;
  return r;
}

}  // namespace

std::optional<GenericReshape> generic_reshape(const Dims& in_base, const Dims& in_probe,
                                              const Dims& out_base,
                                              std::span<const SymbolSize> symbols) {
  if (in_base == in_probe) return GenericReshape{out_base, out_base};
  const std::int64_t total = product(in_probe, 0, in_probe.size());
  std::size_t first = in_base.size(), last = 0;  // the following input axes
  for (std::size_t k = 0; k < in_base.size(); ++k) {
    if (in_probe[k] != in_base[k]) first = std::min(first, k), last = k;
  }
  if (first == last) {
    if (std::optional<GenericReshape> r = split_symbols(in_base, in_probe, out_base, first, symbols))
      return r;
    if (std::optional<GenericReshape> r = split_merged_axis(in_base, in_probe, out_base, first))
      return r;
  }
  // Axes that keep the input's following axis copy it.
  GenericReshape r{out_base, out_base};
  for (std::size_t k = 0; k < std::min(in_base.size(), out_base.size()); ++k) {
    if (in_probe[k] != in_base[k] && out_base[k] == in_base[k])
      r.shape[k] = 0, r.probe[k] = in_probe[k];
  }
  if (product(r.probe, 0, r.probe.size()) == total) return r;
  // One axis takes the rest: the one that holds the following input axes in
  // row-major order (what comes before it and after it is fixed).
  const std::int64_t before = product(in_base, 0, first);
  const std::int64_t after = product(in_base, last + 1, in_base.size());
  for (std::size_t j = 0; j < out_base.size(); ++j) {
    if (r.shape[j] == 0) continue;
    const std::int64_t out_before = product(out_base, 0, j);
    const std::int64_t out_after = product(out_base, j + 1, out_base.size());
    if (out_before == 0 || out_after == 0 || before % out_before != 0 || after % out_after != 0)
      continue;
    std::optional<Dims> probe = fill_rest(r.probe, j, total);
    if (!probe) continue;
    r.shape[j] = -1;
    r.probe = std::move(*probe);
    return r;
  }
  return std::nullopt;
}

absl::StatusOr<ProbedNode> probe_node_type(Op op, const Attributes& attributes,
                                           std::span<const ValueType> base_inputs,
                                           std::span<const ValueType> probe_inputs,
                                           const ValueType& base, std::int64_t opset,
                                           std::span<const SymbolSize> symbols) {
  if (sized_by_values(op, base_inputs.size())) {
    // Its inputs' values give its size: the importer found it at the probe
    // sizes, or it is not known there.
    std::optional<ValueType> probe = opaque_probe_type(attributes, base);
    if (!probe) return absl::InvalidArgumentError("its size at other sizes is not known");
    return ProbedNode{*std::move(probe), attributes};
  }
  bool changed = false;
  for (std::size_t k = 0; k < base_inputs.size(); ++k)
    changed = changed || base_inputs[k].parts != probe_inputs[k].parts;
  if (!changed) return ProbedNode{base, attributes};
  if (op == Op::kReshape) {
    std::optional<GenericReshape> r = generic_reshape(
        base_inputs[0].parts[0].dims, probe_inputs[0].parts[0].dims, base.parts[0].dims, symbols);
    if (!r) return absl::InvalidArgumentError("no reshape with 0 and -1 gives its shape at other sizes");
    Attributes written = attributes;
    written.set("shape", r->shape);
    return ProbedNode{ValueType::of(TensorType{base.parts[0].dtype, r->probe}), written};
  }
  if (op == Op::kGroupQueryAttention && needs_runtime_domain(op, opset))
    return absl::InvalidArgumentError(
        "GroupQueryAttention's sequence lengths are written as constants before opset 23");
  Attributes written = op == Op::kSlice ? open_slice_ends(attributes, base_inputs[0].parts[0].dims,
                                                          probe_inputs[0].parts[0].dims)
                                        : attributes;
  absl::StatusOr<ValueType> t = infer_type(op, written, probe_inputs);
  if (!t.ok()) return t.status();
  return ProbedNode{*std::move(t), std::move(written)};
}

}  // namespace saturn::tensor
