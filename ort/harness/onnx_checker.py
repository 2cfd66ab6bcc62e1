"""PyPI's ONNX checker (full check, strict shape inference) on a model, for
saturn's onnxruntime harness (ort_run.py), without loading the model's
weights: a copy of the model is made, at the protobuf wire level, whose
large weights are external data of the model file itself.

Needs the project's virtual environment (onnx from PyPI).
"""
import mmap
import os
import tempfile

import onnx


def read_varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def wire_fields(buf, start, end):
    """The fields of the message in buf[start:end]: (number, start of the
    field, start of its value, end), length-delimited values only decoded
    for their bounds."""
    pos = start
    while pos < end:
        field_start = pos
        tag, pos = read_varint(buf, pos)
        number, kind = tag >> 3, tag & 7
        if kind == 0:
            _, pos = read_varint(buf, pos)
            value_start = pos
        elif kind == 1:
            value_start, pos = pos, pos + 8
        elif kind == 5:
            value_start, pos = pos, pos + 4
        elif kind == 2:
            length, value_start = read_varint(buf, pos)
            pos = value_start + length
        else:
            raise ValueError(f"wire type {kind}")
        if pos > end:
            raise ValueError("field past its message")
        yield number, field_start, value_start, pos


LARGE_WEIGHT = 1024


def without_weights(buf, location):
    """A model file's bytes with each large inline initializer's raw data
    made external data of the file itself (`location`, at the offset where
    it lies): what the checker reads without loading the weights."""
    def length_delimited(number, body):
        return varint(number << 3 | 2) + varint(len(body)) + body

    def tensor(start, end):
        kept, raw = bytearray(), None
        for number, f, v, e in wire_fields(buf, start, end):
            if number == 9 and e - v >= LARGE_WEIGHT:
                raw = (v, e - v)
            else:
                kept += buf[f:e]
        if raw is None:
            return bytes(buf[start:end])
        t = onnx.TensorProto.FromString(bytes(kept))
        for key, value in (("location", location), ("offset", raw[0]), ("length", raw[1])):
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
        t.data_location = onnx.TensorProto.EXTERNAL
        return t.SerializeToString()

    def graph(start, end):
        out = bytearray()
        for number, f, v, e in wire_fields(buf, start, end):
            out += length_delimited(5, tensor(v, e)) if number == 5 else buf[f:e]
        return bytes(out)

    out = bytearray()
    for number, f, v, e in wire_fields(buf, 0, len(buf)):
        out += length_delimited(7, graph(v, e)) if number == 7 else buf[f:e]
    return bytes(out)


def checker_verdict(file):
    """PyPI's ONNX checker on a model (full check): None when it passes, else
    its message. The checker reads a copy of the model whose large weights
    are external data of the file itself, so that they are not loaded (with
    them, the checker holds 2.6 times a 559 MB model)."""
    stripped = None
    try:
        with open(file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            body = without_weights(buf, os.path.basename(file))
        fd, stripped = tempfile.mkstemp(suffix=".onnx", dir=os.path.dirname(os.path.abspath(file)))
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        onnx.checker.check_model(stripped, full_check=True)
        return None
    except Exception as err:  # the checker and shape inference raise several types
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    finally:
        if stripped:
            os.unlink(stripped)


def checker_report(file):
    message = checker_verdict(file)
    return {"ok": message is None, "onnx": onnx.__version__, **({"message": message} if message else {})}
