"""Control flow: the subgraphs of If and Loop nodes are optimized as models
of their own (optimize/subgraphs.cc), put back where their run found a
cheaper graph, and the written model passes PyPI's ONNX checker and gives
the original's outputs in onnxruntime on every branch. Run by CTest
(python_tests, the venv's python, SATURN_CLI set).
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
F = TensorProto.FLOAT


def control_flow_model(opset, batch, loop=True):
    """y = If(cond): then relu(x * 2 * 0.5) - its mean over axis 1, else -x;
    z = Loop 3 times: v = v * 2 * 0.5 + x, from y (the output is y without
    the loop). The constants are the enclosing graph's initializers, which
    the subgraphs read by name."""
    axes = [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")] if opset >= 18 else []
    mean = (helper.make_node("ReduceMean", ["t3", "axes"], ["mean"], keepdims=1) if opset >= 18
            else helper.make_node("ReduceMean", ["t3"], ["mean"], axes=[1], keepdims=1))
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t1"]), helper.make_node("Mul", ["t1", "half"], ["t2"]),
         helper.make_node("Relu", ["t2"], ["t3"]), mean, helper.make_node("Sub", ["t3", "mean"], ["then_out"])],
        "then", [], [helper.make_tensor_value_info("then_out", F, [batch, 3])], axes)
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["else_out"])], "else", [],
                                    [helper.make_tensor_value_info("else_out", F, [batch, 3])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["v_in", "two"], ["b1"]), helper.make_node("Mul", ["b1", "half"], ["b2"]),
         helper.make_node("Add", ["b2", "x"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", F, [batch, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [batch, 3])])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    if loop:
        nodes.append(helper.make_node("Loop", ["trips", "", "y"], ["z"], body=body))
    graph = helper.make_graph(
        nodes, "control_flow",
        [helper.make_tensor_value_info("x", F, [batch, 3]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("z" if loop else "y", F, [batch, 3])],
        [numpy_helper.from_array(np.array(2, dtype=np.float32), "two"),
         numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
         numpy_helper.from_array(np.array(3, dtype=np.int64), "trips")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def optimized(tmp_path, model, *extra):
    path, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    onnx.save(model, str(path))
    done = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--search", "greedy",
                           "--cost", "opcount", "--ilp-seconds", "0", "--no-measure", "--quiet",
                           "--report", str(report), *extra], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return path, out, json.loads(report.read_text())


def same_outputs(path, out, batches):
    original = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    written = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for batch in batches:
        for cond in (True, False):
            feeds = {"x": rng.standard_normal((batch, 3)).astype(np.float32), "cond": np.array(cond)}
            np.testing.assert_allclose(written.run(None, feeds)[0], original.run(None, feeds)[0],
                                       rtol=1e-5, atol=1e-5)


@needs_cli
@pytest.mark.parametrize("opset", [17, 18])
def test_if_branches_and_loop_bodies_are_optimized_inside(tmp_path, opset):
    path, out, r = optimized(tmp_path, control_flow_model(opset, 4))
    subgraphs = {(s["node"], s["attribute"]): s for s in r["subgraphs"]}
    assert set(subgraphs) == {("y", "then_branch"), ("y", "else_branch"), ("z", "body")}
    for key in (("y", "then_branch"), ("z", "body")):
        assert subgraphs[key]["replaced"], subgraphs[key]
        assert subgraphs[key]["cost_after"] < subgraphs[key]["cost_before"], subgraphs[key]
        assert "matched in the interpreter" in subgraphs[key]["note"], subgraphs[key]
    assert not subgraphs[("y", "else_branch")]["replaced"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    assert [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    branches = {a.name: a.g for n in written.graph.node for a in n.attribute if a.name.endswith("branch")}
    assert [n.op_type for n in branches["then_branch"].node].count("Mul") < 2
    same_outputs(path, out, [4])


@needs_cli
def test_if_branches_are_optimized_at_symbolic_sizes(tmp_path):
    """With a symbolic batch, the If keeps its branches as the file declares
    them ([batch, 3]), and its output is typed at other sizes as they say:
    the optimized branch is written, and the model runs at every batch."""
    path, out, r = optimized(tmp_path, control_flow_model(17, "batch", loop=False),
                             "--dim", "batch=4")
    replaced = [(s["node"], s["attribute"]) for s in r["subgraphs"] if s["replaced"]]
    assert replaced == [("y", "then_branch")], r["subgraphs"]
    assert not r["kept_input"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    branches = {a.name: a.g for n in written.graph.node for a in n.attribute}
    assert [n.op_type for n in branches["then_branch"].node].count("Mul") < 2
    assert branches["then_branch"].output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    same_outputs(path, out, [1, 4, 5])


@needs_cli
def test_subgraphs_are_kept_where_the_model_would_not_export_with_them(tmp_path):
    """With a symbolic batch, ONNX's shape inference leaves the Loop's
    output unshaped at other sizes (its loop-carried value is declared
    [batch, 3] in the body and fed at a size), so the exporter cannot type
    it there: the optimized subgraphs are not taken, the report says why,
    and the model is the input, which runs at every batch."""
    path, out, r = optimized(tmp_path, control_flow_model(17, "batch"), "--dim", "batch=4")
    assert r["subgraphs"] and not any(s["replaced"] for s in r["subgraphs"]), r["subgraphs"]
    notes = [s["note"] for s in r["subgraphs"]]
    assert any("does not export with it" in n for n in notes), notes
    assert r["kept_input"]
    same_outputs(path, out, [1, 4, 5])
