#!/usr/bin/env bash
# Numbers on the command line must be whole numbers ("1x" was once read as 1):
# anything else is a usage error (exit 2).
source "$(dirname "$0")/lib.sh"

run out "$SATURN" optimize squeezenet --budget-nodes 1x
expect_exit 2
# CLI11 wording
expect 'saturn optimize: .*--budget-nodes.*Run with --help' "$out"
