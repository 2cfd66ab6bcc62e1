#!/usr/bin/python3
"""Export the ONNX fixture models for saturn's ONNX import, with PyTorch.

Usage, from the repository root (needs Debian's python3-torch, python3-torchvision
and python3-onnx; nothing is downloaded, all weights are seeded random):

    /usr/bin/python3 tools/make-fixtures.py [--out tensor/fixtures] [--keep-weights]

Writes resnet50, inception_v3, squeezenet1_1, mobilenet_v2 and bert_base .onnx and
a README.md into --out (default: tensor/fixtures/ of this repository): eval mode,
batch 1, static shapes, opset 13, constant folding, input `input`, output `output`.
By default each float32 initializer with more than 64 elements is replaced by a
graph input of the same name, type and shape, and the metadata entry
`saturn.seeded_weights` maps its name to {"low": L, "high": H}, its value range; a
loader fills it with seeded uniform random values in [L, H).  --keep-weights
skips that (tens of MB per file, not for committing).
"""
import argparse
import collections
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper
from torch.onnx import symbolic_helper

OPSET = 13
STRIP_MIN_ELEMENTS = 64  # float32 initializers larger than this are stripped
METADATA_KEY = "saturn.seeded_weights"
ALLOWED_OPS = set("""MatMul Gemm Add Sub Mul Div Pow Sqrt Erf Relu Softmax ReduceMean
    Transpose Reshape Constant Conv BatchNormalization MaxPool AveragePool
    GlobalAveragePool Flatten Concat Clip Identity Dropout""".split())


# torch 1.13 exports avg_pool2d(count_include_pad=True) with padding (Inception's
# branch_pool) as Pad + unpadded AveragePool.  ONNX AveragePool's own
# count_include_pad attribute means the same, so emit that single op instead.
@symbolic_helper.parse_args("v", "is", "is", "is", "i", "i", "none")
def avg_pool2d(g, x, kernel, stride, padding, ceil_mode, count_include_pad,
               divisor_override=None):
    if not symbolic_helper._is_none(divisor_override):
        raise RuntimeError("avg_pool2d: divisor_override is not supported")
    padding = list(padding) * (2 if len(padding) == 1 else 1)
    return g.op("AveragePool", x, kernel_shape_i=kernel, strides_i=stride or kernel,
                pads_i=padding * 2, ceil_mode_i=ceil_mode,
                count_include_pad_i=count_include_pad)


torch.onnx.register_custom_op_symbolic("aten::avg_pool2d", avg_pool2d, OPSET)

# ---------------------------------------------------------------- BERT-base --
# Batch 1, sequence 128, hidden 768, 12 heads of 64, FFN 3072, 12 layers.  Shapes
# are Python integer constants only, so the trace has no Shape/Gather arithmetic.
SEQ, HIDDEN, HEADS, HEAD_DIM, FFN, LAYERS = 128, 768, 12, 64, 3072, 12


class LayerNorm(torch.nn.Module):
    """LayerNorm over the last axis in primitive ops: exports as
    ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add."""

    def __init__(self, dim, eps=1e-12):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(dim))
        self.beta = torch.nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        d = x - mean
        var = d.pow(2).mean(-1, keepdim=True)
        return d / torch.sqrt(var + self.eps) * self.gamma + self.beta


class BertLayer(torch.nn.Module):
    """One post-LayerNorm transformer encoder layer, as in BERT."""

    def __init__(self):
        super().__init__()
        linear = torch.nn.Linear
        self.q, self.k, self.v = (linear(HIDDEN, HIDDEN) for _ in range(3))
        self.attn_out = linear(HIDDEN, HIDDEN)
        self.ffn_in, self.ffn_out = linear(HIDDEN, FFN), linear(FFN, HIDDEN)
        self.ln1, self.ln2 = LayerNorm(HIDDEN), LayerNorm(HIDDEN)

    @staticmethod
    def heads(x):  # [1, SEQ, HIDDEN] -> [1, HEADS, SEQ, HEAD_DIM]
        return x.reshape(1, SEQ, HEADS, HEAD_DIM).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / 8.0  # 8 = sqrt(HEAD_DIM)
        context = torch.softmax(scores, dim=-1) @ v
        context = context.permute(0, 2, 1, 3).reshape(1, SEQ, HIDDEN)
        x = self.ln1(x + self.attn_out(context))
        h = self.ffn_in(x)
        h = h * 0.5 * (1.0 + torch.erf(h / 1.4142135623730951))  # exact GELU
        return self.ln2(x + self.ffn_out(h))


class BertBase(torch.nn.Module):
    """12-layer BERT-base encoder on already-embedded input [1, SEQ, HIDDEN]."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(BertLayer() for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


tv = torchvision.models
MODELS = {  # name -> (constructor, input shape, description for the README)
    "resnet50": (lambda: tv.resnet50(weights=None), (1, 3, 224, 224),
                 "torchvision ResNet-50"),
    "inception_v3": (lambda: tv.inception_v3(weights=None, aux_logits=False,
                                             init_weights=True),
                     (1, 3, 299, 299), "torchvision Inception-v3, no aux head"),
    "squeezenet1_1": (lambda: tv.squeezenet1_1(weights=None), (1, 3, 224, 224),
                      "torchvision SqueezeNet 1.1"),
    "mobilenet_v2": (lambda: tv.mobilenet_v2(weights=None), (1, 3, 224, 224),
                     "torchvision MobileNet-v2 (ReLU6 is Clip)"),
    "bert_base": (BertBase, (1, SEQ, HIDDEN), "12-layer BERT-base encoder "
                  "(hidden 768, 12 heads, FFN 3072) on embedded input"),
}


def export(name, make, shape):
    """Export one model with torch.onnx and return it loaded as an onnx proto."""
    torch.manual_seed(0)
    model = make().eval()
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(model, (torch.randn(*shape),), path, opset_version=OPSET,
                          do_constant_folding=True, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.EVAL)
        if os.listdir(tmp) != [name + ".onnx"]:  # torch does this for > 2 GB only
            sys.exit(f"{name}: the exporter wrote external data: {os.listdir(tmp)}")
        return onnx.load(path, load_external_data=False)


def undo_dedup(model):
    """The exporter merges initializers with equal values (the all-zero conv
    biases left by folding fresh BatchNorms into convs, BERT's LayerNorm gammas)
    into one, read by the others through Identity nodes.  Trained weights are
    never shared like that, so give each Identity output its own copy instead."""
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = graph.initializer.add()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def strip_weights(model):
    """Turn large float32 initializers into graph inputs; record their ranges."""
    graph = model.graph
    keep, ranges = [], {}
    for init in graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or np.prod(init.dims) <= STRIP_MIN_ELEMENTS:
            keep.append(init)
            continue
        values = numpy_helper.to_array(init)
        low, high = float(values.min()), float(values.max())
        ranges[init.name] = {"low": low, "high": high if high > low else low + 1e-6}
        graph.input.append(onnx.helper.make_tensor_value_info(  # after `input`
            init.name, onnx.TensorProto.FLOAT, list(init.dims)))
    del graph.initializer[:]
    graph.initializer.extend(keep)
    for node in graph.node:  # a BatchNormalization variance must stay positive
        if node.op_type == "BatchNormalization" and node.input[4] in ranges:
            assert ranges[node.input[4]]["low"] > 0, f"BN variance {node.input[4]} <= 0"
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(ranges, sort_keys=True)
    return len(ranges)


def check(name, model):
    """Op set, input/output names, checker, strict shape inference."""
    bad = sorted({n.op_type for n in model.graph.node} - ALLOWED_OPS)
    if bad:
        sys.exit(f"{name}: the exporter emitted unsupported ops {bad}")
    if model.graph.input[0].name != "input" or [o.name for o in model.graph.output] != ["output"]:
        sys.exit(f"{name}: the first input must be 'input' and the only output 'output'")
    try:
        onnx.checker.check_model(model)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as err:  # the checker and shape inference raise several types
        sys.exit(f"{name}: ONNX validation failed: {err}")


def write_readme(out, rows, command):
    """rows: (name, description, shape, op histogram, bytes, seeded count)."""
    table = "\n".join(
        f"| `{name}.onnx` | {desc} | {'x'.join(map(str, shape))} | {size:,} B | {seeded} | "
        + ", ".join(f"{op} {n}" for op, n in sorted(hist.items())) + " |"
        for name, desc, shape, hist, size, seeded in rows)
    text = f"""# ONNX fixture models

Small ONNX models for testing saturn's ONNX import, generated (do not edit by
hand) from the repository root by `{command}` with torch
{torch.__version__}, torchvision {torchvision.__version__} and onnx {onnx.__version__} (Debian's packages). Each is
exported in eval mode (which folds BatchNormalization into the Conv before it),
batch 1, static shapes, opset {OPSET}, constant folding on, from seeded random
weights. The model input is the graph input `input` (always the first) and the
result is `output`. Ops are limited to: {", ".join(sorted(ALLOWED_OPS))}.

## Seeded weights (`{METADATA_KEY}`)

Every float32 initializer with more than {STRIP_MIN_ELEMENTS} elements was removed and
replaced by a graph input of the same name, element type and shape, so each
file is still a valid ONNX model. The model metadata entry `{METADATA_KEY}`
is a JSON object mapping each such input name to `{{"low": L, "high": H}}`, the
minimum and maximum of the original tensor (H = L + 1e-6 when the tensor was
constant, e.g. all-zero biases). A loader must turn every graph input named
there into a weight filled with seeded uniform random values in [low, high);
BatchNormalization variances, if any, have low > 0. Small initializers (scalars,
shape constants, small biases) keep their data.

## Models

| file | model | input | size | seeded weights | ops by type |
| --- | --- | --- | --- | --- | --- |
{table}
"""
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(text)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tensor/fixtures",
                        help="output directory, relative to the repository root")
    parser.add_argument("--keep-weights", action="store_true",
                        help="keep every initializer (large files, not for committing)")
    args = parser.parse_args()
    out = os.path.join(repo, args.out)  # an absolute --out is used as it is
    os.makedirs(out, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"onnx {onnx.__version__}; writing to {out}")

    rows = []
    for name, (make, shape, desc) in MODELS.items():
        model = export(name, make, shape)
        undo_dedup(model)
        seeded = 0 if args.keep_weights else strip_weights(model)
        check(name, model)
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        hist = collections.Counter(node.op_type for node in model.graph.node)
        rows.append((name, desc, shape, hist, os.path.getsize(path), seeded))
        print(f"\n{name}.onnx: {rows[-1][4]:,} bytes, {len(model.graph.node)} nodes, "
              f"{seeded} seeded weights")
        for op, n in sorted(hist.items()):
            print(f"  {op:20s} {n}")
    command = "/usr/bin/python3 tools/make-fixtures.py" + "".join(
        f" {arg}" for arg in sys.argv[1:])
    write_readme(out, rows, command)
    print(f"\nwrote {len(rows)} models and README.md to {out}")


if __name__ == "__main__":
    main()
