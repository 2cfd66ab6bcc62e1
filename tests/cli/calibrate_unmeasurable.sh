#!/usr/bin/env bash
# An operator the onnxruntime harness cannot feed (a bfloat16 input) is counted as
# not measurable; the rest of the table is still measured.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" calibrate "$ONNX_TESTDATA/test_cast_BFLOAT16_to_FLOAT/model.onnx" \
  "$DATA/models/conv_split_conv.json" -o "$OUT/costs.json" --runs 2 --passes 1
expect '[0-9]+ operator signatures: [1-9][0-9]* measured, 0 already in the table, 1 not measurable' "$out"
