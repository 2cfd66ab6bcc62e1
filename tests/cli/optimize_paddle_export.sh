#!/usr/bin/env bash
# An export saturn did not write, with the defaults: PaddleOCR's
# text-direction classifier (tests/data/exports), whose dynamic axes are
# spelled as paddle2onnx spells them (the size -1, the name "?" twice). Each
# axis is a symbol of its own, named as onnxruntime names it; the model
# optimizes with its sizes given, and what saturn writes gives the input's
# outputs in onnxruntime at other sizes too.
source "$(dirname "$0")/lib.sh"
model=$DATA/exports/ppocr_cls_mobile_v2.onnx

run_ok out "$SATURN" info "$model"
expect 'symbolic dimensions \(sized for costing\): unk__x_0=1, unk__x_2=1, unk__x_3=1' "$out"
expect 'input  x +float32\[1,3,1,1\]  as \[unk__x_0,3,unk__x_2,unk__x_3\]' "$out"

sizes=(--dim unk__x_0=1 --dim unk__x_2=48 --dim unk__x_3=192)
run_ok out "$SATURN" optimize "$model" "${sizes[@]}" -o "$OUT/cls.onnx"
expect 'wrote [^ ]*cls.onnx' "$out"
for size in "1 48 192" "3 48 100"; do
  read -r batch height width <<<"$size"
  run_ok out "$SATURN" verify "$model" "$OUT/cls.onnx" --runs 1 --warmup 0 \
    --dim unk__x_0="$batch" --dim unk__x_2="$height" --dim unk__x_3="$width"
  expect 'outputs match' "$out" "verify at $size"
done
