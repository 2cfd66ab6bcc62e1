#!/usr/bin/env python3
"""Where MCTS beats greedy saturation, by budget: reads the compare_search.json
of a run over several budgets (mcts and greedy rows) and writes
budget_sweep.md and budget_sweep.svg beside the --out prefix: per model and
budget (e-nodes per region), greedy's improvement, MCTS's mean and worst seed,
and MCTS's lead in percentage points. Standard library only (/usr/bin/python3).

  bench/budget_sweep.py SWEEP/compare_search.json --out bench/results/budget_sweep
"""
import argparse
import json
import math
import sys


def load(path, cost):
    """The runs under one cost model (`cost`, or the first the file has)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    runs = [r for r in doc["runs"] if not r.get("error")]
    cost = cost or (runs[0]["cost_model"] if runs else "")
    cells = {}
    for run in runs:
        if run["cost_model"] != cost:
            continue
        key = (run["model"], run["budget_nodes"])
        cells.setdefault(key, {})[run["strategy"]] = run
    return doc, cost, cells


def lead_table(cells):
    """Rows (model, budget, greedy %, mcts mean %, mcts worst %, lead pp)."""
    rows = []
    for (model, budget), by in sorted(cells.items()):
        if "mcts" not in by or "greedy" not in by:
            continue
        greedy = by["greedy"]["improvement_mean"]
        mcts = by["mcts"]["improvement_mean"]
        worst = min(by["mcts"]["improvement_percent"])
        rows.append((model, budget, greedy, mcts, worst, mcts - greedy))
    return rows


def write_markdown(path, doc, cost, rows, command):
    budgets = sorted({r[1] for r in rows})
    models = sorted({r[0] for r in rows})
    by = {(r[0], r[1]): r for r in rows}
    lines = ["# MCTS against greedy saturation, by budget", "",
             f"Command: `{command}` ({doc['machine']}), cost model {cost}. The budget is "
             "e-nodes per region (a model above 160 operators is cut into regions, each with "
             "its own budget). Each cell: MCTS's mean improvement over the seeds minus "
             "greedy's, in percentage points of the input's cost (positive: MCTS found cheaper "
             "graphs); in brackets greedy's improvement. Under the table: the cells where "
             "MCTS's worst seed is below greedy.", "",
             "| model | " + " | ".join(f"{b} e-nodes" for b in budgets) + " |",
             "|---|" + "---|" * len(budgets)]
    for m in models:
        cells = []
        for b in budgets:
            r = by.get((m, b))
            cells.append("—" if r is None else f"{r[5]:+.2f} ({r[2]:.2f}%)")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    ahead = [r for r in rows if r[5] > 0.005]
    behind = [r for r in rows if r[4] < r[2] - 1e-6]
    lines += ["", f"MCTS is ahead in {len(ahead)} of {len(rows)} cells; its worst seed is below "
              f"greedy in {len(behind)}" + (": " + ", ".join(f"{r[0]} at {r[1]}" for r in behind)
                                              if behind else "") + ".", ""]
    for b in budgets:
        at = [r for r in rows if r[1] == b]
        lines.append(f"- {b} e-nodes per region: MCTS ahead on {sum(1 for r in at if r[5] > 0.005)}"
                     f" of {len(at)} models, mean lead {sum(r[5] for r in at) / len(at):+.2f} pp")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def write_svg(path, rows):
    """MCTS's lead over greedy (pp) against the budget per region (log x)."""
    budgets = sorted({r[1] for r in rows})
    models = sorted({r[0] for r in rows})
    width, height, left, top, bottom = 560, 320, 60, 30, 40
    hi = max([r[5] for r in rows] + [1.0])
    lo = min([r[5] for r in rows] + [0.0])
    def x_of(b):
        if len(budgets) == 1:
            return left + (width - left - 150) / 2
        t = (math.log(b) - math.log(budgets[0])) / (math.log(budgets[-1]) - math.log(budgets[0]))
        return left + t * (width - left - 150)
    def y_of(v):
        return top + (hi - v) / (hi - lo) * (height - top - bottom)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
              "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           '<text x="10" y="16" font-size="13">MCTS minus greedy, improvement in percentage '
           'points, by e-nodes per region</text>',
           f'<line x1="{left}" y1="{y_of(0)}" x2="{width - 150}" y2="{y_of(0)}" stroke="#888"/>']
    for b in budgets:
        out.append(f'<text x="{x_of(b)}" y="{height - 20}" text-anchor="middle">{b}</text>')
    for v in (lo, 0.0, hi):
        out.append(f'<text x="{left - 6}" y="{y_of(v) + 4}" text-anchor="end">{v:+.1f}</text>')
    for k, m in enumerate(models):
        pts = [(x_of(r[1]), y_of(r[5])) for r in rows if r[0] == m]
        color = colors[k % len(colors)]
        out.append(f'<polyline fill="none" stroke="{color}" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        out.append(f'<text x="{width - 140}" y="{top + 14 * k + 10}" fill="{color}">{m}</text>')
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="compare_search.json of a run with mcts and greedy rows")
    p.add_argument("--out", required=True, help="prefix of the .md and .svg to write")
    p.add_argument("--command", default="", help="the compare_search command, for the table")
    p.add_argument("--cost", default="", help="the cost model to show (default: the file's first)")
    args = p.parse_args()
    doc, cost, cells = load(args.json, args.cost)
    rows = lead_table(cells)
    if not rows:
        sys.exit(f"{args.json}: no model with both mcts and greedy rows")
    write_markdown(args.out + ".md", doc, cost, rows, args.command)
    write_svg(args.out + ".svg", rows)


if __name__ == "__main__":
    main()
