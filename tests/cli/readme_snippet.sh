#!/usr/bin/env bash
# The library snippets in README.md are the tested examples. The ```cpp
# block must be examples/optimize_onnx.cc's lines between "// snippet begin"
# and "// snippet end", less their two spaces of indent; the ```python block
# must be examples/optimize_onnx.py (which tests/python runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
example=$(sed -n '/\/\/ snippet begin/,/\/\/ snippet end/p' "$root/examples/optimize_onnx.cc" |
  sed '1d;$d' | sed 's/^  //')
readme=$(sed -n '/^```cpp$/,/^```$/p' "$root/README.md" | sed '1d;$d')
if [[ "$example" != "$readme" ]]; then
  echo "README.md's C++ snippet differs from examples/optimize_onnx.cc:"
  diff <(echo "$readme") <(echo "$example") || true
  exit 1
fi
python_example=$(cat "$root/examples/optimize_onnx.py")
python_readme=$(sed -n '/^```python$/,/^```$/p' "$root/README.md" | sed '1d;$d')
if [[ "$python_example" != "$python_readme" ]]; then
  echo "README.md's Python snippet differs from examples/optimize_onnx.py:"
  diff <(echo "$python_readme") <(echo "$python_example") || true
  exit 1
fi
echo "README snippets match examples/optimize_onnx.cc and examples/optimize_onnx.py"
