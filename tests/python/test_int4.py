"""Opset 21's blocked scales and 4-bit integers, as onnxruntime's 4-bit
weight quantizer writes a decoder (MatMulNBitsQuantizer, QDQ format): a
DequantizeLinear of an int4 or uint4 weight with one scale and zero point
per block of the reduced axis, the last block shorter. saturn reads them as
its QuantizeLinear/DequantizeLinear (no opaque operator), its interpreter
gives onnxruntime's outputs to the bit (round half to even, saturation to
[-8, 7] and [0, 15]), and the model it writes keeps the 4-bit weights packed
two to a byte, inline or in an external data file. Run by CTest
(python_tests, the venv's python, SATURN_CLI and PYTHONPATH set)."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import saturn
from optimizing import optimize
from test_integer_operators import literal_run

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")

K, N, BLOCK = 70, 260, 32  # 70 rows: blocks of 32, 32 and 6
FOUR_BIT = {"int4": (TensorProto.INT4, -8, 7), "uint4": (TensorProto.UINT4, 0, 15)}


def four_bit_model(path, kind, external=False):
    """x [3, K] -> Mul 2 -> Mul 0.5 (which saturn folds) -> QuantizeLinear
    and DequantizeLinear per block of 16 along K (4-bit) -> MatMul with a
    4-bit weight [K, N] dequantized per block of 32 along K. Outputs the
    product y and both dequantized values (xd, wd)."""
    elem, low, high = FOUR_BIT[kind]
    rng = np.random.default_rng(11)
    blocks = -(-K // BLOCK)

    def four_bit(name, shape):
        return helper.make_tensor(name, elem, shape,
                                  rng.integers(low, high, size=shape, endpoint=True).flatten().tolist())

    act_blocks = -(-K // 16)
    inits = [four_bit("w", [K, N]),
             numpy_helper.from_array((rng.random((blocks, N)) * 0.05 + 0.01).astype(np.float32), "w_scale"),
             four_bit("w_zero", [blocks, N]),
             numpy_helper.from_array((rng.random((3, act_blocks)) * 0.2 + 0.05).astype(np.float32), "x_scale"),
             four_bit("x_zero", [3, act_blocks]),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("Mul", ["x", "two"], ["doubled"]),
             helper.make_node("Mul", ["doubled", "half"], ["x1"]),
             helper.make_node("QuantizeLinear", ["x1", "x_scale", "x_zero"], ["xq"], axis=1, block_size=16),
             helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], axis=1,
                              block_size=16),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], axis=0,
                              block_size=BLOCK),
             helper.make_node("MatMul", ["xd", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "four_bit", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, N]),
                               helper.make_tensor_value_info("xd", TensorProto.FLOAT, [3, K]),
                               helper.make_tensor_value_info("wd", TensorProto.FLOAT, [K, N])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    if external:
        onnx.save(model, str(path), save_as_external_data=True, location=path.name + ".data",
                  size_threshold=0)
    else:
        onnx.save(model, str(path))


def feeds():
    # Wide enough that the quantization saturates at both ends of the range.
    x = np.random.default_rng(4).standard_normal((3, K)).astype(np.float32) * 3
    x[0, :4] = [0.5 * 0.05, 1.5 * 0.05, 2.5 * 0.05, -0.5 * 0.05]  # ties, rounded to even
    return {"x": x}


@pytest.mark.parametrize("kind", sorted(FOUR_BIT))
def test_blocked_4bit_quantization_is_read_and_computed_as_onnxruntime_does(tmp_path, kind):
    path = tmp_path / "m.onnx"
    four_bit_model(path, kind)
    model = saturn.load(str(path))
    assert model.op_counts.get("Opaque", 0) == 0, model.op_counts
    assert model.op_counts["DequantizeLinear"] == 2 and model.op_counts["QuantizeLinear"] == 1
    got = model.run(feeds())
    got = list(got.values()) if isinstance(got, dict) else list(got)
    want = literal_run(path, feeds())
    np.testing.assert_array_equal(got[1], want[1])  # the quantization, to the bit
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)  # sums in another order


@needs_cli
@pytest.mark.parametrize("external", [False, True])
@pytest.mark.parametrize("kind", sorted(FOUR_BIT))
def test_a_4bit_model_is_written_back_with_its_packed_weights(tmp_path, kind, external):
    path, out = tmp_path / "m.onnx", tmp_path / "m.opt.onnx"
    four_bit_model(path, kind, external)
    report = optimize(path, out, tmp_path / "r.json")
    assert not report["kept_input"] and report["opaque_ops_before"] == {}, report["decision"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    assert max(o.version for o in written.opset_import if o.domain in ("", "ai.onnx")) == 21
    weights = {t.name: t for t in written.graph.initializer}
    elem = FOUR_BIT[kind][0]
    assert weights["w"].data_type == elem and len(weights["w"].raw_data) == (K * N + 1) // 2
    assert numpy_helper.to_array(weights["w"]).tolist() == numpy_helper.to_array(
        {t.name: t for t in onnx.load(str(path)).graph.initializer}["w"]).tolist()
    blocked = [n for n in written.graph.node if n.op_type == "DequantizeLinear" and
               any(a.name == "block_size" and a.i == BLOCK for a in n.attribute)]
    assert len(blocked) == 1 and [n.op_type for n in written.graph.node].count("Mul") < 2
    for got, want in zip(literal_run(out, feeds()), literal_run(path, feeds())):
        np.testing.assert_array_equal(got, want)


@needs_cli
def test_4bit_data_of_the_wrong_length_is_refused(tmp_path):
    path = tmp_path / "m.onnx"
    four_bit_model(path, "int4")
    model = onnx.load(str(path))
    w = next(t for t in model.graph.initializer if t.name == "w")
    w.raw_data = numpy_helper.to_array(w).astype(np.int8).tobytes()  # one byte per element: unpacked
    del w.int32_data[:]
    onnx.save(model, str(path))
    done = subprocess.run([CLI, "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tensor 'w' holds 18200 bytes, expects 9100" in done.stderr, done.stderr
