#!/usr/bin/env bash
# A file that is no model at all is an error (exit 1) that names the file.
source "$(dirname "$0")/lib.sh"

run out "$SATURN" check "$SATURN_ROOT/README.md"
expect_exit 1
expect 'README\.md: unknown model format' "$out"
