#!/usr/bin/env bash
# A cost table records the machine it was timed on; used on another, a note
# names both, and extending it says which entries came from there.
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json
table=$OUT/elsewhere_costs.json

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 2 --passes 1 --explore 0
expect '"machine": "' "$(cat "$OUT/costs.json")" "costs.json"
sed 's/"machine": "[^"]*"/"machine": "Elsewhere CPU, 64 hardware threads"/' "$OUT/costs.json" >"$table"

run_ok out "$SATURN" optimize "$model" --cost "measured:$table" --search greedy --ilp-seconds 0 --quiet
expect 'note: .*elsewhere_costs\.json was measured on Elsewhere CPU, 64 hardware threads, this machine is ' "$out"

run_ok out "$SATURN" calibrate "$model" -o "$table" --runs 2 --explore 0
expect 'keeps [1-9][0-9]* entries measured on Elsewhere CPU' "$out"
