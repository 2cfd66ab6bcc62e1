#!/usr/bin/env bash
# Types are invariants: a rewrite whose result has another shape than the
# value it matched is never applied, whether the rule has one pattern or
# several, and optimize names the rule once (stderr and the report).
source "$(dirname "$0")/lib.sh"

cat > "$OUT/tiny.json" <<'JSON'
{
  "format": "saturn-model",
  "version": 1,
  "name": "tiny",
  "inputs": [{"name": "x", "shape": [2, 3]}, {"name": "u", "shape": [2, 3]}],
  "nodes": [
    {"op": "Relu", "inputs": ["x"], "outputs": ["a"]},
    {"op": "Relu", "inputs": ["a"], "outputs": ["y"]},
    {"op": "Tanh", "inputs": ["u"], "outputs": ["b"]},
    {"op": "Sigmoid", "inputs": ["u"], "outputs": ["c"]}
  ],
  "outputs": ["y", "b", "c"]
}
JSON
# Transpose(x) is [3,2] where Relu(Relu(x)) is [2,3].
echo 'rule relu2-to-transpose: (Relu (Relu ?x)) => (Transpose ?x)' > "$OUT/single.rules"
# The first result fits its class, the second does not: neither is merged.
echo 'rule pair-to-transposes: (Tanh ?u), (Sigmoid ?u) => (Relu ?u), (Transpose ?u)' \
  > "$OUT/multi.rules"

for kind in single multi; do
  rm -f "$OUT/out.json"
  run_ok out "$SATURN" optimize "$OUT/tiny.json" --rules "$OUT/$kind.rules" --unverified-rules \
    --search greedy --cost opcount --min-gain 0 -o "$OUT/out.json" --report "$OUT/r.json"
  expect "rejected: type mismatch" "$out"
  [[ $(grep -c "rejected: type mismatch" <<<"$out") == 1 ]] || fail "the rule is named more than once" "$out"
  report=$(cat "$OUT/r.json")
  expect '"rules_rejected_type_mismatch": \[' "$report"
  expect '"rule": "(relu2-to-transpose|pair-to-transposes)"' "$report"
  # The written model computes what the input did: the same operators, the
  # outputs of the same shapes, and no Transpose.
  model=$(cat "$OUT/out.json")
  if grep -q '"Transpose"' <<<"$model"; then fail "a Transpose was written ($kind)" "$model"; fi
  for op in Relu Tanh Sigmoid; do expect "\"$op\"" "$model"; done
  run_ok out "$SATURN" check "$OUT/out.json"
  expect 'tiny +4 ops +Relu 2, Sigmoid 1, Tanh 1' "$out"
done
