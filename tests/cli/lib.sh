# Sourced by every command-line scenario in this folder: strict mode, the
# programs under test, a scratch folder, and the checks. CTest sets SATURN,
# COMPARE_SEARCH, EXTRACT, CALIBRATE_CPU and SATURN_ROOT (tests/CMakeLists.txt);
# by hand: SATURN=build/tools/saturn bash tests/cli/optimize_onnx.sh
# shellcheck shell=bash disable=SC2034  # the variables are the scenarios'
set -euo pipefail

SATURN_ROOT=${SATURN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FIXTURES=$SATURN_ROOT/tensor/fixtures
DATA=$SATURN_ROOT/tests/data
ONNX_TESTDATA=/usr/share/libonnx-testdata/data/node

# What the last `run out CMD...` printed (out is the scenarios' usual VAR).
out=''

# A fresh scratch folder, removed on exit.
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Verdicts on rule files are cached here, not in the user's cache.
export SATURN_CACHE_DIR=$OUT/cache

# fail MESSAGE [TEXT]: stops the scenario, saying why and showing TEXT.
fail() {
  echo "FAIL: $1" >&2
  if [[ $# -gt 1 ]]; then printf -- '--- output:\n%s\n---\n' "$2" >&2; fi
  exit 1
}

# run VAR CMD...: runs CMD, which may fail, without stopping the scenario; VAR
# gets its stdout and stderr, $exit_code its exit code. Prints both, so that
# a test log shows every command and what it said.
run() {
  local run_var=$1 run_output
  shift
  exit_code=0
  run_output=$("$@" 2>&1) || exit_code=$?
  last_command=$*
  last_output=$run_output
  printf -v "$run_var" '%s' "$run_output"
  printf '+ %s\n%s\n(exit %d)\n' "$*" "$run_output" "$exit_code"
}

# run_ok VAR CMD...: run, and the command must succeed.
run_ok() {
  run "$@"
  expect_exit 0
}

# expect_exit N [WHAT]: the last command run exited with N.
expect_exit() {
  [[ $exit_code -eq $1 ]] || fail "${2:-$last_command} exited with $exit_code, not $1" "$last_output"
}

# expect REGEX TEXT [WHAT]: TEXT matches the extended regular expression
# REGEX somewhere (bash's =~, where "." also matches a newline).
expect() {
  [[ $2 =~ $1 ]] || fail "${3:-the output} does not match: $1" "$2"
}

# expect_not REGEX TEXT [WHAT]: TEXT does not match REGEX.
expect_not() {
  if [[ $2 =~ $1 ]]; then fail "${3:-the output} should not match: $1" "$2"; fi
}
