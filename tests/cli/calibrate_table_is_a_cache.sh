#!/usr/bin/env bash
# `saturn calibrate` times the model's own operators, then (--explore) those
# its rewrites reach, corrected by the table's profiler correction, then
# nothing new: the table is a cache, and keeps its profiler correction.
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 3 --explore 0
expect '[0-9]+ operator signatures: [1-9][0-9]* measured, 0 already' "$out"
expect "each kernel's time less [0-9.]+ us that the profiler adds, at least [0-9.]+ us" "$out"

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 3 --passes 1 --explore 2000
expect 'operator signatures: [1-9][0-9]* measured, [1-9][0-9]* already' "$out" "--explore 2000"
expect "profiler adds, at least [0-9.]+ us \\(the table's, timed on this machine\\)" "$out" "--explore 2000"

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 3
expect 'operator signatures: 0 measured, [1-9][0-9]* already in the table' "$out" "the third run"

/usr/bin/python3 - "$OUT/costs.json" <<'PY'
import json, sys
correction = json.load(open(sys.argv[1]))["profiler_correction"]
assert correction["excess_us"] > 0, correction
PY
