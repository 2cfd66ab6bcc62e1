#!/usr/bin/env bash
# A sweep run that fails (a budget the model does not fit) says why in its
# row and makes the sweep exit 1; impossible settings and unknown options
# are usage errors (exit 2).
source "$(dirname "$0")/lib.sh"

run out "$COMPARE_SEARCH" --models squeezenet --strategies greedy --costs opcount --budgets 2 \
  --time-limit 1 --ilp-seconds 0 --out "$OUT/failed_runs"
expect_exit 1
expect "error: .*does not fit the search budget.*1 of 1 runs failed" "$out"

run out "$COMPARE_SEARCH" --time-limit 0
expect_exit 2
# CLI11 wording
expect 'compare_search: .*--time-limit.*Run with --help' "$out"

run out "$CALIBRATE_CPU" --out x
expect_exit 2
# CLI11 wording
expect 'calibrate_cpu: .*--out.*Run with --help' "$out"
