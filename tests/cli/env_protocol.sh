#!/usr/bin/env bash
# The search environment over a pipe (docs/env-protocol.md): reset, one step
# that earns a reward, quit; a reset with an unsound rule file fails unless
# unverified rules are allowed.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" env <<'JSON'
{"cmd":"reset","model":"squeezenet","cost":"opcount"}
{"cmd":"step","action":0}
{"cmd":"quit"}
JSON
expect '"reward"' "$out"

rules=$SATURN_ROOT/tests/data/wrong.rules
run out "$SATURN" env <<JSON
{"cmd":"reset","model":"squeezenet","cost":"opcount","rules":["$rules"]}
{"cmd":"reset","model":"squeezenet","cost":"opcount","rules":["$rules"],"unverified_rules":true}
{"cmd":"quit"}
JSON
expect_exit 1
expect "rule 'wrong-transpose-perm' is unsound" "$out"
expect '"stop_action": ?8' "$out" "the reset with unverified rules"
