#!/usr/bin/env bash
# TENSAT's rule files import whole: every rule translates, the result loads
# and verifies, the concat-of-convolutions rules that need equal output
# channels are caught on every seed from 1 to 20, the committed
# rules/imported/tensat.rules is what the importer writes, and bad input
# names its file and line.
source "$(dirname "$0")/lib.sh"

TENSAT=$SATURN_ROOT/rules/imported/tensat
import() {
  "$SATURN" rules import --tensat "$TENSAT/converted.txt" "$TENSAT/pre_defined.txt" \
    --multi "$TENSAT/converted_multi.txt" "$TENSAT/pre_defined_multi.txt" "$@"
}

run_ok out import -o "$OUT/tensat.rules"
expect '139 rules read, 139 translated, 0 not translated; 126 verified, 9 verified for ungrouped convolutions only, 4 failed' "$out"
for line in 92 93 118 119; do
  expect "FAILED +tensat-converted-$line: " "$out"
done
run_ok out "$SATURN" rules verify "$OUT/tensat.rules"
expect '135 verified, 0 failed, 0 unverified' "$out"
# The committed translation is the importer's (its source paths are the
# repository's, as in the README's command).
(cd "$SATURN_ROOT" && "$SATURN" rules import \
  --tensat rules/imported/tensat/converted.txt rules/imported/tensat/pre_defined.txt \
  --multi rules/imported/tensat/converted_multi.txt rules/imported/tensat/pre_defined_multi.txt \
  -o "$OUT/committed.rules" > /dev/null)
cmp "$OUT/committed.rules" "$SATURN_ROOT/rules/imported/tensat.rules" ||
  fail "rules/imported/tensat.rules is not what the importer writes"

# Two concat-of-convolutions rules (and their copies) fail on every seed,
# and the rules that hold only for ungrouped convolutions are found so.
for seed in $(seq 1 20); do
  run_ok out import -o "$OUT/seed.rules" --seed "$seed"
  for line in 92 93; do
    expect "FAILED +tensat-converted-$line: " "$out" "seed $seed"
  done
  expect '126 verified, 9 verified for ungrouped convolutions only, 4 failed' "$out" "seed $seed"
done

# Bad input: a line that is not LHS=>RHS, an unknown operator (listed, not
# an error), an output over an input.
printf '(ewadd ?a ?b)=>(ewadd ?b ?a)\n(ewadd ?a ?b) (ewadd ?b ?a)\n' > "$OUT/bad.txt"
run out "$SATURN" rules import --tensat "$OUT/bad.txt" -o "$OUT/bad.rules"
expect_exit 1
expect 'bad.txt:2:[0-9]+: expected .=>.' "$out"
printf '(smul ?a ?b)=>(smul ?b ?a)\n' > "$OUT/smul.txt"
run_ok out "$SATURN" rules import --tensat "$OUT/smul.txt" -o "$OUT/smul.rules"
expect "not translated: .*smul.txt:1: 'smul' is not translated" "$out"
expect '1 rules read, 0 translated, 1 not translated' "$out"
cp "$TENSAT/converted.txt" "$OUT/in.txt"
run out "$SATURN" rules import --tensat "$OUT/in.txt" -o "$OUT/in.txt"
expect_exit 1
expect 'will not overwrite the input file' "$out"
cmp "$OUT/in.txt" "$TENSAT/converted.txt" || fail "the input file changed"
