// Internal to the shape-value evaluator (shape_eval.cc, shape_eval_moves.cc):
// the small values it computes with and the helpers both halves use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor::onnx_io::shape_eval {

using Ints = std::vector<std::int64_t>;

// A small value computed with: its element type, dimensions and elements
// (a double holds every integer a shape needs exactly).
struct Num {
  DType dtype = DType::kInt64;
  Dims dims;
  std::vector<double> v;

  std::int64_t size() const { return static_cast<std::int64_t>(v.size()); }
};

// A node's attributes by name.
class Attrs {
 public:
  explicit Attrs(const onnx::NodeProto& node) {
    for (const onnx::AttributeProto& a : node.attribute()) by_name_[a.name()] = &a;
  }
  std::optional<std::int64_t> i(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::nullopt : std::optional(it->second->i());
  }
  std::optional<std::string> s(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::nullopt : std::optional(it->second->s());
  }
  std::optional<Ints> ints(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return Ints(it->second->ints().begin(), it->second->ints().end());
  }
  const onnx::TensorProto* t(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() || !it->second->has_t() ? nullptr : &it->second->t();
  }

 private:
  std::map<std::string, const onnx::AttributeProto*> by_name_;
};

// A value held as a double back as int64, saturating at int64's ends.
std::int64_t to_int64(double x);
// int64, int32 and bool: the types the evaluator holds as integers.
bool held_as_integer(DType d);
// `t`'s elements as doubles; nullopt for element types not computed here or
// a tensor past kMaxShapeValueElements.
std::optional<Num> to_num(const Tensor& t);
// `n` as a tensor of its element type.
Tensor to_tensor(const Num& n);
// The element count of `dims` (INT64_MAX when it overflows).
std::int64_t count(const Dims& dims);
// `axis` in [0, rank), counting a negative one from the end; nullopt when out of range.
std::optional<std::int64_t> axis_in(std::int64_t axis, std::size_t rank);
Ints as_ints(const Num& n);

// The operators that move, make or gather values (Gather, Concat, Slice,
// Reshape, ScatterND, Tile, Range, ...): nullopt when `op` is none of them,
// an empty optional when it is one but cannot be computed.
std::optional<std::optional<Num>> evaluate_structural(const std::string& op, const Attrs& a,
                                                      const std::vector<Num>& in);

}  // namespace saturn::tensor::onnx_io::shape_eval
