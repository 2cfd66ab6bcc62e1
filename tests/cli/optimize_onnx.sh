#!/usr/bin/env bash
# `saturn optimize` from ONNX to ONNX: the summary, an output that loads and
# runs, the Graphviz drawing (--dot) and the JSON summary (--report).
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" optimize "$FIXTURES/squeezenet1_1.onnx" --search greedy --cost opcount \
  --ilp-seconds 0 -o "$OUT/squeezenet_opt.onnx" --dot "$OUT/dot" --report "$OUT/report.json"
expect 'squeezenet1_1: greedy search, opcount cost: 64\.00 -> [0-9.]+.*wrote .*squeezenet_opt\.onnx' "$out"

run_ok out "$SATURN" check "$OUT/squeezenet_opt.onnx" --eval
expect 'evaluated' "$out"

expect 'digraph "squeezenet1_1"' "$(cat "$OUT/dot/after.dot")" "dot/after.dot"

/usr/bin/python3 - "$OUT/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["model"] == "squeezenet1_1" and report["cost_before"] == 64, report
PY
