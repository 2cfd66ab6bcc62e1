"""What the command-line tests share: `saturn optimize` run the quick,
deterministic way (greedy search, operator count, no exact extraction, no
timing in onnxruntime), its report read back."""
import json
import os
import subprocess

CLI = os.environ.get("SATURN_CLI")


def optimize(path, out, report, *extra, cost="opcount"):
    """saturn optimize PATH -o OUT with the greedy search and the operator
    count (or `cost`; None: saturn's default, onnxruntime's kernels as
    measured); the report (written to REPORT) as a dict. Fails the test
    where the command fails."""
    costs = ["--cost", cost] if cost else []
    done = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--search", "greedy", *costs,
                           "--ilp-seconds", "0", "--no-measure", "--quiet",
                           "--report", str(report), *extra], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(report, encoding="utf-8") as f:
        return json.load(f)
