"""The output check for quantized models (the venv's python; imported by
ort_run.py).

A quantized model's candidate may run in onnxruntime's integer kernels where
the input ran in float between its Quantize/Dequantize nodes (or the other
way round). Both compute the same quantized function, but the integer
kernels requantize with their own fixed-point rounding, so an activation
may land one quantization step away, and the steps add up through the
network: elementwise, the two models' outputs differ by a few steps. What
must hold is that the candidate is as accurate as the input: its distance to
the model the quantization approximates is no larger. That model is the
input with its activation Quantize/Dequantize pairs taken out (a
DequantizeLinear reading a QuantizeLinear's output reads the float value
instead; quantized weights keep their DequantizeLinear, which gives their
float values).
"""
import os

import numpy as np
import onnx

# The candidate's relative L2 distance to the float reference may exceed the
# input's by this fraction of it, plus kSlack: the two spellings' rounding
# differs, but neither is systematically worse.
RELATIVE_MARGIN = 0.1
SLACK = 1e-3
# The distances are means over this many seeded inputs: one input's distance
# varies from input to input by more than the margin.
ACCURACY_INPUTS = 3
# Beyond this a model is written with its weights in a file of their own
# (protobuf's limit is 2 GiB).
LARGE_MODEL_BYTES = 1 << 30


def float_reference(path, folder):
    """The input at `path` with every activation Quantize/Dequantize pair
    bypassed, written into `folder`; None when it has no such pair."""
    model = onnx.load(path)
    graph = model.graph
    quantized_from = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "QuantizeLinear"}
    bypass = {}
    for n in graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in quantized_from:
            bypass[n.output[0]] = quantized_from[n.input[0]]
    if not bypass:
        return None
    kept = [n for n in graph.node if n.output[0] not in bypass or n.op_type != "DequantizeLinear"]
    for n in kept:
        for i, name in enumerate(n.input):
            if name in bypass:
                n.input[i] = bypass[name]
    outputs = {o.name for o in graph.output}
    kept += [onnx.helper.make_node("Identity", [bypass[name]], [name])
             for name in sorted(outputs & bypass.keys())]
    # The QuantizeLinear nodes nothing reads any more (their DequantizeLinear
    # bypassed) go too, so that the reference runs no quantization at all.
    read = outputs | {name for n in kept for name in n.input}
    kept = [n for n in kept if n.op_type != "QuantizeLinear" or n.output[0] in read]
    del graph.node[:]
    graph.node.extend(kept)
    out = os.path.join(folder, "float_reference.onnx")
    large = model.ByteSize() > LARGE_MODEL_BYTES
    onnx.save(model, out, save_as_external_data=large, location="float_reference.data")
    return out


def relative_distance(x, reference):
    x = np.asarray(x, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    norm = np.linalg.norm(r)
    return float(np.linalg.norm(x - r) / norm) if norm > 0 else float(np.linalg.norm(x - r))


def as_accurate(expected, candidate, reference):
    """Per output: whether the candidate's outputs are as close to the float
    reference's as the input's (`expected`) are, each distance the mean over
    the inputs: `expected`, `candidate` and `reference` are lists of
    {name: output}, one per input. Returns (entries, ok)."""
    entries, ok = [], True
    for name, value in expected[0].items():
        if (any(name not in c for c in candidate) or any(name not in r for r in reference)
                or value.dtype.kind != "f"):
            entries.append({"name": name, "ok": False, "detail": "not comparable"})
            ok = False
            continue
        d_input = float(np.mean([relative_distance(e[name], r[name])
                                 for e, r in zip(expected, reference)]))
        d_candidate = float(np.mean([relative_distance(c[name], r[name])
                                     for c, r in zip(candidate, reference)]))
        good = bool(d_candidate <= d_input * (1 + RELATIVE_MARGIN) + SLACK)
        ok = ok and good
        entries.append({"name": name, "ok": good, "input_distance": d_input,
                        "candidate_distance": d_candidate, "inputs": len(expected)})
    return entries, ok
