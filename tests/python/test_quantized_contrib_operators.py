"""onnxruntime's quantized contrib operators (com.microsoft) beyond
QLinearAdd and QLinearMul: QGemm, QLinearConcat, QLinearSigmoid,
QLinearLeakyRelu, QLinearGlobalAveragePool and QLinearSoftmax are IR
operators (nothing opaque), computed as onnxruntime computes them and
written back as they came. onnxruntime builds its unary kernels from lookup
tables and its products' requantization in vector code, so an element may
land one step away from saturn's formula (measured here: most are equal).
An int8 model of them in the QOperator format comes out in uint8. Run by
CTest (python_tests, the venv's python, SATURN_CLI and PYTHONPATH set)."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

import saturn
from test_integer_operators import int8_weights, integers, literal_run
from test_quantization import SeededInputs, run

CLI = os.environ.get("SATURN_CLI")

ONNX_TYPE = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32}


def contrib_model(path, op, inputs, initializers, order, out_shape, out_dtype, model_opset=13,
                  **attributes):
    """One com.microsoft `op` node: `inputs` graph inputs (name -> array),
    `initializers` constants, read in `order` ("" for an absent input)."""
    node = helper.make_node(op, order, ["y"], domain="com.microsoft", **attributes)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, ONNX_TYPE[a.dtype.type], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", ONNX_TYPE[out_dtype], out_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", model_opset),
                                                      helper.make_opsetid("com.microsoft", 1)],
                                ir_version=8), str(path))
    return inputs


def quantization(rng, dtype, prefix, scale):
    return {f"{prefix}_scale": np.float32(scale), f"{prefix}_zero": integers(rng, (), dtype)}


def assert_as_onnxruntime(path, feeds, op):
    model = saturn.load(str(path))
    assert model.op_counts == {op: 1}, model.op_counts
    got = model.run(feeds)
    got = next(iter(got.values())) if isinstance(got, dict) else got[0]
    expected = literal_run(path, feeds)[0]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    steps = np.abs(got.astype(np.int32) - expected.astype(np.int32))
    assert steps.max() <= 1, steps.max()
    assert np.mean(steps == 0) >= 0.9, np.mean(steps == 0)
    # Written back as it came: one node of the operator, its attributes kept
    # (defaults written out).
    written = path.with_name("written.onnx")
    model.save(str(written))
    nodes = onnx.load(str(written)).graph.node
    source = onnx.load(str(path)).graph.node[0]
    [node] = [n for n in nodes if n.op_type == op]
    assert node.domain == "com.microsoft"
    kept = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for a in source.attribute:
        assert kept[a.name] == pytest.approx(helper.get_attribute_value(a)), a.name
    np.testing.assert_array_equal(literal_run(written, feeds)[0], expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("trans_a,trans_b,alpha,bias", [(0, 0, 1.0, "n"), (0, 1, 1.0, "mn"),
                                                       (1, 0, 0.5, "none"), (0, 1, 1.0, "n")])
def test_qgemm(tmp_path, dtype, trans_a, trans_b, alpha, bias):
    rng = np.random.default_rng(3)
    m, k, n = 4, 16, 8
    a = integers(rng, (k, m) if trans_a else (m, k), dtype)
    inits = {**quantization(rng, dtype, "a", 0.02)}
    # b int8 with a zero point per column of the product.
    inits["b"] = int8_weights(rng, (n, k) if trans_b else (k, n))
    inits["b_scale"] = rng.uniform(0.002, 0.01, n).astype(np.float32)
    inits["b_zero"] = np.zeros(n, np.int8)
    inits.update(quantization(rng, dtype, "y", 0.05))
    order = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "", "y_scale", "y_zero"]
    if bias != "none":
        inits["c"] = rng.integers(-2000, 2000, (m, n) if bias == "mn" else (n,)).astype(np.int32)
        order[6] = "c"
    path = tmp_path / "m.onnx"
    feeds = contrib_model(path, "QGemm", {"a": a}, inits, order, [m, n], dtype,
                          transA=trans_a, transB=trans_b, alpha=alpha)
    assert_as_onnxruntime(path, feeds, "QGemm")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_concat(tmp_path, dtype):
    rng = np.random.default_rng(4)
    inputs = {"x1": integers(rng, (2, 3, 4), dtype), "x2": integers(rng, (2, 5, 4), dtype)}
    inits = {**quantization(rng, dtype, "y", 0.05), **quantization(rng, dtype, "x1", 0.03),
             **quantization(rng, dtype, "x2", 0.07)}
    order = ["y_scale", "y_zero", "x1", "x1_scale", "x1_zero", "x2", "x2_scale", "x2_zero"]
    path = tmp_path / "m.onnx"
    contrib_model(path, "QLinearConcat", inputs, inits, order, [2, 8, 4], dtype, axis=1)
    assert_as_onnxruntime(path, inputs, "QLinearConcat")


UNARY = [("QLinearSigmoid", [2, 3, 16], {}, 13),
         ("QLinearLeakyRelu", [2, 3, 16], {"alpha": 0.1}, 13),
         ("QLinearGlobalAveragePool", [2, 3, 5, 5], {"channels_last": 0}, 13),
         ("QLinearGlobalAveragePool", [2, 5, 5, 3], {"channels_last": 1}, 13),
         ("QLinearSoftmax", [2, 3, 16], {"opset": 13}, 13),
         ("QLinearSoftmax", [2, 3, 16], {"opset": 12, "axis": 1}, 12)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("op,shape,attributes,opset", UNARY)
def test_quantized_unary(tmp_path, dtype, op, shape, attributes, opset):
    rng = np.random.default_rng(6)
    x = integers(rng, shape, dtype)
    inits = {**quantization(rng, dtype, "x", 0.04), **quantization(rng, dtype, "y", 0.02)}
    if op == "QLinearSoftmax":  # outputs in [0, 1]
        inits["y_scale"] = np.float32(1 / 256)
        inits["y_zero"] = np.array(np.iinfo(dtype).min, dtype)
    out_shape = list(shape)
    if op == "QLinearGlobalAveragePool":
        last = attributes["channels_last"]
        out_shape = [shape[0]] + [1] * (len(shape) - 2) + [shape[-1]] if last else shape[:2] + [1, 1]
    path = tmp_path / "m.onnx"
    contrib_model(path, op, {"x": x}, inits, ["x", "x_scale", "x_zero", "y_scale", "y_zero"],
                  out_shape, dtype, model_opset=opset, **attributes)
    assert_as_onnxruntime(path, {"x": x}, op)


# The input naming each quantized operator's output zero point, whose type
# is its output's.
OUTPUT_ZERO_POINT = {"QLinearConv": 7, "QLinearMatMul": 7, "QLinearAdd": 7, "QLinearMul": 7,
                     "QGemm": 8, "QLinearConcat": 1, "QLinearSigmoid": 4, "QLinearLeakyRelu": 4,
                     "QLinearGlobalAveragePool": 4, "QLinearSoftmax": 4}


def output_types(path):
    model = onnx.load(str(path))
    types = {i.name: i.data_type for i in model.graph.initializer}
    found = {}
    for n in model.graph.node:
        if n.op_type in OUTPUT_ZERO_POINT:
            found.setdefault(n.op_type, set()).add(types.get(n.input[OUTPUT_ZERO_POINT[n.op_type]]))
    return found


def branching_net(path):
    """x [1, 3, 12, 12] -> Conv 3x3 (8) -> LeakyRelu -> (Conv 1x1 (8) ->
    Sigmoid) Concat with itself -> GlobalAveragePool -> Flatten -> Gemm
    (16 -> 10) -> Softmax: the operators the QOperator format quantizes
    into onnxruntime's contrib kernels."""
    rng = np.random.default_rng(21)
    w = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.3  # noqa: E731
    inits = [numpy_helper.from_array(a, n) for n, a in
             (("w1", w(8, 3, 3, 3)), ("b1", w(8)), ("w2", w(8, 8, 1, 1)), ("b2", w(8)),
              ("wg", w(10, 16)), ("bg", w(10)))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["l"], alpha=0.1),
             helper.make_node("Conv", ["l", "w2", "b2"], ["c2"]),
             helper.make_node("Sigmoid", ["c2"], ["s"]),
             helper.make_node("Concat", ["l", "s"], ["cat"], axis=1),
             helper.make_node("GlobalAveragePool", ["cat"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["g"], transB=1),
             helper.make_node("Softmax", ["g"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "branching",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
              str(path))


@pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
def test_an_int8_qoperator_model_of_contrib_operators_is_written_in_uint8(tmp_path):
    """Every quantized operator of the model moves to uint8 (the rules
    qgemm-bias-int8-to-uint8, qlinearconcat-int8-to-uint8 and the like), the
    requantizations between them cancel, and the result equals the input
    in the interpreter and is as accurate against the float model."""
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    out, report = tmp_path / "q.opt.onnx", tmp_path / "r.json"
    branching_net(floats)
    quantize_static(str(floats), str(quantized), SeededInputs((1, 3, 12, 12)),
                    quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    before = output_types(quantized)
    assert set(before) == {"QLinearConv", "QLinearLeakyRelu", "QLinearSigmoid", "QLinearConcat",
                           "QLinearGlobalAveragePool", "QGemm", "QLinearSoftmax"}, before
    assert all(t == {TensorProto.INT8} for t in before.values()), before
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--report", str(report),
                           "--no-measure", "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert "matched in the interpreter" in r["self_check"], r["self_check"]
    after = output_types(out)
    assert after == {k: {TensorProto.UINT8} for k in before}, after
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("QuantizeLinear") == 1 and ops.count("DequantizeLinear") == 1, ops
    x = np.random.default_rng(9).standard_normal((1, 3, 12, 12)).astype(np.float32)
    reference = run(floats, x)
    distance = lambda y: np.linalg.norm(y - reference) / np.linalg.norm(reference)  # noqa: E731
    assert distance(run(out, x)) <= distance(run(quantized, x)) * 1.1 + 1e-3


def packed(values, bits):
    """Rows of unsigned `bits`-wide values packed into bytes, from each
    byte's low bits."""
    per_byte = 8 // bits
    rows, count = values.shape
    out = np.zeros((rows, -(-count // per_byte)), np.uint8)
    for i in range(count):
        out[:, i // per_byte] |= (values[:, i].astype(np.uint8) << (i % per_byte * bits)).astype(np.uint8)
    return out


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("zero_points", [True, False])
def test_matmul_nbits(tmp_path, bits, zero_points):
    """onnxruntime's MatMulNBits (accuracy level 0: float32 throughout):
    float32 a times b's blocks, K not a multiple of the block."""
    rng = np.random.default_rng(8)
    k, n, block = 40, 12, 16
    blocks = -(-k // block)
    q = rng.integers(0, 2 ** bits, (n, blocks * block))
    q[:, k:] = 0  # the padding of the last block
    b = packed(q, bits).reshape(n, blocks, block * bits // 8)
    inits = {"b": b, "scales": rng.uniform(0.01, 0.05, n * blocks).astype(np.float32)}
    order = ["a", "b", "scales"]
    if zero_points:
        inits["zeros"] = packed(rng.integers(0, 2 ** bits, (n, blocks)), bits).reshape(-1)
        order.append("zeros")
    a = rng.standard_normal((2, 3, k)).astype(np.float32)
    path = tmp_path / "m.onnx"
    node = helper.make_node("MatMulNBits", order, ["y"], domain="com.microsoft", K=k, N=n,
                            bits=bits, block_size=block)
    graph = helper.make_graph(
        [node], "nbits", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, n])],
        [numpy_helper.from_array(v, name) for name, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                      helper.make_opsetid("com.microsoft", 1)],
                                ir_version=8), str(path))
    model = saturn.load(str(path))
    assert model.op_counts == {"MatMulNBits": 1}, model.op_counts
    got = model.run({"a": a})
    got = next(iter(got.values())) if isinstance(got, dict) else got[0]
    expected = literal_run(path, {"a": a})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    written = tmp_path / "written.onnx"
    model.save(str(written))
    np.testing.assert_allclose(literal_run(written, {"a": a})[0], expected, rtol=1e-5, atol=1e-5)
