#!/usr/bin/env bash
# `saturn calibrate --refresh` times every signature of the table again (and
# says nothing of entries timed another way).
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 2 --passes 1 --explore 0
expect 'operator signatures: [1-9][0-9]* measured, 0 already' "$out"

run_ok out "$SATURN" calibrate "$model" -o "$OUT/costs.json" --runs 2 --passes 2 --explore 0 --refresh
expect 'operator signatures: [1-9][0-9]* measured, 0 already in the table' "$out" "--refresh"
expect_not 'timed another way' "$out" "--refresh"
