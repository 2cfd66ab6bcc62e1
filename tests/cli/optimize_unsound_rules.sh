#!/usr/bin/env bash
# A user's rule file is verified before optimize uses it: an unsound rule is
# refused (exit 1, its name, file:line and a counterexample) unless
# --unverified-rules says otherwise; a sound file's verdicts are cached by
# content, so the second run does not verify it again.
source "$(dirname "$0")/lib.sh"

printf '%s\n' '# Tanh is not Sigmoid.' 'rule wrong: (Tanh ?x) => (Sigmoid ?x)' > "$OUT/wrong.rules"
run out "$SATURN" optimize squeezenet --rules "$OUT/wrong.rules" --search greedy --cost opcount \
  --ilp-seconds 0 -o "$OUT/x.json"
expect_exit 1
expect "wrong\\.rules:2: rule 'wrong' is unsound" "$out"
expect 'counterexample|differ|max' "$out" "the counterexample"
[[ ! -e $OUT/x.json ]] || fail "a model was written from an unsound rule file"

run_ok out "$SATURN" optimize squeezenet --rules "$OUT/wrong.rules" --unverified-rules \
  --search greedy --cost opcount --ilp-seconds 0 -o "$OUT/x.json" --report "$OUT/r.json"
expect 'used unverified \(--unverified-rules\)' "$out"
report=$(cat "$OUT/r.json")
expect '"checked": false' "$report"
expect '"unverified_rules": \[[^]]*wrong\.rules:2: wrong: not checked' "$report"

cp "$SATURN_ROOT/rules/tensor/elementwise.rules" "$OUT/mine.rules"
run_ok out "$SATURN" optimize squeezenet --rules "$OUT/mine.rules" --search greedy --cost opcount \
  --ilp-seconds 0 --report "$OUT/r1.json"
expect 'rule files: [1-9][0-9]* rules verified, 0 not verifiable \(0 of 1 files from the cache\)' "$out"
expect '"checked": true' "$(cat "$OUT/r1.json")"
run_ok out "$SATURN" optimize squeezenet --rules "$OUT/mine.rules" --search greedy --cost opcount \
  --ilp-seconds 0
expect '\(1 of 1 files from the cache\)' "$out" "the second run"

# An edited file is verified again.
echo 'rule wrong: (Tanh ?x) => (Sigmoid ?x)' >> "$OUT/mine.rules"
run out "$SATURN" optimize squeezenet --rules "$OUT/mine.rules" --search greedy --cost opcount \
  --ilp-seconds 0
expect_exit 1
expect "rule 'wrong' is unsound" "$out"
