#!/usr/bin/env bash
# A model larger than a region is cut into regions: the summary and the
# report count them, equal blocks share one search (cache hits = regions -
# structures), and --region-ops 0 searches the model whole.
source "$(dirname "$0")/lib.sh"

run_ok out "$SATURN" optimize llama:8 --search greedy --cost opcount --ilp-seconds 0 \
  --report "$OUT/report.json"
expect 'regions: 4, 3 structures searched, 1 reused a search' "$out"
expect 'peak [0-9]+ e-nodes of 2000 per region; stop: 4 regions \(3 structures\)' "$out"
report=$(cat "$OUT/report.json")
expect '"regions": 4' "$report"
expect '"region_cache_hits": 1' "$report"
expect '"copies": 2' "$report" "the middle blocks' structure"

run_ok out "$SATURN" optimize llama:8 --search greedy --cost opcount --ilp-seconds 0 \
  --region-ops 0 --budget-nodes 20000
expect_not 'regions:' "$out"
expect_not 'per region' "$out"

run out "$SATURN" optimize llama:8 --region-ops -1
expect_exit 2
