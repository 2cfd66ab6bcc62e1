"""The onnxruntime harness (ort/harness/ort_run.py) in the project's virtual
environment: its comparison, its inputs, PyPI's ONNX checker on what saturn
writes, and its command line. Run by CTest (python_tests); by hand:

    PYTHONPATH=build/python build/venv/bin/python -m pytest -q tests/python
"""
import itertools
import json
import os
import subprocess
import sys
import time
import weakref

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import saturn

ROOT = os.environ.get("SATURN_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "ort", "harness"))
import ort_run  # noqa: E402  (the harness is a script, not a package)
import onnx_checker  # noqa: E402
import quantized  # noqa: E402

HARNESS = os.path.join(ROOT, "ort", "harness", "ort_run.py")


def relu_model(path, op="Relu", opset=18):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_compare_uses_the_relative_and_absolute_tolerances():
    want = np.array([1.0, 100.0, 0.0], dtype=np.float32)
    close = np.array([1.0005, 100.05, 5e-5], dtype=np.float32)
    far = np.array([1.0, 100.0, 1e-3], dtype=np.float32)
    assert ort_run.compare(close, want, 1e-3, 1e-4)["ratio"] <= 1
    assert ort_run.compare(far, want, 1e-3, 1e-4)["ratio"] > 1
    assert ort_run.compare(want[:2], want, 1e-3, 1e-4)["detail"].startswith("shape or type")
    nan = np.array([np.nan, 100.0, 0.0], dtype=np.float32)
    assert ort_run.compare(nan, want, 1e-3, 1e-4)["ratio"] == float("inf")
    assert ort_run.compare(nan, nan, 1e-3, 1e-4)["ratio"] == 0


def test_inputs_are_seeded_per_name():
    class Meta:
        def __init__(self, name, type_="tensor(float)", shape=(4, 5)):
            self.name, self.type, self.shape = name, type_, list(shape)
    a1, a2 = ort_run.random_tensor(Meta("a"), 1), ort_run.random_tensor(Meta("a"), 1)
    b = ort_run.random_tensor(Meta("b"), 1)
    np.testing.assert_array_equal(a1, a2)
    assert not np.array_equal(a1, b)
    assert a1.dtype == np.float32 and a1.min() >= -1 and a1.max() < 1
    ids = ort_run.random_tensor(Meta("ids", "tensor(int64)"), 1)
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() <= 9
    scalar = ort_run.random_tensor(Meta("t", shape=()), 1)
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar.dtype == np.float32
    with pytest.raises(ort_run.HarnessError, match="dynamic shape"):
        ort_run.random_tensor(Meta("x", shape=("batch", 3)), 1)
    with pytest.raises(ort_run.HarnessError, match="does not generate"):
        ort_run.random_tensor(Meta("x", "tensor(bfloat16)"), 1)


def test_checker_rejects_an_operator_of_no_opset(tmp_path):
    assert onnx_checker.checker_verdict(relu_model(tmp_path / "ok.onnx")) is None
    assert "NoSuchOp" in onnx_checker.checker_verdict(relu_model(tmp_path / "bad.onnx", "NoSuchOp"))


def test_what_saturn_writes_passes_pypis_checker(tmp_path):
    # The harness's checker is PyPI's onnx, which knows opsets 18 and later; Debian's does not.
    assert tuple(int(p) for p in onnx.__version__.split(".")[:2]) >= (1, 14)
    model = saturn.load(os.path.join(ROOT, "tensor", "fixtures", "llama_block.onnx"))
    result = saturn.optimize(model, search="default", cost="opcount", ilp_seconds=0)
    out = tmp_path / "llama_block.opt.onnx"
    result.save(str(out))
    assert onnx_checker.checker_verdict(str(out)) is None


def run_harness(*args):
    return subprocess.run([sys.executable, HARNESS, *args], capture_output=True, text=True)


def test_verify_command_reports_outputs_checker_and_speedup(tmp_path):
    a = relu_model(tmp_path / "a.onnx")
    b = relu_model(tmp_path / "b.onnx")
    done = run_harness("verify", a, b, "--runs", "3", "--threads", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["checker"]["ok"]
    assert [o["name"] for o in report["outputs"]] == ["y"] and report["outputs"][0]["ok"]
    assert report["latency"]["original"]["runs"] == 3 and report["speedup"] > 0


def test_verify_command_finds_a_wrong_output(tmp_path):
    a = relu_model(tmp_path / "a.onnx")
    b = relu_model(tmp_path / "b.onnx", "Neg")
    report = json.loads(run_harness("verify", a, b, "--runs", "1").stdout)
    assert not report["ok"] and not report["outputs"][0]["ok"]


def test_time_command_reports_kernels_and_survives_a_bad_model(tmp_path):
    good = relu_model(tmp_path / "good.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    done = run_harness("time", good, str(bad), "--runs", "4", "--warmup", "1")
    assert done.returncode == 0, done.stderr
    good_row, bad_row = json.loads(done.stdout)["models"]
    assert good_row["runs"] == 4 and good_row["kernel_us"] >= 0
    assert [k["op"] for k in good_row["kernels"]] == ["Relu"]
    assert "cannot load" in bad_row["error"]


def test_bad_command_lines_exit_with_a_message(tmp_path):
    for args in (["verify", "only_one.onnx"], ["time", "--runs", "x"], ["fly"], ["time", "--bogus", "1"]):
        done = run_harness(*args)
        assert done.returncode == 1 and done.stderr.startswith("ort_run: "), args


def matmul_chain(path, count, width=192):
    """y = x W W ... W (`count` products of a [width, width] weight), with the
    same output for every count when W is the identity."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])
    w = onnx.numpy_helper.from_array(np.eye(width, dtype=np.float32), "w")
    nodes, last = [], "x"
    for k in range(count):
        out = "y" if k == count - 1 else f"h{k}"
        nodes.append(helper.make_node("MatMul", [last, "w"], [out]))
        last = out
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def counting_sessions(monkeypatch):
    """open_session wrapped to count the sessions opened and the most alive
    at once."""
    live, peak = [], [0]
    opened = ort_run.open_session

    def counting(file, threads, profile_prefix=None):
        session = opened(file, threads, profile_prefix)
        live.append(weakref.ref(session))
        peak[0] = max(peak[0], sum(ref() is not None for ref in live))
        return session

    monkeypatch.setattr(ort_run, "open_session", counting)
    return live, peak


def test_decide_holds_one_pair_at_once_and_finds_removed_work(tmp_path, monkeypatch):
    slow, fast = matmul_chain(tmp_path / "slow.onnx", 24), matmul_chain(tmp_path / "fast.onnx", 4)
    live, peak = counting_sessions(monkeypatch)
    opts, files = ort_run.parse_args([slow, fast, "--threads", "1", "--dim", "batch=64",
                                      "--seconds", "5"])
    faster = ort_run.decide(opts, files)
    assert faster["outputs_match"] and faster["faster"], faster
    assert faster["clock"] == "thread CPU time"
    # ctest runs beside other tests: the interval's low end, not its exact
    # size. One block of pairs settles a sixfold gain.
    assert faster["speedup_low"] > 1.2 and len(live) == 2 * ort_run.PAIRS_PER_BLOCK, faster
    assert faster["sessions"] == [ort_run.PAIRS_PER_BLOCK] * 2
    assert len(faster["pair_speedups"]) == ort_run.PAIRS_PER_BLOCK
    assert peak[0] == 2


def test_the_same_model_is_not_faster_than_itself(tmp_path, monkeypatch):
    """Blocks are added while the interval straddles the gain sought, up to
    three. The sessions still load (with one thread a pair at a time, with
    more one at a time), but their timings are stubbed: beside the other
    tests on 2 cores two real sessions of one model differ by up to 15%, and
    a 90% interval then finds a model faster than itself now and then (a CI
    run did at a 1% gain sought, a ctest run at 5%)."""
    slow = matmul_chain(tmp_path / "slow.onnx", 24)
    live, peak = counting_sessions(monkeypatch)
    medians = itertools.cycle([100, 104, 97, 103, 99, 101, 102])
    monkeypatch.setattr(ort_run, "time_session",
                        lambda session, feeds, opts, cpu, deadline: [next(medians)] * opts["min-rounds"])
    monkeypatch.setattr(ort_run, "time_pair", lambda sessions, feeds, opts, deadline, first: (
        [(next(medians), 100.0)] * opts["min-rounds"], 2 * opts["min-rounds"]))
    for threads, per_block, most in ((1, 2 * ort_run.PAIRS_PER_BLOCK, 2), (2, 4, 1)):
        live.clear()
        peak[0] = 0
        opts, files = ort_run.parse_args([slow, slow, "--threads", str(threads), "--dim",
                                          "batch=64", "--min-gain", "0.05"])
        same = ort_run.decide(opts, files)
        assert same["outputs_match"] and not same["faster"], same
        assert len(live) in (per_block, 2 * per_block, 3 * per_block), same
        assert same["rounds"] >= 2 * opts["min-rounds"]
        assert sum(same["sessions"]) == len(live)
        assert peak[0] == most


def test_a_pair_that_would_press_on_memory_is_timed_one_session_at_a_time(tmp_path, monkeypatch):
    """Two models whose sessions need more than the machine has free are
    not held together: the one-thread decision then runs one session at a
    time, by the thread's CPU time."""
    slow, fast = matmul_chain(tmp_path / "slow.onnx", 24), matmul_chain(tmp_path / "fast.onnx", 4)
    live, peak = counting_sessions(monkeypatch)
    room = 2 * ort_run.SESSION_MEMORY_PER_BYTE * (os.path.getsize(slow) + os.path.getsize(fast))
    monkeypatch.setattr(ort_run, "available_memory", lambda: room)
    assert ort_run.pair_fits([slow, fast])
    monkeypatch.setattr(ort_run, "available_memory", lambda: room // 4)
    assert not ort_run.pair_fits([slow, fast])
    opts, files = ort_run.parse_args([slow, fast, "--threads", "1", "--dim", "batch=64",
                                      "--seconds", "5"])
    decided = ort_run.decide(opts, files)
    assert decided["outputs_match"] and decided["clock"] == "thread CPU time", decided
    assert "pair_speedups" not in decided and peak[0] == 1
    assert sum(decided["sessions"]) == len(live)


def test_an_undecided_slow_first_block_gets_a_second_within_max_seconds(monkeypatch):
    """Sessions that take 0.05 s each and whose medians straddle the gain
    sought: one block (0.2 s) leaves no room for another in 0.3 s, so one
    block decides unless the second may end within --max-seconds; the third
    block never runs past --seconds. Likewise for the one-thread pairs
    (0.05 s each, three to a block)."""
    medians = iter([100, 104, 96, 110, 97, 103, 108, 99, 101, 106, 95, 102])

    def session_times(session, feeds, opts, cpu, deadline):
        time.sleep(0.05)
        return [next(medians)] * 3

    def pair_times(sessions, feeds, opts, deadline, first):
        time.sleep(0.05)
        return [(next(medians), 100.0)] * 3, 6

    monkeypatch.setattr(ort_run, "open_session", lambda file, threads: object())
    monkeypatch.setattr(ort_run, "release_memory", lambda: None)
    monkeypatch.setattr(ort_run, "time_session", session_times)
    monkeypatch.setattr(ort_run, "time_pair", pair_times)
    opts = dict(ort_run.OPTIONS, feeds={})
    one = ort_run.time_sessions(["a", "b"], 1, opts, 0.3, 0.01)
    assert [len(t) for t in one] == [2, 2]
    medians = iter([100, 104, 96, 110, 97, 103, 108, 99, 101, 106, 95, 102])
    two = ort_run.time_sessions(["a", "b"], 1, opts, 0.3, 0.01, second_block=1.0)
    assert [len(t) for t in two] == [4, 4]
    assert not ort_run.speedup_verdict(*two, 0.01)["settled"]

    medians = iter([100, 104, 96, 110, 97, 103, 108, 99, 101])
    ratios, _, runs = ort_run.time_pairs(["a", "b"], opts, 0.2, 0.01)
    assert len(ratios) == ort_run.PAIRS_PER_BLOCK and runs == 6 * len(ratios)
    medians = iter([100, 104, 96, 110, 97, 103, 108, 99, 101])
    ratios, _, _ = ort_run.time_pairs(["a", "b"], opts, 0.2, 0.01, second_block=1.0)
    assert len(ratios) == 2 * ort_run.PAIRS_PER_BLOCK
    assert not ort_run.paired_verdict(ratios, 0.01)["settled"]


def test_a_quantized_candidate_less_accurate_on_the_first_inputs_is_judged_on_more(monkeypatch):
    """The accuracy check's verdict on quantized.ACCURACY_INPUTS inputs is
    taken again over CONFIRMING_INPUTS where the candidate is further from
    the float model on the first: one input's distance varies by more than
    the margin. Sessions are stubbed: each model's output on input i sits
    its distance d[i] off the float model's."""
    distances = {"input.onnx": [0.3] * 12}

    class Session:
        def __init__(self, path):
            self.path = path

        def get_inputs(self):
            return []

    def outputs(session, i):
        d = distances.get(session.path, [0.0] * 12)[i]  # the float model: 0
        return {"y": np.full(4, 1 + d, np.float32)}

    monkeypatch.setattr(ort_run, "open_session", lambda path, threads: Session(path))
    monkeypatch.setattr(ort_run, "release_memory", lambda: None)
    monkeypatch.setattr(ort_run, "checker_report", lambda path: {"ok": True})
    monkeypatch.setattr(ort_run, "accuracy_feeds", lambda session, opts, seeds: list(seeds))
    monkeypatch.setattr(ort_run, "outputs_by_name", outputs)
    monkeypatch.setattr(ort_run, "time_session", lambda *args: [100.0] * 3)

    def judged(candidate):
        distances["candidate.onnx"] = candidate
        opts = dict(ort_run.OPTIONS, **{"float-model": "float.onnx", "dims": {}, "seconds": 1,
                                        "max-seconds": 1, "check-threads": 1, "min-gain": 0.01})
        out = ort_run.decide(opts, ["input.onnx", "candidate.onnx"])
        return out["outputs"][0]["inputs"], out["outputs_match"]

    assert quantized.ACCURACY_INPUTS == 3 and quantized.CONFIRMING_INPUTS == 12
    # Past the margin on the first three (0.4 against 0.3), closer on twelve.
    assert judged([0.4] * 3 + [0.2] * 9) == (12, True)
    # Past it on twelve as well.
    assert judged([0.4] * 12) == (12, False)
    # Within the margin on the first three but past it on twelve.
    assert judged([0.32] * 3 + [0.4] * 9) == (12, False)
    # At least as accurate on the first three: taken on them.
    assert judged([0.3, 0.2, 0.25] + [0.9] * 9) == (3, True)


def test_checker_reads_large_weights_in_place_and_still_checks_shapes(tmp_path):
    good = matmul_chain(tmp_path / "good.onnx", 2)
    assert onnx_checker.checker_verdict(good) is None
    model = onnx.load(good)
    model.graph.initializer[0].CopyFrom(
        onnx.numpy_helper.from_array(np.zeros((100, 192), np.float32), "w"))
    onnx.save(model, str(tmp_path / "bad.onnx"))
    verdict = onnx_checker.checker_verdict(str(tmp_path / "bad.onnx"))
    assert verdict is not None and "Incompatible dimensions" in verdict, verdict
    assert sorted(os.listdir(tmp_path)) == ["bad.onnx", "good.onnx"]  # no copy left behind
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert onnx_checker.checker_verdict(str(tmp_path / "empty.onnx")) is not None


def quantized_chain(path, zero_point=0, weight=None):
    """x -> Q/DQ (int8, scale 0.05) -> MatMul by w -> Q/DQ -> y: a quantized
    model with an activation pair before and after its product. A zero point
    other than the calibrated 0 on the output's DequantizeLinear, or another
    weight, makes a model that computes something else."""
    rng = np.random.default_rng(5)
    w = weight if weight is not None else rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(w, "w"),
             onnx.numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             onnx.numpy_helper.from_array(np.array(0, np.int8), "z"),
             onnx.numpy_helper.from_array(np.array(zero_point, np.int8), "zy")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("MatMul", ["xd", "w"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "s", "z"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "s", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_a_quantized_candidate_is_judged_against_the_float_model(tmp_path):
    """The input has activation Quantize/Dequantize pairs: the candidate is
    judged by its distance to the float model they quantize (the pairs taken
    out), not elementwise. The input itself passes; a candidate whose output
    sits a few steps off (a zero point moved by 3) is refused and the report
    names both distances."""
    original = quantized_chain(tmp_path / "q.onnx")
    reference_folder = tmp_path / "ref"
    reference_folder.mkdir()
    reference = quantized.float_reference(original, str(reference_folder))
    ops = [n.op_type for n in onnx.load(reference).graph.node]
    assert ops == ["Identity", "MatMul", "Identity"], ops  # no quantization left, none dangling
    # A pair whose range starts at 0 (its QuantizeLinear's zero point int8's
    # lowest) stands for a Relu the quantizer dropped.
    model = onnx.load(original)
    model.graph.initializer[2].CopyFrom(onnx.numpy_helper.from_array(np.array(-128, np.int8), "z"))
    onnx.save(model, str(tmp_path / "r.onnx"))
    rectified = quantized.float_reference(str(tmp_path / "r.onnx"), str(reference_folder))
    assert [n.op_type for n in onnx.load(rectified).graph.node] == ["Relu", "MatMul", "Relu"]
    opts, files = ort_run.parse_args([original, original, "--threads", "1", "--seconds", "1"])
    same = ort_run.decide(opts, files)
    assert same["compared_by"] == "distance to the float reference" and same["outputs_match"], same
    worse = quantized_chain(tmp_path / "worse.onnx", zero_point=3)
    opts, files = ort_run.parse_args([original, worse, "--threads", "1", "--seconds", "1"])
    refused = ort_run.decide(opts, files)
    assert not refused["outputs_match"] and not refused["faster"], refused
    out = refused["outputs"][0]
    assert out["candidate_distance"] > out["input_distance"] * 1.1, out
    # The float model itself, where given (--float-model), judges instead:
    # here the chain's MatMul by the same weight, unquantized.
    floats = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "f",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [onnx.load(original).graph.initializer[0]]), opset_imports=[helper.make_opsetid("", 17)])
    floats.ir_version = 8
    onnx.save(floats, str(tmp_path / "f.onnx"))
    opts, files = ort_run.parse_args([original, worse, "--threads", "1", "--seconds", "1",
                                      "--float-model", str(tmp_path / "f.onnx")])
    judged = ort_run.decide(opts, files)
    assert judged["compared_by"] == "distance to the float model" and not judged["outputs_match"]
    out = judged["outputs"][0]
    assert out["candidate_distance"] > out["input_distance"] * 1.1 > 0, out
    with pytest.raises(ort_run.HarnessError, match="no file"):
        ort_run.parse_args([original, worse, "--float-model", str(tmp_path / "missing.onnx")])
    # A model with no activation pair has no float reference.
    assert quantized.float_reference(matmul_chain(tmp_path / "plain.onnx", 2),
                                     str(reference_folder)) is None


def test_pairs_decide_by_the_spread_of_their_speedups():
    """Each pair of sessions is one sample: three pairs that agree settle a
    tenth's gain, three the machine moved by a sixth between them do not,
    and one pair decides nothing however large its speedup."""
    agreeing = ort_run.paired_verdict([1.10, 1.12, 1.11], 0.01)
    assert agreeing["faster"] and agreeing["settled"] and agreeing["sessions"] == [3, 3]
    assert 1.05 < agreeing["speedup_low"] < 1.11 < agreeing["speedup_high"] < 1.17
    spread = ort_run.paired_verdict([0.97, 1.04, 1.18], 0.01)
    assert not spread["faster"] and not spread["settled"]
    assert spread["speedup_low"] < 1.01 < spread["speedup_high"]
    slower = ort_run.paired_verdict([0.80, 0.82, 0.81], 0.01)
    assert slower["settled"] and not slower["faster"]
    alone = ort_run.paired_verdict([2.0], 0.01)
    assert not alone["faster"] and not alone["settled"]
