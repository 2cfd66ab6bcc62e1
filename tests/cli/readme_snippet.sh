#!/usr/bin/env bash
# The library snippet in README.md is the compiled example
# examples/optimize_onnx.cc: the README's ```cpp block must be the example's
# lines between "// snippet begin" and "// snippet end", less their two
# spaces of indent.
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
echo "README snippet matches examples/optimize_onnx.cc"
