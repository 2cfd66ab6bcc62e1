"""The QOperator format with int8 activations, as onnxruntime's quantizer
writes it by default: onnxruntime's QLinearAdd and QLinearMul are IR
operators whose kernels follow onnxruntime's reference formula, MaxPool
reads 8-bit integers, and saturn rewrites every integer operator to uint8
activations (quantization.rules: qlinearconv-int8-to-uint8 and the like),
which onnxruntime's x86 kernels multiply about twenty times faster. Run by
CTest (python_tests, the venv's python, SATURN_CLI and PYTHONPATH set)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

from test_integer_operators import integers
from test_quantized_contrib_operators import assert_as_onnxruntime, contrib_model
from test_quantization import SeededInputs, run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "ort", "harness"))
import quantized as harness  # noqa: E402  (the harness is a script, not a package)

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")


def binary_model(path, op, dtype, b_shape):
    """One com.microsoft QLinearAdd or QLinearMul of a [2, 3, 8] by b of
    `b_shape` (broadcast), both graph inputs, the scales and zero points
    seeded initializers."""
    rng = np.random.default_rng(5)
    inits = {n: np.float32(s) for n, s in (("a_scale", 0.031), ("b_scale", 0.047), ("c_scale", 0.06))}
    inits.update({n: integers(rng, (), dtype) for n in ("a_zero", "b_zero", "c_zero")})
    inputs = {"a": integers(rng, (2, 3, 8), dtype), "b": integers(rng, b_shape, dtype)}
    order = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "c_scale", "c_zero"]
    return contrib_model(path, op, inputs, inits, order, [2, 3, 8], dtype)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("b_shape", [[2, 3, 8], [1, 1, 8]])
def test_quantized_binary_operators_compute_as_onnxruntime(tmp_path, op, dtype, b_shape):
    """Read as IR operators (nothing opaque) and computed as onnxruntime's
    reference kernel does; its vector kernels scale by fixed-point
    multipliers, so an element may land one step away (measured here: never
    more, and most elements equal)."""
    path = tmp_path / "m.onnx"
    assert_as_onnxruntime(path, binary_model(path, op, dtype, b_shape), op)


def residual_net(path):
    """x [1, 3, 16, 16] -> Conv 3x3 (8) -> Relu -> MaxPool 2x2 -> Conv 3x3
    (8) -> Add (the MaxPool's output) -> Relu -> Flatten -> MatMul [512, 10]
    -> Mul by a [10] -> y: every operator the QOperator format quantizes,
    with int8 activations moved through a MaxPool and a shared value."""
    rng = np.random.default_rng(12)
    w = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.3  # noqa: E731
    inits = [numpy_helper.from_array(a, n) for n, a in
             (("w1", w(8, 3, 3, 3)), ("b1", w(8)), ("w2", w(8, 8, 3, 3)), ("b2", w(8)),
              ("w3", w(512, 10) * 0.2), ("g", w(10) + 1))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "p"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["m"]),
             helper.make_node("Mul", ["m", "g"], ["y"])]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


def activation_types(path):
    """The element type of input 0 of each integer operator, by operator."""
    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(model.graph.value_info) + list(model.graph.input)}
    types.update({i.name: i.data_type for i in model.graph.initializer})
    found = {}
    for n in model.graph.node:
        if n.op_type.startswith("QLinear"):
            # The zero point gives the operand's type where inference does
            # not reach (onnxruntime's operators have none in libonnx).
            found.setdefault(n.op_type, set()).add(types.get(n.input[2]))
    return found


@needs_cli
def test_an_int8_qoperator_model_is_written_with_uint8_activations(tmp_path):
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    out, report = tmp_path / "q.opt.onnx", tmp_path / "r.json"
    residual_net(floats)
    quantize_static(str(floats), str(quantized), SeededInputs((1, 3, 16, 16)),
                    quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    before = activation_types(quantized)
    assert before == {"QLinearConv": {TensorProto.INT8}, "QLinearAdd": {TensorProto.INT8},
                      "QLinearMatMul": {TensorProto.INT8}, "QLinearMul": {TensorProto.INT8}}, before
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--report", str(report),
                           "--no-measure", "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(report.read_text())
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert not r["kept_input"], r["decision"]
    # The interpreter ran the result beside the input: equal to the bit.
    assert "matched in the interpreter" in r["self_check"], r["self_check"]
    applied = {a["rule"] for a in r["rules_applied"]}
    assert {"qlinearconv-bias-int8-to-uint8", "qlinearmatmul-int8-to-uint8",
            "qlinearadd-int8-to-uint8", "qlinearmul-int8-to-uint8"} <= applied, applied
    after = activation_types(out)
    assert after == {k: {TensorProto.UINT8} for k in before}, after
    # The requantizations between the integer operators cancel: one
    # QuantizeLinear (the input's) and one DequantizeLinear (the output's),
    # the MaxPool and the Reshape between them on integers.
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("QuantizeLinear") == 1 and ops.count("DequantizeLinear") == 1, ops
    # A float model that is not there is refused before any search.
    missing = subprocess.run([CLI, "optimize", str(quantized), "-o", str(tmp_path / "m.onnx"),
                              "--float-model", str(tmp_path / "missing.onnx"), "--quiet"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "missing.onnx' is not a file" in missing.stderr, missing
    assert not (tmp_path / "m.onnx").exists()
    x = np.random.default_rng(9).standard_normal((1, 3, 16, 16)).astype(np.float32)
    reference = run(floats, x)
    distance = lambda y: np.linalg.norm(y - reference) / np.linalg.norm(reference)  # noqa: E731
    assert distance(run(out, x)) <= distance(run(quantized, x)) * 1.1 + 1e-3


def test_the_float_reference_of_a_qoperator_model_is_float(tmp_path):
    """The measured check's reference for a QOperator model (the harness's
    quantized.float_reference): its integer operators written as float ones
    between Quantize/Dequantize pairs, the pairs taken out (a Relu where the
    quantizer folded one into the output's range), close to the float
    model it quantizes."""
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    residual_net(floats)
    quantize_static(str(floats), str(quantized), SeededInputs((1, 3, 16, 16)),
                    quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    reference = harness.float_reference(str(quantized), str(tmp_path))
    ops = [n.op_type for n in onnx.load(reference).graph.node]
    assert not [op for op in ops if op.startswith("QLinear") or op == "QuantizeLinear"], ops
    assert {"Conv", "MaxPool", "Add", "MatMul", "Mul", "Relu"} <= set(ops), ops
    x = np.random.default_rng(9).standard_normal((1, 3, 16, 16)).astype(np.float32)
    expected = run(floats, x)
    assert harness.relative_distance(run(reference, x), expected) < \
        harness.relative_distance(run(quantized, x), expected)
