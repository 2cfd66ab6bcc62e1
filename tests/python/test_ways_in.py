"""The three ways in share one option set (optimize/options.h): the command
line, the C++ library (examples/optimize_options.cc) and the Python module
resolve the same options for the same call, write byte-identical models and
give reports with the same fields. Run by CTest (python_tests), which sets
SATURN_CLI and SATURN_OPTIMIZE_EXAMPLE; needs the venv's python.
"""
import json
import os
import re
import subprocess

import pytest

import saturn

ROOT = os.environ.get("SATURN_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("SATURN_CLI")
EXAMPLE = os.environ.get("SATURN_OPTIMIZE_EXAMPLE")
needs_binaries = pytest.mark.skipif(not CLI or not EXAMPLE,
                                    reason="SATURN_CLI and SATURN_OPTIMIZE_EXAMPLE unset")

# Options that differ from the defaults; the rest (threads, seed, target,
# time limit, ...) stay at the defaults, which must agree too.
# The search's result is compared, not onnxruntime's timing of it.
OPTIONS = {"search": "greedy", "cost": "opcount", "ilp-seconds": "0", "budget-nodes": "800",
           "no-measure": "true"}
# Report fields that measure the run (time, memory): they differ between the
# ways in.
TIMED = {"seconds", "peak_memory_mb"}


def untimed(report):
    out = {k: v for k, v in report.items() if k not in TIMED}
    out["region_structures"] = [{k: v for k, v in s.items() if k != "seconds"}
                                for s in report["region_structures"]]
    return out


def three_ways(tmp_path, model, options):
    """(model bytes, report) from the command line, the library and Python."""
    runs = {}
    cli_out, cli_report = tmp_path / "cli.onnx", tmp_path / "cli.json"
    # A flag's value is "true": the command line takes the flag alone.
    args = [a for name, value in options.items()
            for a in ((f"--{name}",) if value == "true" else (f"--{name}", value))]
    subprocess.run([CLI, "optimize", model, "-o", str(cli_out), "--report", str(cli_report),
                    "--quiet", *args], check=True, capture_output=True)
    runs["cli"] = (cli_out.read_bytes(), json.loads(cli_report.read_text()))

    lib_out, lib_report = tmp_path / "lib.onnx", tmp_path / "lib.json"
    subprocess.run([EXAMPLE, model, str(lib_out), str(lib_report),
                    *[f"{name}={value}" for name, value in options.items()]],
                   check=True, capture_output=True)
    runs["library"] = (lib_out.read_bytes(), json.loads(lib_report.read_text()))

    py_out = tmp_path / "python.onnx"
    keywords = {name.replace("-", "_"): True if value == "true" else value
                for name, value in options.items()}
    result = saturn.optimize(saturn.load(model), **keywords)
    result.save(str(py_out))
    runs["python"] = (py_out.read_bytes(), result.report)
    return runs


@needs_binaries
def test_the_three_ways_in_agree_on_a_rewritten_symbolic_model(tmp_path):
    model = os.path.join(ROOT, "tensor", "fixtures", "dyn_encoder.onnx")
    runs = three_ways(tmp_path, model, OPTIONS)
    cli_bytes, cli_report = runs["cli"]
    assert not cli_report["kept_input"] and cli_report["ops_after"] < cli_report["ops_before"]
    assert cli_report["symbolic_dimensions"]
    assert cli_report["options"]["threads"] == "2"  # the one default, everywhere
    for way, (model_bytes, report) in runs.items():
        assert report["options"] == cli_report["options"], way
        assert sorted(report) == sorted(cli_report), way
        assert untimed(report) == untimed(cli_report), way
        assert model_bytes == cli_bytes, way


@needs_binaries
def test_a_kept_input_is_the_input_file_in_every_way(tmp_path):
    model = os.path.join(ROOT, "tensor", "fixtures", "squeezenet1_1.onnx")
    options = dict(OPTIONS, **{"min-gain": "99"})  # nothing gains 99%
    runs = three_ways(tmp_path, model, options)
    with open(model, "rb") as f:
        original = f.read()
    for way, (model_bytes, report) in runs.items():
        assert report["kept_input"] and report["options"]["min-gain"] == "99", way
        assert model_bytes == original, way


@needs_binaries
def test_help_and_docstring_come_from_the_option_table():
    help_text = subprocess.run([CLI, "optimize", "--help"], check=True, capture_output=True,
                               text=True).stdout
    doc = saturn.optimize.__doc__
    for name in saturn.OPTIONS:
        assert re.search(rf"--{name}\b", help_text), name
        assert re.search(rf"\b{name.replace('-', '_')}: ", doc), name
    # The defaults each shows are the table's: 2 threads, 2000 e-nodes.
    assert re.search(r"--threads[^\n]*\n?[^\n]*default 2\)", help_text)
    assert "threads: search threads (default 2)" in doc
    assert "budget_nodes: e-node budget (per region) (default 2000)" in doc


def test_options_by_name_refuse_bad_values():
    model = saturn.load("squeezenet")
    for keywords, message in [({"threads": 0}, "option threads: '0'"),
                              ({"budget_nodes": "many"}, "option budget-nodes: 'many'"),
                              ({"target": "tpu"}, "option target: 'tpu' is not onnxruntime"),
                              ({"time_limit": "inf"}, "option time-limit: 'inf'"),
                              ({"search": None}, "option search takes a value")]:
        with pytest.raises(ValueError, match=message):
            saturn.optimize(model, **keywords)


@needs_binaries
def test_the_onnxruntime_cost_prices_at_the_runtime_threads_in_every_way(tmp_path, monkeypatch):
    monkeypatch.setenv("SATURN_CACHE_DIR", str(tmp_path / "cache"))  # no table of this machine's
    model = os.path.join(ROOT, "tensor", "fixtures", "squeezenet1_1.onnx")
    for threads, table in (("1", "onnxruntime-cpu-1thread.json"),
                           ("2", "onnxruntime-cpu-2threads.json")):
        options = dict(OPTIONS, cost="onnxruntime", **{"runtime-threads": threads})
        for way, (_, report) in three_ways(tmp_path, model, options).items():
            assert report["cost_source"] == f"costmodel/tables/{table}", (way, threads)
