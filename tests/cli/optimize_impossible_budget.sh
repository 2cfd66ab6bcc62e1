#!/usr/bin/env bash
# A budget the model does not fit in limits the work; it does not refuse the
# model: the input is written unchanged, and stderr and the report say why.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" optimize squeezenet --budget-nodes 10 -o "$OUT/squeezenet.json" --report "$OUT/r.json"
expect_exit 0
expect 'saturn: squeezenet: kept unsearched, since model .squeezenet. does not fit the search budget \(10 e-nodes' "$out"
grep -q '"not_searched": "model .squeezenet. does not fit the search budget' "$OUT/r.json" ||
  fail "the report does not say why the model was not searched" "$(cat "$OUT/r.json")"
grep -q '"kept_input": true' "$OUT/r.json" || fail "the input was not kept" "$(cat "$OUT/r.json")"
run_ok out "$SATURN" check "$OUT/squeezenet.json"
