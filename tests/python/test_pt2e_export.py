"""A model quantized by PyTorch's PT2E flow and exported by the dynamo
exporter (tests/data/exports/pt2e_xnnpack_block.onnx, written by
pt2e_block.py beside it: torchao's symmetric XNNPACK quantizer, int8
activations, a residual block). As it comes, onnxruntime runs two of its
three convolutions in float between DequantizeLinear nodes (int8
activations on x86); saturn reads it whole and writes it with
the activations in uint8, which onnxruntime runs in its integer kernels
only, as accurate against the float module's export. Run by CTest
(python_tests, the venv's python, SATURN_CLI set).
"""
import json
import os
import subprocess

import onnx
import pytest
from test_quantization import assert_as_accurate, loaded_ops

CLI = os.environ.get("SATURN_CLI")
EXPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "exports")
QUANTIZED = os.path.join(EXPORTS, "pt2e_xnnpack_block.onnx")
FLOATS = os.path.join(EXPORTS, "pt2e_block_float.onnx")


@pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
def test_a_pt2e_export_with_int8_activations_runs_in_the_integer_kernels(tmp_path):
    before = loaded_ops(QUANTIZED, tmp_path)
    assert before.count("Conv") == 2 and before.count("QLinearConv") == 1, before
    out, report = tmp_path / "o.onnx", tmp_path / "r.json"
    done = subprocess.run([CLI, "optimize", QUANTIZED, "-o", str(out), "--search", "greedy",
                           "--no-measure", "--quiet", "--report", str(report)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(report, encoding="utf-8") as f:
        r = json.load(f)
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert r["decision"]["taken"], r["decision"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    after = loaded_ops(out, tmp_path)
    assert after.count("QLinearConv") == 3 and after.count("QLinearAdd") == 1, after
    assert "Conv" not in after and "Add" not in after, after
    assert_as_accurate(out, QUANTIZED, FLOATS)
