#!/usr/bin/env bash
# `saturn calibrate --passes 0` is a usage error (exit 2), and writes nothing.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" calibrate "$FIXTURES/squeezenet1_1.onnx" -o "$OUT/no_passes.json" --passes 0
expect_exit 2
# CLI11 wording
expect 'saturn calibrate: .*--passes.*Run with --help' "$out"
[[ ! -e $OUT/no_passes.json ]] || fail "no_passes.json was written"
