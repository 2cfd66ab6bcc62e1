#!/usr/bin/env bash
# A truncated ONNX file is an error (exit 1) that names the file.
source "$(dirname "$0")/lib.sh"

head -c 5000 "$FIXTURES/resnet50.onnx" >"$OUT/truncated.onnx"
run out "$SATURN" check "$OUT/truncated.onnx"
expect_exit 1
expect 'truncated\.onnx: not an ONNX model' "$out"
