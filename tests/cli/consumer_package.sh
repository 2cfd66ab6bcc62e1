#!/usr/bin/env bash
# saturn as a package: `cmake --install` into a temporary prefix; the
# consumer example (examples/consumer, find_package(saturn)) builds against
# it and optimizes an ONNX fixture; the installed command line finds its
# rules and profiles without the source tree; and a parent project that
# adds saturn with add_subdirectory gets the libraries without saturn's
# tests, benchmarks and tools; the Python module imports from the prefix; and
# the prefix still works once moved.
source "$(dirname "$0")/lib.sh"
export SATURN_CACHE_DIR=$OUT/cache  # no table calibrated on this machine: the shipped one prices
[[ -n ${SATURN_BUILD_DIR:-} ]] || fail "SATURN_BUILD_DIR (the build to install) is not set"
prefix=$OUT/prefix

run_ok out cmake --install "$SATURN_BUILD_DIR" --prefix "$prefix"
[[ $(ls "$prefix/include") == saturn ]] || fail "headers outside include/saturn: $(ls "$prefix/include")"
[[ -f $prefix/include/saturn/saturn.h && -f $prefix/lib/cmake/saturn/saturnConfig.cmake ]] ||
  fail "saturn.h or saturnConfig.cmake not installed"

run_ok out cmake -S "$SATURN_ROOT/examples/consumer" -B "$OUT/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
run_ok out cmake --build "$OUT/consumer"
run_ok out "$OUT/consumer/consumer" "$FIXTURES/squeezenet1_1.onnx" "$OUT/squeezenet.opt.onnx"
expect 'squeezenet1_1: 65 ops -> [0-9]+ ops, cost [0-9.]+ -> [0-9.]+ \([0-9.]+% lower\); wrote .*squeezenet.opt.onnx, read back' "$out"

# The installed command line, run from elsewhere, with its shipped rules and profiles.
cd "$OUT"
run_ok out "$prefix/bin/saturn" optimize squeezenet --search greedy --cost roofline:gpu-a100 \
  --ilp-seconds 0 -o "$OUT/sq.onnx"
expect 'squeezenet: greedy search, roofline' "$out"
run_ok out "$prefix/bin/saturn" rules list
expect 'rules/tensor/transformer.rules' "$out"

# The Python module from the prefix.
if [[ -n ${SATURN_PYTHON:-} ]]; then
  site=$(ls -d "$prefix"/lib/python3*/dist-packages)
  run_ok out env PYTHONPATH="$site" "$SATURN_PYTHON" -c "import saturn; \
r = saturn.optimize(saturn.load('$FIXTURES/squeezenet1_1.onnx'), search='greedy', ilp_seconds=0, cost='roofline', no_measure=True); \
r.save('$OUT/s.onnx'); print('python', r.cost_before > r.cost_after)"
  expect 'python True' "$out"
fi

# The prefix moved elsewhere still works: nothing in it names where it was built or installed.
mv "$prefix" "$OUT/moved"
run_ok out "$OUT/moved/bin/saturn" optimize "$FIXTURES/squeezenet1_1.onnx" --search greedy \
  --ilp-seconds 0 -o "$OUT/moved.onnx"
expect 'squeezenet1_1: greedy search, measured cost' "$out"
expect 'priced by: costmodel/tables/onnxruntime-cpu-' "$out"  # a shipped table, compiled in

# add_subdirectory: the libraries, no tests, benchmarks or tools.
mkdir "$OUT/parent"
cat > "$OUT/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(parent LANGUAGES CXX)
add_subdirectory("$SATURN_ROOT" saturn)
add_executable(parent main.cc)
target_link_libraries(parent PRIVATE saturn::saturn)
CMAKE
echo 'int main() { return 0; }' > "$OUT/parent/main.cc"
run_ok out cmake -S "$OUT/parent" -B "$OUT/parent-build" -G Ninja
run_ok out cmake --build "$OUT/parent-build" --target help
expect 'saturn_search' "$out"
expect_not 'engine_tests|compare_search|saturn_cli|optimize_onnx' "$out"
