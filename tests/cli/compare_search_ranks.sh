#!/usr/bin/env bash
# bench/compare_search under mpirun splits its grid over the ranks: the rows
# and every run's costs equal the one-process sweep's (wall times aside).
source "$(dirname "$0")/lib.sh"
if [[ ${SATURN_HAS_MPI:-OFF} != ON ]] || ! command -v mpirun > /dev/null; then
  echo "built without MPI: nothing to compare"
  exit 0
fi
grid=(--models squeezenet,vgg19 --strategies greedy,default,mcts --budgets 500 --costs opcount
      --seeds 2 --threads 1 --ilp-seconds 1 --time-limit 10)
run_ok one "$COMPARE_SEARCH" "${grid[@]}" --out "$OUT/one"
run_ok two mpirun --allow-run-as-root --oversubscribe -np 2 "$COMPARE_SEARCH" "${grid[@]}" \
  --out "$OUT/two"
expect 'ranks: 2' "$two"
rows() { grep '^| [a-z0-9_]* | opcount |' <<< "$1" | cut -d'|' -f1-9; }
[[ $(rows "$one" | wc -l) -eq 6 ]] || fail "expected 6 grid rows" "$one"
[[ "$(rows "$one")" == "$(rows "$two")" ]] || fail "the rows differ between 1 and 2 ranks" "$two"
costs() { grep -A3 '"cost_after"' "$1/compare_search.json" | tr -d ' \n'; }
[[ "$(costs "$OUT/one")" == "$(costs "$OUT/two")" ]] || fail "the runs' costs differ"
