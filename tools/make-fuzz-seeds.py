"""Writes the ONNX seeds of the fuzz corpus (tests/fuzz/corpus/onnx_model/).

Run from the repository root with Debian's python3-onnx:
    /usr/bin/python3 tools/make-fuzz-seeds.py
Small models that between them use the importer's main paths: initializers
with data, Constant nodes, attributes of every kind, symbolic dimensions
("batch", "seq"; the harness sizes them), opset 13 and 17 operators and a
Split with several outputs. The committed files are what the fuzzer starts
from; regenerating them is only needed to add a path.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join("tests", "fuzz", "corpus", "onnx_model")


def weight(name, shape, seed):
    values = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    return numpy_helper.from_array(values, name)


def save(name, nodes, inputs, outputs, initializers, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def mlp():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1, alpha=0.5),
    ]
    save("mlp", nodes, [x], [y],
         [weight("w1", (8, 6), 1), weight("b1", (6,), 2), weight("w2", (4, 6), 3),
          weight("b2", (4,), 4)])


def convnet():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    nodes = [
        helper.make_node("Conv", ["x", "k1", "c1"], ["a"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("Conv", ["ar", "k2"], ["b"], group=2, kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["ar"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["b"], ["q"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["p", "q"], ["c"], axis=1),
        helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("GlobalAveragePool", ["n"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Clip", ["f", "lo", "hi"], ["y"]),
    ]
    save("convnet", nodes, [x], [y],
         [weight("k1", (4, 3, 3, 3), 5), weight("c1", (4,), 6), weight("k2", (4, 2, 1, 1), 7),
          weight("s", (8,), 8), weight("o", (8,), 9), weight("m", (8,), 10),
          numpy_helper.from_array(np.linspace(0.5, 1.5, 8, dtype=np.float32), "v"),
          numpy_helper.from_array(np.array(0, np.float32), "lo"),
          numpy_helper.from_array(np.array(6, np.float32), "hi")])


def attention():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 8])
    shape = helper.make_tensor("shape", TensorProto.INT64, [4], [1, -1, 2, 4])
    back = helper.make_tensor("back", TensorProto.INT64, [3], [1, -1, 8])
    nodes = [
        helper.make_node("MatMul", ["x", "wqkv"], ["qkv"]),
        helper.make_node("Split", ["qkv", "parts"], ["q", "k", "v"], axis=-1),
        helper.make_node("Constant", [], ["s"], value=shape),
        helper.make_node("Reshape", ["q", "s"], ["q4"]),
        helper.make_node("Reshape", ["k", "s"], ["k4"]),
        helper.make_node("Reshape", ["v", "s"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Constant", [], ["b"], value=back),
        helper.make_node("Reshape", ["ot", "b"], ["merged"]),
        helper.make_node("Add", ["merged", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1,
                         epsilon=1e-5),
    ]
    save("attention", nodes, [x], [y],
         [weight("wqkv", (8, 24), 11),
          numpy_helper.from_array(np.array([8, 8, 8], np.int64), "parts"),
          numpy_helper.from_array(np.array(2.0, np.float32), "scale"),
          weight("gamma", (8,), 12), weight("beta", (8,), 13)], opset=17)


def elementwise():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 2])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 4])
    nodes = [
        helper.make_node("Pow", ["x", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Div", ["x", "rms"], ["n"]),
        helper.make_node("Mul", ["n", "g"], ["ng"]),
        helper.make_node("Sigmoid", ["ng"], ["sg"]),
        helper.make_node("Mul", ["ng", "sg"], ["silu"]),
        helper.make_node("Erf", ["silu"], ["e"]),
        helper.make_node("Sub", ["e", "x"], ["d"]),
        helper.make_node("Slice", ["d", "starts", "ends", "axes"], ["y"]),
        helper.make_node("Tanh", ["x"], ["t"]),
        helper.make_node("Identity", ["t"], ["z"]),
    ]
    save("elementwise", nodes, [x], [y, z],
         [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
          numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
          weight("g", (4,), 14),
          numpy_helper.from_array(np.array([1], np.int64), "starts"),
          numpy_helper.from_array(np.array([3], np.int64), "ends"),
          numpy_helper.from_array(np.array([2], np.int64), "axes")])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for make in (mlp, convnet, attention, elementwise):
        make()
