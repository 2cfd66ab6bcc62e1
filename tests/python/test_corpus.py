"""The corpus of models written elsewhere (bench/corpus): every model the
generator wrote loads in onnxruntime and passes PyPI's ONNX checker, the
manifest holds what the benchmark needs, and a small slice of the corpus
runs through `saturn optimize` with outputs matching in onnxruntime. Run by
CTest (python_tests, SATURN_CLI set); by hand:

    SATURN_CLI=build/tools/saturn PYTHONPATH=build/python build/venv/bin/python -m pytest -q tests/python/test_corpus.py
"""
import collections
import json
import os
import subprocess

import onnx
import onnxruntime as ort
import pytest

ROOT = os.environ.get("SATURN_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "bench", "corpus")
with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as f:
    MANIFEST = json.load(f)
MODELS = {m["name"]: m for m in MANIFEST["models"]}

# The slice run through saturn in the test command: small models of both
# exporters (timm-resnet18 at opset 18), a few seconds each.
SLICE = ["tv-resnet50", "distilbert-base-uncased", "timm-resnet18"]


def model_path(name):
    return os.path.join(CORPUS, "models", f"{name}.onnx")


def test_manifest_covers_the_families_exporters_and_parts():
    families = collections.defaultdict(set)
    for m in MODELS.values():
        families[m["family"]].add(m["part"])
        assert os.path.exists(model_path(m["name"])), m["name"]
    assert len(MODELS) >= 40 and len(families) >= 25
    assert all(len(parts) == 1 for parts in families.values()), "a family split over both parts"
    held_out = [f for f, parts in families.items() if "held-out" in parts]
    assert 0.2 <= len(held_out) / len(families) <= 0.45
    assert sum(m["exporter"] == "dynamo" and m["opset"] >= 18 for m in MODELS.values()) >= 10
    assert any(m["exporter"] == "torchscript" for m in MODELS.values())
    on_disk = {f[:-5] for f in os.listdir(os.path.join(CORPUS, "models")) if f.endswith(".onnx")}
    assert on_disk == set(MODELS), "models/ and manifest.json disagree"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_loads_in_onnxruntime_and_passes_the_checker(name):
    path = model_path(name)
    model = onnx.load(path)
    onnx.checker.check_model(model)
    meta = {p.key: json.loads(p.value) for p in model.metadata_props if p.key == "saturn.seeded_weights"}
    seeded = meta.get("saturn.seeded_weights", {})
    assert seeded and all(r["low"] < r["high"] for r in seeded.values())
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    declared = {i["name"] for i in MODELS[name]["inputs"]}
    assert declared <= inputs and inputs - declared == set(seeded)
    symbols = {d for i in MODELS[name]["inputs"] for d in i["shape"] if isinstance(d, str)}
    assert symbols <= set(MODELS[name].get("dims") or {})


@pytest.mark.skipif(not os.environ.get("SATURN_CLI"), reason="needs SATURN_CLI (set by CTest)")
@pytest.mark.parametrize("name", SLICE)
def test_slice_optimizes_with_matching_outputs(name, tmp_path):
    entry = MODELS[name]
    cmd = [os.environ["SATURN_CLI"], "optimize", model_path(name), "-o", str(tmp_path / "out.onnx"),
           "--search", "greedy", "--time-limit", "10", "--ilp-seconds", "1", "--threads", "1",
           "--verify", "--verify-runs", "2", "--quiet"]
    for dim, size in (entry.get("dims") or {}).items():
        cmd += ["--dim", f"{dim}={size}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "outputs match" in done.stdout and "checker (onnx" in done.stdout


def test_a_kept_quantized_input_counts_as_one_whatever_its_timing(tmp_path):
    """The quantized part's means count a model saturn kept (its input
    written byte for byte) as 1, as the float part's do; the table shows the
    timing beside it. Rows from before `kept_input` was recorded are read by
    their decision."""
    import sys
    sys.path.insert(0, CORPUS)
    import results
    row = {"model": "m", "part": "tuning", "way": "default", "machine": "x", "kept_input": True,
           "decision": "predicted 1.047x, not measurably faster", "speedup_over_default": 1.086,
           "ms": {"float": 1.0, "default": 1.086, "saturn": 1.0},
           "relative_l2_to_float": {"default": 0.1, "saturn": 0.1}, "loaded": {}}
    written = dict(row, model="w", kept_input=False, decision="taken", speedup_over_default=2.0)
    old = {k: v for k, v in row.items() if k != "kept_input"}
    assert [results.saturn_speedup(r) for r in (row, written, old)] == [1.0, 2.0, 1.0]
    table = results.quantized_table([row, written])
    assert "| 1 (kept; timed 1.086x) |" in table and "| 2.000x |" in table, table
    (tmp_path / "quantized.json").write_text(
        json.dumps({"onnxruntime": "1", "threads": 1, "rows": [row, written]}))
    section = "\n".join(results.quantized_section(str(tmp_path / "quantized.json")))
    assert "1.414x over 2 models" in section, section


def test_the_twin_summary_counts_models_within_ten_percent_and_judges_the_twin():
    """Within 10% of the U8S8 twin is counted over every default row and
    over those whose twin passes the accuracy check itself (its error at
    most 10% above the input's); a model beyond is named with its ratio."""
    import sys
    sys.path.insert(0, CORPUS)
    import results

    def row(model, saturn_ms, twin_error):
        return {"model": model, "ms": {"default": 2.0, "u8s8": 1.0, "saturn": saturn_ms},
                "relative_l2_to_float": {"default": 0.1, "u8s8": twin_error, "saturn": 0.1}}
    rows = [row("fast", 1.05, 0.105), row("slow", 1.2, 0.105), row("saturating", 1.3, 0.5),
            row("no-twin", 1.0, 0.1) | {"ms": {"default": 1.0, "saturn": 1.0}}]
    line = results.twin_summary(rows)
    assert "time: 1 of 3;" in line and "of the 2 whose twin passes" in line, line
    assert "slow 1.20x its twin's time;" in line, line
    assert ("saturating 1.30x its twin's time, the twin's error 0.500 against the input's "
            "0.100") in line
    assert "fast" not in line and "no-twin" not in line
    assert results.twin_summary([rows[-1]]) is None
