#!/usr/bin/env bash
# --min-speedup: a result that does not run that much faster in onnxruntime
# gives way to the input, which is written unchanged (the decision's
# measured gate, with the gate and its evidence in the summary: below the
# speedup asked for, or not measurably faster at all).
source "$(dirname "$0")/lib.sh"
model=$FIXTURES/squeezenet1_1.onnx

run_ok out "$SATURN" optimize "$model" --search greedy --cost opcount --ilp-seconds 1 -o "$OUT/kept.onnx" \
  --min-speedup 1000
expect 'decision: kept the input \(measured: ' "$out"

run_ok out "$SATURN" verify "$model" "$OUT/kept.onnx" --runs 1
expect 'outputs match' "$out"

run_ok out "$SATURN" info "$OUT/kept.onnx"
expect ': 65 ops' "$out"

# The timing decides on one thread by the thread's CPU time, says how many
# sessions, and checks a gain at the threads the model runs with.
run_ok out "$SATURN" optimize "$model" --search greedy --cost opcount --ilp-seconds 1 \
  -o "$OUT/one.onnx" --runtime-threads 1
expect 'onnxruntime 1\.[0-9.]*, 1 thread, timed by thread CPU time' "$out"
expect ' runs in [0-9]+ sessions' "$out"
expect_not 'checked on' "$out"
run out "$SATURN" optimize "$model" -o "$OUT/bad.onnx" --runtime-threads 1000
expect_exit 2
expect 'runtime-threads' "$out"
