"""Quantized values moved, not dequantized: quantize_static puts a
QuantizeLinear/DequantizeLinear pair around every Reshape and Transpose
between two products (an attention layer's head split). saturn's exact
rules move the DequantizeLinear past the data movement and cancel each
QuantizeLinear with the DequantizeLinear before it (quantize-dequantized),
so the integer values move as they are and onnxruntime runs both products
in its integer kernels. Run by CTest (python_tests, the venv's python,
SATURN_CLI set)."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
from test_quantization import DenseInputs, loaded_ops, run, save_model

CLI = os.environ.get("SATURN_CLI")


def head_split(path):
    """x [1, 16, 32] -> MatMul (32x32) -> Reshape [1, 16, 4, 8] -> Transpose
    [0, 2, 1, 3] -> Reshape [1, 4, 128] -> MatMul (128x32)."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal((128, 32)).astype(np.float32) * 0.1, "w2"),
             numpy_helper.from_array(np.array([1, 16, 4, 8], np.int64), "heads"),
             numpy_helper.from_array(np.array([1, 4, 128], np.int64), "merged")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Reshape", ["m1", "heads"], ["r1"]),
             helper.make_node("Transpose", ["r1"], ["t1"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t1", "merged"], ["r2"]),
             helper.make_node("MatMul", ["r2", "w2"], ["y"])]
    save_model(path, nodes, inits, [1, 16, 32], [1, 4, 32])


def op_counts(path):
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    return {op: ops.count(op) for op in set(ops)}


@pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
def test_quantized_values_move_through_reshapes_and_transposes(tmp_path):
    floats, quantized, out = tmp_path / "f.onnx", tmp_path / "q.onnx", tmp_path / "o.onnx"
    head_split(floats)
    quantize_static(str(floats), str(quantized), DenseInputs(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    before = op_counts(quantized)
    # A pair on the input, on each product's output and after each movement.
    assert before["QuantizeLinear"] == 6, before
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--search", "greedy",
                           "--no-measure", "--quiet", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "r.json", encoding="utf-8") as f:
        report = json.load(f)
    applied = {r["rule"]: r["count"] for r in report["rules_applied"]}
    assert applied.get("quantize-dequantized", 0) > 0, applied
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    after = op_counts(out)
    # The input's and the products' pairs stay; the movements' are gone.
    assert after["QuantizeLinear"] == 3, after
    assert after["Reshape"] == 2 and after["Transpose"] == 1, after
    loaded = loaded_ops(out, tmp_path)
    assert "MatMul" not in loaded, loaded
    assert sum(op in ("QLinearMatMul", "MatMulInteger", "MatMulIntegerToFloat")
               for op in loaded) == 2, loaded
    # Exact by ONNX's definitions: the literal runs agree to the bit.
    x = np.random.default_rng(9).standard_normal((1, 16, 32)).astype(np.float32)
    np.testing.assert_array_equal(run(out, x, optimized=False), run(quantized, x, optimized=False))
