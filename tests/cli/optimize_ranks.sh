#!/usr/bin/env bash
# saturn optimize under mpirun: the region searches of one model spread over
# two ranks, rank 0 stitches and writes. For a fixed seed the model written
# is byte-equal to the one-process run's, with MCTS and with greedy
# saturation, and with structures that repeat (searched once). A model
# searched whole by MCTS spreads its trees instead: two ranks of one thread
# (two trees) write what one process of two threads writes. A model that
# does not load fails on every rank, and the launch exits non-zero.
source "$(dirname "$0")/lib.sh"
if [[ ${SATURN_HAS_MPI:-OFF} != ON ]] || ! command -v mpirun > /dev/null; then
  echo "saturn is built without MPI: nothing to test"
  exit 0
fi
two_ranks() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$SATURN" "$@"; }

cases=("$FIXTURES/squeezenet1_1.onnx --search mcts --region-ops 16"
       "$FIXTURES/llama_block.onnx --search greedy --region-ops 10 --cost opcount"
       "nasrnn --search mcts --region-ops 12 --budget-nodes 600")
for i in "${!cases[@]}"; do
  read -r -a args <<< "${cases[$i]}"
  common=("${args[@]}" --threads 2 --seed 3 --time-limit 600 --time-per-op 0 --ilp-seconds 2 --no-measure)
  run_ok one "$SATURN" optimize "${common[@]}" -o "$OUT/one$i.onnx"
  run_ok two two_ranks optimize "${common[@]}" -o "$OUT/two$i.onnx"
  expect 'regions: [0-9]+, [0-9]+ structures searched' "$two"
  [[ $(grep -c 'structures searched' <<< "$two") == 1 ]] || fail "more than one rank reported"
  cmp "$OUT/one$i.onnx" "$OUT/two$i.onnx" || fail "${args[0]}: 1 and 2 ranks wrote different models"
done

whole=("$FIXTURES/squeezenet1_1.onnx" --search mcts --region-ops 0 --seed 5 --time-limit 600 --time-per-op 0 --no-measure
       --ilp-seconds 2)
run_ok one "$SATURN" optimize "${whole[@]}" --threads 2 -o "$OUT/whole_one.onnx" \
  --report "$OUT/whole_one.json"
run_ok two two_ranks optimize "${whole[@]}" --threads 1 -o "$OUT/whole_two.onnx" \
  --report "$OUT/whole_two.json"
expect 'mcts search' "$two"
[[ $(grep -c 'mcts search' <<< "$two") == 1 ]] || fail "more than one rank reported"
cmp "$OUT/whole_one.onnx" "$OUT/whole_two.onnx" ||
  fail "MCTS trees over 2 ranks wrote another model than 2 threads in one process"
# Every rank's simulations are counted, as one process's trees are.
one_simulations=$(grep '"simulations"' "$OUT/whole_one.json")
two_simulations=$(grep '"simulations"' "$OUT/whole_two.json")
[[ -n $one_simulations && $one_simulations == "$two_simulations" ]] ||
  fail "simulations differ: '$one_simulations' against '$two_simulations'"

printf 'not a model' > "$OUT/corrupt.onnx"
run out two_ranks optimize "$OUT/corrupt.onnx" -o "$OUT/corrupt.opt.onnx"
[[ $exit_code != 0 ]] || fail "a corrupt model under mpirun exited 0"
expect 'corrupt.onnx: not an ONNX model' "$out"
[[ ! -e $OUT/corrupt.opt.onnx ]] || fail "a failed run left an output"
