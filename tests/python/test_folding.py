"""Folding at import (onnx/import_prepare.cc): every value computed
from constants, weights and static sizes becomes a constant before the
e-graph sees the model, whether the model's batch axis is fixed or symbolic;
a value that follows a symbolic size stays computed, typed, and the model
still runs at any size. One operator of an unknown domain keeps its output
type and its readers stay typed IR operators.
Run by CTest (python_tests, the venv's python, SATURN_CLI set).
"""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")

I64 = np.int64


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=I64), name)


# Each case: nodes computing a value "v" from x's shape ([B, 6, 4]; only its
# static axes 1 and 2 are read), the initializers they use, and how x uses
# "v": as a Reshape's shape ("reshape") or as a float tensor added to x
# ("add", v of shape [6, 4] or broadcasting to it).
CASES = {
    "Shape/Gather/Mul/Unsqueeze/Concat": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "one"], ["six"], axis=0),
         helper.make_node("Gather", ["s", "two"], ["four"], axis=0),
         helper.make_node("Mul", ["six", "four"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
         helper.make_node("Concat", ["minus_one", "n1"], ["v"], axis=0)],
        "reshape"),
    "Slice/ReduceProd/Squeeze/Div/Mod/Sub": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "one_1d", "three_1d"], ["tail"]),
         helper.make_node("ReduceProd", ["tail"], ["p"], keepdims=1),
         helper.make_node("Squeeze", ["p", "axes0"], ["q"]),
         helper.make_node("Div", ["q", "two_s"], ["half"]),
         helper.make_node("Mod", ["half", "five"], ["r"]),
         helper.make_node("Sub", ["half", "r"], ["whole"]),
         helper.make_node("Add", ["whole", "r"], ["back"]),
         helper.make_node("Mul", ["back", "two_s"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
         helper.make_node("Concat", ["minus_one", "n1"], ["v"], axis=0)],
        "reshape"),
    "Slice-to-the-end/Squeeze": (  # an end of INT64_MAX, as exporters spell "to the end"
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "minus_one", "to_the_end"], ["last"]),
         helper.make_node("Squeeze", ["last", "axes0"], ["four"]),
         helper.make_node("Mul", ["four", "six_s"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
         helper.make_node("Concat", ["minus_one", "n1"], ["v"], axis=0)],
        "reshape"),
    "Size/Cast/Equal/Where/Neg/Abs": (
        [helper.make_node("Size", ["x_row"], ["size"]),
         helper.make_node("Cast", ["size"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["f"], ["size_again"], to=TensorProto.INT64),
         helper.make_node("Equal", ["size_again", "twenty_four"], ["eq"]),
         helper.make_node("Neg", ["size_again"], ["neg"]),
         helper.make_node("Abs", ["neg"], ["pos"]),
         helper.make_node("Where", ["eq", "pos", "one"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
         helper.make_node("Concat", ["minus_one", "n1"], ["v"], axis=0)],
        "reshape"),
    "Transpose/Identity": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "one_1d", "three_1d"], ["tail"]),
         helper.make_node("Unsqueeze", ["tail", "axes0"], ["col"]),
         helper.make_node("Transpose", ["col"], ["row"], perm=[1, 0]),
         helper.make_node("Identity", ["row"], ["row2"]),
         helper.make_node("ReduceProd", ["row2"], ["n1"], axes=[0], keepdims=0),
         helper.make_node("Concat", ["minus_one", "n1"], ["v"], axis=0)],
        "reshape"),
    "Range/ConstantOfShape/Expand": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "one_1d", "three_1d"], ["tail"]),
         helper.make_node("Gather", ["s", "two"], ["four"], axis=0),
         helper.make_node("Range", ["zero", "four", "one"], ["r"]),
         helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
         helper.make_node("ConstantOfShape", ["tail"], ["ones"],
                          value=numpy_helper.from_array(np.array([1.0], dtype=np.float32))),
         helper.make_node("Expand", ["rf", "tail"], ["grid"]),
         helper.make_node("Add", ["grid", "ones"], ["v"])],
        "add"),
    # A grid of positions in double, as RT-DETR's sine embedding builds it:
    # Ranges to the map's width and height, one row expanded to the shape
    # the two make; ONNX's inference types none of it.
    "Range-in-double/Expand-by-its-shapes": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "two"], ["four"], axis=0),
         helper.make_node("Gather", ["s", "one"], ["six"], axis=0),
         helper.make_node("Cast", ["four"], ["four_d"], to=TensorProto.DOUBLE),
         helper.make_node("Cast", ["six"], ["six_d"], to=TensorProto.DOUBLE),
         helper.make_node("Range", ["zero_d", "four_d", "one_d"], ["cols"]),
         helper.make_node("Range", ["zero_d", "six_d", "one_d"], ["rows"]),
         helper.make_node("Reshape", ["cols", "row_shape"], ["row"]),
         helper.make_node("Reshape", ["rows", "column_shape"], ["col"]),
         helper.make_node("Shape", ["col"], ["col_s"]),
         helper.make_node("Shape", ["row"], ["row_s"]),
         helper.make_node("Slice", ["col_s", "zero_1d", "one_1d"], ["h"]),
         helper.make_node("Slice", ["row_s", "one_1d", "two_1d"], ["w"]),
         helper.make_node("Concat", ["h", "w"], ["hw"], axis=0),
         helper.make_node("Expand", ["row", "hw"], ["grid"]),
         helper.make_node("Cast", ["grid"], ["v"], to=TensorProto.FLOAT)],
        "add"),
    # A region-id mask as a shifted window writes it: zeros of the map's
    # size with one row set by ScatterND, then raised by a second one.
    "ScatterND/Tile": (
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Slice", ["s", "one_1d", "three_1d"], ["tail"]),
         helper.make_node("ConstantOfShape", ["tail"], ["zeros"],
                          value=numpy_helper.from_array(np.array([0.0], dtype=np.float32))),
         helper.make_node("Gather", ["s", "two"], ["four"], axis=0),
         helper.make_node("Range", ["zero", "four", "one"], ["cols"]),
         helper.make_node("Unsqueeze", ["cols", "axes1"], ["col"]),
         helper.make_node("Shape", ["col"], ["col_shape"]),
         helper.make_node("Expand", ["three_1d", "col_shape"], ["row"]),
         helper.make_node("Concat", ["row", "col"], ["where"], axis=1),
         helper.make_node("Tile", ["pair", "two_1d"], ["values"]),
         helper.make_node("ScatterND", ["zeros", "where", "values"], ["set"]),
         helper.make_node("ScatterND", ["set", "where", "values"], ["v"], reduction="add")],
        "add"),
}


def case_model(path, case, batch):
    nodes, use = CASES[case]
    inits = [ints("zero", 0), ints("one", 1), ints("two", 2), ints("two_s", 2), ints("five", 5),
             ints("twenty_four", 24), ints("six_s", 6), ints("axes0", [0]),
             ints("to_the_end", [np.iinfo(I64).max]), ints("one_1d", [1]),
             ints("three_1d", [3]), ints("minus_one", [-1]), ints("axes1", [1]),
             ints("two_1d", [2]), numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "pair"),
             numpy_helper.from_array(np.zeros((6, 4), dtype=np.float32), "x_row"),
             numpy_helper.from_array(np.array(0.0), "zero_d"), numpy_helper.from_array(np.array(1.0), "one_d"),
             ints("row_shape", [1, -1]), ints("column_shape", [-1, 1]), ints("zero_1d", [0])]
    out_shape = [batch, 24] if use == "reshape" else [batch, 6, 4]
    tail = ([helper.make_node("Reshape", ["x", "v"], ["y"])] if use == "reshape"
            else [helper.make_node("Add", ["x", "v"], ["y"])])
    graph = helper.make_graph(
        nodes + tail + [helper.make_node("Relu", ["y"], ["out"])], "folding",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 6, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def optimize(model, out, report, *extra):
    subprocess.run([CLI, "optimize", str(model), "-o", str(out), "--report", str(report),
                    "--search", "greedy", "--cost", "opcount", "--ilp-seconds", "0",
                    "--no-measure", "--quiet", *extra], check=True, capture_output=True)
    return json.loads(report.read_text())


def run(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@needs_cli
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("batch", [2, "batch"])
def test_shape_arithmetic_over_static_sizes_is_folded(tmp_path, case, batch):
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    case_model(str(model), case, batch)
    r = optimize(model, out, report, *(["--dim", "batch=3"] if batch == "batch" else []))
    # Only the Reshape (or the Add) and the Relu are left: every node of the
    # arithmetic became a constant, with a symbolic batch as with a fixed one.
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    assert r["ops_before"] == 2, r
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    rng = np.random.default_rng(1)
    for b in ([2] if batch == 2 else [1, 3, 7]):
        x = rng.standard_normal((b, 6, 4)).astype(np.float32)
        np.testing.assert_allclose(run(out, x), run(model, x), rtol=1e-6, atol=1e-6)


def batch_follower_model(path):
    """x [batch, 6, 4] reshaped to [batch, 24] through Shape(x)[0], and an
    Expand of a row to [batch, 24] by the same value: both follow the batch."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Concat", ["b1", "twenty_four"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Expand", ["row", "shape"], ["rows"]),
        helper.make_node("Add", ["flat", "rows"], ["y"]),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    inits = [ints("zero", 0), ints("axes0", [0]), ints("twenty_four", [24]),
             numpy_helper.from_array(np.linspace(-1, 1, 24, dtype=np.float32)[None, :], "row")]
    graph = helper.make_graph(
        nodes, "follower",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 24])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


@needs_cli
def test_a_value_that_follows_a_symbolic_size_stays_computed_and_runs_at_any_size(tmp_path):
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    batch_follower_model(str(model))
    r = optimize(model, out, report, "--dim", "batch=2")
    # The batch is not folded into a constant: the arithmetic that reads it
    # stays (Shape is an IR operator, the Expand by the computed shape reads
    # it), and what reads the arithmetic is typed at the given size.
    assert r["opaque_ops_before"] == {}, r["opaque_ops_before"]
    assert "Shape" in {n.op_type for n in onnx.load(str(out)).graph.node}
    rng = np.random.default_rng(2)
    for b in (1, 2, 5):
        x = rng.standard_normal((b, 6, 4)).astype(np.float32)
        np.testing.assert_allclose(run(out, x), run(model, x), rtol=1e-6, atol=1e-6)


@needs_cli
def test_one_custom_operator_keeps_its_readers_typed(tmp_path):
    """x -> Relu -> acme.Mystery (its output typed by value_info) -> Transpose
    -> MatMul -> Sigmoid: only the custom operator is opaque."""
    model = tmp_path / "m.onnx"
    rng = np.random.default_rng(4)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Mystery", ["r"], ["m"], domain="acme"),
        helper.make_node("Transpose", ["m"], ["t"], perm=[1, 0]),
        helper.make_node("MatMul", ["t", "w"], ["p"]),
        helper.make_node("Sigmoid", ["p"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [8, 3])],
        [numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")],
        value_info=[helper.make_tensor_value_info("m", TensorProto.FLOAT, [4, 8])])
    m = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)])
    onnx.save(m, str(model))
    info = subprocess.run([CLI, "info", str(model)], check=True, capture_output=True,
                          text=True).stdout
    assert "ops: MatMul 1, Relu 1, Sigmoid 1, Transpose 1, Opaque 1" in info, info
    assert "kept as opaque: acme::Mystery x1: an operator of domain 'acme'" in info, info


@needs_cli
def test_einsums_that_are_batched_products_import_as_matmuls(tmp_path):
    """Attention written with Einsum, as MaxViT spells it (spaces, capitals):
    the scores contract the last axes of both, the context a plain product."""
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    nodes = [
        helper.make_node("Einsum", ["q", "k"], ["s"], equation="B H I D, B H J D -> B H I J"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("Einsum", ["p", "v"], ["out"], equation="bhij,bhjd->bhid"),
    ]
    shape = [2, 3, 5, 4]
    graph = helper.make_graph(
        nodes, "einsum",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("q", "k", "v")],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(model))
    r = optimize(model, out, report)
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in ("q", "k", "v")}
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def layout_chain_model(path):
    """x [2, 6, 4] through the spellings the importer brings to one form:
    two Transposes (composed into one), a Reshape of a Reshape (one), a
    Concat of one input, a Pad by nothing and a Slice of everything
    (Identities), and a MatMul by a transposed, cast weight (folded into a
    weight); and a Where over a comparison of x, typed IR operators."""
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t1"], perm=[1, 0, 2]),
        helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 2, 1]),  # x as [6, 4, 2]
        helper.make_node("Reshape", ["t2", "flat_shape"], ["r1"]),
        helper.make_node("Reshape", ["r1", "back_shape"], ["r2"]),  # [24, 2]
        helper.make_node("Concat", ["r2"], ["c"], axis=0),
        helper.make_node("Pad", ["c", "no_pads"], ["p"]),
        helper.make_node("Slice", ["p", "starts", "ends"], ["s"]),
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("Cast", ["wt"], ["wc"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["wc"], ["w16"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["w16"], ["w32"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["s", "w32"], ["m"]),
        helper.make_node("Greater", ["m", "zero"], ["positive"]),
        helper.make_node("Where", ["positive", "m", "zero"], ["out"]),
    ]
    inits = [ints("flat_shape", [48]), ints("back_shape", [24, 2]), ints("no_pads", [0, 0, 0, 0]),
             ints("starts", [0]), ints("ends", [24]),
             numpy_helper.from_array(rng.standard_normal((3, 2)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")]
    graph = helper.make_graph(
        nodes, "layout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [24, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


@needs_cli
def test_layout_chains_and_weight_computations_take_one_form_at_import(tmp_path):
    model = tmp_path / "m.onnx"
    layout_chain_model(str(model))
    info = subprocess.run([CLI, "info", str(model)], check=True, capture_output=True,
                          text=True).stdout
    # One Transpose, one Reshape, the MatMul, the Greater and the Where: the
    # rest was an identity or computed from the weight alone.
    assert "m: 5 ops" in info, info
    assert "ops: MatMul 1, Transpose 1, Reshape 1, Where 1, Greater 1" in info, info
    assert "opaque" not in info, info
    out, report = tmp_path / "m.opt.onnx", tmp_path / "r.json"
    optimize(model, out, report)
    x = np.random.default_rng(6).standard_normal((2, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(run(out, x), run(model, x), rtol=1e-5, atol=1e-6)


@needs_cli
def test_sums_and_products_by_neutral_constants_are_their_input(tmp_path):
    """x + 0, 0 + x, x - 0, x * 1 and x / 1 by constants (randomly
    initialized exports carry zero biases) are x at import; 0 - x and a sum
    with zeros that broadcasts x stay."""
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.zeros((3, 4), np.float32), "zeros"),
             numpy_helper.from_array(np.ones((4,), np.float32), "ones"),
             numpy_helper.from_array(np.zeros((2, 3, 4), np.float32), "wide_zeros")]
    nodes = [helper.make_node("Add", ["x", "zeros"], ["a"]),
             helper.make_node("Add", ["zeros", "a"], ["b"]),
             helper.make_node("Sub", ["b", "zeros"], ["c"]),
             helper.make_node("Mul", ["c", "ones"], ["d"]),
             helper.make_node("Div", ["d", "ones"], ["e"]),
             helper.make_node("Relu", ["e"], ["r"]),
             helper.make_node("Sub", ["zeros", "r"], ["negated"]),      # stays
             helper.make_node("Add", ["negated", "wide_zeros"], ["out"])]  # broadcasts: stays
    graph = helper.make_graph(nodes, "neutral", [helper.make_tensor_value_info("x", f, [3, 4])],
                              [helper.make_tensor_value_info("out", f, [2, 3, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    onnx.save(model, str(path))
    r = optimize(path, out, report)
    assert r["ops_before"] == 3, r
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(out, x), run(path, x), rtol=0, atol=0)


@needs_cli
def test_an_expand_that_holds_at_every_size_is_an_ir_operator(tmp_path):
    """Key heads repeated as exporters write it (Expand by a shape computed
    from the input's, then Reshape) with a symbolic batch: the Expand
    creates only a static axis, so it is an IR operator, written back with
    1s where it keeps the input's axes, and runs at any batch. An Expand
    that creates the symbolic axis is the IR's Expand by the computed shape,
    written with it."""
    f = TensorProto.FLOAT
    inits = [ints("lead", [0]), ints("two_axes", [2]), ints("three_axes", [3]),
             ints("end", [5]), ints("group", [3]), ints("heads", [6]), ints("four", [4])]
    nodes = [helper.make_node("Shape", ["k"], ["s"]),
             helper.make_node("Slice", ["s", "lead", "two_axes"], ["batch_kv"]),
             helper.make_node("Slice", ["s", "three_axes", "end"], ["seq_size"]),
             helper.make_node("Concat", ["batch_kv", "group", "seq_size"], ["to"], axis=0),
             # by 2 then by 0.5: the rewrite the search makes, so the model is written
             helper.make_node("Mul", ["k", "by_two"], ["k2"]),
             helper.make_node("Mul", ["k2", "by_half"], ["k1"]),
             helper.make_node("Expand", ["k1", "to"], ["repeated"]),
             helper.make_node("Slice", ["s", "lead", "one_1d"], ["batch"]),
             helper.make_node("Concat", ["batch", "heads", "seq_size"], ["merged"], axis=0),
             helper.make_node("Reshape", ["repeated", "merged"], ["r"]),
             helper.make_node("Relu", ["r"], ["out"]),
             helper.make_node("Concat", ["batch", "four"], ["rows"], axis=0),
             helper.make_node("Expand", ["row", "rows"], ["per_batch"])]
    inits += [ints("one_1d", [1]), numpy_helper.from_array(np.arange(4, dtype=np.float32)[None], "row"),
              numpy_helper.from_array(np.array(2, np.float32), "by_two"),
              numpy_helper.from_array(np.array(0.5, np.float32), "by_half")]
    graph = helper.make_graph(
        nodes, "repeat_kv", [helper.make_tensor_value_info("k", f, ["batch", 2, 1, 5, 8])],
        [helper.make_tensor_value_info("out", f, ["batch", 6, 5, 8]),
         helper.make_tensor_value_info("per_batch", f, ["batch", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    path, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    onnx.save(model, str(path))
    r = optimize(path, out, report, "--dim", "batch=2")
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    constants = {t.name: numpy_helper.to_array(t).tolist() for t in written.graph.initializer}
    constants.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t).tolist()
                      for n in written.graph.node if n.op_type == "Constant"})
    shapes = [constants.get(n.input[1]) for n in written.graph.node if n.op_type == "Expand"]
    assert [1, 1, 3, 1, 1] in shapes, shapes  # the repeat, kept axes as 1
    for batch in (1, 2, 5):
        k = np.random.default_rng(batch).standard_normal((batch, 2, 1, 5, 8)).astype(np.float32)
        want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"k": k})
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"k": k})
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
