#!/usr/bin/env bash
# The self-check: before writing, optimize runs the result beside the input
# in the interpreter. A wrong rule let in with --unverified-rules changes
# the outputs: optimize writes nothing, exits 1 and names the rule; with
# --no-check it writes the (wrong) model; a sound search says what it checked.
source "$(dirname "$0")/lib.sh"

printf '%s\n' '# Relu is not the identity.' 'rule drop-relu: (Relu ?x) => ?x' > "$OUT/drop.rules"
args=(--rules "$OUT/drop.rules" --unverified-rules --search greedy --cost opcount --ilp-seconds 0)

run out "$SATURN" optimize squeezenet "${args[@]}" -o "$OUT/x.json" --report "$OUT/r.json"
expect_exit 1
expect "the optimized 'squeezenet' does not compute what its input computes: output 0 \('logits'\) differs" "$out"
expect 'rules applied: drop-relu \(26\)' "$out"
[[ ! -e $OUT/x.json && ! -e $OUT/r.json ]] || fail "a model or report was written"

# A graph cut into regions: the region that differs is named.
run out "$SATURN" optimize llama:4 "${args[@]}" -o "$OUT/x.json"
expect_exit 0  # LLaMA has no Relu: nothing changes
run out "$SATURN" optimize resnet50 "${args[@]}" --region-ops 40 -o "$OUT/x.json"
expect_exit 1
expect "resnet50: region 0 \([0-9]+ operators\): the optimized 'resnet50\.region0' does not compute" "$out"

run_ok out "$SATURN" optimize squeezenet "${args[@]}" --no-check -o "$OUT/x.json" --report "$OUT/r.json"
expect 'self-check: off' "$out"
[[ -e $OUT/x.json ]] || fail "--no-check wrote no model"

run_ok out "$SATURN" optimize squeezenet --search greedy --cost opcount --ilp-seconds 0 \
  --report "$OUT/r.json"
expect "self-check: 1 output of 'squeezenet' matched in the interpreter" "$out"
expect '"self_check": "1 output of .squeezenet. matched in the interpreter"' "$(cat "$OUT/r.json")"
run_ok out "$SATURN" optimize nasrnn --search greedy --cost opcount --ilp-seconds 0
expect 'self-check: 2 of 2 searched regions matched their region in the interpreter' "$out"
