#!/usr/bin/env bash
# The default cost is onnxruntime's, as measured: the shipped table until
# `saturn calibrate` (without -o) times this machine's, then that one. The
# summary and the report name the table that priced the run.
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json
export SATURN_CACHE_DIR=$OUT/cache

run_ok out "$SATURN" optimize "$model" --report "$OUT/shipped.json"
expect 'measured cost' "$out"
expect 'priced by: costmodel/tables/onnxruntime-cpu.json' "$out"
grep -q '"cost_source": "costmodel/tables/onnxruntime-cpu.json"' "$OUT/shipped.json" ||
  fail "the report does not name the shipped table" "$(cat "$OUT/shipped.json")"

run_ok out "$SATURN" calibrate "$model" --runs 3 --passes 1 --explore 0
expect "wrote $OUT/cache/onnxruntime-cpu.json" "$out"
[[ -s $OUT/cache/onnxruntime-cpu.json ]] || fail "calibrate wrote no table for this machine"

run_ok out "$SATURN" optimize "$model" --report "$OUT/calibrated.json"
expect "priced by: $OUT/cache/onnxruntime-cpu.json" "$out"

# Named costs stay available.
run_ok out "$SATURN" optimize "$model" --cost roofline
expect 'roofline cost' "$out"
