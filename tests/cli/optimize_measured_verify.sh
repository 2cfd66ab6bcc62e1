#!/usr/bin/env bash
# `saturn optimize --cost measured:TABLE` on a table `saturn calibrate` just
# wrote, its output checked in onnxruntime (--verify).
source "$(dirname "$0")/lib.sh"
model=$FIXTURES/squeezenet1_1.onnx

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 2 --passes 1 --explore 0
run_ok out "$SATURN" optimize "$model" --cost "measured:$OUT/costs.json" --search greedy \
  --ilp-seconds 1 -o "$OUT/squeezenet_measured.onnx" --verify --verify-runs 3
expect 'measured cost.*outputs match' "$out"
