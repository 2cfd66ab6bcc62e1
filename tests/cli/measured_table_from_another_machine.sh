#!/usr/bin/env bash
# A cost table records the machine it was timed on; used on another, a note
# names both, and extending it says which entries came from there and keeps
# that machine's name and profiler correction (what a later run there
# corrects its own entries by).
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json
table=$OUT/elsewhere_costs.json

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 2 --passes 1 --explore 0
expect '"machine": "' "$(cat "$OUT/costs.json")" "costs.json"
sed 's/"machine": "[^"]*"/"machine": "Elsewhere CPU, 64 hardware threads"/' "$OUT/costs.json" >"$table"

run_ok out "$SATURN" optimize "$model" --cost "measured:$table" --search greedy --ilp-seconds 0 --quiet
expect 'note: .*elsewhere_costs\.json was measured on Elsewhere CPU, 64 hardware threads, this machine is ' "$out"

# One entry short, with that machine's correction.
/usr/bin/python3 - "$table" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))
table["profiler_correction"] = {"excess_us": 123.5, "floor_us": 0.5}
table["entries"] = table["entries"][1:]
json.dump(table, open(sys.argv[1], "w"))
PY
run_ok out "$SATURN" calibrate "$model" -o "$table" --runs 2 --explore 0
expect 'keeps [1-9][0-9]* entries measured on Elsewhere CPU' "$out"
expect 'operator signatures: 1 measured' "$out"
/usr/bin/python3 - "$table" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))
assert table["machine"] == "Elsewhere CPU, 64 hardware threads", table["machine"]
assert table["profiler_correction"] == {"excess_us": 123.5, "floor_us": 0.5}, \
    table["profiler_correction"]
PY
