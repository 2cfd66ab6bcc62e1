#!/usr/bin/env bash
# Models with symbolic dimensions (dynamic batch, dynamic sequence) come back
# as drop-in replacements: with every search, the written model keeps the
# symbols on its input and output, and onnxruntime gives the original's
# outputs at several sizes. A graph that holds at the given sizes only is not
# written: the input is, byte for byte.
source "$(dirname "$0")/lib.sh"
fast=(--budget-nodes 1000 --time-limit 10 --ilp-seconds 2 --no-measure --cost roofline)

# verify_at ORIGINAL OPTIMIZED --dim N=S...: the outputs match in onnxruntime at those sizes.
verify_at() {
  local original=$1 optimized=$2
  shift 2
  run_ok out "$SATURN" verify "$original" "$optimized" --runs 1 --warmup 0 "$@"
  expect 'outputs match' "$out" "verify $* of $optimized"
}

for search in mcts greedy default taso; do
  # The CNN without --dim: batch 1 for costing, said in one line.
  run_ok out "$SATURN" optimize "$FIXTURES/dyn_cnn.onnx" --search "$search" "${fast[@]}" \
    -o "$OUT/cnn.$search.onnx"
  expect 'note: symbolic dimension batch sized 1 for costing' "$out"
  expect_not 'a copy of the input' "$out"
  run_ok out "$SATURN" info "$OUT/cnn.$search.onnx" --dim batch=3
  expect 'input  input +float32\[3,3,32,32\]  as \[batch,3,32,32\]' "$out"
  expect 'output output +float32\[3,10\]  as \[batch,10\]' "$out"
  for batch in 1 3; do
    verify_at "$FIXTURES/dyn_cnn.onnx" "$OUT/cnn.$search.onnx" --dim batch=$batch
  done

  # The encoder with its sequence sized, its batch not.
  run_ok out "$SATURN" optimize "$FIXTURES/dyn_encoder.onnx" --search "$search" "${fast[@]}" \
    --dim seq=16 -o "$OUT/encoder.$search.onnx"
  expect 'note: symbolic dimension batch sized 1' "$out"
  expect_not 'a copy of the input' "$out"
  run_ok out "$SATURN" info "$OUT/encoder.$search.onnx"
  expect 'input  input +float32\[1,1,64\]  as \[batch,seq,64\]' "$out"
  expect 'output output +float32\[1,1,64\]  as \[batch,seq,64\]' "$out"
  for batch in 1 3; do
    for seq in 5 16; do
      verify_at "$FIXTURES/dyn_encoder.onnx" "$OUT/encoder.$search.onnx" --dim batch=$batch \
        --dim seq=$seq
    done
  done
done

# Merging dyn_halves' products by 2 and 0.5 leaves a Split whose sizes saturn fixed at
# the given batch: the input is kept, as it came.
run_ok out "$SATURN" optimize "$FIXTURES/dyn_halves.onnx" --dim batch=2 --cost opcount \
  -o "$OUT/halves.onnx"
expect 'kept the input: the best graph found costs 3.00, but it holds only at the given sizes' "$out"
expect 'Split.*batch' "$out"
expect 'a copy of the input file' "$out"
cmp "$FIXTURES/dyn_halves.onnx" "$OUT/halves.onnx" || fail "the kept model is not the input file"

# At the default size 1 the batch cannot be halved: the error says which
# dimension stood at the default and how to size it.
run out "$SATURN" optimize "$FIXTURES/dyn_halves.onnx" -o "$OUT/halves1.onnx"
expect_exit 1
expect 'dyn_halves.onnx: node 0 \(Split\).*symbolic dimension batch at the default size 1; --dim NAME=SIZE' "$out"
[[ ! -e $OUT/halves1.onnx ]] || fail "a failed run wrote its output"

# float16: the encoder in half precision optimizes (costed at 2 bytes an
# element), and onnxruntime's outputs match within float16's precision.
run_ok out "$SATURN" info "$FIXTURES/fp16_encoder.onnx"
expect 'input  input +float16\[1,1,64\]' "$out"
expect_not 'Opaque' "$out"
for search in mcts greedy; do
  run_ok out "$SATURN" optimize "$FIXTURES/fp16_encoder.onnx" --search "$search" "${fast[@]}" \
    --dim seq=16 -o "$OUT/fp16.$search.onnx"
  expect_not 'a copy of the input' "$out"
  for batch in 1 3; do
    verify_at "$FIXTURES/fp16_encoder.onnx" "$OUT/fp16.$search.onnx" --dim batch=$batch \
      --dim seq=9 --rtol 1e-2 --atol 1e-2
  done
done
