"""The Python module: models in and out, optimize, the search environment,
and errors as exceptions. Run by CTest (python_tests) with
PYTHONPATH=build/python; by hand:

    PYTHONPATH=build/python build/venv/bin/python -m pytest -q tests/python
"""
import os
import threading

import numpy as np
import pytest

import saturn

ROOT = os.environ.get("SATURN_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tensor", "fixtures")


def fixture(name):
    return os.path.join(FIXTURES, name)


def test_optimized_fixture_computes_what_the_input_computes(tmp_path):
    model = saturn.load(fixture("squeezenet1_1.onnx"))
    result = saturn.optimize(model, search="greedy", cost="roofline:gpu-a100", ilp_seconds=0,
                             no_measure=True)
    assert result.cost_after < result.cost_before
    assert not result.kept_input
    assert result.rules_applied and all(count > 0 for _, count in result.rules_applied)
    assert result.report["strategy"] == "greedy"
    out = tmp_path / "squeezenet.opt.onnx"
    result.save(str(out))
    back = saturn.load(str(out))
    inputs = model.random_inputs(seed=3)
    want = model.run(inputs)["output"]
    got = back.run(inputs)["output"]
    assert want.shape == got.shape == (1, 1000)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_the_default_times_the_result_in_onnxruntime():
    result = saturn.optimize(saturn.load(fixture("squeezenet1_1.onnx")), search="greedy",
                             cost="roofline:gpu-a100", ilp_seconds=0)
    measured = result.report["measured"]
    assert measured["timed"], measured["note"]
    assert measured["rounds"] >= 5 and measured["runtime"].startswith("onnxruntime")
    # Taken only where measurably faster; otherwise the input comes back.
    assert measured["faster"] == (not result.kept_input), measured["note"]
    assert result.report["seconds"]["measure"] > 0


def test_onnx_bytes_round_trip():
    model = saturn.load(fixture("dyn_cnn.onnx"), dims={"batch": 2})
    data = model.to_onnx_bytes()
    assert isinstance(data, bytes) and data
    again = saturn.Model.from_onnx_bytes(data, dims={"batch": 2})
    assert again.op_counts == model.op_counts
    inputs = model.random_inputs(seed=1)
    assert inputs["input"].shape == (2, 3, 32, 32)
    np.testing.assert_allclose(again.run(inputs)["output"], model.run(inputs)["output"],
                               rtol=1e-5, atol=1e-6)


def test_a_search_releases_the_gil():
    model = saturn.load("squeezenet")
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    saturn.optimize(model, search="mcts", budget_nodes=1000, ilp_seconds=0)
    done.set()
    thread.join()
    assert len(ticks) > 10  # the other thread ran while the search did


def observe(env):
    o = env.observation()
    return (o["cost"], o["nodes"], o["classes"], o["steps"], tuple(o["op_counts"]),
            tuple(o["node_ops"]), o["edge_index"].tobytes())


def test_environment_steps_restore_and_repeat():
    env = saturn.Environment(saturn.load("squeezenet"), cost="roofline", budget_nodes=800)
    first = env.reset()
    assert first["steps"] == 0 and first["cost"] == first["initial_cost"]
    assert first["edge_index"].shape[0] == 2
    assert env.num_actions == len(env.rule_names) + 1
    start = observe(env)
    actions = env.legal_actions()
    assert actions[-1] == env.stop_action
    env.checkpoint()
    trace = []
    for _ in range(3):
        action = env.legal_actions()[0]
        reward, done, info = env.step(action)
        trace.append((action, reward, info["applied"], observe(env)))
        if done:
            break
    assert trace and trace[0][2] > 0
    env.restore()
    assert observe(env) == start
    # The same actions again give the same states.
    for action, reward, applied, state in trace:
        assert env.step(action)[0] == pytest.approx(reward)
        assert observe(env) == state
    # A fresh environment takes the same path.
    other = saturn.Environment(saturn.load("squeezenet"), cost="roofline", budget_nodes=800)
    other.reset()
    for action, _, _, state in trace:
        other.step(action)
    assert observe(other) == trace[-1][3]
    env.reset()
    with pytest.raises(ValueError, match="without a checkpoint"):
        env.restore()
    with pytest.raises(ValueError, match="not a rule index"):
        env.step(env.num_actions + 5)


def test_bad_input_raises_with_saturns_message(tmp_path):
    with pytest.raises(ValueError, match="nope.onnx"):
        saturn.load(str(tmp_path / "nope.onnx"))
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="broken.onnx: not an ONNX model"):
        saturn.load(str(broken))
    with pytest.raises(ValueError, match="unknown model format"):
        saturn.load(str(tmp_path / "model.txt"))
    model = saturn.load("squeezenet")
    with pytest.raises(ValueError, match="option search: 'bogus' is not mcts, greedy"):
        saturn.optimize(model, search="bogus")
    with pytest.raises(ValueError, match="tpu"):
        saturn.optimize(model, cost="roofline:tpu")
    with pytest.raises(ValueError, match="option min-gain: '100' is not a percentage"):
        saturn.optimize(model, min_gain=100)
    with pytest.raises(ValueError, match="unknown option 'budget' .*budget-nodes"):
        saturn.optimize(model, budget=10)
    with pytest.raises(ValueError, match="option no_check takes True or False"):
        saturn.optimize(model, no_check="yes")
    with pytest.raises(ValueError, match="input 'input' must have shape"):
        model.run({"input": np.zeros((1, 2), dtype=np.float32)})
    with pytest.raises(ValueError, match="unknown output format"):
        model.save(str(tmp_path / "model.txt"))


def test_the_readme_example_runs(tmp_path):
    import subprocess
    import sys
    example = os.path.join(ROOT, "examples", "optimize_onnx.py")
    out = tmp_path / "squeezenet.opt.onnx"
    done = subprocess.run([sys.executable, example, fixture("squeezenet1_1.onnx"), str(out)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.startswith("squeezenet1_1: cost ")
    assert saturn.load(str(out)).num_ops > 0
