#!/usr/bin/env bash
# Runs every fuzz harness of build-fuzz/ (cmake -DSATURN_FUZZ=ON, see
# tools/test.sh) for SECONDS each, two at a time, from its committed corpus
# and the seeds kept elsewhere in the repository:
#   bash tools/fuzz.sh [SECONDS] [HARNESS...]
# New inputs go to a scratch folder; a crash's input is kept in
# build-fuzz/crashes/ and the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
harnesses=("$@")
((${#harnesses[@]})) ||
  harnesses=(onnx_model json_model rules serialized_egraph measured_table env_protocol kernels)

declare -A extra_seeds=(
  [onnx_model]="tensor/fixtures tests/data/exports"
  [rules]="rules/tensor tests/data/bad_rules"
)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-fuzz/crashes

fuzz() {
  local h=$1 log=$scratch/$1.log
  mkdir -p "$scratch/$h"
  # shellcheck disable=SC2086  # the extra seed folders are a list
  if build-fuzz/tests/fuzz/fuzz_"$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$h-" \
    "$scratch/$h" "tests/fuzz/corpus/$h" ${extra_seeds[$h]:-} >"$log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $h: no crash in ${runs:-?} runs ($((${runs:-0} / seconds)) per second)"
  else
    echo "fuzz: $h FAILED; its log:" >&2
    tail -n 60 "$log" >&2
    return 1
  fi
}

failed=0
for ((i = 0; i < ${#harnesses[@]}; i += 2)); do
  pids=()
  for h in "${harnesses[@]:i:2}"; do
    fuzz "$h" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
done
exit "$failed"
