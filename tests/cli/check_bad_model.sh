#!/usr/bin/env bash
# A model that does not type-check fails (exit 1) with the file, the node and
# the problem named.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" check "$DATA/models/bad_conv.json"
expect_exit 1
expect 'bad_conv.json: nodes\[0\] \(conv1\): Conv: weight \[8,4,3,3\] expects 4 input channels' "$out"
