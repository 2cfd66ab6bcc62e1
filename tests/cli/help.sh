#!/usr/bin/env bash
# `saturn COMMAND --help` shows that command's own help (exit 0): a
# description, then "Usage: saturn COMMAND", and only that command's options.
source "$(dirname "$0")/lib.sh"
nl=$'\n'

# check_help WORD...: `saturn WORD... --help` exits 0 and starts with a
# description line, then the usage of "saturn WORD...".
check_help() {
  run_ok out "$SATURN" "$@" --help
  expect "^[^$nl]+$nl(.*$nl)?Usage: saturn $* " "$out" "saturn $* --help"
}

for command in zoo check info rules optimize verify calibrate env; do
  check_help "$command"
done
check_help rules verify

check_help optimize
expect '--budget-nodes' "$out" "saturn optimize --help"
expect_not '--passes' "$out" "saturn optimize --help"

check_help calibrate
expect '--passes' "$out" "saturn calibrate --help"
expect_not '--budget-nodes' "$out" "saturn calibrate --help"

run_ok out "$SATURN" --help
for command in zoo check info rules optimize verify calibrate env; do
  expect "$nl +$command " "$out" "saturn --help"
done
