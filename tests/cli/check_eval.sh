#!/usr/bin/env bash
# A zoo model written with `saturn zoo --save` loads back, type-checks and
# runs in the interpreter, with --eval after or before the model.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" zoo squeezenet --save "$OUT/squeezenet.json"
expect 'squeezenet +65 ops.*wrote .*squeezenet.json' "$out"

run_ok out "$SATURN" check "$OUT/squeezenet.json" --eval
expect 'squeezenet +65 ops.*evaluated' "$out" "check MODEL --eval"

run_ok out "$SATURN" check --eval "$OUT/squeezenet.json"
expect 'squeezenet +65 ops.*evaluated' "$out" "check --eval MODEL"
