#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: the
# Release build's tests, then the engine, tensor and environment tests under
# ASan + UBSan (a Debug build, so the e-graph's invariant checks run after
# every rebuild).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSATURN_SANITIZE=ON \
  -DSATURN_ENGINE_ONLY=OFF >/dev/null
cmake --build build-asan -j "$(nproc)" --target engine_tests tensor_tests search_tests onnx_tests
# Saturating the ten zoo models takes about 30 s in Release; under the
# sanitizers it would take many minutes, so that one test runs in Release only.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  GTEST_FILTER='-TensorRules.ZooModelsSaturateUnderABudget' \
  ctest --test-dir build-asan --output-on-failure -R '^(engine|tensor)_tests$'
# The environment (checkpoints, cycle filtering) and the protocol; the
# strategy runs are Release-only for the same reason.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  GTEST_FILTER='Environment.*:Protocol.*:Strategies/SearchTest.ImpossibleBudget*' \
  ctest --test-dir build-asan --output-on-failure -R '^search_tests$'
# ONNX import and export (libonnx-testdata, malformed files) under the
# sanitizers; the fixture optimizations and onnxruntime runs are Release-only.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  build-asan/tests/onnx_tests --gtest_brief=1 --gtest_filter='-*Fixture*:OnnxRuntime.*'
echo "saturn: all tests passed"
