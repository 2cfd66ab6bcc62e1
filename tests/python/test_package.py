"""saturn as a Python package: its version, the ways a model comes in (a
path, an onnx.ModelProto, a saturn.Model) and goes out (an
onnx.ModelProto, through a folder when the model holds external data), the
command line behind `python -m saturn`, and type stubs that name every
option. Runs against the build tree's package (PYTHONPATH=build/python) and
against an installed wheel (tools/wheel.sh).
"""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import saturn

ROOT = Path(os.environ.get("SATURN_ROOT", Path(__file__).resolve().parents[2]))


def doubled_relu(weights=16):
    """x [2, weights] -> (x * 2) * 0.5 + w -> Relu: one multiplication too many."""
    w = numpy_helper.from_array(np.linspace(-1, 1, weights, dtype=np.float32)[None], "w")
    nodes = [helper.make_node("Mul", ["x", "two"], ["x2"]),
             helper.make_node("Mul", ["x2", "half"], ["x1"]),
             helper.make_node("Add", ["x1", "w"], ["y"]),
             helper.make_node("Relu", ["y"], ["out"])]
    graph = helper.make_graph(
        nodes, "doubled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, weights])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, weights])],
        [numpy_helper.from_array(np.array(2, np.float32), "two"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half"), w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


QUICK = {"cost": "opcount", "no_measure": True}


def test_the_version_is_the_cmake_projects():
    project = re.search(r"project\(saturn VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert saturn.__version__ == project.group(1)


def copy(model):
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def test_a_model_comes_as_a_path_a_model_proto_or_a_saturn_model(tmp_path):
    proto = doubled_relu()
    path = tmp_path / "m.onnx"
    onnx.save(proto, str(path))
    results = [saturn.optimize(given, **QUICK)
               for given in (str(path), path, proto, saturn.load(str(path)))]
    assert all(r.model.op_counts == results[0].model.op_counts for r in results), \
        [r.model.op_counts for r in results]
    # x * 2 * 0.5 is x * (2 * 0.5), whose product of constants is folded when written.
    assert [r.cost_after for r in results] == [3.0] * 4, [r.cost_after for r in results]
    assert not any(r.kept_input for r in results)
    with pytest.raises(TypeError, match="a path, an onnx.ModelProto or a saturn.Model"):
        saturn.optimize(3)


def test_optimize_onnx_returns_a_model_proto_onnxruntime_runs(tmp_path):
    proto = doubled_relu()
    optimized, report = saturn.optimize_onnx(proto, **QUICK)
    assert isinstance(optimized, onnx.ModelProto)
    onnx.checker.check_model(optimized, full_check=True)
    assert len(optimized.graph.node) < len(proto.graph.node)
    assert report["decision"]["taken"] is True, report["decision"]
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    np.testing.assert_allclose(run(optimized, x), run(proto, x), rtol=1e-6)
    # Kept: the input itself comes back.
    same, report = saturn.optimize_onnx(proto, min_gain=99, **QUICK)
    assert same is proto and report["decision"]["taken"] is False
    with pytest.raises(TypeError, match="onnx.ModelProto"):
        saturn.optimize_onnx(str(tmp_path / "m.onnx"))


def test_a_model_goes_through_a_folder_with_its_weights_beside_it(tmp_path):
    proto = doubled_relu(weights=4096)
    onnx.save(copy(proto), str(tmp_path / "big.onnx"), save_as_external_data=True,
              location="big.onnx.data", size_threshold=1024)
    with pytest.raises(ValueError, match="external data is not loaded"):
        saturn.optimize_onnx(onnx.load(str(tmp_path / "big.onnx"), load_external_data=False),
                             **QUICK)
    given = onnx.load(str(tmp_path / "big.onnx"))
    optimized, _ = saturn.optimize_onnx(given, folder=tmp_path / "work", **QUICK)
    onnx.checker.check_model(optimized, full_check=True)
    assert len(optimized.graph.node) < len(proto.graph.node)
    x = np.random.default_rng(1).standard_normal((2, 4096)).astype(np.float32)
    np.testing.assert_allclose(run(optimized, x), run(proto, x), rtol=1e-6)


def test_python_dash_m_saturn_runs_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "saturn", "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for command in ("optimize", "info", "verify", "calibrate"):
        assert command in done.stdout
    path, out = tmp_path / "m.onnx", tmp_path / "o.onnx"
    onnx.save(doubled_relu(), str(path))
    done = subprocess.run([sys.executable, "-m", "saturn", "optimize", str(path), "-o", str(out),
                           "--cost", "opcount", "--no-measure", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(onnx.load(str(out)).graph.node) < 4


def test_the_type_stubs_name_every_option():
    stub = Path(saturn.__file__).with_name("__init__.pyi")
    tree = ast.parse(stub.read_text())
    options = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OptimizeOptions")
    keywords = [n.target.id for n in options.body if isinstance(n, ast.AnnAssign)]
    assert keywords == [o.replace("-", "_") for o in saturn.OPTIONS]
    for function in ("optimize", "optimize_onnx"):
        found = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
        assert ast.unparse(found.args.kwarg.annotation) == "Unpack[OptimizeOptions]", function
    assert (Path(saturn.__file__).parent / "py.typed").exists()
