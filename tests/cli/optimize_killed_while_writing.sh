#!/usr/bin/env bash
# A kill never leaves half a file: `saturn optimize` killed with SIGKILL at
# 50 random points, most of them around the end of the run where it writes
# its output, leaves the file that was there before (none, or a complete
# one) or the whole new one, never part of one; a later run still writes it.
source "$(dirname "$0")/lib.sh"
cd "$OUT"
args=(optimize "$FIXTURES/mobilenet_v2.onnx" --search greedy --budget-nodes 400 --ilp-seconds 0
      --quiet)

# The whole output, and how long a run takes to write it.
start=$(date +%s%N)
run_ok out "$SATURN" "${args[@]}" -o whole.onnx
run_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cp "$FIXTURES/squeezenet1_1.onnx" previous.onnx  # another complete model

RANDOM=7
for trial in $(seq 1 50); do
  # Odd trials start with no output, even ones with a previous complete one.
  rm -f out.onnx
  if (( trial % 2 == 0 )); then cp previous.onnx out.onnx; fi
  # A kill between 40% and 110% of a run's time.
  delay_ms=$(( run_ms * (40 + RANDOM % 71) / 100 ))
  "$SATURN" "${args[@]}" -o out.onnx &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ -e out.onnx ]]; then
    if ! cmp -s out.onnx whole.onnx; then
      (( trial % 2 == 0 )) || fail "trial $trial (killed after $delay_ms ms): a partial out.onnx"
      cmp -s out.onnx previous.onnx ||
        fail "trial $trial (killed after $delay_ms ms): out.onnx is neither the old nor the new model"
    fi
  elif (( trial % 2 == 0 )); then
    fail "trial $trial (killed after $delay_ms ms): the previous out.onnx is gone"
  fi
done
# What the killed writers left beside the output (out.onnx.PID.tmp) goes
# with the next complete write.
run_ok out "$SATURN" "${args[@]}" -o out.onnx
cmp -s out.onnx whole.onnx || fail "the run after the kills wrote another model"
leftovers=$(ls out.onnx.*.tmp 2>/dev/null || true)
[[ -z $leftovers ]] || fail "temporary files left beside out.onnx" "$leftovers"
echo "50 kills in 40-110% of a ${run_ms} ms run: no partial output"
run_ok out "$SATURN" "${args[@]}" -o out.onnx
cmp out.onnx whole.onnx || fail "the run after the kills wrote another model"
