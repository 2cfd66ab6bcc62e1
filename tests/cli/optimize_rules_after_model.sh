#!/usr/bin/env bash
# --rules takes one file per occurrence, so the model may come before or
# after it.
source "$(dirname "$0")/lib.sh"
rules=$SATURN_ROOT/rules/tensor

run_ok out "$SATURN" optimize squeezenet --rules "$rules/elementwise.rules" \
  --search greedy --cost opcount --ilp-seconds 0 -o "$OUT/x.json"
expect 'wrote .*/x\.json' "$out"
run_ok out "$SATURN" check "$OUT/x.json"

run_ok out "$SATURN" optimize --rules "$rules/elementwise.rules" --rules "$rules/conv.rules" \
  --search greedy --cost opcount --ilp-seconds 0 -o "$OUT/y.json" squeezenet
expect 'wrote .*/y\.json' "$out"
run_ok out "$SATURN" check "$OUT/y.json"
