"""Work the importer computes once that the source's runtime computes on
every run (Graph::folded_at_import): a weight table resized to sizes read
from the shape of an input with a symbolic batch axis. onnxruntime's
constant folding leaves the Resize to run time there (the Shape's input is
not static); saturn folds it, prices it into the input's cost, and a
timing decides whether the folded model is written.
Run by CTest (python_tests, the venv's python, SATURN_CLI set).
"""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")


def table_model(path, batch="B"):
    """y = Conv1x1(x) + Resize(table, sizes from x's height and width)."""
    rng = np.random.default_rng(7)
    init = [
        numpy_helper.from_array(rng.standard_normal((1, 64, 40, 40)).astype(np.float32), "table"),
        numpy_helper.from_array(rng.standard_normal((64, 3, 1, 1)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
        numpy_helper.from_array(np.array([3], dtype=np.int64), "three"),
        numpy_helper.from_array(np.array([1, 64], dtype=np.int64), "head"),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "two"], ["h"], axis=0),
        helper.make_node("Gather", ["s", "three"], ["wd"], axis=0),
        helper.make_node("Concat", ["head", "h", "wd"], ["sizes"], axis=0),
        helper.make_node("Resize", ["table", "", "", "sizes"], ["bias"], mode="cubic",
                         coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75),
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Add", ["c", "bias"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "table",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 64, 32, 32])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def saturn(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ops(path):
    return [n.op_type for n in onnx.load(path).graph.node]


def outputs(path, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@needs_cli
def test_info_names_the_work_the_runtime_does_on_every_run(tmp_path):
    symbolic, fixed = str(tmp_path / "symbolic.onnx"), str(tmp_path / "fixed.onnx")
    table_model(symbolic)
    table_model(fixed, batch=1)
    assert "on every run by the source's runtime: Resize x1" in saturn("info", symbolic)
    # With every dimension static onnxruntime folds the Shape, and the Resize with it.
    assert "on every run" not in saturn("info", fixed)


@needs_cli
def test_the_folded_model_is_written_when_a_timing_finds_it_faster(tmp_path):
    source, out = str(tmp_path / "m.onnx"), str(tmp_path / "out.onnx")
    report = str(tmp_path / "report.json")
    table_model(source)
    before = open(source, "rb").read()
    saturn("optimize", source, "-o", out, "--report", report, "--quiet")
    r = json.load(open(report))
    verdicts = r["decision"]["verdicts"]
    predicted = next(v for v in verdicts if v["gate"] == "predicted gain")
    assert predicted["passed"]
    assert "computes 1 operator on every run that saturn computed once (Resize x1)" in \
        predicted["evidence"]
    assert r["decision"]["taken"], r["decision"]
    assert r["decision"]["decided_by"] == "measured"
    assert "Resize" not in ops(out) and "Shape" not in ops(out)
    assert open(source, "rb").read() == before  # the input file is never written
    for batch in (1, 3):  # the written model holds at any batch size
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        np.testing.assert_allclose(outputs(out, x), outputs(source, x), rtol=1e-4, atol=1e-4)


@needs_cli
def test_without_a_timing_the_prediction_decides_at_the_minimum_gain(tmp_path):
    source, out = str(tmp_path / "m.onnx"), str(tmp_path / "out.onnx")
    report = str(tmp_path / "report.json")
    table_model(source)
    saturn("optimize", source, "-o", out, "--report", report, "--quiet", "--no-measure",
           "--min-gain", "99.9")
    r = json.load(open(report))
    assert not r["decision"]["taken"]
    assert r["decision"]["decided_by"] == "predicted gain"
    assert "needed 99.9%" in r["decision"]["evidence"]
    assert "Resize" in ops(out)
