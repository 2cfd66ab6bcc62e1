#!/usr/bin/env bash
# A model past protobuf's 2 GiB limit: its 2.2 GB table in an external data
# file loads, optimizes, and is written with its weights in an external data
# file beside the output, byte for byte; a kept input is copied with its data
# file; a single .onnx file past 2 GiB gets an error that says why.
# Label `large` (6.5 GB of memory, 4.4 GB of disk, about a minute): not in
# tools/test.sh; run with `ctest --test-dir build -L large`.
source "$(dirname "$0")/lib.sh"
ROWS=540000 WIDTH=1024
BYTES=$((ROWS * WIDTH * 4))

# rows = Gather(table, ids); output = Relu(Relu(rows)).
cat > "$OUT/big.txt" <<MODEL
ir_version: 8
opset_import { domain: "" version: 13 }
graph {
  name: "big"
  node { op_type: "Gather" input: "table" input: "ids" output: "rows"
         attribute { name: "axis" i: 0 type: INT } }
  node { op_type: "Relu" input: "rows" output: "r" }
  node { op_type: "Relu" input: "r" output: "output" }
  initializer {
    name: "table" data_type: 1 dims: $ROWS dims: $WIDTH data_location: EXTERNAL
    external_data { key: "location" value: "big.onnx.data" }
    external_data { key: "offset" value: "0" }
    external_data { key: "length" value: "$BYTES" }
  }
  input { name: "ids" type { tensor_type { elem_type: 7 shape { dim { dim_value: 4 } } } } }
  output { name: "output" type { tensor_type { elem_type: 1
           shape { dim { dim_value: 4 } dim { dim_value: $WIDTH } } } } }
}
MODEL
protoc --encode=onnx.ModelProto -I/usr/include/onnx onnx.proto < "$OUT/big.txt" > "$OUT/big.onnx"
# Zeros (a sparse file) with marks at the first, a middle and the last float.
truncate -s "$BYTES" "$OUT/big.onnx.data"
for offset in 0 $((BYTES / 2 + 12)) $((BYTES - 4)); do
  printf '\x00\x00\x80\x3f' | dd of="$OUT/big.onnx.data" bs=1 seek="$offset" conv=notrunc status=none
done

mkdir "$OUT/out"
run_ok out "$SATURN" optimize "$OUT/big.onnx" --cost opcount -o "$OUT/out/big.opt.onnx"
expect 'ops 3 -> 2' "$out"
expect 'weights held 2211.8 MB' "$out"
[[ -s $OUT/out/big.opt.onnx.data ]] || fail "no external data file beside the output"
(( $(stat -c %s "$OUT/out/big.opt.onnx") < 4096 )) || fail "the weights are inside the model file"
cmp "$OUT/big.onnx.data" "$OUT/out/big.opt.onnx.data" || fail "the table's bytes changed"

# The written model loads again from its data file; kept as it is, it is
# copied with its data file.
mkdir "$OUT/again"
run_ok out "$SATURN" optimize "$OUT/out/big.opt.onnx" --cost opcount -o "$OUT/again/big.onnx"
expect 'ops 2 -> 2' "$out"
expect 'a copy of the input file' "$out"
cmp "$OUT/out/big.opt.onnx" "$OUT/again/big.onnx" || fail "the kept model is not a copy"
cmp "$OUT/out/big.opt.onnx.data" "$OUT/again/big.opt.onnx.data" || fail "its data file is not a copy"

# One .onnx file past 2 GiB: not "not an ONNX model", but why it cannot be read.
truncate -s 2200000000 "$OUT/inline.onnx"
run out "$SATURN" info "$OUT/inline.onnx"
expect_exit 1
expect 'inline.onnx: the file holds 2.05 GiB, past protobuf.s 2 GiB limit.*external data' "$out"
expect_not 'not an ONNX model' "$out"
