#!/usr/bin/env bash
# A malformed --dim is a usage error (exit 2), found before the model is read;
# sizes the model does not hold at are an error (exit 1).
source "$(dirname "$0")/lib.sh"

run out "$SATURN" info x.onnx --dim batch
expect_exit 2
expect 'saturn info: .*--dim needs NAME=SIZE.*Run with --help' "$out"

# Sizes at which a model does not hold (this one's batch must be 1: an Add
# stops broadcasting) are an error naming the node, not a crash in ONNX's
# shape inference, whose data propagation reads the untyped values after it.
run out "$SATURN" info "$SATURN_ROOT/tests/fuzz/corpus/onnx_model/crash-probe-data-propagation.onnx" \
  --dim batch=3 --dim seq=3
expect_exit 1
expect "node 78 \(Add, /layers.0/Add\): the type of '/layers.0/Add_output_0' cannot be inferred" "$out"
