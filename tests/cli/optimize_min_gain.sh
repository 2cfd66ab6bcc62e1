#!/usr/bin/env bash
# A gain below --min-gain keeps the input, and the summary says what was
# found; --min-gain must be a percent below 100.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" optimize squeezenet --search greedy --cost opcount --ilp-seconds 0 \
  --min-gain 60 -o "$OUT/kept.json"
expect 'opcount cost: 64\.00 -> 64\.00 \(0\.00% lower' "$out"
expect 'kept the input: the best graph found costs [0-9.]+ \([0-9.]+% lower, below the minimum gain of 60%\)' "$out"

run_ok out "$SATURN" check "$OUT/kept.json"
expect '65 ops' "$out" "the model written"

run out "$SATURN" optimize squeezenet --min-gain 100
expect_exit 2
# CLI11 wording
expect 'saturn optimize: .*--min-gain.*Run with --help' "$out"
