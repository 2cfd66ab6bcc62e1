#!/usr/bin/env bash
# A budget the model does not fit in is an error (exit 1) that says so.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" optimize squeezenet --budget-nodes 10
expect_exit 1
expect 'saturn: squeezenet: .*does not fit the search budget' "$out"
