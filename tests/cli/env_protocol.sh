#!/usr/bin/env bash
# The search environment over a pipe (docs/env-protocol.md): reset, one step
# that earns a reward, quit.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" env <<'JSON'
{"cmd":"reset","model":"squeezenet","cost":"opcount"}
{"cmd":"step","action":0}
{"cmd":"quit"}
JSON
expect '"reward"' "$out"
