#!/usr/bin/env bash
# bench/scale end to end on a small sweep: each depth and strategy gets a row
# with its time, memory, regions and saving; the engine table prints;
# the JSON and the plot are written.
source "$(dirname "$0")/lib.sh"

run_ok out "$SCALE" --layers 1,2,4 --strategies greedy,default --costs opcount \
  --engine-nodes 5000 --time-limit 10 --ilp-seconds 0 --out "$OUT/scale"
expect '\| 4 \| opcount \| greedy \| 224 \| 2 \| 2 \| 0 \|' "$out"
expect '\| 5000 \| [0-9]+ \|' "$out"
[[ -s $OUT/scale/scale.json && -s $OUT/scale/scale.svg ]] || fail "no scale.json or scale.svg" "$out"
json=$(cat "$OUT/scale/scale.json")
expect '"layers": 4' "$json"

run out "$SCALE" --layers 0
expect_exit 2
