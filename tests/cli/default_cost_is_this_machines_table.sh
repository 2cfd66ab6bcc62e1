#!/usr/bin/env bash
# The default cost is onnxruntime's, as measured at the threads the model
# runs with (--runtime-threads): the shipped table timed nearest to them
# until `saturn calibrate` (without -o) times this machine's at those
# threads, then that one. The summary and the report name the table that
# priced the run, and a note says when its threads are not the model's.
source "$(dirname "$0")/lib.sh"
model=$DATA/models/conv_split_conv.json
export SATURN_CACHE_DIR=$OUT/cache

run_ok out "$SATURN" optimize "$model" --runtime-threads 1 --report "$OUT/shipped.json"
expect 'measured cost' "$out"
expect 'priced by: costmodel/tables/onnxruntime-cpu-1thread.json' "$out"
grep -q '"cost_source": "costmodel/tables/onnxruntime-cpu-1thread.json"' "$OUT/shipped.json" ||
  fail "the report does not name the shipped table" "$(cat "$OUT/shipped.json")"
[[ $out != *"was timed at"* ]] || fail "a note on threads where the table's are the model's" "$out"
run_ok out "$SATURN" optimize "$model" --runtime-threads 2
expect 'priced by: costmodel/tables/onnxruntime-cpu-2threads.json' "$out"
# No table is timed at 4: the nearest, with a note.
run_ok out "$SATURN" optimize "$model" --runtime-threads 4
expect 'priced by: costmodel/tables/onnxruntime-cpu-2threads.json' "$out"
expect 'was timed at 2 onnxruntime threads, the model runs at 4' "$out"

run_ok out "$SATURN" calibrate "$model" --runtime-threads 1 --runs 3 --passes 1 --explore 0
expect "wrote $OUT/cache/onnxruntime-cpu-1thread.json" "$out"
grep -q '"threads": 1' "$OUT/cache/onnxruntime-cpu-1thread.json" ||
  fail "the table does not record its threads" "$(head -c 400 "$OUT/cache/onnxruntime-cpu-1thread.json")"

run_ok out "$SATURN" optimize "$model" --runtime-threads 1 --report "$OUT/calibrated.json"
expect "priced by: $OUT/cache/onnxruntime-cpu-1thread.json" "$out"
# This machine's table at one thread does not price two.
run_ok out "$SATURN" optimize "$model" --runtime-threads 2
expect 'priced by: costmodel/tables/onnxruntime-cpu-2threads.json' "$out"

# A table timed at other threads is timed again, not extended.
cp "$OUT/cache/onnxruntime-cpu-1thread.json" "$OUT/other.json"
run_ok out "$SATURN" calibrate "$model" -o "$OUT/other.json" --runtime-threads 2 --runs 3 --passes 1 \
  --explore 0
expect 'entries timed another way .an older saturn, or other threads.; measured anew' "$out"
grep -q '"threads": 2' "$OUT/other.json" || fail "the table timed again does not record 2 threads"

# An earlier saturn's table (onnxruntime-cpu.json, calibrate's default of 2
# threads then, unrecorded) prices 2 threads, with a note.
sed 's/"threads"/"unrecorded"/' "$OUT/cache/onnxruntime-cpu-1thread.json" >"$OUT/cache/onnxruntime-cpu.json"
run_ok out "$SATURN" optimize "$model" --runtime-threads 2
expect "priced by: $OUT/cache/onnxruntime-cpu.json" "$out"
expect 'was timed at unrecorded onnxruntime threads' "$out"

run out "$SATURN" optimize "$model" --cost onnxruntime:0
expect_exit 1
expect "onnxruntime's threads must be a whole number from 1 to 256" "$out"

# Named costs stay available.
run_ok out "$SATURN" optimize "$model" --cost roofline
expect 'roofline cost' "$out"
run_ok out "$SATURN" optimize "$model" --cost onnxruntime:1 --runtime-threads 2
expect "priced by: $OUT/cache/onnxruntime-cpu-1thread.json" "$out"
