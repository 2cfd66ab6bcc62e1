"""QuantizeLinear and DequantizeLinear as IR operators: a model quantized by
onnxruntime's own quantizer (QDQ format, both activation spellings) is read
with no opaque operator, its quantized weights stay integer initializers
behind their DequantizeLinear (nothing folded to float: onnxruntime fuses
that spelling into its integer kernels), and the model saturn writes gives
onnxruntime's outputs. The interpreter's kernels are checked against ONNX's
reference outputs by tests/onnx_io_test.cc (libonnx-testdata's
quantizelinear and dequantizelinear models). Run by CTest (python_tests, the
venv's python, SATURN_CLI set).
"""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from optimizing import optimize
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")


def float_model(path):
    """x [1, 3, 16, 16] -> Conv 3x3 (8) -> Relu -> Conv 1x1 (8) -> Add (the
    first Conv's output) -> Relu."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32) * 0.3, "w2"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
             helper.make_node("Add", ["c2", "r1"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


class SeededInputs(CalibrationDataReader):
    """Four seeded standard-normal batches of the input x of `shape`, for
    onnxruntime's calibration."""

    def __init__(self, shape):
        rng = np.random.default_rng(0)
        self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def Inputs():  # noqa: N802 (float_model's input)
    return SeededInputs((1, 3, 16, 16))


def run(path, x, optimized=True):
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def assert_as_accurate(out, quantized, floats):
    """The model saturn wrote is as close to the float model the input
    quantizes as the input is (relative L2 distance, within 10%)."""
    x = np.random.default_rng(9).standard_normal((1, 3, 16, 16)).astype(np.float32)
    reference = run(floats, x)

    def distance(path):
        return np.linalg.norm(run(path, x) - reference) / np.linalg.norm(reference)
    assert distance(out) <= 1.1 * distance(quantized) + 1e-3, (distance(out), distance(quantized))


@needs_cli
@pytest.mark.parametrize("activations", [QuantType.QInt8, QuantType.QUInt8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_a_qdq_model_is_read_whole_and_written_with_its_integer_weights(
        tmp_path, activations, per_channel):
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    out, report = tmp_path / "q.opt.onnx", tmp_path / "r.json"
    float_model(floats)
    quantize_static(str(floats), str(quantized), Inputs(), quant_format=QuantFormat.QDQ,
                    activation_type=activations, weight_type=QuantType.QInt8,
                    per_channel=per_channel)
    # The quantized output scaled by 2 and by 0.5 in float: the rewrite that
    # makes saturn write the model from its IR.
    q = onnx.load(str(quantized))
    q.graph.output[0].name = "z"
    q.graph.initializer.extend([numpy_helper.from_array(np.array(2, np.float32), "two"),
                                numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    q.graph.node.extend([helper.make_node("Mul", ["y", "two"], ["d"]),
                         helper.make_node("Mul", ["d", "half"], ["z"])])
    onnx.save(q, str(quantized))
    counts = {op: sum(n.op_type == op for n in q.graph.node)
              for op in ("QuantizeLinear", "DequantizeLinear")}
    assert counts["QuantizeLinear"] > 0 and counts["DequantizeLinear"] > 0
    r = optimize(quantized, out, report)
    assert not r["opaque_ops_before"], r["opaque_reasons_before"]
    assert r["decision"]["taken"], r["decision"]
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    ops = [n.op_type for n in written.graph.node]
    assert {op: ops.count(op) for op in counts} == counts, ops
    # The convolutions' weights are still int8 initializers read by a
    # DequantizeLinear, per channel where they were.
    inits = {t.name: t for t in written.graph.initializer}
    weights = [inits[n.input[0]] for n in written.graph.node
               if n.op_type == "DequantizeLinear" and n.input[0] in inits and
               len(inits[n.input[0]].dims) == 4]
    assert len(weights) == 2 and all(w.data_type == TensorProto.INT8 for w in weights), weights
    scales = [inits[n.input[1]] for n in written.graph.node
              if n.op_type == "DequantizeLinear" and n.input[0] in inits and
              len(inits[n.input[0]].dims) == 4]
    assert all((len(s.dims) == 1 and s.dims[0] == 8) == per_channel for s in scales)
    # What ONNX defines both to compute (onnxruntime without its graph
    # optimizations, so no integer kernel rounds its own way): the same.
    # Which spelling of the pairs the operator count takes is open.
    x = np.random.default_rng(9).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(run(out, x, optimized=False), run(quantized, x, optimized=False),
                               rtol=1e-5, atol=1e-5)


def loaded_ops(path, folder):
    """The operators onnxruntime runs after loading `path`."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(folder / "loaded.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]


@needs_cli
def test_int8_activations_come_out_in_the_integer_kernels(tmp_path):
    """quantize_static's defaults (int8 activations; the first convolution's
    output is read by the second and by the Add): onnxruntime runs every
    Conv and the Add in float between DequantizeLinear nodes. saturn's
    result, priced by the onnxruntime cost, moves the pairs to uint8
    (qdq-int8-to-uint8), and onnxruntime runs it as QLinearConv and
    QLinearAdd with no float Conv left."""
    floats, quantized, out = tmp_path / "f.onnx", tmp_path / "q.onnx", tmp_path / "o.onnx"
    float_model(floats)
    quantize_static(str(floats), str(quantized), Inputs(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    before = loaded_ops(quantized, tmp_path)
    assert "Conv" in before and not any(op.startswith("QLinear") for op in before), before
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--search", "greedy",
                           "--no-measure", "--quiet", "--report", str(tmp_path / "r.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "r.json", encoding="utf-8") as f:
        report = json.load(f)
    assert report["decision"]["taken"], report["decision"]
    applied = {r["rule"]: r["count"] for r in report["rules_applied"]}
    assert applied.get("qdq-int8-to-uint8", 0) > 0, applied
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    inits = {t.name: t for t in written.graph.initializer}
    activation_zero_points = [inits[n.input[2]] for n in written.graph.node
                              if n.op_type == "QuantizeLinear"]
    assert activation_zero_points and all(z.data_type == TensorProto.UINT8
                                          for z in activation_zero_points)
    after = loaded_ops(out, tmp_path)
    assert after.count("QLinearConv") == 2 and after.count("QLinearAdd") == 1, after
    assert "Conv" not in after, after
    assert_as_accurate(out, quantized, floats)


def dequantized_weight_types(path):
    """The element types of the 8-bit quantized weights the written model
    dequantizes (DequantizeLinear of an initializer; the int32 biases left
    out)."""
    model = onnx.load(str(path))
    inits = {t.name: t.data_type for t in model.graph.initializer}
    return {inits[n.input[0]] for n in model.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0] in inits} - {TensorProto.INT32}


@needs_cli
def test_the_quantized_weights_type_is_an_option_and_both_are_timed(tmp_path):
    """--integer-weights names the type the target CPU multiplies exactly:
    the result's weights come out in it. Unset, on a model with quantized
    weights, both spellings are candidates: the report names the one timed
    fastest, which is what the written model holds, and what the other's
    timing found."""
    floats, quantized = tmp_path / "f.onnx", tmp_path / "q.onnx"
    float_model(floats)
    quantize_static(str(floats), str(quantized), Inputs(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    names = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}
    for name, dtype in names.items():
        out = tmp_path / f"{name}.onnx"
        done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--search",
                               "greedy", "--no-measure", "--quiet", "--integer-weights", name],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        assert dequantized_weight_types(out) == {dtype}, name
    bad = subprocess.run([CLI, "optimize", str(quantized), "-o", str(tmp_path / "b.onnx"),
                          "--integer-weights", "int4"], capture_output=True, text=True)
    assert bad.returncode != 0 and "int8, uint8 or mixed" in bad.stderr, bad.stderr

    out, report_path = tmp_path / "timed.onnx", tmp_path / "timed.json"
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--search", "greedy",
                           "--quiet", "--report", str(report_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(report_path, encoding="utf-8") as f:
        measured = json.load(f)["measured"]
    if not measured["timed"]:
        pytest.skip(measured["note"])
    # Without VNNI the priced candidate mixes the types (int8 where a
    # product's activations are non-negative: the second convolution's,
    # after a Relu); the candidates with every weight in one type are timed
    # beside it, each unless its graph is the priced one's.
    mixed = "quantized weights in uint8, int8 where a product's activations are non-negative"
    candidates = {f"quantized weights in {n}" for n in names} | {mixed}
    assert measured["candidate"] in candidates, measured
    others = measured["other_candidates"]
    assert 1 <= len(others) <= 2, measured
    assert all(o.split(":")[0] in candidates - {measured["candidate"]} for o in others), measured
    if measured["faster"]:
        chosen = set(names.values()) if measured["candidate"] == mixed else \
            {names[measured["candidate"].rsplit(" ", 1)[1]]}
        assert dequantized_weight_types(out) == chosen, measured


def biased_products(path):
    """x [1, 16, 32] -> MatMul (32x32) -> Add (a bias) -> Relu -> MatMul
    (32x32) -> Add (a bias): a transformer's dense layers."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)
             for name, shape in (("w1", (32, 32)), ("b1", (32,)), ("w2", (32, 32)), ("b2", (32,)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    save_model(path, nodes, inits, [1, 16, 32], [1, 16, 32])


def save_model(path, nodes, inits, x_shape, y_shape):
    """A float model of one input x and one output y at opset 17."""
    graph = helper.make_graph(
        nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


def DenseInputs():  # noqa: N802 (the dense models' input, x [1, 16, 32])
    return SeededInputs((1, 16, 32))


@needs_cli
@pytest.mark.parametrize("weights", ["int8", "uint8", "mixed"])
def test_a_bias_added_to_a_product_is_quantized_as_an_activation(tmp_path, weights):
    """quantize_static's defaults quantize a product's bias, which an Add
    reads, as an int8 weight. onnxruntime's QLinearAdd reads both inputs in
    the activations' type (uint8 on x86), so whatever type the products'
    weights take (--integer-weights: int8 where the CPU has VNNI; mixed
    without it, int8 only where a product's activations are non-negative), the bias
    comes out in uint8 and both Adds run in the integer kernels."""
    floats, quantized, out = tmp_path / "f.onnx", tmp_path / "q.onnx", tmp_path / "o.onnx"
    biased_products(floats)
    quantize_static(str(floats), str(quantized), DenseInputs(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    done = subprocess.run([CLI, "optimize", str(quantized), "-o", str(out), "--search", "greedy",
                           "--no-measure", "--quiet", "--integer-weights", weights],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    inits = {t.name: t for t in written.graph.initializer}
    readers = {}
    for n in written.graph.node:
        for name in n.input:
            readers.setdefault(name, []).append(n.op_type)
    dequantized = {n.output[0]: inits[n.input[0]] for n in written.graph.node
                   if n.op_type == "DequantizeLinear" and n.input[0] in inits}
    of_products = {t.data_type for name, t in dequantized.items() if readers[name] == ["MatMul"]}
    of_adds = {t.data_type for name, t in dequantized.items() if readers[name] == ["Add"]}
    if weights == "mixed":
        # uint8 weights, int8 where the product's activations are mostly
        # non-negative: the second product's, after the Relu (a uint8 zero
        # point below 64), not the first's (x is signed).
        producers = {o: n for n in written.graph.node for o in n.output}
        expected = {}
        for n in written.graph.node:
            if n.op_type != "MatMul":
                continue
            zero = numpy_helper.to_array(inits[producers[n.input[0]].input[2]])
            expected[n.input[1]] = TensorProto.INT8 if zero < 64 else TensorProto.UINT8
        assert {name: dequantized[name].data_type for name in expected} == expected
        assert set(expected.values()) == {TensorProto.INT8, TensorProto.UINT8}, expected
    else:
        assert of_products == {TensorProto.INT8 if weights == "int8" else TensorProto.UINT8}
    assert of_adds == {TensorProto.UINT8}, of_adds
    after = loaded_ops(out, tmp_path)
    assert after.count("QLinearAdd") == 2 and after.count("QLinearMatMul") == 2, after
    assert "Add" not in after and "MatMul" not in after, after
    x = np.random.default_rng(9).standard_normal((1, 16, 32)).astype(np.float32)
    np.testing.assert_allclose(run(out, x, optimized=False), run(quantized, x, optimized=False),
                               rtol=1e-5, atol=1e-5)



def two_biased_convs(path, second_bias):
    """x -> int8 QuantizeLinear/DequantizeLinear -> two 3x3 Convs of it,
    each with an int8 weight and a bias, each output quantized to int8,
    summed (quantize_static's spelling). The first bias is int32 at the
    input's scale times the weight's; the second (`second_bias`) is read
    through an Identity, as the TorchScript exporter shares a bias between
    convolutions of other scales: `scale`, int32 at 1.5 times the product;
    `near`, int32 values of up to 1e6 at 0.5 times a product of 1e-6 (as
    MobileNetV3's shared squeeze-excitation biases, 0.88 times a product of
    2e-6), which onnxruntime fuses reading the bias at the product's scale,
    10 quantization steps off; `added`, as `scale` and also added to the
    output, so that a Conv is not its only reader; `float`, a float bias
    (one the quantizer did not find as an initializer)."""
    rng = np.random.default_rng(11)
    xs = 0.02
    ws, factor, bias = (5e-5, 0.5, 1_000_000) if second_bias == "near" else (0.004, 1.5, 500)
    inits = [numpy_helper.from_array(np.float32(xs), "xs"), numpy_helper.from_array(np.int8(0), "z8"),
             numpy_helper.from_array(np.float32(0.05), "ys"), numpy_helper.from_array(np.int32(0), "z32"),
             numpy_helper.from_array(np.float32(ws), "ws")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z8"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "z8"], ["xd"])]
    for k in (0, 1):
        inits += [numpy_helper.from_array(rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8), f"w{k}"),
                  numpy_helper.from_array(rng.integers(-bias, bias, 16).astype(np.int32), f"b{k}"),
                  numpy_helper.from_array(np.float32(xs * ws * (factor if k else 1.0)), f"bs{k}")]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{k}", "ws", "z8"], [f"wd{k}"]))
        if k == 1 and second_bias == "float":
            inits.append(numpy_helper.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "bf"))
            nodes.append(helper.make_node("Identity", ["bf"], [f"bd{k}"]))
        elif k == 1:
            nodes += [helper.make_node("DequantizeLinear", [f"b{k}", f"bs{k}", "z32"], [f"bq{k}"]),
                      helper.make_node("Identity", [f"bq{k}"], [f"bd{k}"])]
        else:
            nodes.append(helper.make_node("DequantizeLinear", [f"b{k}", f"bs{k}", "z32"], [f"bd{k}"]))
        nodes += [helper.make_node("Conv", ["xd", f"wd{k}", f"bd{k}"], [f"c{k}"], pads=[1, 1, 1, 1]),
                  helper.make_node("QuantizeLinear", [f"c{k}", "ys", "z8"], [f"cq{k}"]),
                  helper.make_node("DequantizeLinear", [f"cq{k}", "ys", "z8"], [f"cd{k}"])]
    if second_bias == "added":
        inits.append(numpy_helper.from_array(np.array([1, 16, 1, 1], np.int64), "column"))
        nodes += [helper.make_node("Add", ["cd0", "cd1"], ["sum"]),
                  helper.make_node("Reshape", ["bq1", "column"], ["bias_column"]),
                  helper.make_node("Add", ["sum", "bias_column"], ["y"])]
    else:
        nodes.append(helper.make_node("Add", ["cd0", "cd1"], ["y"]))
    save_model(path, nodes, inits, [1, 8, 16, 16], [1, 16, 16, 16])


@needs_cli
@pytest.mark.parametrize("second_bias", ["scale", "near", "added", "float"])
def test_a_bias_at_another_scale_is_read_in_float_so_that_its_convolution_fuses(tmp_path, second_bias):
    """onnxruntime fuses a quantized Conv with a dequantized int32 bias into
    QLinearConv only where the bias's scale is within 1e-6 plus 1% of the
    input's times the weight's, and then reads the bias at the product's
    scale (`near`); it fuses one with a float bias, which it quantizes at
    the product's scale when it loads the model. saturn moves the groups to
    uint8 and reads a bias off the product's scale in float (the written
    model holds it as a float initializer, the values its
    DequantizeLinear gives), so that both convolutions run as QLinearConv
    with the bias the model gives: within two quantization steps (one per
    summand) of the written model run as ONNX defines it. Where a Conv is
    not such a bias's only reader (`added`), the bias stays and its
    convolution runs in float: its weight is written for onnxruntime to
    fold at load (onnx/import_at_load.cc), one DequantizeLinear of a weight
    fewer per run. The outputs as ONNX defines them are the input's, to the
    bit."""
    quantized, out = tmp_path / "q.onnx", tmp_path / "o.onnx"
    two_biased_convs(quantized, second_bias)
    optimize(quantized, out, tmp_path / "r.json", cost=None)
    after = loaded_ops(out, tmp_path)
    fused = 1 if second_bias == "added" else 2
    assert after.count("QLinearConv") == fused and after.count("Conv") == 2 - fused, after
    written = onnx.load(str(out))
    inits = {t.name: t for t in written.graph.initializer}

    def readers_of(dims, dtype):
        return sorted(n.op_type for n in written.graph.node if n.input and n.input[0] in inits and
                      inits[n.input[0]].data_type == dtype and list(inits[n.input[0]].dims) == dims)
    weights = readers_of([16, 8, 3, 3], TensorProto.INT8) + readers_of([16, 8, 3, 3], TensorProto.UINT8)
    assert sorted(weights) == (["Cast", "DequantizeLinear"] if second_bias == "added"
                               else ["DequantizeLinear"] * 2), weights
    biases = readers_of([16], TensorProto.INT32)
    assert biases == ["DequantizeLinear"] * (2 if second_bias == "added" else 1), biases
    x = np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype(np.float32)
    literal = run(out, x, optimized=False)
    np.testing.assert_array_equal(literal, run(quantized, x, optimized=False))
    assert np.abs(run(out, x) - literal).max() <= 2 * 0.05 + 1e-6


@needs_cli
def test_calibrate_times_the_quantized_products_in_both_weight_types(tmp_path):
    """`saturn calibrate` on a quantized model times its products (their
    distinct shapes) as QLinearMatMul with uint8 and with int8 weights, and
    its table records what a uint8 weight takes beyond an int8 one per
    multiply-add, which the measured cost then prices a uint8 weight by;
    the table is a cache: a second run times them no more."""
    floats, quantized, table = tmp_path / "f.onnx", tmp_path / "q.onnx", tmp_path / "t.json"
    biased_products(floats)
    quantize_static(str(floats), str(quantized), DenseInputs(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)

    def calibrate():
        done = subprocess.run([CLI, "calibrate", str(quantized), "-o", str(table), "--explore",
                               "0", "--runs", "3", "--passes", "1"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    first = calibrate()
    assert "quantized weights: a uint8 weight's kernel takes" in first, first
    assert "(one product)" in first, first
    with open(table) as f:
        figure = json.load(f)["integer_weights"]
    assert figure["unsigned_us_per_mac"] >= 0, figure
    # Both products multiply [16, 32] by [32, 32].
    assert [p["shape"] for p in figure["products"]] == [[16, 32, 32]], figure
    assert all(p["uint8_us"] > 0 and p["int8_us"] > 0 for p in figure["products"]), figure
    second = calibrate()
    assert "quantized weights" not in second, second
    with open(table) as f:
        assert json.load(f)["integer_weights"] == figure


def embedding_and_projection(path):
    """GPT-2's spelling after quantize_static: ids -> Gather of a uint8 table
    -> Add x -> a uint8 QuantizeLinear/DequantizeLinear pair -> Gemm with an
    int8 weight and an int8 bias (a bias the quantizer could not make int32,
    as GPT-2's shared one) -> y. onnxruntime dequantizes the whole table on
    every run (no QuantizeLinear alone reads the Gather) and runs the Gemm in
    float (its QGemm needs an int32 bias)."""
    rng = np.random.default_rng(7)

    def init(name, values, dtype):
        return numpy_helper.from_array(np.array(values, dtype), name)
    inits = [init("table", rng.integers(0, 256, (50, 16)), np.uint8), init("ts", 0.02, np.float32),
             init("tz", 128, np.uint8), init("as", 0.05, np.float32), init("az", 128, np.uint8),
             init("w", rng.integers(-127, 128, (16, 8)), np.int8), init("ws", 0.01, np.float32),
             init("wz", 0, np.int8), init("b", rng.integers(-127, 128, 8), np.int8),
             init("bs", 0.001, np.float32), init("bz", 0, np.int8)]
    nodes = [helper.make_node("DequantizeLinear", ["table", "ts", "tz"], ["t"]),
             helper.make_node("Gather", ["t", "ids"], ["e"]),
             helper.make_node("Add", ["e", "x"], ["h"]),
             helper.make_node("QuantizeLinear", ["h", "as", "az"], ["hq"]),
             helper.make_node("DequantizeLinear", ["hq", "as", "az"], ["hd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"]),
             helper.make_node("Gemm", ["hd", "wd", "bd"], ["y"])]
    graph = helper.make_graph(
        nodes, "projection", [helper.make_tensor_value_info("ids", TensorProto.INT64, [4]),
                              helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


@needs_cli
def test_a_table_and_a_product_onnxruntime_would_dequantize_stay_integer(tmp_path):
    """saturn gathers the table's integers first (dequantize-gather) and
    writes the Gemm as its MatMul less the negated bias
    (quantized-bias-as-subtraction), which onnxruntime runs as
    MatMulIntegerToFloat: after loading, no float Gemm and no
    DequantizeLinear of the whole table; the same outputs (onnxruntime
    without its graph optimizations; a Gemm may add its bias first)."""
    quantized, out = tmp_path / "q.onnx", tmp_path / "o.onnx"
    embedding_and_projection(quantized)

    def dequantized_shapes(path):
        model = onnx.load(str(path))
        inits = {t.name: list(t.dims) for t in model.graph.initializer}
        return [inits.get(n.input[0]) for n in model.graph.node if n.op_type == "DequantizeLinear"]
    before = loaded_ops(quantized, tmp_path)
    assert "Gemm" in before and "MatMulIntegerToFloat" not in before, before
    assert [50, 16] in dequantized_shapes(tmp_path / "loaded.onnx")
    report = optimize(quantized, out, tmp_path / "r.json", cost=None)
    assert report["decision"]["taken"], report["decision"]
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    after = loaded_ops(out, tmp_path)
    assert "Gemm" not in after and "MatMulIntegerToFloat" in after, after
    assert [50, 16] not in dequantized_shapes(tmp_path / "loaded.onnx")
    rng = np.random.default_rng(9)
    feeds = {"ids": rng.integers(0, 50, 4).astype(np.int64),
             "x": rng.standard_normal((4, 16)).astype(np.float32)}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL

    def outputs(path):
        session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return session.run(None, feeds)[0]
    np.testing.assert_allclose(outputs(out), outputs(quantized), rtol=1e-6, atol=1e-6)
