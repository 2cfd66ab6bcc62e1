"""IsNaN and IsInf as IR operators: a decoder-style mask that replaces
non-finite scores (Where(IsNaN(x) or IsInf(x), 0, x)) is read with no opaque
operator, written back, and gives onnxruntime's outputs on NaN and
infinities of both signs. Their kernels are checked against ONNX's
reference outputs by tests/onnx_io_test.cc. Run by CTest (python_tests)."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from optimizing import optimize

needs_cli = pytest.mark.skipif(not os.environ.get("SATURN_CLI"), reason="SATURN_CLI unset")


@needs_cli
@pytest.mark.parametrize("negative,positive", [(1, 1), (0, 1), (1, 0)])
def test_non_finite_scores_are_masked_as_onnxruntime_masks_them(tmp_path, negative, positive):
    inits = [numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(0, np.float32), "zero")]
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"]),
             helper.make_node("IsInf", ["x"], ["inf"], detect_negative=negative,
                              detect_positive=positive),
             helper.make_node("Or", ["nan", "inf"], ["bad"]),
             helper.make_node("Where", ["bad", "zero", "x"], ["clean"]),
             helper.make_node("Mul", ["clean", "two"], ["d"]),
             helper.make_node("Mul", ["d", "half"], ["y"])]
    graph = helper.make_graph(
        nodes, "mask", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path, out = tmp_path / "m.onnx", tmp_path / "m.opt.onnx"
    onnx.save(model, str(path))
    r = optimize(path, out, tmp_path / "r.json")
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert r["decision"]["taken"], r["decision"]
    x = np.array([[np.nan, np.inf, -np.inf, 1.5, -2.0, 0.0],
                  [3.0, -np.inf, np.nan, np.inf, 7.0, -1.0]], np.float32)
    want, got = (ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
                 .run(None, {"x": x})[0] for p in (path, out))
    np.testing.assert_array_equal(got, want)
