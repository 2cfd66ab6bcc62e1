#!/usr/bin/env python3
"""Optimizes a model with a trained policy (the learned search).

  PYTHONPATH=build/python python3 tools/rl/run_policy.py nasrnn \\
      --policy tools/rl/policies/ppo-pass-opcount.pt -o nasrnn.opt.onnx

prints the actions taken and the cost before and after, and writes the best
graph of the final state (.onnx or .json; never over the input).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import saturn  # noqa: E402

import agents  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("model", help="an ONNX file, a saturn JSON file or a zoo model name")
    p.add_argument("--policy", required=True, help="a policy file from train.py")
    p.add_argument("--cost", default=None, help="default: the cost the policy was trained with")
    p.add_argument("--budget-nodes", type=int, default=None)
    p.add_argument("-o", dest="out", help="write the optimized model (.onnx or .json)")
    args = p.parse_args(argv)
    if args.out and os.path.exists(args.out) and os.path.exists(args.model) \
            and os.path.samefile(args.model, args.out):
        p.error(f"-o {args.out} is the input model: saturn never overwrites its input")
    try:
        model = saturn.load(args.model)
        env, actions = agents.run_policy(args.policy, model, args.cost, args.budget_nodes)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"run_policy: {e}", file=sys.stderr)
        return 1
    print(f"{model.name}: actions {', '.join(actions) or '(none)'}")
    print(f"cost {env.initial_cost():.2f} -> {env.cost():.2f}")
    if args.out:
        env.best_model().save(args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
