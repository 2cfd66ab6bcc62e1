#!/usr/bin/env bash
# saturn batch: three fixtures and a corrupt model. The good ones are
# optimized and written, the combined report lists all four, the run exits 1
# naming the bad one. Under mpirun with 2 ranks (when saturn is built with
# MPI) the outputs are byte-equal to the one-process run's.
source "$(dirname "$0")/lib.sh"
printf 'not a model' > "$OUT/corrupt.onnx"
models=("$FIXTURES/squeezenet1_1.onnx" "$FIXTURES/dyn_cnn.onnx" "$OUT/corrupt.onnx" nasrnn)
options=(--search greedy --ilp-seconds 1 --cost opcount --no-measure)

run out "$SATURN" batch "${models[@]}" --out "$OUT/one" "${options[@]}"
expect_exit 1
expect '4 models on 1 rank' "$out"
expect 'corrupt.onnx \| 0 \|.*FAILED: .*corrupt.onnx: not an ONNX model' "$out"
expect '1 of 4 models failed: .*corrupt.onnx' "$out"
for stem in squeezenet1_1 dyn_cnn nasrnn; do
  [[ -s $OUT/one/$stem.opt.onnx ]] || fail "no $stem.opt.onnx"
done
[[ ! -e $OUT/one/corrupt.opt.onnx ]] || fail "the failed model left an output"
grep -q '"failed": \[' "$OUT/one/batch.json" || fail "batch.json has no failed list"
run_ok out "$SATURN" info "$OUT/one/dyn_cnn.opt.onnx"
expect 'as \[batch,10\]' "$out"

# Two inputs with one stem would write one output: refused before any work.
run out "$SATURN" batch "$FIXTURES/dyn_cnn.onnx" "$OUT/dyn_cnn.onnx" --out "$OUT/clash"
expect_exit 2
expect 'would both write dyn_cnn.opt.onnx' "$out"

if [[ ${SATURN_HAS_MPI:-OFF} == ON ]] && command -v mpirun > /dev/null; then
  run out mpirun --allow-run-as-root --oversubscribe -np 2 "$SATURN" batch "${models[@]}" \
    --out "$OUT/two" "${options[@]}"
  expect_exit 1
  expect '4 models on 2 ranks' "$out"
  expect '1 of 4 models failed: .*corrupt.onnx' "$out"
  for stem in squeezenet1_1 dyn_cnn nasrnn; do
    cmp "$OUT/one/$stem.opt.onnx" "$OUT/two/$stem.opt.onnx" ||
      fail "$stem differs between 1 and 2 ranks"
  done
else
  echo "saturn is built without MPI: the 2-rank run is skipped"
fi
