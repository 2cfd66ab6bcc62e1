"""Integer arithmetic in the IR: Add, Sub, Mul and Div of integer tensors,
Neg and Abs, as exporters write them on positions and sizes. A model of
them is read with no opaque operator, saturn's interpreter computes what
onnxruntime computes (wrapping on overflow, Div truncating toward zero) on
random inputs with values at the ends of each type, and the model saturn
writes gives onnxruntime's outputs. Run by CTest (python_tests, the venv's
python, SATURN_CLI set, the module on PYTHONPATH).
"""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import saturn

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
TYPES = {"int64": (np.int64, TensorProto.INT64), "int32": (np.int32, TensorProto.INT32),
         "int8": (np.int8, TensorProto.INT8), "uint8": (np.uint8, TensorProto.UINT8)}


def arithmetic_model(path, name):
    """a [3, 4], b [4] (non-zero) of one integer type -> a + b, a - b, a * b,
    a / b, |a| and, for a signed type, -(a + b)."""
    _, proto = TYPES[name]
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]),
             helper.make_node("Sub", ["a", "b"], ["difference"]),
             helper.make_node("Mul", ["a", "b"], ["product"]),
             helper.make_node("Div", ["a", "b"], ["quotient"]),
             helper.make_node("Abs", ["a"], ["magnitude"])]
    outputs = ["sum", "difference", "product", "quotient", "magnitude"]
    if not name.startswith("u"):
        nodes.append(helper.make_node("Neg", ["sum"], ["negated"]))
        outputs.append("negated")
    graph = helper.make_graph(
        nodes, "integers",
        [helper.make_tensor_value_info("a", proto, [3, 4]), helper.make_tensor_value_info("b", proto, [4])],
        [helper.make_tensor_value_info(o, proto, [3, 4]) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def inputs(name, seed):
    """Values across the type, its ends included; b never 0, and never -1
    where a holds the type's minimum (onnxruntime's Div traps there)."""
    dtype, _ = TYPES[name]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    a = rng.integers(info.min, info.max, size=(3, 4), endpoint=True, dtype=dtype)
    a.flat[:4] = np.array([info.min, info.max, 0, 7], dtype=dtype)
    b = rng.integers(info.min, info.max, size=4, endpoint=True, dtype=dtype)
    b[:2] = np.array([1 if info.min == 0 else -3, 2], dtype=dtype)
    b[b == 0] = 5
    if info.min < 0:
        b[b == -1] = 3
    return {"a": a, "b": b}


def onnxruntime_outputs(path, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


@pytest.mark.parametrize("name", list(TYPES))
def test_the_interpreter_computes_integers_as_onnxruntime_does(tmp_path, name):
    path = tmp_path / "m.onnx"
    arithmetic_model(path, name)
    model = saturn.load(str(path))
    assert "Opaque" not in model.op_counts, model.op_counts
    for seed in range(3):
        feeds = inputs(name, seed)
        want = onnxruntime_outputs(path, feeds)
        got = model.run(feeds)
        for out, value in want.items():
            assert got[out].dtype == value.dtype, out
            np.testing.assert_array_equal(got[out], value, err_msg=f"{name} {out}")


@needs_cli
@pytest.mark.parametrize("name", ["int64", "int8"])
def test_the_written_model_gives_onnxruntimes_outputs(tmp_path, name):
    path, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    arithmetic_model(path, name)
    done = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--no-measure", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    feeds = inputs(name, 11)
    want, got = onnxruntime_outputs(path, feeds), onnxruntime_outputs(out, feeds)
    for output, value in want.items():
        np.testing.assert_array_equal(got[output], value, err_msg=output)
