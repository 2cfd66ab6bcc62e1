#!/usr/bin/env bash
# onnxruntime crashing on a batch of models: each is timed alone, and the one
# that crashes it alone is not measurable; the rest are measured.
source "$(dirname "$0")/lib.sh"

# A stand-in harness that crashes on any batch and on op0.onnx.
harness=$OUT/crashing_ort
mkdir -p "$harness"
cp "$DATA/crashing_ort_run.py" "$harness/ort_run.py"

run_ok out env SATURN_ORT_DIR="$harness" "$SATURN" calibrate "$DATA/models/conv_split_conv.json" \
  -o "$OUT/costs.json" --explore 0 --passes 1
expect '[0-9]+ operator signatures: [1-9][0-9]* measured, 0 already in the table, 1 not measurable' "$out"
