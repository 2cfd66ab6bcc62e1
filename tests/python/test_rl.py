"""The learned searches of tools/rl: each agent trains for a few updates on
small models (finite losses, a repeatable run for a fixed seed), its policy
file round-trips, run_policy.py writes a model that computes what the input
computes, and the pass-ordering environment runs the default order's exact
workload (the same cost as saturn's `default` search). Skipped where torch
is not installed (the learned agents' dependency, not saturn's: an
installed wheel's environment)."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import saturn

ROOT = os.environ.get("SATURN_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
RL = os.path.join(ROOT, "tools", "rl")
sys.path.insert(0, RL)

import envs  # noqa: E402
import policies  # noqa: E402
import ppo  # noqa: E402

SMALL = ["vgg19", "squeezenet"]


def train_briefly(agent, seed=4):
    torch.manual_seed(seed)
    models = envs.load_models(SMALL)
    make_env = lambda model: envs.ENVIRONMENTS[agent](model, budget_nodes=600, max_steps=4)
    policy = policies.make_policy(agent, make_env(models[SMALL[0]]))
    config = ppo.PpoConfig(updates=2, episodes_per_update=2, seed=seed)
    curve = ppo.train(policy, make_env, models, config, log=lambda _: None)
    return policy, curve


@pytest.mark.parametrize("agent", ["pass", "rule"])
def test_agent_trains_and_its_policy_file_round_trips(agent, tmp_path):
    policy, curve = train_briefly(agent)
    assert len(curve) == 2
    assert all(np.isfinite(c["loss"]) and np.isfinite(c["mean_gain"]) for c in curve)
    path = tmp_path / f"ppo-{agent}-opcount.pt"
    policies.save_policy(policy, str(path), {"cost": "opcount", "budget_nodes": 600})
    back, meta = policies.load_policy(str(path))
    assert meta["budget_nodes"] == 600
    for name, value in policy.state_dict().items():
        assert torch.equal(value, back.state_dict()[name]), name
    env = envs.ENVIRONMENTS[agent](saturn.load("vgg19"), budget_nodes=600)
    obs = env.reset()
    with torch.no_grad():
        assert torch.equal(policy([obs])[0], back([obs])[0])


def test_a_fixed_seed_repeats_the_training_run():
    _, first = train_briefly("pass", seed=9)
    _, second = train_briefly("pass", seed=9)
    assert first == second


def test_the_pass_environment_runs_the_default_orders_workload():
    model = saturn.load("bert")
    env = envs.PassOrderEnv(model, budget_nodes=2000, max_steps=20)
    env.reset()
    for g, _ in enumerate(env.groups):  # each group to its fixpoint, in the default order
        if env.group_rules[g]:
            env.step(env.actions.index((g, saturn.DEFAULT_PASS_ITERATIONS)))
    default = saturn.optimize(model, search="default", cost="opcount", budget_nodes=2000,
                              region_ops=0, ilp_seconds=0, min_gain=0)
    assert env.cost() == default.cost_after < default.cost_before


def test_run_policy_writes_a_model_that_computes_the_same(tmp_path):
    policy, _ = train_briefly("pass")
    path = tmp_path / "ppo-pass-opcount.pt"
    policies.save_policy(policy, str(path), {"cost": "opcount", "budget_nodes": 600})
    out = tmp_path / "squeezenet.opt.onnx"
    fixture = os.path.join(ROOT, "tensor", "fixtures", "squeezenet1_1.onnx")
    run = subprocess.run([sys.executable, os.path.join(RL, "run_policy.py"), fixture,
                          "--policy", str(path), "-o", str(out)],
                         capture_output=True, text=True, env=os.environ)
    assert run.returncode == 0, run.stderr
    assert "cost" in run.stdout and out.exists()
    model, back = saturn.load(fixture), saturn.load(str(out))
    inputs = model.random_inputs(seed=2)
    np.testing.assert_allclose(back.run(inputs)["output"], model.run(inputs)["output"],
                               rtol=1e-3, atol=1e-4)
    refused = subprocess.run([sys.executable, os.path.join(RL, "run_policy.py"), str(out),
                              "--policy", str(path), "-o", str(out)],
                             capture_output=True, text=True, env=os.environ)
    assert refused.returncode != 0 and "never overwrites its input" in refused.stderr


def test_a_file_that_is_not_a_policy_is_refused(tmp_path):
    path = tmp_path / "not_a_policy.pt"
    torch.save({"kind": "other"}, str(path))
    with pytest.raises(ValueError, match="not a saturn policy file"):
        policies.load_policy(str(path))


@pytest.mark.parametrize("cost", ["opcount", "roofline"])
@pytest.mark.parametrize("agent", ["pass", "rule"])
def test_the_shipped_policies_fit_the_shipped_rules(agent, cost):
    # A rule added or removed changes the rule-choice agent's actions, a
    # group the pass agent's: the shipped policies must then be trained again.
    import agents
    path = os.path.join(RL, "policies", f"ppo-{agent}-{cost}.pt")
    env, actions = agents.run_policy(path, saturn.load("nasrnn"))
    assert actions and env.cost() < env.initial_cost()
