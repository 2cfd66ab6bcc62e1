#!/usr/bin/python3
"""Export the ONNX fixture models for saturn's ONNX import, with PyTorch.

Usage, from the repository root (needs Debian's python3-torch, python3-torchvision
and python3-onnx; nothing is downloaded, all weights are seeded random):

    /usr/bin/python3 tools/make-fixtures.py [--out tensor/fixtures] [--keep-weights]

Writes resnet50, inception_v3, squeezenet1_1, mobilenet_v2, bert_base,
llama_decoder, llama_block, vit_encoder and swin_like .onnx and a README.md into --out (default: tensor/fixtures/ of this repository): eval mode,
batch 1, static shapes, opset 13, constant folding, input `input`, output `output`.
By default each float32 initializer with more than 64 elements (computed tables
named *_table aside) is replaced by a graph input of the same name, type and shape, and the metadata entry
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

from dynamic_fixtures import DYN_OPSET, DYNAMIC_MODELS, halves_model, to_float16

OPSET = 13
STRIP_MIN_ELEMENTS = 64  # float32 initializers larger than this are stripped
METADATA_KEY = "saturn.seeded_weights"
ALLOWED_OPS = set("""MatMul Gemm Add Sub Mul Div Pow Sqrt Erf Relu Sigmoid Softmax
    ReduceMean Transpose Reshape Constant Conv BatchNormalization MaxPool AveragePool
    GlobalAveragePool Flatten Concat Slice Clip Identity Dropout""".split())
KEEP_SUFFIX = "_table"  # computed tables (masks, rotary angles) keep their values


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


# ------------------------------------------------------ LLaMA-style decoder --
# Batch 1, sequence 64, hidden 128, 4 query heads of 32 sharing 2 key/value
# heads, SwiGLU FFN 344, 24 layers, on embedded input.  RMSNorm divides by a
# Sqrt and rotate_half negates by a Mul: the allowed ops have no Reciprocal or
# Neg.
L_SEQ, L_HIDDEN, L_HEADS, L_KV_HEADS, L_HEAD_DIM, L_FFN, L_LAYERS = 64, 128, 4, 2, 32, 344, 24


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim) + 0.1 * torch.rand(dim))
        self.eps = eps

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables():
    """cos and sin of position * frequency, [L_SEQ, L_HEAD_DIM]."""
    freq = 10000.0 ** (-torch.arange(0, L_HEAD_DIM, 2).float() / L_HEAD_DIM)
    angles = torch.arange(L_SEQ).float()[:, None] * freq[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return torch.cos(angles), torch.sin(angles)


class DecoderLayer(torch.nn.Module):
    """Pre-RMSNorm decoder layer: rotary grouped-query causal attention, SwiGLU."""

    def __init__(self):
        super().__init__()
        linear = torch.nn.Linear
        self.q = linear(L_HIDDEN, L_HEADS * L_HEAD_DIM, bias=False)
        self.k = linear(L_HIDDEN, L_KV_HEADS * L_HEAD_DIM, bias=False)
        self.v = linear(L_HIDDEN, L_KV_HEADS * L_HEAD_DIM, bias=False)
        self.o = linear(L_HEADS * L_HEAD_DIM, L_HIDDEN, bias=False)
        self.gate = linear(L_HIDDEN, L_FFN, bias=False)
        self.up = linear(L_HIDDEN, L_FFN, bias=False)
        self.down = linear(L_FFN, L_HIDDEN, bias=False)
        self.norm1, self.norm2 = RMSNorm(L_HIDDEN), RMSNorm(L_HIDDEN)

    @staticmethod
    def heads(x, n):  # [1, SEQ, n * HEAD_DIM] -> [1, n, SEQ, HEAD_DIM]
        return x.reshape(1, L_SEQ, n, L_HEAD_DIM).permute(0, 2, 1, 3)

    @staticmethod
    def rotate(x, cos, sin):
        half = L_HEAD_DIM // 2
        rotated = torch.cat((x[..., half:] * -1.0, x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def forward(self, x, mask, cos, sin):
        h = self.norm1(x)
        q = self.rotate(self.heads(self.q(h), L_HEADS), cos, sin)
        k = self.rotate(self.heads(self.k(h), L_KV_HEADS), cos, sin)
        v = self.heads(self.v(h), L_KV_HEADS)
        group = L_HEADS // L_KV_HEADS
        k, v = torch.cat([k] * group, dim=1), torch.cat([v] * group, dim=1)
        scores = q @ k.transpose(-1, -2) / float(L_HEAD_DIM) ** 0.5 + mask
        context = torch.softmax(scores, dim=-1) @ v
        context = context.permute(0, 2, 1, 3).reshape(1, L_SEQ, L_HEADS * L_HEAD_DIM)
        x = x + self.o(context)
        h = self.norm2(x)
        gate = self.gate(h)
        return x + self.down(gate * torch.sigmoid(gate) * self.up(h))


class LlamaDecoder(torch.nn.Module):
    """A LLaMA-style decoder stack on already-embedded input [1, SEQ, HIDDEN].
    The causal mask and the rotary tables are buffers named *_table, which keep
    their values (they are computed, not learned)."""

    def __init__(self, layers=L_LAYERS):
        super().__init__()
        self.layers = torch.nn.ModuleList(DecoderLayer() for _ in range(layers))
        self.norm = RMSNorm(L_HIDDEN)
        self.register_buffer("mask_table", torch.triu(torch.full((L_SEQ, L_SEQ), -1e4), 1))
        cos, sin = rotary_tables()
        self.register_buffer("cos_table", cos)
        self.register_buffer("sin_table", sin)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, self.mask_table, self.cos_table, self.sin_table)
        return self.norm(x)


# ---------------------------------------------------------- ViT-style encoder --
# ViT-Tiny/16 at 224x224: 16x16 patches (196 tokens) and a class token,
# embedding 192, 3 heads of 64, MLP 768, 12 pre-norm blocks, exact GELU,
# learned position embeddings, the class token's output into a 1000-class head.
V_IMAGE, V_PATCH, V_EMBED, V_HEADS, V_MLP, V_LAYERS = 224, 16, 192, 3, 768, 12
V_TOKENS, V_HEAD_DIM = (V_IMAGE // V_PATCH) ** 2 + 1, V_EMBED // V_HEADS


class VitBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        linear = torch.nn.Linear
        self.q, self.k, self.v = (linear(V_EMBED, V_EMBED) for _ in range(3))
        self.proj = linear(V_EMBED, V_EMBED)
        self.fc1, self.fc2 = linear(V_EMBED, V_MLP), linear(V_MLP, V_EMBED)
        self.norm1, self.norm2 = LayerNorm(V_EMBED, 1e-6), LayerNorm(V_EMBED, 1e-6)

    @staticmethod
    def heads(x):  # [1, TOKENS, EMBED] -> [1, HEADS, TOKENS, HEAD_DIM]
        return x.reshape(1, V_TOKENS, V_HEADS, V_HEAD_DIM).permute(0, 2, 1, 3)

    def forward(self, x):
        h = self.norm1(x)
        q, k, v = self.heads(self.q(h)), self.heads(self.k(h)), self.heads(self.v(h))
        scores = q @ k.transpose(-1, -2) / float(V_HEAD_DIM) ** 0.5
        context = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(context.permute(0, 2, 1, 3).reshape(1, V_TOKENS, V_EMBED))
        return x + self.fc2(gelu(self.fc1(self.norm2(x))))


class VitEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Conv2d(3, V_EMBED, V_PATCH, V_PATCH)
        self.cls = torch.nn.Parameter(0.02 * torch.randn(1, 1, V_EMBED))
        self.position = torch.nn.Parameter(0.02 * torch.randn(1, V_TOKENS, V_EMBED))
        self.blocks = torch.nn.Sequential(*(VitBlock() for _ in range(V_LAYERS)))
        self.norm = LayerNorm(V_EMBED, 1e-6)
        self.head = torch.nn.Linear(V_EMBED, 1000)

    def forward(self, image):
        x = self.embed(image).reshape(1, V_EMBED, -1).permute(0, 2, 1)  # [1, 196, EMBED]
        x = torch.cat((self.cls, x), dim=1) + self.position
        x = self.norm(self.blocks(x))
        return self.head(x[:, :1].reshape(1, V_EMBED))


# ------------------------------------------------------------ Swin-like ViT --
# Swin Transformer (shifted windows) at a small width: 224x224 image, 4x4
# patches, embedding 64, stages of 2, 2, 6 and 2 blocks with 2, 4, 8 and 16
# heads of 32, 7x7 windows shifted by 3 in every second block (torch.roll, which
# exports as Slice + Concat), learned relative position biases as one
# [heads, 49, 49] parameter per block, patch merging, mean pooling, a
# 1000-class head.
S_IMAGE, S_PATCH, S_EMBED, S_WINDOW, S_HEAD_DIM, S_DEPTHS = 224, 4, 64, 7, 32, (2, 2, 6, 2)
S_TOKENS, S_SHIFT = S_WINDOW * S_WINDOW, S_WINDOW // 2


def gelu(x):  # exact GELU in primitives (Erf), as in BertLayer
    return x * 0.5 * (1.0 + torch.erf(x / 1.4142135623730951))


def shift_mask(side):
    """[windows, 1, 49, 49]: -100 between tokens the roll brought together."""
    part = torch.zeros(side, dtype=torch.long)
    part[side - S_WINDOW:side - S_SHIFT], part[side - S_SHIFT:] = 1, 2
    label = (part[:, None] * 3 + part[None, :])  # [side, side]
    n = side // S_WINDOW
    label = label.reshape(n, S_WINDOW, n, S_WINDOW).permute(0, 2, 1, 3).reshape(n * n, S_TOKENS)
    same = label[:, :, None] == label[:, None, :]
    return torch.where(same, 0.0, -100.0).unsqueeze(1)


class SwinBlock(torch.nn.Module):
    def __init__(self, side, channels, shifted):
        super().__init__()
        self.side, self.channels, self.heads = side, channels, channels // S_HEAD_DIM
        self.shifted = shifted
        linear = torch.nn.Linear
        self.q, self.k, self.v = (linear(channels, channels) for _ in range(3))
        self.proj = linear(channels, channels)
        self.bias = torch.nn.Parameter(0.02 * torch.randn(self.heads, S_TOKENS, S_TOKENS))
        self.fc1, self.fc2 = linear(channels, 4 * channels), linear(4 * channels, channels)
        self.norm1, self.norm2 = LayerNorm(channels, 1e-5), LayerNorm(channels, 1e-5)
        if shifted:
            self.register_buffer("mask_table", shift_mask(side))

    def attention(self, x):  # x: [windows, 49, C]
        windows, c = x.shape[0], self.channels

        def heads(y):
            return y.reshape(windows, S_TOKENS, self.heads, S_HEAD_DIM).permute(0, 2, 1, 3)

        scores = heads(self.q(x)) @ heads(self.k(x)).transpose(-1, -2) / float(S_HEAD_DIM) ** 0.5
        scores = scores + self.bias
        if self.shifted:
            scores = scores + self.mask_table
        context = torch.softmax(scores, dim=-1) @ heads(self.v(x))
        return self.proj(context.permute(0, 2, 1, 3).reshape(windows, S_TOKENS, c))

    def forward(self, x):  # [1, side * side, C]
        side, c, n = self.side, self.channels, self.side // S_WINDOW
        h = self.norm1(x).reshape(1, side, side, c)
        if self.shifted:
            h = torch.roll(h, shifts=(-S_SHIFT, -S_SHIFT), dims=(1, 2))
        h = h.reshape(1, n, S_WINDOW, n, S_WINDOW, c).permute(0, 1, 3, 2, 4, 5)
        h = self.attention(h.reshape(n * n, S_TOKENS, c))
        h = h.reshape(1, n, n, S_WINDOW, S_WINDOW, c).permute(0, 1, 3, 2, 4, 5)
        h = h.reshape(1, side, side, c)
        if self.shifted:
            h = torch.roll(h, shifts=(S_SHIFT, S_SHIFT), dims=(1, 2))
        x = x + h.reshape(1, side * side, c)
        return x + self.fc2(gelu(self.fc1(self.norm2(x))))


class PatchMerging(torch.nn.Module):
    def __init__(self, side, channels):
        super().__init__()
        self.side, self.channels = side, channels
        self.norm = LayerNorm(4 * channels, 1e-5)
        self.reduction = torch.nn.Linear(4 * channels, 2 * channels, bias=False)

    def forward(self, x):  # [1, side * side, C] -> [1, side * side / 4, 2C]
        half, c = self.side // 2, self.channels
        x = x.reshape(1, half, 2, half, 2, c).permute(0, 1, 3, 4, 2, 5)
        return self.reduction(self.norm(x.reshape(1, half * half, 4 * c)))


class SwinLike(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Conv2d(3, S_EMBED, S_PATCH, S_PATCH)
        self.embed_norm = LayerNorm(S_EMBED, 1e-5)
        side, channels, layers = S_IMAGE // S_PATCH, S_EMBED, []
        for stage, depth in enumerate(S_DEPTHS):
            if stage > 0:
                layers.append(PatchMerging(side, channels))
                side, channels = side // 2, channels * 2
            for block in range(depth):
                layers.append(SwinBlock(side, channels, side > S_WINDOW and block % 2 == 1))
        self.layers = torch.nn.Sequential(*layers)
        self.norm = LayerNorm(channels, 1e-5)
        self.head = torch.nn.Linear(channels, 1000)

    def forward(self, image):
        x = self.embed(image)  # [1, C, 56, 56]
        x = x.reshape(1, S_EMBED, -1).permute(0, 2, 1)
        x = self.layers(self.embed_norm(x))
        return self.head(self.norm(x).mean(1))


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
    "llama_decoder": (LlamaDecoder, (1, L_SEQ, L_HIDDEN), "24-layer LLaMA-style decoder "
                      "(hidden 128, RMSNorm, rotary, grouped-query causal attention, "
                      "SwiGLU) on embedded input"),
    "llama_block": (lambda: LlamaDecoder(1), (1, L_SEQ, L_HIDDEN), "one LLaMA-style decoder "
                    "layer (as llama_decoder's layers) on embedded input"),
    "vit_encoder": (VitEncoder, (1, 3, V_IMAGE, V_IMAGE), "ViT-style encoder: 16x16 patches "
                    "and a class token, embedding 192, 3 heads, MLP 768, 12 pre-norm blocks"),
    "swin_like": (SwinLike, (1, 3, S_IMAGE, S_IMAGE), "Swin-like transformer: stages of "
                  "2, 2, 6, 2 blocks, embedding 64, shifted 7x7 windows"),
}



def export(name, make, shape, axes=None):
    """Export one model with torch.onnx and return it loaded as an onnx proto.
    `axes` (symbolic axes of the input and the output) exports at DYN_OPSET."""
    torch.manual_seed(0)
    model = make().eval()
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        path = os.path.join(tmp, name + ".onnx")
        dynamic = None if axes is None else {"input": axes, "output": axes}
        torch.onnx.export(model, (torch.randn(*shape),), path,
                          opset_version=OPSET if axes is None else DYN_OPSET,
                          do_constant_folding=True, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.EVAL,
                          dynamic_axes=dynamic)
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
        if (init.data_type != onnx.TensorProto.FLOAT or np.prod(init.dims) <= STRIP_MIN_ELEMENTS
                or init.name.endswith(KEEP_SUFFIX)):
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


def check(name, model, ops=ALLOWED_OPS):
    """Op set, input/output names, checker, strict shape inference."""
    bad = sorted({n.op_type for n in model.graph.node} - ops)
    if bad:
        sys.exit(f"{name}: the exporter emitted unsupported ops {bad}")
    if model.graph.input[0].name != "input" or [o.name for o in model.graph.output] != ["output"]:
        sys.exit(f"{name}: the first input must be 'input' and the only output 'output'")
    try:
        onnx.checker.check_model(model)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as err:  # the checker and shape inference raise several types
        sys.exit(f"{name}: ONNX validation failed: {err}")


def write_readme(out, rows, dynamic_rows, command):
    """rows: (name, description, shape, op histogram, bytes, seeded count)."""
    def lines(rows):
        return "\n".join(
            f"| `{name}.onnx` | {desc} | {'x'.join(map(str, shape))} | {size:,} B | {seeded} | "
            + ", ".join(f"{op} {n}" for op, n in sorted(hist.items())) + " |"
            for name, desc, shape, hist, size, seeded in rows)
    table, dynamic_table = lines(rows), lines(dynamic_rows)
    text = f"""# ONNX fixture models

Small ONNX models for testing saturn's ONNX import, generated (do not edit by
hand) from the repository root by `{command}` with torch
{torch.__version__}, torchvision {torchvision.__version__} and onnx {onnx.__version__} (Debian's packages). Each is
exported in eval mode (which folds BatchNormalization into the Conv before it),
batch 1, static shapes, opset {OPSET}, constant folding on, from seeded random
weights. The model input is the graph input `input` (always the first) and the
result is `output`. Ops are limited to: {", ".join(sorted(ALLOWED_OPS))}.

## Seeded weights (`{METADATA_KEY}`)

Every float32 initializer with more than {STRIP_MIN_ELEMENTS} elements, except the computed
tables whose names end in `{KEEP_SUFFIX}` (attention masks, rotary angles), was removed and
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

## Dynamic-shape models

Exported with dynamic axes at opset {DYN_OPSET}, as exporters give models to users:
the input and output dimensions named in the input column are symbolic
(ONNX `dim_param`), and the reshapes are computed from Shape ops. They keep
their weights (no `{METADATA_KEY}`). `fp16_encoder.onnx` is
`dyn_encoder.onnx` with every float32 tensor, type and Cast target in float16.

| file | model | input | size | seeded weights | ops by type |
| --- | --- | --- | --- | --- | --- |
{dynamic_table}
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
    dynamic_rows = []
    for name, (make, shape, axes, desc) in DYNAMIC_MODELS.items():
        model = export(name, make, shape, axes)
        shown = [axes.get(k, d) for k, d in enumerate(shape)]
        variants = [(name, model, desc)]
        if name == "dyn_encoder":
            variants.append(("fp16_encoder", to_float16(model), desc + ", float16"))
        for file, variant, text in variants:
            check(file, variant, ops={n.op_type for n in variant.graph.node})
            path = os.path.join(out, file + ".onnx")
            onnx.save(variant, path)
            hist = collections.Counter(node.op_type for node in variant.graph.node)
            dynamic_rows.append((file, text, shown, hist, os.path.getsize(path), 0))
            print(f"\n{file}.onnx: {dynamic_rows[-1][4]:,} bytes, {len(variant.graph.node)} nodes")
    halves = halves_model()
    check("dyn_halves", halves, ops={"Split", "Add", "Mul"})
    onnx.save(halves, os.path.join(out, "dyn_halves.onnx"))
    dynamic_rows.append(("dyn_halves", halves_model.__doc__.split(":")[0].strip() +
                         " (hand-built)", ["batch", 4],
                         collections.Counter(n.op_type for n in halves.graph.node),
                         os.path.getsize(os.path.join(out, "dyn_halves.onnx")), 0))
    command = "/usr/bin/python3 tools/make-fixtures.py" + "".join(
        f" {arg}" for arg in sys.argv[1:])
    write_readme(out, rows, dynamic_rows, command)
    print(f"\nwrote {len(rows)} models and README.md to {out}")


if __name__ == "__main__":
    main()
