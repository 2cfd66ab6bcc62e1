#!/usr/bin/env bash
# A cost table timed the old way (whole runs, no "method") is measured anew:
# its entries are dropped and the new table has a profiler correction.
source "$(dirname "$0")/lib.sh"
table=$OUT/stale_costs.json

echo '{"device": "onnxruntime-cpu", "entries": [{"signature": "Relu(float32[1,2])", "us": 5}]}' >"$table"
run_ok out "$SATURN" calibrate "$DATA/models/conv_split_conv.json" -o "$table" --runs 2 --passes 1
expect 'held 1 entries timed another way.*measured anew.*0 already in the table' "$out"

/usr/bin/python3 - "$table" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
assert "onnxruntime-kernel-time-less-profiler" in text, "no method in the table"
assert "Relu(float32[1,2])" not in text, "the stale entry is still there"
correction = json.loads(text)["profiler_correction"]
assert correction["excess_us"] > 0 and correction["floor_us"] > 0, correction
PY
