#!/usr/bin/env python3
"""Writes the models at the ends of the opset range saturn reads, for
tests/cli/optimize_exports.sh (run again under ASan + UBSan by tools/test.sh):

  opset9_convnet.onnx   a small convolutional network at opset 9 (Slice with
                        its attributes, Reshape to a shape the graph computes
                        from its symbolic batch, BatchNormalization, Gemm)
  opset23_encoder.onnx  tensor/fixtures/dyn_encoder.onnx raised to opset 23
                        by onnx's version converter
  quantized_reductions.onnx  opset 13, a symbolic batch: a per-axis int8
                        Quantize/Dequantize pair, an int8 weight behind its
                        DequantizeLinear, ReduceSum with its axes as an
                        input, IsInf and IsNaN in a mask, ReduceLogSumExp
                        (also a seed of the ONNX fuzzer)
  four_bit_blocks.onnx  opset 21, IR 10, a symbolic batch: a uint4
                        Quantize/Dequantize pair per tensor and an int4
                        weight [40, 6] dequantized per block of 16 along its
                        rows (the last block 8 rows), as onnxruntime's 4-bit
                        weight quantizer writes a MatMul (also a fuzzer seed)

Needs the project's virtual environment (onnx and numpy from PyPI):

  build/venv/bin/python tests/data/opsets/make_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")


def weight(rng, name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


def convnet_opset9():
    rng = np.random.default_rng(9)
    init = [weight(rng, "conv_w", (8, 3, 3, 3)), weight(rng, "conv_b", (8,)),
            numpy_helper.from_array(np.ones(8, np.float32), "bn_scale"),
            weight(rng, "bn_bias", (8,)), weight(rng, "bn_mean", (8,)),
            numpy_helper.from_array(np.ones(8, np.float32), "bn_var"),
            weight(rng, "fc_w", (10, 8 * 4 * 4)), weight(rng, "fc_b", (10,)),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["bn"]),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        # Opset 9's Slice: starts, ends and axes as attributes.
        helper.make_node("Slice", ["p"], ["s"], starts=[0, 0], ends=[4, 4], axes=[2, 3]),
        helper.make_node("Shape", ["s"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["s", "flat_shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 10, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    graph = helper.make_graph(nodes, "opset9_convnet", [x], [y], initializer=init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    onnx.checker.check_model(model, full_check=True)
    return model


def encoder_opset23():
    model = onnx.load(os.path.join(ROOT, "tensor", "fixtures", "dyn_encoder.onnx"))
    raised = version_converter.convert_version(model, 23)
    onnx.checker.check_model(raised, full_check=True)
    return raised


def quantized_reductions():
    rng = np.random.default_rng(13)
    inits = [numpy_helper.from_array(np.array([0.02, 0.03, 0.05, 0.04], np.float32), "xs"),
             numpy_helper.from_array(np.array([0, 3, -2, 1], np.int8), "xz"),
             numpy_helper.from_array(rng.integers(-100, 100, (8, 6)).astype(np.int8), "wq"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array([2], np.int64), "last"),
             numpy_helper.from_array(np.array(0, np.float32), "zero"),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], axis=1),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], axis=1),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]),
             helper.make_node("MatMul", ["xd", "w"], ["m"]),
             helper.make_node("Mul", ["m", "two"], ["m2"]),
             helper.make_node("Mul", ["m2", "half"], ["m1"]),
             helper.make_node("ReduceSum", ["m1", "last"], ["s"], keepdims=1),
             helper.make_node("IsInf", ["s"], ["inf"], detect_negative=1),
             helper.make_node("IsNaN", ["s"], ["nan"]),
             helper.make_node("Or", ["inf", "nan"], ["bad"]),
             helper.make_node("Where", ["bad", "zero", "s"], ["clean"]),
             helper.make_node("ReduceLogSumExp", ["clean"], ["y"], axes=[1], keepdims=0)]
    graph = helper.make_graph(
        nodes, "quantized_reductions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def four_bit_blocks():
    rng = np.random.default_rng(21)
    inits = [helper.make_tensor("wq", TensorProto.INT4, [40, 6], rng.integers(-8, 8, 240).tolist()),
             numpy_helper.from_array((rng.random((3, 6)) * 0.05 + 0.01).astype(np.float32), "ws"),
             helper.make_tensor("wz", TensorProto.INT4, [3, 6], rng.integers(-8, 8, 18).tolist()),
             numpy_helper.from_array(np.array(0.3, np.float32), "xs"),
             helper.make_tensor("xz", TensorProto.UINT4, [], [8]),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, block_size=16),
             helper.make_node("MatMul", ["xd", "w"], ["m"]),
             helper.make_node("Mul", ["m", "two"], ["m2"]),
             helper.make_node("Mul", ["m2", "half"], ["y"])]
    graph = helper.make_graph(
        nodes, "four_bit_blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    onnx.save(convnet_opset9(), os.path.join(HERE, "opset9_convnet.onnx"))
    onnx.save(encoder_opset23(), os.path.join(HERE, "opset23_encoder.onnx"))
    quantized = quantized_reductions()
    onnx.save(quantized, os.path.join(HERE, "quantized_reductions.onnx"))
    onnx.save(quantized, os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx_model",
                                      "quantized_reductions.onnx"))
    four_bit = four_bit_blocks()
    onnx.save(four_bit, os.path.join(HERE, "four_bit_blocks.onnx"))
    onnx.save(four_bit, os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx_model",
                                     "four_bit_blocks.onnx"))
