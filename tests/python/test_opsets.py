"""Models written at opsets past Debian's libonnx (18-23): saturn reads them
through opset 17's spelling and writes the optimized model back at the
model's own opset, in that opset's spelling, which PyPI's ONNX checker
accepts and onnxruntime runs with the original's outputs. Run by CTest
(python_tests, the venv's python, SATURN_CLI set).
"""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from optimizing import optimize

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")


def bait(x, out):
    """`x` by 2 then by 0.5 into `out`: the rewrite the search makes, so that
    the model is written from the IR rather than kept. The nodes and their
    two initializers."""
    nodes = [helper.make_node("Mul", [x, "by_two"], [f"{out}/doubled"]),
             helper.make_node("Mul", [f"{out}/doubled", "by_half"], [out])]
    return nodes, [numpy_helper.from_array(np.array(2, dtype=np.float32), "by_two"),
                   numpy_helper.from_array(np.array(0.5, dtype=np.float32), "by_half")]


def newer_opset_model(path, opset):
    """x [4, 6] -> a product by 2 then by 0.5 (the rewrite the search makes), a mean
    over axes given as an input (opset 18's spelling), and the two halves of
    a Split by num_outputs (18) added."""
    nodes, inits = bait("x", "t2")
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"))
    nodes += [
        helper.make_node("ReduceMean", ["t2", "axes"], ["mean"], keepdims=1),
        helper.make_node("Sub", ["t2", "mean"], ["centred"]),
        helper.make_node("Split", ["centred"], ["left", "right"], axis=1, num_outputs=2),
        helper.make_node("Add", ["left", "right"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "newer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 3])], inits)
    ir = {18: 8, 21: 10, 23: 11}[opset]
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def run(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def saved_and_optimized(tmp_path, model, *extra):
    """`model` saved and optimized (optimize()): the paths of both, the
    report, and the written model, which PyPI's checker takes."""
    path, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    onnx.save(model, str(path))
    r = optimize(path, out, report, *extra)
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    return path, out, r, written


@needs_cli
@pytest.mark.parametrize("opset", [18, 21, 23])
def test_a_newer_opset_model_is_written_back_at_its_opset(tmp_path, opset):
    model, out = tmp_path / "m.onnx", tmp_path / "m.opt.onnx"
    newer_opset_model(str(model), opset)
    done = subprocess.run([CLI, "optimize", str(model), "-o", str(out), "--search", "greedy",
                           "--cost", "opcount", "--ilp-seconds", "0", "--no-measure", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    written = onnx.load(str(out))
    assert [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    onnx.checker.check_model(written, full_check=True)
    ops = [n.op_type for n in written.graph.node]
    assert ops.count("Mul") == 1, ops  # optimized (two products merged), not copied
    mean = next(n for n in written.graph.node if n.op_type == "ReduceMean")
    assert len(mean.input) == 2 and not any(a.name == "axes" for a in mean.attribute)
    x = np.random.default_rng(opset).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(run(str(out), x), run(str(model), x), rtol=1e-6, atol=1e-6)


@needs_cli
@pytest.mark.parametrize("opset", [18, 21])
def test_a_node_with_no_opset_17_spelling_is_kept_as_the_file_writes_it(tmp_path, opset):
    """An antialiased Resize (opset 18's attribute) between two products the
    search merges: read as an opaque operator typed by the file's
    value_info, written back with its attribute at the model's opset."""
    nodes, inits = bait("x", "t2")
    inits.append(numpy_helper.from_array(np.array([1, 3, 8, 8], dtype=np.int64), "sizes"))
    nodes += [helper.make_node("Resize", ["t2", "", "", "sizes"], ["small"], mode="linear",
                               antialias=1),
              helper.make_node("Relu", ["small"], ["out"])]
    graph = helper.make_graph(
        nodes, "antialias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 20])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, 8, 8])], inits,
        value_info=[helper.make_tensor_value_info("small", TensorProto.FLOAT, [1, 3, 8, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version={18: 8, 21: 10}[opset])
    path, out, r, written = saved_and_optimized(tmp_path, model)
    assert sum(r["opaque_ops_before"].values()) == 1, r["opaque_ops_before"]
    info = subprocess.run([CLI, "info", str(path)], capture_output=True, text=True, check=True)
    assert "attribute antialias has no equivalent in opset 17" in info.stdout
    assert [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    assert [o.domain for o in written.opset_import] == [""]
    ops = [n.op_type for n in written.graph.node]
    assert ops.count("Mul") == 1, ops  # optimized around it, not copied
    resize = next(n for n in written.graph.node if n.op_type == "Resize")
    assert resize.domain == "" and helper.get_attribute_value(
        next(a for a in resize.attribute if a.name == "antialias")) == 1
    x = np.random.default_rng(opset).standard_normal((1, 3, 20, 20)).astype(np.float32)
    np.testing.assert_allclose(run(str(out), x), run(str(path), x), rtol=1e-5, atol=1e-5)


@needs_cli
def test_a_kept_node_inside_a_branch_is_written_back_as_it_came(tmp_path):
    """An If whose then-branch resizes with antialias (opset 18): the If stays
    opaque, its branch is written back as the file wrote it, no private
    domain left in the model, and both branches give the input's outputs."""
    def branch(name, antialias):
        nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], [f"{name}_r"], mode="linear",
                                  antialias=antialias),
                 helper.make_node("Relu", [f"{name}_r"], [f"{name}_out"])]
        return helper.make_graph(
            nodes, name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 3, 8, 8])],
            value_info=[helper.make_tensor_value_info(f"{name}_r", TensorProto.FLOAT, [1, 3, 8, 8])])
    nodes, inits = bait("x0", "x")
    nodes.append(helper.make_node("If", ["cond"], ["out"], then_branch=branch("then", 1),
                                  else_branch=branch("else", 0)))
    inits.append(numpy_helper.from_array(np.array([1, 3, 8, 8], dtype=np.int64), "sizes"))
    graph = helper.make_graph(
        nodes, "branch", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 3, 20, 20]),
                          helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    path, out, _, written = saved_and_optimized(tmp_path, model)
    assert [o.domain for o in written.opset_import] == [""]
    assert [n.op_type for n in written.graph.node].count("Mul") == 1
    x = np.random.default_rng(5).standard_normal((1, 3, 20, 20)).astype(np.float32)
    for cond in (True, False):
        feeds = {"x0": x, "cond": np.array(cond)}
        want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def rms_norm_model(path, axis):
    """x [2, 5, 64] -> a product by 2 then by 0.5 (the rewrite the search makes) ->
    RMSNormalization (opset 23) over the axes from `axis` on -> MatMul."""
    rng = np.random.default_rng(3)
    normalized = [5, 64][axis:] if axis >= 0 else [5, 64][axis:]
    if axis >= 0:
        normalized = [2, 5, 64][axis:]
    nodes, inits = bait("x", "t2")
    inits += [
        numpy_helper.from_array(rng.uniform(0.5, 1.5, normalized).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w"),
    ]
    nodes += [
        helper.make_node("RMSNormalization", ["t2", "scale"], ["n"], axis=axis, epsilon=1e-6),
        helper.make_node("MatMul", ["n", "w"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "rms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 5, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


@needs_cli
@pytest.mark.parametrize("target", ["onnx", "onnxruntime"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_rms_normalization_of_opset_23_is_read_and_written_as_itself(tmp_path, target, axis):
    """Opset 23's RMSNormalization imports as the IR's RMSNorm (counted as
    one operator, whatever the axis) and is written back as the standard
    operator, which PyPI's checker and onnxruntime take."""
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    rms_norm_model(str(model), axis)
    r = optimize(model, out, report, "--target", target)
    assert r["ops_before"] == 4, r
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    ops = [n.op_type for n in written.graph.node]
    assert ops.count("RMSNormalization") == 1 and ops.count("Mul") == 1, ops
    assert {o.domain for o in written.opset_import} <= {"", "ai.onnx"}
    x = np.random.default_rng(0).standard_normal((2, 5, 64)).astype(np.float32)
    np.testing.assert_allclose(run(str(out), x), run(str(model), x), rtol=1e-4, atol=1e-4)


ATTENTION_CASES = {
    # name: (attributes, q, k, v, past length, mask: None / "bool" / "float")
    "causal-heads": (dict(is_causal=1), [2, 4, 6, 8], [2, 4, 6, 8], [2, 4, 6, 8], 0, None),
    "causal-3d-grouped": (dict(is_causal=1, q_num_heads=4, kv_num_heads=2, scale=0.2),
                          [2, 6, 32], [2, 6, 16], [2, 6, 16], 0, None),
    "grouped-past-bool-mask": (dict(), [2, 4, 6, 8], [2, 2, 6, 8], [2, 2, 6, 8], 3, "bool"),
    "3d-scale-softcap-float-mask": (dict(q_num_heads=4, kv_num_heads=4, scale=0.3, softcap=5.0),
                                    [2, 6, 32], [2, 6, 32], [2, 6, 32], 0, "float"),
}
# Read whole as the IR's causal attention (and written back as Attention):
# causal over one sequence, no mask, cache or soft cap.
WHOLE_ATTENTION = {"causal-heads", "causal-3d-grouped"}


def attention_model(path, case):
    attributes, q, k, v, past, mask = ATTENTION_CASES[case]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, f, s) for n, s in (("q", q), ("k", k), ("v", v))]
    names = ["q", "k", "v", ""]
    kv_seq = k[-2] + past
    if mask:
        inputs.append(helper.make_tensor_value_info(
            "mask", TensorProto.BOOL if mask == "bool" else f, [2, 1, q[-2], kv_seq] if len(q) == 4
            else [q[-2], kv_seq]))
        names[3] = "mask"
    outputs = ["y"]
    if past:
        inputs += [helper.make_tensor_value_info(n, f, [k[0], k[1], past, k[3]])
                   for n in ("past_k", "past_v")]
        names += ["past_k", "past_v"]
        outputs += ["present_k", "present_v"]
    nodes, inits = bait("q", "q2")
    nodes.append(helper.make_node("Attention", ["q2"] + names[1:], outputs, **attributes))
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info(o, f, None) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    rng = np.random.default_rng(5)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(np.float32) for i in inputs}
    if mask == "bool":
        feeds["mask"] = rng.random(feeds["mask"].shape) < 0.8
        feeds["mask"][..., 0] = True  # no row fully masked
    return feeds


@needs_cli
@pytest.mark.parametrize("target", ["onnx", "onnxruntime"])
@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention_of_opset_23_is_read_whole_or_as_its_operators(tmp_path, case, target):
    """Opset 23's causal Attention over one sequence is read whole, as the
    IR's causal attention, and written back as Attention for both targets
    (no onnxruntime operator, no domain but the standard one); the others
    are read as the products, mask and softmax they compute (every one an
    IR operator). The written model gives the original's outputs in
    onnxruntime."""
    model, out, report = tmp_path / "m.onnx", tmp_path / "m.opt.onnx", tmp_path / "r.json"
    feeds = attention_model(str(model), case)
    r = optimize(model, out, report, "--target", target)
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    assert {o.domain for o in written.opset_import} <= {"", "ai.onnx"}
    attention = [n for n in written.graph.node if n.op_type == "Attention"]
    if case in WHOLE_ATTENTION:
        assert len(attention) == 1, [n.op_type for n in written.graph.node]
        attributes = {a.name: helper.get_attribute_value(a) for a in attention[0].attribute}
        assert attributes["is_causal"] == 1 and attributes["kv_num_heads"] in (2, 4), attributes
    else:
        assert not attention
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


ROTARY_CASES = {
    # name: (attributes, x, cos/sin cache, position ids)
    "heads-halves-positions": (dict(), [2, 3, 5, 16], [12, 8], [2, 5]),
    "3d-interleaved-partial": (dict(num_heads=3, interleaved=1, rotary_embedding_dim=8),
                               [2, 5, 48], [2, 5, 4], None),
}


@needs_cli
@pytest.mark.parametrize("case", sorted(ROTARY_CASES))
def test_rotary_embedding_of_opset_23_is_read_as_its_operators(tmp_path, case):
    """Opset 23's RotaryEmbedding is read as the rotation it computes (every
    part an IR operator or folded), and the written model gives the
    original's outputs in onnxruntime."""
    attributes, x_shape, cache, positions = ROTARY_CASES[case]
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f, x_shape),
              helper.make_tensor_value_info("cos", f, cache),
              helper.make_tensor_value_info("sin", f, cache)]
    names = ["x1", "cos", "sin"]
    if positions:
        inputs.append(helper.make_tensor_value_info("positions", TensorProto.INT64, positions))
        names.append("positions")
    nodes, inits = bait("x", "x1")
    nodes.append(helper.make_node("RotaryEmbedding", names, ["y"], **attributes))
    graph = helper.make_graph(nodes, "rotary", inputs, [helper.make_tensor_value_info("y", f, x_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    path, out, r, written = saved_and_optimized(tmp_path, model)
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    assert "RotaryEmbedding" not in [n.op_type for n in written.graph.node]
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32),
             "cos": rng.standard_normal(cache).astype(np.float32),
             "sin": rng.standard_normal(cache).astype(np.float32)}
    if positions:
        feeds["positions"] = rng.integers(0, cache[0], positions).astype(np.int64)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def group_norm_reference(x, scale, bias, groups, epsilon, per_channel):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1).astype(np.float64)
    normalized = (g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + epsilon)
    if not per_channel:  # opset 18: a scale and a bias per group
        normalized = normalized * scale[:, None] + bias[:, None]
    y = normalized.reshape(x.shape)
    if per_channel:
        shape = [c] + [1] * (x.ndim - 2)
        y = y * scale.reshape(shape) + bias.reshape(shape)
    return y.astype(np.float32)


@needs_cli
@pytest.mark.parametrize("opset", [18, 21])
def test_group_normalization_is_read_as_an_instance_normalization_of_the_groups(tmp_path, opset):
    """GroupNormalization (opset 18: a scale per group; 21: per channel) is
    read as PyTorch's spelling of a GroupNorm, every part an IR operator,
    and the written model, at its opset, gives the operator's outputs at
    three batch sizes (the batch is symbolic)."""
    f, groups, channels = TensorProto.FLOAT, 3, 6
    per_channel = opset >= 21
    rng = np.random.default_rng(opset)
    affine = channels if per_channel else groups
    scale = rng.standard_normal(affine).astype(np.float32)
    bias = rng.standard_normal(affine).astype(np.float32)
    nodes, inits = bait("x", "x1")
    nodes.append(helper.make_node("GroupNormalization", ["x1", "scale", "bias"], ["y"], num_groups=groups,
                                  epsilon=1e-3))
    inits += [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")]
    graph = helper.make_graph(
        nodes, "group_norm", [helper.make_tensor_value_info("x", f, ["batch", channels, 4, 5])],
        [helper.make_tensor_value_info("y", f, ["batch", channels, 4, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version={18: 8, 21: 10}[opset])
    if opset >= 21:  # PyPI's checker calls the opset-18 form deprecated; exporters still write it
        onnx.checker.check_model(model, full_check=True)
    path, out, r, written = saved_and_optimized(tmp_path, model)
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    assert [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    ops = [n.op_type for n in written.graph.node]
    assert "InstanceNormalization" in ops and "GroupNormalization" not in ops, ops
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for batch in (1, 2, 5):
        x = rng.standard_normal((batch, channels, 4, 5)).astype(np.float32)
        want = group_norm_reference(x, scale, bias, groups, 1e-3, per_channel)
        np.testing.assert_allclose(session.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


@needs_cli
def test_causal_attention_spelled_out_at_opset_23_becomes_attention_for_the_onnx_target(tmp_path):
    """At opset 23 the rewrite to the IR's causal attention is open to
    `--target onnx` too, since it is written back as the standard Attention:
    softmax(q k^T / sqrt(d) + causal mask) v, heads merged, as PyTorch's
    eager attention exports it, becomes one Attention node."""
    f, (b, h, s, d) = TensorProto.FLOAT, (1, 4, 6, 8)
    mask = np.triu(np.full((s, s), -1e9, dtype=np.float32), k=1)
    nodes = [
        helper.make_node("Transpose", ["k"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "k_t"], ["scores"]),
        helper.make_node("Div", ["scores", "root_d"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["heads"]),
        helper.make_node("Transpose", ["heads"], ["sequence_first"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["sequence_first", "merged_shape"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array(np.sqrt(d), dtype=np.float32), "root_d"),
             numpy_helper.from_array(mask, "mask"),
             numpy_helper.from_array(np.array([b, s, h * d], dtype=np.int64), "merged_shape")]
    graph = helper.make_graph(
        nodes, "eager_attention", [helper.make_tensor_value_info(n, f, [b, h, s, d]) for n in "qkv"],
        [helper.make_tensor_value_info("y", f, [b, s, h * d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    path, out, _, written = saved_and_optimized(tmp_path, model, "--target", "onnx")
    ops = [n.op_type for n in written.graph.node]
    assert ops.count("Attention") == 1 and "Softmax" not in ops, ops
    assert {o.domain for o in written.opset_import} <= {"", "ai.onnx"}
    rng = np.random.default_rng(9)
    feeds = {n: rng.standard_normal((b, h, s, d)).astype(np.float32) for n in "qkv"}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


@needs_cli
def test_causal_attention_at_symbolic_sizes_is_read_whole_and_runs_at_every_size(tmp_path):
    """A grouped causal Attention over [batch, heads, seq, 8] with symbolic
    batch and seq is read whole and written back as Attention, and the
    written model gives the original's outputs at three sizes."""
    f = TensorProto.FLOAT
    nodes, inits = bait("q", "q2")
    nodes.append(helper.make_node("Attention", ["q2", "k", "v"], ["y"], is_causal=1))
    inputs = [helper.make_tensor_value_info("q", f, ["batch", 4, "seq", 8])]
    inputs += [helper.make_tensor_value_info(n, f, ["batch", 2, "seq", 8]) for n in "kv"]
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", f, ["batch", 4, "seq", 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    path, out, _, written = saved_and_optimized(tmp_path, model)
    assert [n.op_type for n in written.graph.node].count("Attention") == 1
    original = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    optimized = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    for batch, seq in ((1, 3), (2, 5), (3, 7)):
        feeds = {"q": rng.standard_normal((batch, 4, seq, 8)).astype(np.float32),
                 "k": rng.standard_normal((batch, 2, seq, 8)).astype(np.float32),
                 "v": rng.standard_normal((batch, 2, seq, 8)).astype(np.float32)}
        np.testing.assert_allclose(optimized.run(None, feeds)[0], original.run(None, feeds)[0],
                                   rtol=1e-5, atol=1e-5)


def rotary_tables(positions, head):
    """cos and sin tables [positions, head] whose halves repeat (the angles
    of cat(freqs, freqs), as Hugging Face's rotary embedding builds them)."""
    angles = np.outer(np.arange(positions), 10000.0 ** (-np.arange(head // 2) * 2.0 / head))
    angles = np.concatenate([angles, angles], axis=1)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


@needs_cli
def test_rotary_spelled_out_at_opset_23_becomes_rotary_embedding_for_the_onnx_target(tmp_path):
    """At opset 23 the rotary rewrite is open to `--target onnx`, written
    back as the standard RotaryEmbedding: x * cos + rotate_half(x) * sin
    (rotate_half by Slice, Neg and Concat, as PyTorch exports Hugging Face's
    rotary embedding) becomes one node, which the checker takes and
    onnxruntime runs with the original's outputs."""
    f, (b, h, s, d) = TensorProto.FLOAT, (2, 3, 6, 16)
    cos, sin = rotary_tables(s, d)
    nodes, inits = bait("x", "x1")
    nodes += [
        helper.make_node("Slice", ["x1", "zero", "half", "last"], ["first"]),
        helper.make_node("Slice", ["x1", "half", "end", "last"], ["second"]),
        helper.make_node("Neg", ["second"], ["minus_second"]),
        helper.make_node("Concat", ["minus_second", "first"], ["rotated"], axis=-1),
        helper.make_node("Mul", ["x1", "cos"], ["x_cos"]),
        helper.make_node("Mul", ["rotated", "sin"], ["rotated_sin"]),
        helper.make_node("Add", ["x_cos", "rotated_sin"], ["y"]),
    ]
    inits += [numpy_helper.from_array(np.array([v], dtype=np.int64), n)
              for n, v in (("zero", 0), ("half", d // 2), ("end", d), ("last", -1))]
    inits += [numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin")]
    graph = helper.make_graph(nodes, "rotary", [helper.make_tensor_value_info("x", f, [b, h, s, d])],
                              [helper.make_tensor_value_info("y", f, [b, h, s, d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    path, out, r, written = saved_and_optimized(tmp_path, model, "--target", "onnx")
    assert r["blocks"]["rotary"] == {"present": 1, "fused_before": 0, "fused_after": 1, "spelled_after": 0,
                                     "fused_at_load": 1}
    assert {o.domain for o in written.opset_import} <= {"", "ai.onnx"}
    rotary = [n for n in written.graph.node if n.op_type == "RotaryEmbedding"]
    assert len(rotary) == 1 and rotary[0].domain == "", [n.op_type for n in written.graph.node]
    assert "Neg" not in [n.op_type for n in written.graph.node]
    x = np.random.default_rng(5).standard_normal((b, h, s, d)).astype(np.float32)
    np.testing.assert_allclose(run(str(out), x), run(str(path), x), rtol=1e-5, atol=1e-5)


@needs_cli
@pytest.mark.parametrize("target", ["onnx", "onnxruntime"])
def test_rotary_embedding_at_positions_from_zero_is_read_whole_and_runs_at_every_size(tmp_path, target):
    """Opset 23's RotaryEmbedding at position ids 0..S-1 in every row,
    computed from x's shape (symbolic batch and sequence), is read as the
    IR's rotary embedding and written back as one node, the standard one for
    both targets, whose outputs are the original's at three sizes."""
    f, (h, d, positions) = TensorProto.FLOAT, (3, 16, 64)
    cos, sin = rotary_tables(positions, d)
    nodes, inits = bait("x", "x1")
    nodes += [
        helper.make_node("Shape", ["x1"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "batch_and_sequence"], ["sizes"], axis=0),
        helper.make_node("Gather", ["x_shape", "sequence_axis"], ["seq"], axis=0),
        helper.make_node("Range", ["start", "seq", "step"], ["row"]),
        helper.make_node("Expand", ["row", "sizes"], ["ids"]),
        helper.make_node("RotaryEmbedding", ["x1", "cos", "sin", "ids"], ["y"]),
    ]
    inits += [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
              for n, v in (("batch_and_sequence", [0, 2]), ("sequence_axis", 2), ("start", 0), ("step", 1))]
    inits += [numpy_helper.from_array(cos[:, : d // 2].copy(), "cos"),
              numpy_helper.from_array(sin[:, : d // 2].copy(), "sin")]
    shape = ["batch", h, "seq", d]
    graph = helper.make_graph(nodes, "rotary", [helper.make_tensor_value_info("x", f, shape)],
                              [helper.make_tensor_value_info("y", f, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    path, out, r, written = saved_and_optimized(tmp_path, model, "--target", target,
                                                "--dim", "batch=2", "--dim", "seq=5")
    assert r["opaque_ops_before"] == {}, r["opaque_reasons_before"]
    rotary = [n for n in written.graph.node if n.op_type == "RotaryEmbedding"]
    assert len(rotary) == 1, [n.op_type for n in written.graph.node]
    assert rotary[0].domain == ""  # from opset 23 on, for both targets
    original = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    optimized = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(6)
    for batch, seq in ((1, 3), (2, 5), (3, 12)):
        x = rng.standard_normal((batch, h, seq, d)).astype(np.float32)
        np.testing.assert_allclose(optimized.run(None, {"x": x})[0], original.run(None, {"x": x})[0],
                                   rtol=1e-5, atol=1e-5)


def relu_model(opset, ir_version):
    """x [2, 3] -> the product by 2 then by 0.5 -> Relu, at `opset` and `ir_version`."""
    nodes, inits = bait("x", "t2")
    nodes.append(helper.make_node("Relu", ["t2"], ["y"]))
    graph = helper.make_graph(
        nodes, "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=ir_version)


@needs_cli
@pytest.mark.parametrize("opset", [9, 13, 17, 18, 21])
@pytest.mark.parametrize("ir_version", list(range(3, 15)))
def test_every_ir_version_is_read_and_written_back(tmp_path, opset, ir_version):
    """Tools that build models with today's onnx.helper write the newest IR
    version at any opset (IR 14 at opset 17): saturn checks them at the IR
    version libonnx knows and writes the model back at its own, or at the
    one its opset needs where that is later. IR 3 lists the initializers as
    graph inputs, as its files did."""
    model = relu_model(opset, ir_version)
    if ir_version < 4:
        model.graph.input.extend(
            helper.make_tensor_value_info(t.name, t.data_type, t.dims)
            for t in model.graph.initializer)
    path, out, r, written = saved_and_optimized(tmp_path, model)
    assert [n.op_type for n in written.graph.node].count("Mul") == 1, r["decision"]
    needed = {9: 8, 13: 8, 17: 8, 18: 8, 21: 10}[opset]
    assert written.ir_version == max(ir_version, needed)
    x = np.random.default_rng(ir_version).standard_normal((2, 3)).astype(np.float32)
    if ir_version <= 11:  # the IR versions this onnxruntime reads
        np.testing.assert_allclose(run(str(out), x), run(str(path), x), rtol=1e-6)
