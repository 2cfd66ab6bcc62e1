#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the
# Release build's tests, then the engine, tensor and ONNX tests under
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
cmake --build build-asan -j "$(nproc)" --target engine_tests tensor_tests onnx_tests
step "the sanitized build"
# Saturating the ten zoo models takes about 30 s in Release; under the
# sanitizers it would take many minutes, so that one test runs in Release only.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  GTEST_FILTER='-TensorRules.ZooModelsSaturateUnderABudget' \
  ctest --test-dir build-asan --output-on-failure -R '^(engine|tensor)_tests$'
# ONNX import and export (libonnx-testdata, malformed files) under the
# sanitizers; the fixture optimizations and onnxruntime runs are Release-only.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  build-asan/tests/onnx_tests --gtest_brief=1
step "the sanitized tests"
echo "saturn: all tests passed"
