"""ONNX's reductions as IR operators (ReduceSum, ReduceMax, ReduceMin,
ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
ReduceLogSumExp beside ReduceMean): read at opsets 11, 13 and 18 (axes as
attributes, ReduceSum's as an input from 13, every one's from 18), none left
opaque, written back in their opset's spelling, and computed by saturn's
interpreter as onnxruntime computes them: a reduction of a weight is folded
by the interpreter into the written model, whose outputs onnxruntime then
compares with the original's. Run by CTest (python_tests, the venv's python,
SATURN_CLI set).
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import saturn
from onnx import TensorProto, helper, numpy_helper
from optimizing import optimize

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")

REDUCTIONS = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
SHAPE = [3, 4, 5]


def reduction(op, source, out, axes, keepdims, opset, inits):
    """A reduction node in `opset`'s spelling (axes as an input where the
    opset says so, appended to `inits`)."""
    axes_input = opset >= 18 or (op == "ReduceSum" and opset >= 13)
    if axes_input:
        name = f"{out}_axes"
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), name))
        return helper.make_node(op, [source, name], [out], keepdims=keepdims)
    return helper.make_node(op, [source], [out], axes=axes, keepdims=keepdims)


def model(op, opset, axes, keepdims):
    """y = Relu(x * 2 * 0.5) + op(w) (a weight: folded at export) and
    z = op(x): the product pair is the rewrite that makes saturn write the
    model from its IR."""
    rng = np.random.default_rng(7)
    w = rng.uniform(0.5, 1.5, SHAPE).astype(np.float32)  # positive: ReduceLogSum is defined
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("Mul", ["x", "two"], ["x2"]),
             helper.make_node("Mul", ["x2", "half"], ["x1"]),
             helper.make_node("Relu", ["x1"], ["r"]),
             reduction(op, "w", "rw", axes, keepdims, opset, inits),
             helper.make_node("Add", ["r", "rw"], ["y"]),
             reduction(op, "x", "z", axes, keepdims, opset, inits)]
    graph = helper.make_graph(
        nodes, "reductions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m, full_check=True)
    return m


def outputs(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


@needs_cli
@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("op", REDUCTIONS)
def test_a_reduction_is_read_folded_and_written_as_onnxruntime_computes_it(tmp_path, op, opset):
    # Axes kept or dropped such that y = Relu(x) + op(w) broadcasts op(w)
    # ([3, 1, 5], [3, 4, 1], [1, 1, 1] or [4, 5]) against x [3, 4, 5].
    for axes, keepdims in (([1], 1), ([-1], 1), ([0, 1, 2], 1), ([0], 0)):
        path, out = tmp_path / "m.onnx", tmp_path / "m.opt.onnx"
        report = tmp_path / "r.json"
        onnx.save(model(op, opset, axes, keepdims), str(path))
        r = optimize(path, out, report)
        assert not r["opaque_ops_before"], r["opaque_reasons_before"]
        assert r["decision"]["taken"], r["decision"]
        written = onnx.load(str(out))
        onnx.checker.check_model(written, full_check=True)
        assert [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")] == [opset]
        ops = [n.op_type for n in written.graph.node]
        assert ops.count(op) == 1, ops  # z's; w's was folded by the interpreter
        x = np.random.default_rng(opset).uniform(0.5, 1.5, SHAPE).astype(np.float32)
        for got, want in zip(outputs(out, x), outputs(path, x)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{op} {axes}")


@needs_cli
def test_reduce_sum_without_axes_reduces_all_or_nothing(tmp_path):
    """ReduceSum at opset 13 without its axes input (or with an empty one)
    reduces every axis, or none with noop_with_empty_axes (the input as it
    is); given axes, noop_with_empty_axes says nothing. None is opaque."""
    cases = [(0, None, ()), (1, None, tuple(SHAPE)), (1, [], tuple(SHAPE)),
             (1, [1], (SHAPE[0], SHAPE[2]))]
    for k, (noop, axes, shape) in enumerate(cases):
        inits = [numpy_helper.from_array(np.array(2, np.float32), "two"),
                 numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        reduce_inputs = ["x1"]
        if axes is not None:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            reduce_inputs.append("axes")
        nodes = [helper.make_node("Mul", ["x", "two"], ["x2"]),
                 helper.make_node("Mul", ["x2", "half"], ["x1"]),
                 helper.make_node("ReduceSum", reduce_inputs, ["y"], keepdims=0,
                                  noop_with_empty_axes=noop)]
        graph = helper.make_graph(
            nodes, "sum", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        m = onnx.shape_inference.infer_shapes(m)
        path, out = tmp_path / f"s{k}.onnx", tmp_path / f"s{k}.opt.onnx"
        onnx.save(m, str(path))
        assert "Opaque" not in saturn.load(str(path)).op_counts, (noop, axes)
        optimize(path, out, tmp_path / f"s{k}.json")
        x = np.random.default_rng(noop).standard_normal(SHAPE).astype(np.float32)
        got, want = outputs(out, x)[0], outputs(path, x)[0]
        assert got.shape == want.shape == shape, (noop, axes)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
