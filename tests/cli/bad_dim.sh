#!/usr/bin/env bash
# A malformed --dim is a usage error (exit 2), found before the model is read.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" info x.onnx --dim batch
expect_exit 2
expect 'saturn info: .*--dim needs NAME=SIZE.*Run with --help' "$out"
