"""Writes the ONNX fuzzer's seeds for the value operators read since
2026-11-29 (tests/fuzz/corpus/onnx_model/): ScatterND, ScatterElements,
Resize by computed sizes and by scales, EyeLike, integer reductions,
Einsum, TopK, Trilu and GridSample, at a symbolic size; their index inputs are graph inputs, so the
interpreter's random inputs put indices out of range. The fuzz step starts
from these seeds under ASan and UBSan, and tests/cli/optimize_exports.sh
optimizes them. Run with the project venv's python (onnx):

    build/venv/bin/python tests/fuzz/make_value_operator_seeds.py
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx_model")
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def ints(name, values):
    return helper.make_tensor(name, I64, [len(values)], values)


def save(name, nodes, inputs, outputs, inits, opset):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(HERE, name + ".onnx"))


def value(name, t, dims):
    return helper.make_tensor_value_info(name, t, dims)


save("scatter_resize",
     [helper.make_node("ScatterND", ["x", "where", "rows"], ["added"], reduction="add"),
      helper.make_node("ScatterElements", ["x", "cols", "x"], ["most"], axis=3, reduction="max"),
      helper.make_node("Shape", ["x"], ["shape"]),
      helper.make_node("Slice", ["shape", "zero", "two"], ["nc"]),
      helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
      helper.make_node("Resize", ["added", "", "", "sizes"], ["bilinear"], mode="linear"),
      helper.make_node("Resize", ["most", "", "scales"], ["nearest"], nearest_mode="ceil",
                       coordinate_transformation_mode="asymmetric"),
      helper.make_node("Resize", ["x", "", "scales"], ["cubic"], mode="cubic", exclude_outside=1),
      helper.make_node("Gather", ["shape", "two_scalar"], ["seq"], axis=0),
      helper.make_node("Unsqueeze", ["seq", "zero"], ["seq1"]),
      helper.make_node("Concat", ["seq1", "seq1"], ["square"], axis=0),
      helper.make_node("ConstantOfShape", ["square"], ["zeros"]),
      helper.make_node("EyeLike", ["zeros"], ["eye"], k=1),
      helper.make_node("ReduceSum", ["cols", "three"], ["col_sums"], keepdims=0),
      helper.make_node("ReduceMax", ["cols", "two"], ["col_most"], keepdims=1)],
     [value("x", F, [1, 3, "seq", 6]), value("where", I64, [2, 1]),
      value("rows", F, [2, 3, "seq", 6]), value("cols", I64, [1, 3, "seq", 6])],
     [value("bilinear", F, [1, 3, 8, 12]), value("nearest", F, [1, 3, None, 3]),
      value("cubic", F, [1, 3, None, 3]), value("eye", F, ["seq", "seq"]),
      value("col_sums", I64, [1, 3, "seq"]), value("col_most", I64, [1, 3, 1, 6])],
     [ints("zero", [0]), ints("two", [2]), ints("three", [3]), ints("hw", [8, 12]),
      helper.make_tensor("two_scalar", I64, [], [2]),
      helper.make_tensor("scales", F, [4], [1, 1, 1.5, 0.5])], 18)

save("einsum_relative_shift",
     [helper.make_node("Einsum", ["q", "k"], ["scores"], equation="ibnd,jbnd->bnij"),
      helper.make_node("Shape", ["scores"], ["shape"]),
      helper.make_node("Gather", ["shape", "three"], ["length"], axis=0),
      helper.make_node("Range", ["zero", "length", "one"], ["positions"]),
      helper.make_node("Gather", ["scores", "positions"], ["shifted"], axis=3),
      helper.make_node("Einsum", ["shifted", "k"], ["context"], equation="bnij,jbnd->ibnd"),
      helper.make_node("Einsum", ["context", "o"], ["out"], equation="ibnd,hnd->ibh"),
      helper.make_node("Einsum", ["out"], ["summed"], equation="ibh->h")],
     [value("q", F, ["seq", "batch", 2, 4]), value("k", F, ["seq", "batch", 2, 4])],
     [value("out", F, ["seq", "batch", 5]), value("summed", F, [5])],
     [helper.make_tensor("three", I64, [], [3]), helper.make_tensor("zero", I64, [], [0]),
      helper.make_tensor("one", I64, [], [1]),
      helper.make_tensor("o", F, [5, 2, 4], [0.1 * (i % 7) for i in range(40)])], 17)

# RT-DETR's query selection: the best scores by TopK, their rows gathered,
# and a deformable sampling by GridSample at offsets from an input (so past
# [-1, 1] too); a causal mask by Trilu.
save("topk_gridsample",
     [helper.make_node("ReduceMax", ["scores"], ["best"], axes=[2], keepdims=0),
      helper.make_node("TopK", ["best", "k"], ["top", "picked"], axis=1),
      helper.make_node("Unsqueeze", ["picked", "two"], ["picked3"]),
      helper.make_node("Expand", ["picked3", "row_shape"], ["rows_at"]),
      helper.make_node("GatherElements", ["scores", "rows_at"], ["rows"], axis=1),
      helper.make_node("GridSample", ["image", "grid"], ["sampled"], align_corners=1,
                       padding_mode="reflection"),
      helper.make_node("GridSample", ["image", "grid"], ["nearest"], mode="nearest"),
      helper.make_node("Trilu", ["square"], ["causal"], upper=0)],
     [value("scores", F, [1, "seq", 4]), value("image", F, [1, 2, 5, 6]),
      value("grid", F, [1, 3, 4, 2]), value("square", F, ["seq", "seq"])],
     [value("top", F, [1, 3]), value("rows", F, [1, 3, 4]), value("sampled", F, [1, 2, 3, 4]),
      value("nearest", F, [1, 2, 3, 4]), value("causal", F, ["seq", "seq"])],
     [ints("k", [3]), ints("two", [2]), ints("row_shape", [1, 3, 4])], 17)
