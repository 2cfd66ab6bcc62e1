#!/usr/bin/env bash
# A budget the model does not fit in limits the work; it does not refuse the
# model: the input is written unchanged, and stderr and the report say why.
source "$(dirname "$0")/lib.sh"

# A graph too large for its budget is cut smaller, down to single operators:
# at 2 e-nodes not even one operator fits.
run out "$SATURN" optimize squeezenet --budget-nodes 2 -o "$OUT/squeezenet.json" --report "$OUT/r.json"
expect_exit 0
expect 'saturn: squeezenet: kept unsearched, since [0-9]+ of [0-9]+ region structures \([0-9]+ operators\) were not searched; .*does not fit the search budget \(2 e-nodes' "$out"
grep -q '"not_searched": ".*does not fit the search budget' "$OUT/r.json" ||
  fail "the report does not say why the model was not searched" "$(cat "$OUT/r.json")"
grep -q '"kept_input": true' "$OUT/r.json" || fail "the input was not kept" "$(cat "$OUT/r.json")"
run_ok out "$SATURN" check "$OUT/squeezenet.json"
