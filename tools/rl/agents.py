"""Running a trained policy on a model: the learned searches `ppo-pass` and
`ppo-rule`, as compare.py and run_policy.py use them."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envs  # noqa: E402
import policies  # noqa: E402
import ppo  # noqa: E402


def run_policy(policy_file, model, cost=None, budget_nodes=None):
    """Runs the policy greedily (its likeliest action at each step) on
    `model`. Returns (environment at the final state, the actions taken as
    text). cost and budget default to those the policy was trained with."""
    policy, meta = policies.load_policy(policy_file)
    env_class = envs.ENVIRONMENTS[policy.kind]
    env = env_class(model, cost=cost or meta.get("cost", "opcount"),
                    budget_nodes=budget_nodes or meta.get("budget_nodes", 2000),
                    op_names=meta.get("op_names"))
    if env.num_actions != policy.config["num_actions"]:
        raise ValueError(f"{policy_file}: the policy has {policy.config['num_actions']} actions, "
                         f"the environment {env.num_actions} (another rule set?)")
    with torch.no_grad():
        episode = ppo.run_episode(policy, env, "", greedy=True)
    return env, [env.describe(a) for a in episode.actions]
