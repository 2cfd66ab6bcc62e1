#!/usr/bin/env bash
# An operator that reads a convolution is also timed between convolutions
# (onnxruntime's blocked layout), a Concat of a Split's part and a
# convolution mixed; a table that timed the Split alone only has it redone.
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json
table=$OUT/csc_costs.json

run_ok out "$SATURN" calibrate "$model" -o "$table" --runs 2 --explore 0
expect '7 measured, 0 already' "$out"

# The Split and the Add of two convolutions are timed between convolutions;
# the Add, which onnxruntime fuses into a convolution, costs nothing there.
# Then the Split's context is dropped, as if an older saturn had timed it.
/usr/bin/python3 - "$table" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))
def entry(op):
    return [e for e in table["entries"] if e["signature"].startswith(op)][0]
split, add, concat = entry("Split"), entry("Add"), entry("Concat")
assert split.get("context") == "between convolutions", split
assert add.get("context") == "between convolutions", add
assert add["us"] == 0 and add["alone_us"] > 0, add
assert concat["mixed_us"] > 0, concat
for e in table["entries"]:
    if "Split" in e["signature"]:
        e.pop("context")
json.dump(table, open(sys.argv[1], "w"))
PY

run_ok out "$SATURN" calibrate "$model" -o "$table" --runs 2 --explore 0
expect 'held 1 entries timed another way.*1 measured, 6 already in the table' "$out" "the second run"

/usr/bin/python3 - "$table" <<'PY'
import json, sys
split = [e for e in json.load(open(sys.argv[1]))["entries"] if e["signature"].startswith("Split")][0]
assert split.get("context") == "between convolutions", split
PY
