"""Shape arithmetic computed at import (onnx/shape_values.h): a value
sliced by the input's length (as Hugging Face's BERT embeddings slice their
position ids) no longer leaves every later operator shapeless, and the
optimized model, written with that arithmetic kept, runs at any size.
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


def embeddings_model(path, opset=17):
    """input_ids [batch, seq] -> token + position embeddings, then a
    product by 2 and one by 0.5 (what the rules merge once the values are typed)."""
    rng = np.random.default_rng(3)
    inits = [
        numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "tokens"),
        numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "positions"),
        numpy_helper.from_array(np.arange(16, dtype=np.int64)[None, :], "position_ids"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
        numpy_helper.from_array(np.array(2, dtype=np.float32), "by_two"),
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), "by_half"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zeros"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
    ]
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["seq", "axis0"], ["seq_1d"]),
        helper.make_node("Slice", ["position_ids", "zeros", "seq_1d", "axis1"], ["pos_ids"]),
        helper.make_node("Gather", ["tokens", "input_ids"], ["tok"], axis=0),
        helper.make_node("Gather", ["positions", "pos_ids"], ["pos"], axis=0),
        helper.make_node("Add", ["tok", "pos"], ["sum"]),
        helper.make_node("Relu", ["sum"], ["act"]),
        helper.make_node("Mul", ["act", "by_two"], ["t1"]),
        helper.make_node("Mul", ["t1", "by_half"], ["t2"]),
        helper.make_node("Sigmoid", ["t2"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "embeddings",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 8])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def run(path, ids):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"input_ids": ids})[0]


@needs_cli
@pytest.mark.parametrize("opset", [17, 18])
def test_a_length_sliced_buffer_keeps_the_model_typed_and_it_runs_at_any_size(tmp_path, opset):
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    embeddings_model(str(model), opset)
    subprocess.run([CLI, "optimize", str(model), "-o", str(out), "--report", str(report),
                    "--search", "greedy", "--cost", "opcount", "--ilp-seconds", "0", "--no-measure",
                    "--dim", "batch=2", "--dim", "seq=5", "--quiet"], check=True,
                   capture_output=True)
    r = json.loads(report.read_text())
    # Only the shape arithmetic itself stays opaque: the Add, the Relu and
    # the products after the Slice are typed IR operators.
    assert set(r["opaque_ops_before"]) <= {"Shape", "Unsqueeze", "Slice"}, r["opaque_ops_before"]
    assert not r["kept_input"], r["holds_only_at_given_sizes"]
    # The decision: the prediction took it, and it holds at other sizes.
    gates = [(v["gate"], v["passed"]) for v in r["decision"]["verdicts"]]
    assert gates == [("predicted gain", True), ("other sizes", True)], r["decision"]
    # The checks (in the interpreter, and at other sizes) are timed apart.
    assert r["seconds"]["check"] > 0 and r["seconds"]["check"] <= r["seconds"]["total"]
    assert r["cost_after"] <= r["cost_before"] - 1  # the two products are one
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    rng = np.random.default_rng(0)
    for batch, seq in [(1, 1), (2, 5), (3, 11)]:
        ids = rng.integers(0, 32, (batch, seq), dtype=np.int64)
        np.testing.assert_allclose(run(str(out), ids), run(str(model), ids), rtol=1e-5, atol=1e-6)


@needs_cli
def test_info_types_what_follows_the_shape_arithmetic(tmp_path):
    model = tmp_path / "m.onnx"
    embeddings_model(str(model))
    info = subprocess.run([CLI, "info", str(model), "--dim", "seq=5"], check=True,
                          capture_output=True, text=True).stdout
    assert "float32[1,5,8]" in info  # the output, typed at the given sizes
    assert "kept as opaque: Add" not in info


def batch_broadcast_model(path):
    """Token embeddings [batch, seq, 8] plus position embeddings [1, seq, 8],
    then a LayerNormalization: at batch 1 the two summands have one shape,
    and a SkipLayerNormalization (whose summands must be equal in shape)
    would fit there, but not at any other batch."""
    rng = np.random.default_rng(5)
    inits = [
        numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "tokens"),
        numpy_helper.from_array(rng.standard_normal((1, 64, 8)).astype(np.float32), "positions"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zeros"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
        numpy_helper.from_array(np.array(2, dtype=np.float32), "by_two"),
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), "by_half"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
        numpy_helper.from_array(np.ones(8, dtype=np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(8, dtype=np.float32), "beta"),
    ]
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Slice", ["shape", "one", "two"], ["seq_1d"]),
        helper.make_node("Slice", ["positions", "zeros", "seq_1d", "axis1"], ["pos"]),
        helper.make_node("Gather", ["tokens", "input_ids"], ["tok"], axis=0),
        helper.make_node("Add", ["tok", "pos"], ["sum"]),
        helper.make_node("LayerNormalization", ["sum", "gamma", "beta"], ["norm"], axis=-1,
                         epsilon=1e-5),
        helper.make_node("Mul", ["norm", "by_two"], ["t1"]),
        helper.make_node("Mul", ["t1", "by_half"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "broadcast",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


@needs_cli
def test_a_rewrite_that_holds_at_batch_1_only_is_not_made(tmp_path):
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    batch_broadcast_model(str(model))
    subprocess.run([CLI, "optimize", str(model), "-o", str(out), "--report", str(report),
                    "--search", "greedy", "--cost", "opcount", "--ilp-seconds", "0", "--no-measure",
                    "--dim", "batch=1", "--dim", "seq=6", "--quiet"], check=True,
                   capture_output=True)
    r = json.loads(report.read_text())
    # The search kept to what holds at any batch, so its result was taken.
    assert r["holds_only_at_given_sizes"] is None and not r["kept_input"], r
    assert r["decision"]["taken"] and r["decision"]["decided_by"] == "other sizes", r["decision"]
    assert "SkipLayerNormalization" not in {n.op_type for n in onnx.load(str(out)).graph.node}
    rng = np.random.default_rng(1)
    for batch, seq in [(1, 6), (3, 4), (4, 16)]:
        ids = rng.integers(0, 32, (batch, seq), dtype=np.int64)
        np.testing.assert_allclose(run(str(out), ids), run(str(model), ids), rtol=1e-4, atol=1e-5)


def merged_tokens_model(path):
    """GPT-2's projection as PyTorch exports its Conv1D: hidden states
    [batch, seq, 8] flattened to [batch*seq, 8], a Gemm, and the product
    split back into [batch, seq, 12] by a shape computed from the input's."""
    rng = np.random.default_rng(6)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 12)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(12).astype(np.float32), "b"),
        numpy_helper.from_array(np.array([-1, 8], dtype=np.int64), "flat"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
        numpy_helper.from_array(np.array([12], dtype=np.int64), "width"),
        numpy_helper.from_array(np.array(2, dtype=np.float32), "by_two"),
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), "by_half"),
    ]
    nodes = [
        helper.make_node("Mul", ["x", "by_two"], ["doubled"]),
        helper.make_node("Mul", ["doubled", "by_half"], ["h"]),
        helper.make_node("Shape", ["h"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "two"], ["batch_seq"]),
        helper.make_node("Concat", ["batch_seq", "width"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["h", "flat"], ["rows"]),
        helper.make_node("Gemm", ["rows", "w", "b"], ["projected"]),
        helper.make_node("Reshape", ["projected", "split_shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "merged_tokens",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


@needs_cli
@pytest.mark.parametrize("batch", [1, 2])
def test_a_batch_merged_with_the_tokens_is_split_back_at_any_size(tmp_path, batch):
    """[batch*seq, 12] back to [batch, seq, 12]: at a batch of 1 a -1 alone
    would give the tokens' axis the batch too at other sizes (a consistent
    shape, another layout), and at a batch of 2 no 0 or -1 says it. The
    written Reshape reads the batch from a value's shape, and the model
    runs at other sizes with the input's outputs."""
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    merged_tokens_model(str(model))
    subprocess.run([CLI, "optimize", str(model), "-o", str(out), "--report", str(report),
                    "--search", "greedy", "--cost", "opcount", "--ilp-seconds", "0", "--no-measure",
                    "--dim", f"batch={batch}", "--dim", "seq=6", "--quiet"], check=True,
                   capture_output=True)
    r = json.loads(report.read_text())
    assert r["holds_only_at_given_sizes"] is None and not r["kept_input"], r
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    producer = {o: n for n in written.graph.node for o in n.output}

    def made_by(value, op_type):
        n = producer.get(value)
        return n if n is not None and n.op_type == op_type else None

    # The batch comes from a value's shape: Reshape(x, Concat(..., Gather(Shape(v)), ...)).
    reads_batch = [
        n for n in written.graph.node if n.op_type == "Reshape"
        and (c := made_by(n.input[1], "Concat")) is not None
        and any((g := made_by(i, "Gather")) is not None and made_by(g.input[0], "Shape")
                for i in c.input)]
    assert reads_batch, [(n.op_type, list(n.input)) for n in written.graph.node]
    rng = np.random.default_rng(2)
    for b, s in [(1, 6), (3, 4), (4, 7)]:
        x = rng.standard_normal((b, s, 8)).astype(np.float32)
        want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        assert got[0].shape == (b, s, 12)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
