#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the
# Release build's tests, then the engine's tests under ASan + UBSan (see
# below).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says when it ended (seconds since the start), so that a slow CI
# run shows where its time went.
step() { echo "saturn: $1 done at ${SECONDS} s"; }
tools/install-deps.sh
step "installing"
tools/build.sh
step "the Release build"
ctest --test-dir build --output-on-failure -j "$(nproc)" -LE large
step "the Release tests"

# The Python package as a user installs it: a wheel built by pip, repaired
# by auditwheel, installed into a fresh virtual environment and tested
# there (tools/wheel.sh).
bash tools/wheel.sh
step "the wheel"

# The sanitized build (a Debug build, so the e-graph's invariant checks run
# after every rebuild) covers the engine's tests; SATURN_SANITIZE_ONNX=1
# adds ONNX import, evaluation and export (libonnx-testdata's node models,
# malformed files), about 40 s more on 2 cores. The rest runs in Release
# only: CI's 2 cores have no time for a sanitized build of everything.
# -g1: line tables are all a sanitizer's stack trace needs.
sanitized=(engine_tests)
[[ ${SATURN_SANITIZE_ONNX:-0} == 1 ]] && sanitized+=(onnx_tests)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DSATURN_SANITIZE=ON -DSATURN_ENGINE_ONLY=OFF >/dev/null
cmake --build build-asan -j "$(nproc)" --target "${sanitized[@]}"
step "the sanitized build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -R "^($(IFS='|'; echo "${sanitized[*]}"))\$"
step "the sanitized tests"

# Coverage-guided fuzzing (tests/fuzz/): every reader of untrusted input,
# built with clang's libFuzzer, ASan and UBSan, runs SATURN_FUZZ_SECONDS
# (default 20) from its committed corpus, two at a time. New inputs go to a
# scratch folder, never into the repository; a crash fails the run and
# leaves its input under build-fuzz/crashes/ (add it to the corpus with the
# fix).
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DSATURN_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_all
step "the fuzz build"
bash tools/fuzz.sh "${SATURN_FUZZ_SECONDS:-20}"
step "fuzzing"

# The whole pipeline under ASan + UBSan: the command line of the fuzz build
# (every library already instrumented there) optimizes exports of every kind
# with its defaults (tests/cli/optimize_exports.sh).
cmake --build build-fuzz -j "$(nproc)" --target saturn
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 SATURN=build-fuzz/tools/saturn \
  bash tests/cli/optimize_exports.sh >build-fuzz/optimize_exports.log 2>&1 ||
  { tail -n 80 build-fuzz/optimize_exports.log >&2; exit 1; }
step "the sanitized pipeline"
echo "saturn: all tests passed"
