#!/usr/bin/env python3
"""The learned searches beside saturn's own, on the same workload.

  PYTHONPATH=build/python python3 tools/rl/compare.py --policies tools/rl/policies \\
      --out bench/results/rl

Each model is searched whole (no regions) under one e-node budget and cost
model by ppo-pass and ppo-rule (trained policies, run greedily) and by
saturn's mcts, greedy, default and taso searches; every state is extracted
by the same greedy DAG extraction. Rows give the cost after each search and
the reduction; OUT/compare_rl.md, .json and .svg hold them.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import saturn  # noqa: E402

import agents  # noqa: E402
import envs  # noqa: E402
import svg  # noqa: E402

SATURN_SEARCHES = ["mcts", "greedy", "default", "taso"]


# Each of saturn's searches runs to its own end (a fixpoint, the budget) or
# this many seconds, whatever the graph's size: the time per operator that
# `saturn optimize` allows by default would end MCTS early on the larger
# graphs (bench/compare_search does the same).
SEARCH_SECONDS = 30


def saturn_search(model, search, cost, budget_nodes, seed):
    r = saturn.optimize(model, search=search, cost=cost, budget_nodes=budget_nodes, seed=seed,
                        threads=1, region_ops=0, ilp_seconds=0, min_gain=0, time_per_op=0,
                        time_limit=SEARCH_SECONDS)
    return r.cost_before, r.cost_after


def compare(models, policy_files, cost, budget_nodes, seed=1, log=print):
    """Rows: one per model, with each search's cost after."""
    rows = []
    for name, model in models.items():
        row = {"model": name, "ops": model.num_ops, "after": {}, "seconds": {}, "actions": {}}
        for label, path in policy_files.items():
            start = time.time()
            env, actions = agents.run_policy(path, model, cost, budget_nodes)
            row["before"] = env.initial_cost()
            row["after"][label] = env.cost()
            row["seconds"][label] = time.time() - start
            row["actions"][label] = actions
        for search in SATURN_SEARCHES:
            start = time.time()
            before, after = saturn_search(model, search, cost, budget_nodes, seed)
            row.setdefault("before", before)
            row["after"][search] = after
            row["seconds"][search] = time.time() - start
        rows.append(row)
        log(f"{name}: " + ", ".join(f"{k} {v:g}" for k, v in row["after"].items()))
    return rows


def reduction(row, search):
    return 100.0 * (row["before"] - row["after"][search]) / row["before"] if row["before"] else 0.0


def markdown(rows, searches, cost, budget_nodes):
    lines = [f"Cost ({cost}) after each search, whole graphs, {budget_nodes} e-nodes; "
             "reduction in parentheses.", "",
             "| model | before | " + " | ".join(searches) + " |",
             "|---|---|" + "---|" * len(searches)]
    for row in rows:
        cells = [f"{row['after'][s]:g} ({reduction(row, s):.1f}%)" for s in searches]
        lines.append(f"| {row['model']} | {row['before']:g} | " + " | ".join(cells) + " |")
    means = [sum(reduction(r, s) for r in rows) / len(rows) for s in searches]
    lines.append("| mean reduction | | " + " | ".join(f"{m:.2f}%" for m in means) + " |")
    lines.append("")
    for row in rows:
        for label, actions in row["actions"].items():
            lines.append(f"- {row['model']}, {label}: {', '.join(actions) or '(no action)'}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--policies", required=True, help="folder with ppo-pass-COST.pt, ppo-rule-COST.pt")
    p.add_argument("--models", default=",".join(envs.HELD_OUT_MODELS))
    p.add_argument("--cost", default="opcount")
    p.add_argument("--budget-nodes", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    stem = args.cost.replace(":", "-")
    policy_files = {}
    for agent in ("pass", "rule"):
        path = os.path.join(args.policies, f"ppo-{agent}-{stem}.pt")
        if os.path.exists(path):
            policy_files[f"ppo-{agent}"] = path
    if not policy_files:
        p.error(f"no ppo-pass-{stem}.pt or ppo-rule-{stem}.pt in {args.policies}")
    models = envs.load_models([m for m in args.models.split(",") if m])
    rows = compare(models, policy_files, args.cost, args.budget_nodes, args.seed)
    searches = list(policy_files) + SATURN_SEARCHES
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"compare_rl_{stem}")
    table = markdown(rows, searches, args.cost, args.budget_nodes)
    with open(base + ".md", "w") as f:
        f.write(f"Command: `{' '.join(sys.argv)}`\n\n" + table)
    with open(base + ".json", "w") as f:
        json.dump({"cost": args.cost, "budget_nodes": args.budget_nodes, "rows": rows}, f, indent=2)
    with open(base + ".svg", "w") as f:
        f.write(svg.bar_chart([r["model"] for r in rows], searches,
                              {r["model"]: {s: reduction(r, s) for s in searches} for r in rows},
                              f"cost reduction, {args.cost}, {args.budget_nodes} e-nodes",
                              "reduction (%)"))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
