#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the
# Release build's tests, then the engine and ONNX I/O tests under
# ASan + UBSan (a Debug build, so the e-graph's invariant checks run after
# every rebuild; at -O1, which keeps its tests to minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says when it ended (seconds since the start), so that a slow CI
# run shows where its time went.
step() { echo "saturn: $1 done at ${SECONDS} s"; }
tools/install-deps.sh
step "installing"
tools/build.sh
step "the Release build"
ctest --test-dir build --output-on-failure -j "$(nproc)"
step "the Release tests"

# -g1: line tables are all a sanitizer's stack trace needs.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DSATURN_SANITIZE=ON -DSATURN_ENGINE_ONLY=OFF >/dev/null
cmake --build build-asan -j "$(nproc)" --target engine_tests onnx_tests
step "the sanitized build"
# The engine's tests, and ONNX import, evaluation and export (libonnx-testdata's
# node models, malformed files) under the sanitizers; the rest runs in
# Release only (a sanitized build of the whole library takes too long on
# CI's 2 cores).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -R '^(engine|onnx)_tests$'
step "the sanitized tests"
echo "saturn: all tests passed"
