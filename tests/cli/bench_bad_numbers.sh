#!/usr/bin/env bash
# The benchmark binaries reject numbers that are not whole or not finite as
# usage errors (exit 2).
source "$(dirname "$0")/lib.sh"

run out "$COMPARE_SEARCH" --seeds 1x
expect_exit 2
# CLI11 wording
expect 'compare_search: .*--seeds.*Run with --help' "$out"

run out "$EXTRACT" --ilp-seconds 1e400
expect_exit 2
# CLI11 wording
expect 'extract: .*--ilp-seconds.*Run with --help' "$out"
