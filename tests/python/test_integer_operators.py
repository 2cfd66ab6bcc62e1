"""ONNX's integer operators as IR operators (DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv): each one's kernel
in saturn's interpreter gives onnxruntime's outputs to the bit on seeded
integer operands (per tensor and per column or channel, with and without a
bias), and the models onnxruntime's quantizer writes in the QOperator format
and by quantize_dynamic are read with none of them opaque but
DynamicQuantizeLinear (onnx/import_ops.cc says why) and written back to give the same
outputs. ONNX's own reference outputs are checked by
tests/onnx_io_test.cc (libonnx-testdata's node models). Run by CTest
(python_tests, the venv's python, SATURN_CLI and PYTHONPATH set).
"""
import functools
import json
import os
import platform

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

import saturn
from optimizing import optimize
from test_quantization import SeededInputs, run

needs_cli = pytest.mark.skipif(not os.environ.get("SATURN_CLI"), reason="SATURN_CLI unset")

ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int32: TensorProto.INT32,
             np.float32: TensorProto.FLOAT}


def integers(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@functools.cache
def pair_sums_saturate():
    """Whether onnxruntime multiplies uint8 by int8 on this CPU in pairs of
    products summed in 16 bits, which saturate: x86 without VNNI (its AVX2
    and plain AVX-512 kernels; onnxruntime's quantization guide, reduce_range).
    There its results leave ONNX's definition once a pair passes 32,767."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = f.read()
    return "avx512_vnni" not in flags and "avx_vnni" not in flags


def int8_weights(rng, shape):
    """int8 weights over their whole range, or over [-64, 63] where
    onnxruntime's pair sums saturate (pair_sums_saturate): 2 * 255 * 64 fits
    16 bits, so its results are ONNX's there too."""
    if pair_sums_saturate():
        return rng.integers(-64, 63, size=shape, endpoint=True).astype(np.int8)
    return integers(rng, shape, np.int8)


def one_node_model(path, op, inputs, initializers, outputs, **attributes):
    """A model of one `op` node: `inputs` are graph inputs, `initializers`
    constants (name -> array), `outputs` (name, dtype, shape)."""
    names = [name for name, _ in inputs] + list(initializers)
    order = attributes.pop("order", names)
    graph = helper.make_graph(
        [helper.make_node(op, order, [name for name, _, _ in outputs], **attributes)], op,
        [helper.make_tensor_value_info(name, ONNX_TYPE[a.dtype.type], a.shape) for name, a in inputs],
        [helper.make_tensor_value_info(name, ONNX_TYPE[dtype], shape) for name, dtype, shape in outputs],
        [numpy_helper.from_array(a, name) for name, a in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return {name: a for name, a in inputs}


def literal_run(path, feeds):
    """The outputs onnxruntime gives without its graph optimizations."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def assert_same_as_onnxruntime(path, feeds):
    expected = literal_run(path, feeds)
    model = saturn.load(str(path))
    assert model.op_counts.get("Opaque", 0) == 0, model.op_counts
    got = model.run(feeds)
    got = list(got.values()) if isinstance(got, dict) else list(got)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("per_column", [False, True])
def test_matmul_integer(tmp_path, per_column):
    rng = np.random.default_rng(1)
    b_zero = integers(rng, (6,) if per_column else (), np.int8)
    feeds = one_node_model(
        tmp_path / "m.onnx", "MatMulInteger", [("a", integers(rng, (2, 5, 16), np.uint8))],
        {"b": int8_weights(rng, (16, 6)), "a_zero": np.uint8(131), "b_zero": b_zero},
        [("y", np.int32, (2, 5, 6))])
    assert_same_as_onnxruntime(tmp_path / "m.onnx", feeds)


@pytest.mark.parametrize("activations", [np.uint8, np.int8])
def test_qlinear_matmul(tmp_path, activations):
    rng = np.random.default_rng(2)
    inits = {"a_scale": np.float32(0.05), "a_zero": integers(rng, (), activations),
             "b": int8_weights(rng, (32, 7)), "b_scale": np.float32(0.01),
             "b_zero": np.int8(0), "y_scale": np.float32(0.2), "y_zero": integers(rng, (), activations)}
    feeds = one_node_model(
        tmp_path / "m.onnx", "QLinearMatMul", [("a", integers(rng, (3, 4, 32), activations))], inits,
        [("y", activations, (3, 4, 7))],
        order=["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"])
    assert_same_as_onnxruntime(tmp_path / "m.onnx", feeds)


@pytest.mark.parametrize("group", [1, 2])
def test_conv_integer(tmp_path, group):
    rng = np.random.default_rng(3)
    feeds = one_node_model(
        tmp_path / "c.onnx", "ConvInteger", [("x", integers(rng, (1, 4, 9, 9), np.uint8))],
        {"w": integers(rng, (6, 4 // group, 3, 3), np.uint8), "x_zero": np.uint8(120),
         "w_zero": np.uint8(128)},
        [("y", np.int32, (1, 6, 5, 5))], pads=[1, 1, 1, 1], strides=[2, 2], group=group)
    assert_same_as_onnxruntime(tmp_path / "c.onnx", feeds)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv(tmp_path, per_channel, bias):
    rng = np.random.default_rng(4)
    channels = 8
    inits = {"x_scale": np.float32(0.03), "x_zero": np.uint8(110),
             "w": int8_weights(rng, (channels, 3, 3, 3)),
             "w_scale": (rng.uniform(0.002, 0.02, channels).astype(np.float32) if per_channel
                         else np.float32(0.01)),
             "w_zero": np.zeros(channels if per_channel else (), np.int8),
             "y_scale": np.float32(0.15), "y_zero": np.uint8(90)}
    order = ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"]
    if bias:
        inits["b"] = rng.integers(-3000, 3000, channels).astype(np.int32)
        order.append("b")
    feeds = one_node_model(
        tmp_path / "c.onnx", "QLinearConv", [("x", integers(rng, (1, 3, 12, 12), np.uint8))], inits,
        [("y", np.uint8, (1, channels, 12, 12))], order=order, pads=[1, 1, 1, 1])
    assert_same_as_onnxruntime(tmp_path / "c.onnx", feeds)


@pytest.mark.parametrize("values", ["mixed", "positive", "zeros"])
def test_dynamic_quantize_linear(tmp_path, values):
    """An IR operator in saturn's JSON models; read from ONNX as opaque
    (onnx/import_ops.cc says why)."""
    rng = np.random.default_rng(5)
    x = {"mixed": rng.standard_normal((4, 33)), "positive": rng.uniform(0.5, 3, (4, 33)),
         "zeros": np.zeros((4, 33))}[values].astype(np.float32)
    feeds = one_node_model(tmp_path / "d.onnx", "DynamicQuantizeLinear", [("x", x)], {},
                           [("y", np.uint8, (4, 33)), ("scale", np.float32, ()),
                            ("zero", np.uint8, ())])
    expected = literal_run(tmp_path / "d.onnx", feeds)
    model = {"format": "saturn-model", "version": 1, "name": "dql",
             "inputs": [{"name": "x", "shape": [4, 33], "dtype": "float32"}],
             "nodes": [{"op": "DynamicQuantizeLinear", "inputs": ["x"],
                        "outputs": ["y", "scale", "zero"]}],
             "outputs": ["y", "scale", "zero"]}
    (tmp_path / "d.json").write_text(json.dumps(model))
    got = saturn.load(str(tmp_path / "d.json")).run(feeds)
    for g, e in zip(got.values(), expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_array_equal(g, e)
    assert saturn.load(str(tmp_path / "d.onnx")).op_counts == {"Opaque": 1}


def float_net(path):
    """x [1, 3, 12, 12] -> Conv 3x3 (8) -> Relu -> Conv 1x1 (8) -> Flatten ->
    MatMul [1152, 10] -> Add -> y."""
    rng = np.random.default_rng(6)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32) * 0.3, "w2"),
             numpy_helper.from_array(rng.standard_normal((1152, 10)).astype(np.float32) * 0.05, "w3"),
             numpy_helper.from_array(rng.standard_normal(10).astype(np.float32) * 0.1, "b3")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"]),
             helper.make_node("Flatten", ["c2"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["m"]),
             helper.make_node("Add", ["m", "b3"], ["y"])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


@needs_cli
@pytest.mark.parametrize("way", ["qoperator", "dynamic"])
def test_quantizer_models_are_read_whole_and_written_back(tmp_path, way):
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    out, report = tmp_path / "q.opt.onnx", tmp_path / "r.json"
    float_net(floats)
    if way == "qoperator":
        quantize_static(str(floats), str(quantized), SeededInputs((1, 3, 12, 12)),
                        quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        expected = {"QLinearConv", "QLinearMatMul"}
    else:
        quantize_dynamic(str(floats), str(quantized), weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul", "Conv"])
        expected = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"}
    ops = {n.op_type for n in onnx.load(str(quantized)).graph.node}
    assert expected <= ops, ops
    r = optimize(quantized, out, report)
    # The QOperator format's Add is onnxruntime's QLinearAdd (com.microsoft),
    # an IR operator too (test_qoperator_int8.py); DynamicQuantizeLinear is
    # read as opaque (onnx/import_ops.cc).
    opaque = set(r["opaque_ops_before"])
    assert opaque == (set() if way == "qoperator" else {"DynamicQuantizeLinear"}), \
        r["opaque_reasons_before"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    assert expected <= {n.op_type for n in written.graph.node}
    x = np.random.default_rng(9).standard_normal((1, 3, 12, 12)).astype(np.float32)
    np.testing.assert_allclose(run(out, x, optimized=False), run(quantized, x, optimized=False),
                               rtol=1e-5, atol=1e-5)


def test_a_long_chain_of_runtime_contrib_operators_is_typed(tmp_path):
    """onnxruntime's QLinearAdd (com.microsoft) has no ONNX shape inference
    and the quantizer writes no type for its output: the importer types it
    (onnx/runtime_types.cc), a round of ONNX's inference after each, so a
    chain of 80 of them between standard operators reads (with 64 rounds a
    QOperator BERT-base failed at its sixth layer), each as the IR's
    QLinearAdd."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.uint8(128), "z"),
             numpy_helper.from_array(integers(rng, (4, 4), np.uint8), "b")]
    nodes, value = [], "x"
    for k in range(80):
        nodes.append(helper.make_node("QLinearAdd", [value, "s", "z", "b", "s", "z", "s", "z"],
                                      [f"a{k}"], domain="com.microsoft"))
        nodes.append(helper.make_node("Transpose", [f"a{k}"], [f"t{k}"]))
        value = f"t{k}"
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, [4, 4])],
                              [helper.make_tensor_value_info(value, TensorProto.UINT8, [4, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    onnx.save(model, str(tmp_path / "chain.onnx"))
    counts = saturn.load(str(tmp_path / "chain.onnx")).op_counts
    assert counts == {"QLinearAdd": 80, "Transpose": 80}, counts


def conv_integer_model(path, channels, size=24, seed=3):
    """ConvInteger of a uint8 input [1, channels, size, size] with a 1x1
    int8 kernel [32, channels, 1, 1] at the zero point -128, its int32 sums
    cast to float (quantize_dynamic's spelling). The first output channel's
    kernel is 127 throughout, so each |w - z| is 255 and its sums reach 255
    * 255 * `channels`; the others' are random."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (32, channels, 1, 1)).astype(np.int8)
    w[0] = 127
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.uint8(0), "xz"),
             numpy_helper.from_array(np.int8(-128), "wz")]
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["c"]),
             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(
        nodes, "conv_integer",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, size, size])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
              str(path))
    return w


def conv_net(path):
    """x [1, 16, 24, 24] -> Conv 3x3 (32) -> Relu -> depthwise Conv 3x3 ->
    Relu -> Conv 1x1 (32) -> y, as MobileNets stack them."""
    rng = np.random.default_rng(8)
    shapes = {"w1": (32, 16, 3, 3), "w2": (32, 1, 3, 3), "w3": (32, 32, 1, 1)}
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.2, name)
             for name, shape in shapes.items()]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=32),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["y"])]
    graph = helper.make_graph(
        nodes, "convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 24, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 24, 24])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


def optimize_for_onnxruntime(path, out, report):
    """saturn optimize with its default cost (onnxruntime's kernels as
    measured), greedy, not timed: the operators written and the rules
    applied."""
    applied = {r["rule"] for r in optimize(path, out, report, cost=None)["rules_applied"]}
    return {n.op_type for n in onnx.load(str(out)).graph.node}, applied


@needs_cli
@pytest.mark.parametrize("way", ["net", "bound"])
def test_conv_integer_runs_as_an_exact_float_conv(tmp_path, way):
    """quantize_dynamic's ConvInteger, cast to float, is written as a float
    Conv of the operands less their zero points (conv-integer-in-float,
    rules/tensor/quantization.rules): onnxruntime's ConvInteger runs several
    times slower than its float Conv. The sums are whole numbers float32
    holds, so a lone ConvInteger (`bound`) gives the input's outputs to the
    bit in onnxruntime (its optimized kernels and its literal ones): 258
    channels of |w - z| = 255 reach 16,776,450 with the input at 255, the
    most float32 holds exactly below 2^24. In a network (`net`) the float
    rewrites around the convolutions (the scales moved into the kernels)
    round as float rewrites do. The written file keeps the kernels int8."""
    quantized, out = tmp_path / "q.onnx", tmp_path / "q.opt.onnx"
    if way == "net":
        floats = tmp_path / "f.onnx"
        conv_net(floats)
        quantize_dynamic(str(floats), str(quantized), weight_type=QuantType.QInt8)
        feeds = [np.random.default_rng(s).standard_normal((1, 16, 24, 24)).astype(np.float32)
                 for s in range(4)]
    else:
        conv_integer_model(quantized, 258)
        feeds = [np.full((1, 258, 24, 24), 255, np.uint8),
                 integers(np.random.default_rng(5), (1, 258, 24, 24), np.uint8)]
    assert "ConvInteger" in {n.op_type for n in onnx.load(str(quantized)).graph.node}
    ops, _ = optimize_for_onnxruntime(quantized, out, tmp_path / "r.json")
    assert "ConvInteger" not in ops and "Conv" in ops, ops
    written = onnx.load(str(out))
    assert any(i.data_type == TensorProto.INT8 and len(i.dims) == 4 for i in written.graph.initializer)
    for x in feeds:
        for optimized in (True, False):
            if way == "net":
                np.testing.assert_allclose(run(out, x, optimized), run(quantized, x, optimized),
                                           rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(run(out, x, optimized), run(quantized, x, optimized))


@needs_cli
def test_conv_integer_past_the_bound_runs_as_two_digit_convs(tmp_path):
    """One channel more than the bound above (259 * 255 * 255 > 2^24): the
    one float convolution could round, so the kernel is split into its
    base-16 digits (conv-integer-in-float-digits), each digit's sums exact;
    the float rules may then add the two kernels back (conv-add-kernels),
    which rounds as any float convolution does."""
    quantized, out = tmp_path / "q.onnx", tmp_path / "q.opt.onnx"
    conv_integer_model(quantized, 259)
    ops, applied = optimize_for_onnxruntime(quantized, out, tmp_path / "r.json")
    assert "ConvInteger" not in ops and "Conv" in ops, ops
    assert "conv-integer-in-float-digits" in applied and "conv-integer-in-float" not in applied, applied
    for x in (np.full((1, 259, 24, 24), 255, np.uint8),
              integers(np.random.default_rng(5), (1, 259, 24, 24), np.uint8)):
        np.testing.assert_allclose(run(out, x), run(quantized, x), rtol=1e-6)


@needs_cli
def test_conv_integer_past_the_digits_bound_stays(tmp_path):
    """A high digit of 16 throughout 4,113 channels passes 2^24 (255 * 16 *
    4113): neither rule applies, and ConvInteger stays."""
    quantized, out = tmp_path / "q.onnx", tmp_path / "q.opt.onnx"
    conv_integer_model(quantized, 4113, size=2)
    ops, applied = optimize_for_onnxruntime(quantized, out, tmp_path / "r.json")
    assert "ConvInteger" in ops, ops
    assert not {"conv-integer-in-float", "conv-integer-in-float-digits"} & applied, applied
