#!/usr/bin/env bash
# `saturn optimize` with its defaults on exports of every kind it reads:
# both PyTorch exporters at opsets 14 to 21, paddle2onnx at opset 11, the ends
# of the range (opset 9 and 23, tests/data/opsets/make_models.py), symbolic
# sizes, float16, Gather and Slice on computed indices and int32 sizes, the
# scatters, Resize, EyeLike, Einsum, integer reductions, 4-bit blocked
# weights, quantize_dynamic's ConvInteger (rewritten in float, whole and at
# its bound) and a bias at another scale than its convolution's (seeds of
# the fuzz corpus), and the corpus's SegFormer, YOLO, XLNet, DINOv2 and
# BEiT). Each exits 0 and writes its output. tools/test.sh runs this again with the
# sanitized build (ASan + UBSan) as SATURN, where a bad read stops the run.
source "$(dirname "$0")/lib.sh"
CORPUS=$SATURN_ROOT/bench/corpus/models
SEEDS=$SATURN_ROOT/tests/fuzz/corpus/onnx_model

exports=(
  "$DATA/exports/ppocr_cls_mobile_v2.onnx --dim unk__x_2=48 --dim unk__x_3=192"
  "$DATA/opsets/opset9_convnet.onnx --dim batch=3"
  "$DATA/opsets/opset23_encoder.onnx --dim seq=16"
  "$DATA/opsets/quantized_reductions.onnx --dim batch=3"
  "$DATA/opsets/four_bit_blocks.onnx --dim batch=3"
  "$SEEDS/gather_computed_indices.onnx"
  "$SEEDS/slice_int32_sizes.onnx --dim batch=3"
  "$SEEDS/scatter_resize.onnx --dim seq=5"
  "$SEEDS/einsum_relative_shift.onnx --dim seq=5 --dim batch=2"
  "$SEEDS/topk_gridsample.onnx --dim seq=5"
  "$SEEDS/conv_integer_dynamic.onnx"
  "$SEEDS/conv_integer_bound.onnx"
  "$SEEDS/bias_other_scale.onnx"
  "$FIXTURES/dyn_encoder.onnx --dim seq=16"
  "$FIXTURES/fp16_encoder.onnx --dim seq=16"
  "$CORPUS/tinyllama-1.1b-4l.onnx --dim batch=1 --dim seq=128"
  "$CORPUS/llama-decode-step.onnx --dim batch=1 --dim past=127"
  "$CORPUS/phi3-mini-2l.onnx --dim batch=1 --dim seq=128"
  "$CORPUS/distilbert-base-uncased.onnx --dim batch=1 --dim seq=128"
  "$CORPUS/electra-small-discriminator.onnx --dim batch=1 --dim seq=128"
  "$CORPUS/segformer-b0-512.onnx --dim batch=1"
  "$CORPUS/yolo-style-n-640.onnx --dim batch=1"
  "$CORPUS/xlnet-base-cased.onnx --dim batch=1 --dim seq=128"
  "$CORPUS/dinov2-small.onnx --dim batch=1"
  "$CORPUS/beit-base-patch16-224.onnx --dim batch=1"
)
for entry in "${exports[@]}"; do
  read -r -a args <<<"$entry"
  model=${args[0]}
  name=$(basename "$model" .onnx)
  run_ok out "$SATURN" optimize "${args[@]}" -o "$OUT/$name.out.onnx"
  expect "wrote [^ ]*$name.out.onnx" "$out" "$name"
  [[ -s $OUT/$name.out.onnx ]] || fail "$name: no output written"
done
