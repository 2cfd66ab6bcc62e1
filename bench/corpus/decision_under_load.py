"""Whether a busy machine changes saturn's decisions: each corpus model
optimized twice with saturn's defaults, once on a quiet machine and once
beside a CPU-bound process on the other core (started here), then each model
written in the loaded run timed again quietly against its input. Run with
the corpus environment's python (onnx, numpy, onnxruntime):

    build/corpus-venv/bin/python bench/corpus/decision_under_load.py \
        [--models NAME...] [--part tuning] [--out build/decision-load]

Prints a table (model, verdict and measured speedup quiet and loaded, the
quiet re-timing of what the loaded run wrote) and the share of models with
the same verdict. The re-timing runs 8 sessions of each model one at a
time with onnxruntime's default threads here (bench/retime.py).
"""
import argparse
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import run as corpus  # noqa: E402  (materialize, the manifest's sizes)
from retime import true_speedup  # noqa: E402


def spin():
    """A CPU-bound process pinned to the last core."""
    os.sched_setaffinity(0, {os.cpu_count() - 1})
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648


def optimize(saturn, model, entry, out, report):
    cmd = [saturn, "optimize", model, "-o", out, "--report", report, "--quiet"]
    for name, size in (entry.get("dims") or {}).items():
        cmd += ["--dim", f"{name}={size}"]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return {"error": (done.stdout + done.stderr).strip().splitlines()[-1:],
                "command": " ".join(shlex.quote(c) for c in cmd)}
    r = json.load(open(report))
    m = r.get("measured") or {}
    return {"taken": r["decision"]["taken"], "gate": r["decision"]["decided_by"],
            "speedup": m.get("speedup"), "low": m.get("speedup_low"),
            "timing_seconds": r.get("seconds", {}).get("measure"), "seconds": seconds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*")
    p.add_argument("--part", choices=["tuning", "held-out"])
    p.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "decision-load"))
    p.add_argument("--keep", action="store_true", help="keep the models and results written")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    entries = [e for e in manifest["models"]
               if (not args.models or e["name"] in args.models) and
               (not args.part or e["part"] == args.part)]
    rows = []
    print("| model | quiet | loaded | loaded's result re-timed quietly |")
    print("|---|---|---|---|")
    for entry in entries:
        name = entry["name"]
        model = os.path.join(args.out, name + ".onnx")
        if not os.path.exists(model):
            corpus.materialize(os.path.join(HERE, "models", name + ".onnx"), model,
                               manifest["seed"])
        quiet = optimize(args.saturn, model, entry, os.path.join(args.out, name + ".quiet.onnx"),
                         os.path.join(args.out, name + ".quiet.json"))
        load = multiprocessing.Process(target=spin, daemon=True)
        load.start()
        try:
            loaded_out = os.path.join(args.out, name + ".loaded.onnx")
            loaded = optimize(args.saturn, model, entry, loaded_out,
                              os.path.join(args.out, name + ".loaded.json"))
        finally:
            load.kill()
            load.join()
        check = None
        if loaded.get("taken") and loaded.get("gate") == "measured":
            check = true_speedup(model, loaded_out, os.cpu_count(), entry.get("dims") or {})

        def verdict(r):
            if "error" in r:
                return f"error: {r['error']}"
            s = f" {r['speedup']:.3f}x" if r.get("speedup") else ""
            return f"{'taken' if r['taken'] else 'kept'} ({r['gate']}{s})"
        again = f"{check[0]:.3f}x [{check[1]:.3f}, {check[2]:.3f}]" if check else "—"
        rows.append({"model": name, "quiet": quiet, "loaded": loaded, "retimed": check})
        if not args.keep:
            for f in os.listdir(args.out):
                if f.startswith(name + ".") and f.endswith(".onnx") or ".onnx.data" in f:
                    os.remove(os.path.join(args.out, f))
        print(f"| {name} | {verdict(quiet)} | {verdict(loaded)} | {again} |", flush=True)
    same = sum(r["quiet"].get("taken") == r["loaded"].get("taken") for r in rows)
    print(f"\nSame verdict on {same} of {len(rows)} models.")
    with open(os.path.join(args.out, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
