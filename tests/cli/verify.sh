#!/usr/bin/env bash
# `saturn verify` runs an optimized model and its original in onnxruntime:
# every output matches, both are timed, and --json records it.
source "$(dirname "$0")/lib.sh"
original=$FIXTURES/squeezenet1_1.onnx

run_ok out "$SATURN" optimize "$original" --search greedy --cost opcount --ilp-seconds 0 \
  -o "$OUT/squeezenet_opt.onnx" --quiet

run_ok out "$SATURN" verify "$original" "$OUT/squeezenet_opt.onnx" --runs 3 --json "$OUT/verify.json"
expect 'output +output +match.*speedup [0-9.]+x.*outputs match' "$out"

/usr/bin/python3 - "$OUT/verify.json" "$original" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["original"] == sys.argv[2] and report["optimized"].endswith("squeezenet_opt.onnx"), report
PY
