#!/usr/bin/env python3
"""Where onnxruntime's time goes on the corpus's transformer models, and what
that leaves for fusions: the share of each kernel in onnxruntime's own
profile (CPU, one intra-op thread, optimization level "all", the setup of
run.py), and the bound on any rewrite that leaves the products alone.

A fusion of attention, normalization, activation or rotary blocks removes
the time of the kernels it merges, at best all of it; the products
(MatMul, Gemm, FusedMatMul, Conv and onnxruntime's fused forms of them)
stay, since the same multiply-adds must run. So the speedup of any such
rewrite is at most total / products (Amdahl's law). The bound is printed per
model and as a geometric mean per part.

Run from the repository root with the corpus's environment:

    build/corpus-venv/bin/python bench/corpus/op_share.py [--models NAME...]
        [--part tuning|held-out] [--runs 5] [--cache DIR] [--out bench/results]

Writes op_share.json and op_share.md into --out.
"""
import argparse
import collections
import json
import math
import os
import sys
import tempfile

import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the corpus's materialization, inputs and session setup)

# Kernels that do the products' multiply-adds: what a fusion of the blocks
# around them cannot remove.
PRODUCT_KERNELS = {"MatMul", "Gemm", "FusedMatMul", "FusedGemm", "MatMulInteger", "Conv",
                   "FusedConv", "NhwcFusedConv", "ConvTranspose", "QLinearConv", "QLinearMatMul"}


def profile(path, entry, runs, seed):
    """Per-kernel microseconds per run, from onnxruntime's profiler, over
    `runs` runs after one warm-up."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.gettempdir(), "saturn_op_share")
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = run.feeds_for(s, entry, seed)
    s.run(None, feeds)
    for _ in range(runs):
        s.run(None, feeds)
    trace = s.end_profiling()
    with open(trace, encoding="utf-8") as f:
        events = json.load(f)
    os.remove(trace)
    per_op = collections.Counter()
    runs_seen = 0
    for e in events:
        if e.get("cat") == "Session" and e.get("name") == "model_run":
            runs_seen += 1
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            per_op[e["args"]["op_name"]] += e["dur"]
    runs_seen = max(1, runs_seen)
    return {op: us / runs_seen for op, us in per_op.items()}


def model_path(entry, cache, seed):
    """The whole model (seeded weights filled in), from `cache` when it is
    there."""
    path = os.path.join(cache, entry["name"] + ".onnx")
    if not os.path.exists(path):
        run.materialize(os.path.join(run.CORPUS, "models", entry["name"] + ".onnx"), path, seed)
    return path


def summarize(entry, per_op):
    total = sum(per_op.values())
    products = sum(us for op, us in per_op.items() if op in PRODUCT_KERNELS)
    top = sorted(per_op.items(), key=lambda kv: -kv[1])[:6]
    return {"model": entry["name"], "family": entry["family"], "part": entry["part"],
            "kernel_ms": round(total / 1000, 3), "product_share": round(products / total, 4),
            "bound": round(total / products, 4) if products else None,
            "top": [[op, round(us / total, 4)] for op, us in top]}


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def write(rows, out):
    with open(os.path.join(out, "op_share.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": rows}, f, indent=1)
    lines = [
        "# Where onnxruntime's time goes on the corpus's transformer models",
        "",
        "Made by `build/corpus-venv/bin/python bench/corpus/op_share.py` (onnxruntime "
        f"{ort.__version__}, CPU, one intra-op thread, optimization level \"all\"; kernel "
        "times from onnxruntime's profiler). Products are MatMul, Gemm, Conv and "
        "onnxruntime's fused forms of them. Bound is total / products: the most any "
        "rewrite that leaves the products' multiply-adds in place can gain (Amdahl's law).",
        "",
        "| part | models | products' share (median) | bound (geometric mean) |",
        "|---|---|---|---|",
    ]
    for part in ("tuning", "held-out"):
        rs = [r for r in rows if r["part"] == part]
        if not rs:
            continue
        shares = sorted(r["product_share"] for r in rs)
        lines.append(f"| {part} | {len(rs)} | {shares[len(shares) // 2]:.3f} | "
                     f"{geomean([r['bound'] for r in rs]):.3f} |")
    lines += ["", "| model | family | part | kernel ms | products' share | bound | largest kernels |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        top = ", ".join(f"{op} {share:.1%}" for op, share in r["top"])
        lines.append(f"| {r['model']} | {r['family']} | {r['part']} | {r['kernel_ms']} | "
                     f"{r['product_share']:.3f} | {r['bound']} | {top} |")
    with open(os.path.join(out, "op_share.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*")
    p.add_argument("--part", choices=["tuning", "held-out"])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seed", type=int, default=1, help="as run.py's --seed")
    p.add_argument("--cache", default=os.path.join(run.ROOT, "build", "corpus-models"),
                   help="where the whole models are kept between runs")
    p.add_argument("--out", default=os.path.join(run.ROOT, "bench", "results"))
    args = p.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    with open(os.path.join(run.CORPUS, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    rows = []
    for entry in manifest["models"]:
        if entry["family"] not in run.ORT_MODEL_TYPES or entry["family"] == "unet2d":
            continue  # not a transformer
        if (args.models and entry["name"] not in args.models) or \
                (args.part and entry["part"] != args.part):
            continue
        path = model_path(entry, args.cache, args.seed)
        rows.append(summarize(entry, profile(path, entry, args.runs, args.seed)))
        r = rows[-1]
        print(f"{r['model']:32s} {r['part']:8s} {r['kernel_ms']:9.1f} ms  products "
              f"{r['product_share']:.1%}  bound {r['bound']}", flush=True)
    write(rows, args.out)


if __name__ == "__main__":
    main()
