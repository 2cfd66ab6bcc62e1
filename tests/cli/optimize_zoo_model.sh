#!/usr/bin/env bash
# `saturn optimize` on a zoo model: the summary line, and an output model
# (JSON) that type-checks and runs.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" optimize squeezenet --search greedy --cost opcount \
  -o "$OUT/squeezenet_opt.json" --report "$OUT/report.json"
expect 'squeezenet: greedy search, opcount cost: 64\.00 -> [0-9.]+' "$out"

run_ok out "$SATURN" check "$OUT/squeezenet_opt.json" --eval
expect 'evaluated' "$out"

/usr/bin/python3 - "$OUT/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["model"] == "squeezenet" and report["cost_before"] == 64, report
PY
