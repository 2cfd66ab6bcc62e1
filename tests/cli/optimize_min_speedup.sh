#!/usr/bin/env bash
# --min-speedup: an output that does not run that much faster in onnxruntime
# gives way to the input, which is written unchanged.
source "$(dirname "$0")/lib.sh"
model=$FIXTURES/squeezenet1_1.onnx

run_ok out "$SATURN" optimize "$model" --search greedy --ilp-seconds 1 -o "$OUT/kept.onnx" \
  --min-speedup 1000 --verify-runs 2
expect 'kept the input model: the optimized one ran [0-9.]+x as fast \(below 1000\.000x\)' "$out"

run_ok out "$SATURN" verify "$model" "$OUT/kept.onnx" --runs 1
expect 'outputs match' "$out"

run_ok out "$SATURN" info "$OUT/kept.onnx"
expect ': 65 ops' "$out"
