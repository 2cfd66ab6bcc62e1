#!/usr/bin/env bash
# The budget sweep end to end: compare_search over two budgets (MCTS and
# greedy), then bench/budget_sweep.py's table and plot of MCTS's lead.
source "$(dirname "$0")/lib.sh"

run_ok out "$COMPARE_SEARCH" --models squeezenet --strategies mcts greedy --costs opcount \
  --budgets 100 400 --seeds 1 --time-limit 5 --ilp-seconds 0 --out "$OUT/sweep"
run_ok out /usr/bin/python3 "$SATURN_ROOT/bench/budget_sweep.py" "$OUT/sweep/compare_search.json" \
  --out "$OUT/budget_sweep" --command "compare_search ..."
table=$(cat "$OUT/budget_sweep.md")
expect '\| squeezenet \| [+-][0-9.]+ \([0-9.]+%\) \| [+-][0-9.]+ \([0-9.]+%\) \|' "$table"
expect 'MCTS is ahead in [0-9]+ of 2 cells; its worst seed is below greedy in 0\.' "$table"
expect '100 e-nodes per region: MCTS ahead on [01] of 1 models' "$table"
grep -q '<polyline' "$OUT/budget_sweep.svg" || fail "the plot has no line" "$(cat "$OUT/budget_sweep.svg")"

run out /usr/bin/python3 "$SATURN_ROOT/bench/budget_sweep.py" "$OUT/sweep/compare_search.json" \
  --out "$OUT/none" --cost roofline
expect_exit 1
expect 'no model with both mcts and greedy rows' "$out"
