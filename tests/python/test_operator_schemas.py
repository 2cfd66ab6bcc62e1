"""The operator schemas saturn's import checks where libonnx's checker does
not (onnxruntime's own domains; the default domain past opset 17):
onnx/operator_schemas.inc is what the pinned onnx and onnxruntime give, and
a node outside its schema is refused as onnxruntime refuses it, with an
error naming the file and the node. Run by CTest (python_tests, the venv's
python, SATURN_CLI set).
"""
import os
import pathlib
import subprocess
import sys

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")


def test_the_table_is_what_the_pinned_onnx_and_onnxruntime_give():
    check = subprocess.run([sys.executable, str(ROOT / "tools" / "gen-operator-schemas.py"),
                            "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def contrib_model(path, op, inputs, outputs=("y",), **attributes):
    """x [2, 8] float -> one com.microsoft node `op` -> y [2, 8]."""
    graph = helper.make_graph(
        [helper.make_node(op, list(inputs), list(outputs), name="contrib",
                          domain="com.microsoft", **attributes),
         helper.make_node("Identity", ["x"], ["z"])],
        "contrib", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 8])])
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, path)
    return path


def runtime_loads(path):
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return True
    except Exception:  # onnxruntime's Fail, InvalidGraph and the like
        return False


# (operator, inputs, outputs, attributes, what saturn's error says)
REFUSED = [
    ("QLinearAdd", ["x"], ["y"], {}, "QLinearAdd-1 takes 7 to 8 inputs, the node has 1"),
    ("SkipLayerNormalization", ["x", "x"], ["y"], {},
     "SkipLayerNormalization-1 takes 3 to 5 inputs, the node has 2"),
    ("FusedConv", ["x", ""], ["y"], {}, "input 1 of com.microsoft FusedConv-1 is required but empty"),
    ("BiasGelu", ["x", "x"], [""], {}, "output 0 of com.microsoft BiasGelu-1 is required but empty"),
    ("MatMulNBits", ["x", "x", "x"], ["y"], {"K": 8, "N": 8},
     "MatMulNBits-1 requires attribute block_size, which the node lacks"),
]


@needs_cli
@pytest.mark.parametrize("op,inputs,outputs,attributes,error", REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_a_contrib_node_onnxruntime_refuses_is_an_error_naming_it(
        tmp_path, op, inputs, outputs, attributes, error):
    path = contrib_model(tmp_path / "bad.onnx", op, inputs, outputs, **attributes)
    assert not runtime_loads(path)
    out = tmp_path / "out.onnx"
    run = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--no-measure"],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    assert "bad.onnx" in run.stderr and f"node 'contrib' (com.microsoft {op})" in run.stderr
    assert error in run.stderr
    assert not out.exists()


@needs_cli
def test_a_contrib_node_within_its_schema_is_read_as_before(tmp_path):
    path = contrib_model(tmp_path / "good.onnx", "BiasGelu", ["x", "x"])
    assert runtime_loads(path)
    out = tmp_path / "out.onnx"
    run = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--no-measure"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert out.exists()
