#!/usr/bin/env bash
# --target: onnxruntime (the default) lets the search choose onnxruntime's
# fused operators, written in the com.microsoft domain; onnx keeps the output
# to standard ONNX operators.
source "$(dirname "$0")/lib.sh"
input=$FIXTURES/llama_block.onnx

run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 1 --no-measure \
  -o "$OUT/runtime.onnx" --report "$OUT/runtime.json"
run_ok out "$SATURN" info "$OUT/runtime.onnx"
expect 'opsets: .*com\.microsoft:1' "$out"
expect 'RotaryEmbedding' "$out"
expect '"target": "onnxruntime"' "$(cat "$OUT/runtime.json")"

run_ok out "$SATURN" optimize "$input" --search greedy --cost opcount --ilp-seconds 1 --no-measure \
  --target onnx -o "$OUT/standard.onnx" --report "$OUT/standard.json"
run_ok out "$SATURN" info "$OUT/standard.onnx"
expect_not 'com\.microsoft' "$out"
expect_not 'RotaryEmbedding|SkipSimplifiedLayerNormalization' "$out"
expect '"target": "onnx"' "$(cat "$OUT/standard.json")"

run out "$SATURN" optimize "$input" --target tensorrt -o "$OUT/x.onnx"
[[ $exit_code -eq 2 ]] || fail "an unknown target is a usage error" "$out"
expect 'tensorrt' "$out"
