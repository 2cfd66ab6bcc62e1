#!/usr/bin/env python3
"""A stand-in for ort/harness/ort_run.py that crashes like onnxruntime can:
on any batch of more than one model, and on the model named op0.onnx. The
models it does "time" take 5 us. Tests point SATURN_ORT_DIR at a folder
holding a copy named ort_run.py. Any python3 runs it (standard library only)."""
import json
import os
import sys

args = sys.argv[1:]
files = [a for i, a in enumerate(args[1:], 1)
         if not a.startswith("--") and not args[i - 1].startswith("--")]
if not args or args[0] != "time" or len(files) != 1 or files[0].endswith("op0.onnx"):
    os.abort()
model = {"model": files[0], "median_us": 5, "p10_us": 5, "p90_us": 5, "runs": 1,
         "kernel_us": 5, "kernels": []}
sys.stdout.write(json.dumps({"models": [model]}) + "\n")
