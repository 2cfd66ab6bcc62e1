#!/usr/bin/env bash
# compare_search runs the zoo with a rule file instead of the shipped rules
# (to compare rule sets on one workload): the tables name the files, and an
# unsound file fails each row with the rule named.
source "$(dirname "$0")/lib.sh"

args=(--models squeezenet --strategies greedy --costs opcount --budgets 500 --seeds 1
      --ilp-seconds 0)
run_ok out "$COMPARE_SEARCH" "${args[@]}" --rules "$SATURN_ROOT/rules/tensor/conv.rules" \
  --out "$OUT/conv"
expect "rules: .*conv\\.rules" "$out"
expect '"rules": \[' "$(cat "$OUT/conv/compare_search.json")"
expect '\| squeezenet \| opcount \| 500 \| greedy \|' "$out"

run out "$COMPARE_SEARCH" "${args[@]}" --rules "$DATA/wrong.rules" --out "$OUT/wrong"
expect_exit 1
expect "rule 'wrong-transpose-perm' is unsound" "$out"

run_ok out "$COMPARE_SEARCH" "${args[@]}" --rules "$DATA/wrong.rules" --unverified-rules \
  --out "$OUT/unverified"
expect "rules: .*wrong\\.rules \\(unverified\\)" "$out"
