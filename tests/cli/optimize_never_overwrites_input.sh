#!/usr/bin/env bash
# No output over an input, nor two outputs on one file: -o, --report,
# verify --json, calibrate -o (through ./, which names the same file).
source "$(dirname "$0")/lib.sh"
cd "$OUT"
cp "$FIXTURES/squeezenet1_1.onnx" input_copy.onnx

run out "$SATURN" optimize input_copy.onnx -o input_copy.onnx
expect_exit 1
expect '^saturn: input_copy\.onnx: will not overwrite the input file input_copy\.onnx' "$out"

run out "$SATURN" optimize input_copy.onnx -o out.json --report input_copy.onnx
expect_exit 1
expect '^saturn: input_copy\.onnx: will not overwrite the input file input_copy\.onnx' "$out"

run out "$SATURN" optimize input_copy.onnx -o out.json --report out.json
expect_exit 1
expect '^saturn: out\.json: named for two outputs of one command' "$out"

run out "$SATURN" verify input_copy.onnx input_copy.onnx --json input_copy.onnx
expect_exit 1
expect '^saturn: input_copy\.onnx: will not overwrite the input file input_copy\.onnx' "$out"

run out "$SATURN" calibrate input_copy.onnx -o ./input_copy.onnx
expect_exit 1
expect '^saturn: \./input_copy\.onnx: will not overwrite the input file input_copy\.onnx' "$out"

cmp "$FIXTURES/squeezenet1_1.onnx" input_copy.onnx || fail "input_copy.onnx changed"
[[ ! -e out.json ]] || fail "out.json was written"
