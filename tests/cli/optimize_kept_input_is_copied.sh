#!/usr/bin/env bash
# Nothing to gain, nothing changed: when optimize keeps an ONNX input
# (below --min-gain, or --min-speedup), -o gets the input file byte for byte,
# not saturn's export of it.
source "$(dirname "$0")/lib.sh"
input=$FIXTURES/squeezenet1_1.onnx

run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 0 \
  --min-gain 90 -o "$OUT/kept.onnx"
expect 'kept the input' "$out"
expect 'wrote .*kept\.onnx \(a copy of the input file\)' "$out"
cmp "$input" "$OUT/kept.onnx" || fail "the kept model is not a copy of the input"

# The copy is made while the search runs; run again over a file already
# there, it replaces that file whole.
head -c 100000 /dev/urandom > "$OUT/kept.onnx"
run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 0 \
  --min-gain 90 -o "$OUT/kept.onnx"
cmp "$input" "$OUT/kept.onnx" || fail "the kept model did not replace the file there"

# A model that changes is saturn's export.
run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 0 \
  --no-measure -o "$OUT/changed.onnx"
expect_not 'a copy of the input' "$out"
if cmp -s "$input" "$OUT/changed.onnx"; then fail "a changed model was written as the input"; fi
# The input's copy begun meanwhile is gone.
leftover=$(find "$OUT" -name '*.tmp')
[[ -z $leftover ]] || fail "temporary files left: $leftover"

# --min-speedup: a result slower than 100x the input's speed is replaced by the input.
run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 0 \
  -o "$OUT/faster.onnx" --min-speedup 100
expect 'decision: kept the input \(measured: ' "$out"
cmp "$input" "$OUT/faster.onnx" || fail "--min-speedup did not write the input file as it was"
