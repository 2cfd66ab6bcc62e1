#!/usr/bin/env python3
"""Trains a PPO agent on saturn's search environment.

  PYTHONPATH=build/python python3 tools/rl/train.py --agent pass --out tools/rl/policies

writes OUT/ppo-pass-opcount.pt (the policy), OUT/ppo-pass-opcount.json (the
settings and the learning curve) and OUT/ppo-pass-opcount.svg (the curve).
Training runs on envs.TRAIN_MODELS; a fixed --seed repeats a run exactly.
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envs  # noqa: E402
import policies  # noqa: E402
import saturn  # noqa: E402
import ppo  # noqa: E402
import svg  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--agent", choices=["pass", "rule"], required=True)
    p.add_argument("--models", default=",".join(envs.TRAIN_MODELS),
                   help="zoo model names or model files, comma-separated")
    p.add_argument("--cost", default="opcount")
    p.add_argument("--budget-nodes", type=int, default=2000)
    p.add_argument("--updates", type=int, default=None)
    p.add_argument("--episodes", type=int, default=None, help="episodes per update")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="folder for the policy, its log and its curve")
    return p.parse_args(argv)


DEFAULT_UPDATES = {"pass": 300, "rule": 40}


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)  # repeatable, and light on a 2-core machine
    names = [m for m in args.models.split(",") if m]
    models = envs.load_models(names)
    env_class = envs.ENVIRONMENTS[args.agent]
    make_env = lambda model: env_class(model, cost=args.cost, budget_nodes=args.budget_nodes)
    config = ppo.PpoConfig(seed=args.seed)
    config.updates = args.updates or DEFAULT_UPDATES[args.agent]
    if args.episodes:
        config.episodes_per_update = args.episodes
    torch.manual_seed(args.seed)
    policy = policies.make_policy(args.agent, make_env(models[names[0]]))
    start = time.time()
    curve = ppo.train(policy, make_env, models, config)
    seconds = time.time() - start
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"ppo-{args.agent}-{args.cost.replace(':', '-')}")
    meta = {"agent": args.agent, "cost": args.cost, "budget_nodes": args.budget_nodes,
            "models": names, "seed": args.seed, "config": vars(config),
            "seconds": round(seconds, 1), "command": " ".join(sys.argv),
            "op_names": list(saturn.OP_NAMES)}
    policies.save_policy(policy, stem + ".pt", meta)
    with open(stem + ".json", "w") as f:
        json.dump({**meta, "curve": curve}, f, indent=2)
    with open(stem + ".svg", "w") as f:
        f.write(svg.line_chart({"mean gain of an update's episodes (%)":
                                [(c["update"], 100 * c["mean_gain"]) for c in curve]},
                               f"PPO {args.agent} agent, {args.cost}, {config.updates} updates "
                               f"in {seconds:.0f} s", "update", "cost removed (%)"))
    print(f"wrote {stem}.pt, .json and .svg ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
