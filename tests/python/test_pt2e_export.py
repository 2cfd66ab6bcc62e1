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

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from test_quantization import assert_as_accurate, loaded_ops

CLI = os.environ.get("SATURN_CLI")
EXPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "exports")
QUANTIZED = os.path.join(EXPORTS, "pt2e_xnnpack_block.onnx")
X86 = os.path.join(EXPORTS, "pt2e_x86_block.onnx")
FLOATS = os.path.join(EXPORTS, "pt2e_block_float.onnx")


def optimized(path, tmp_path):
    """saturn optimize PATH (greedy search, no timing) to tmp_path/o.onnx,
    read whole and taken: its report and the model it wrote (checked)."""
    out, report = tmp_path / "o.onnx", tmp_path / "r.json"
    done = subprocess.run([CLI, "optimize", path, "-o", str(out), "--search", "greedy",
                           "--no-measure", "--quiet", "--report", str(report)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(report, encoding="utf-8") as f:
        r = json.load(f)
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert r["decision"]["taken"], r["decision"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    return r, written


@pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
def test_a_pt2e_export_with_int8_activations_runs_in_the_integer_kernels(tmp_path):
    before = loaded_ops(QUANTIZED, tmp_path)
    assert before.count("Conv") == 2 and before.count("QLinearConv") == 1, before
    out = tmp_path / "o.onnx"
    optimized(QUANTIZED, tmp_path)
    after = loaded_ops(out, tmp_path)
    assert after.count("QLinearConv") == 3 and after.count("QLinearAdd") == 1, after
    assert "Conv" not in after and "Add" not in after, after
    assert_as_accurate(out, QUANTIZED, FLOATS)


def run_as_defined(path, x):
    """The model's outputs as ONNX defines them (onnxruntime without its
    graph optimizations: no fused kernel rounds its own way)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
def test_a_weight_dequantized_on_every_run_is_written_for_onnxruntime_to_fold_at_load(tmp_path):
    out = tmp_path / "o.onnx"
    r, written = optimized(X86, tmp_path)
    assert "DequantizeLinear x1" in r["decision"]["verdicts"][0]["evidence"], r["decision"]
    # The second convolution's weight (16 x 16 x 3 x 3) is still an int8
    # initializer, widened by a Cast, scaled per channel, read by the Conv.
    inits = {t.name: t for t in written.graph.initializer}
    producers = {o: n for n in written.graph.node for o in n.output}
    widened = [n for n in written.graph.node if n.op_type == "Cast" and n.input[0] in inits]
    assert len(widened) == 1 and inits[widened[0].input[0]].data_type == TensorProto.INT8
    assert list(inits[widened[0].input[0]].dims) == [16, 16, 3, 3]
    convs = [n for n in written.graph.node if n.op_type == "Conv"]
    scaled = [producers[c.input[1]] for c in convs if producers.get(c.input[1]) is not None and
              producers[c.input[1]].op_type == "Mul"]
    assert len(scaled) == 1 and widened[0].output[0] in scaled[0].input, scaled
    assert not any(t.data_type == TensorProto.FLOAT and list(t.dims) == [16, 16, 3, 3]
                   for t in written.graph.initializer)
    # onnxruntime folds it at load: one DequantizeLinear fewer runs.
    before, after = loaded_ops(X86, tmp_path), loaded_ops(out, tmp_path)
    assert after.count("DequantizeLinear") < before.count("DequantizeLinear"), (before, after)
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(run_as_defined(out, x), run_as_defined(X86, x))
