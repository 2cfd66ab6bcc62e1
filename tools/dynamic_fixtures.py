"""The dynamic-shape ONNX fixtures that tools/make-fixtures.py writes: a CNN
with a symbolic batch, an encoder with a symbolic batch and sequence (and its
float16 variant), and a hand-built model whose Split halves the batch.
Imported by make-fixtures.py; see its docstring for how to run it."""
import numpy as np
import onnx
import torch
from onnx import numpy_helper

# ----------------------------------------------------- dynamic-shape models --
# Exported with dynamic axes at opset 17, as exporters give models to users:
# the batch (and the sequence) are symbolic dimensions, and the reshapes are
# computed from Shape ops.  Small, so they keep their weights.
DYN_OPSET = 17
E_HIDDEN, E_HEADS, E_FFN, E_LAYERS = 64, 4, 256, 2


class DynCnn(torch.nn.Module):
    """A small residual CNN: [batch, 3, 32, 32] -> [batch, 10]."""

    def __init__(self):
        super().__init__()

        def conv(cin, cout, stride=1):
            return torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                torch.nn.BatchNorm2d(cout), torch.nn.ReLU())
        self.stem, self.a, self.b = conv(3, 16), conv(16, 16), conv(16, 16)
        self.down, self.c = conv(16, 32, 2), conv(32, 32)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.b(self.a(x))
        x = self.down(x)
        x = x + self.c(x)
        pooled = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.head(torch.flatten(pooled, 1))


class DynEncoderLayer(torch.nn.Module):
    """A post-norm encoder layer on [batch, seq, E_HIDDEN] (torch's LayerNorm,
    which opset 17 exports as LayerNormalization)."""

    def __init__(self):
        super().__init__()
        linear = torch.nn.Linear
        self.q, self.k, self.v = (linear(E_HIDDEN, E_HIDDEN) for _ in range(3))
        self.attn_out = linear(E_HIDDEN, E_HIDDEN)
        self.ffn_in, self.ffn_out = linear(E_HIDDEN, E_FFN), linear(E_FFN, E_HIDDEN)
        self.ln1, self.ln2 = torch.nn.LayerNorm(E_HIDDEN), torch.nn.LayerNorm(E_HIDDEN)

    @staticmethod
    def heads(x):  # [batch, seq, hidden] -> [batch, heads, seq, head_dim]
        batch, seq, _ = x.shape
        return x.reshape(batch, seq, E_HEADS, -1).permute(0, 2, 1, 3)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / 4.0  # 4 = sqrt(head_dim)
        context = torch.softmax(scores, dim=-1) @ v
        context = context.permute(0, 2, 1, 3).reshape(batch, seq, E_HIDDEN)
        x = self.ln1(x + self.attn_out(context))
        return self.ln2(x + self.ffn_out(torch.nn.functional.gelu(self.ffn_in(x))))


class DynEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(DynEncoderLayer() for _ in range(E_LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x



def halves_model():
    """input [batch, 4] -> output [half, 4]: the two halves of the batch
    added, then multiplied by 2 and by 0.5.  Its Split has no sizes, so it
    halves any even batch; saturn's IR fixes the halves' sizes, so its
    optimized graph (the products merged) holds at the given batch only."""
    h = onnx.helper
    nodes = [h.make_node("Split", ["input"], ["a", "b"], axis=0),
             h.make_node("Add", ["a", "b"], ["sum"]),
             h.make_node("Mul", ["sum", "two"], ["scaled"]),
             h.make_node("Mul", ["scaled", "half"], ["output"])]
    graph = h.make_graph(
        nodes, "dyn_halves",
        [h.make_tensor_value_info("input", onnx.TensorProto.FLOAT, ["batch", 4])],
        [h.make_tensor_value_info("output", onnx.TensorProto.FLOAT, ["half", 4])],
        [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
         numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8,
                        producer_name="make-fixtures")


DYNAMIC_MODELS = {  # name -> (constructor, traced input shape, symbolic axes, description)
    "dyn_cnn": (DynCnn, (2, 3, 32, 32), {0: "batch"},
                "small residual CNN (16 and 32 channels), dynamic batch"),
    "dyn_encoder": (DynEncoder, (2, 16, E_HIDDEN), {0: "batch", 1: "seq"},
                    f"{E_LAYERS}-layer post-norm encoder (hidden {E_HIDDEN}, {E_HEADS} heads, "
                    "LayerNormalization), dynamic batch and sequence"),
}


def to_float16(model):
    """The model with float16 in place of float32 everywhere: initializers,
    Constant values, Cast targets, inputs, outputs and value_info."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph

    def convert(tensor):
        if tensor.data_type == onnx.TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(tensor).astype(np.float16), tensor.name))

    for init in graph.initializer:
        convert(init)
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                convert(attr.t)
            elif attr.name == "to" and attr.i == onnx.TensorProto.FLOAT:
                attr.i = onnx.TensorProto.FLOAT16
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT16
    return model
