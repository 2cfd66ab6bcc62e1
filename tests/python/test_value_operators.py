"""The value operators that move or make values, and the rounding unary
operators, as IR operators: Ceil, Floor, Round, Sign, Min, Max, CumSum, TopK, Trilu,
GatherElements, GatherND, ScatterND, ScatterElements, Resize, Tile, Range,
ConstantOfShape and Expand by a shape computed at run time, and the integer
reductions. A model of each is read with no opaque
operator; saturn's interpreter computes what onnxruntime computes on random
inputs (negative indices included); the model saturn writes holds the
operator again and gives onnxruntime's outputs; and where the size depends
on values (a Range to the sequence length, a mask expanded to it), the
written model gives them at sizes other than the one saturn read it at.
Run by CTest (python_tests, the venv's python, SATURN_CLI set, the module
on PYTHONPATH).
"""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import saturn
from optimizing import optimize

CLI = os.environ.get("SATURN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="SATURN_CLI unset")
NP = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64, TensorProto.INT32: np.int32,
      TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.BOOL: np.bool_}


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def save(path, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "values", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def value(name, proto, dims):
    return helper.make_tensor_value_info(name, proto, dims)


def random_feeds(path, seed, sizes=None):
    """Random values for every graph input (symbolic axes at `sizes`, else
    1); integer inputs named 'idx*' hold indices in [-3, 3), those named
    'perm*' a permutation of [-3, 3) along their first axis (a scatter
    without a reduction writes each place once)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in onnx.load(str(path)).graph.input:
        t = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (sizes or {}).get(d.dim_param, 1)
                for d in t.shape.dim]
        dtype = NP[t.elem_type]
        if i.name.startswith("perm"):
            picks = np.argsort(rng.random([6] + dims[1:]), axis=0)[:dims[0]] - 3
            feeds[i.name] = picks.astype(dtype)
        elif i.name.startswith("idx"):
            feeds[i.name] = rng.integers(-3, 3, size=dims).astype(dtype)
        elif np.issubdtype(dtype, np.integer):
            feeds[i.name] = rng.integers(-50, 50, size=dims).astype(dtype)
        else:  # halves too, where Round's ties to even show
            feeds[i.name] = (np.round(rng.uniform(-4, 4, size=dims) * 2) / 2 +
                             rng.choice([0, 0.3], size=dims)).astype(dtype)
    return feeds


def ort_outputs(path, feeds):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def same(got, want, what, tol=1e-6):
    """Integers and what only moves values exactly; a float sum to its
    rounding (the order of its terms is the kernel's)."""
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_against_onnxruntime(tmp_path, path, op_types, sizes=(), tol=1e-6):
    model = saturn.load(str(path))
    assert "Opaque" not in model.op_counts, model.op_counts
    for op in op_types:
        assert op in model.op_counts, (op, model.op_counts)
    for seed in range(3):
        feeds = random_feeds(path, seed)
        want, got = ort_outputs(path, feeds), model.run(feeds)
        for name, v in want.items():
            assert got[name].dtype == v.dtype, name
            same(got[name], v, f"{name}, seed {seed}", tol)
    if not CLI:
        return
    out = tmp_path / "written.onnx"
    done = subprocess.run([CLI, "optimize", str(path), "-o", str(out), "--no-measure", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    written_ops = {n.op_type for n in written.graph.node}
    for op in op_types:
        assert op in written_ops, (op, written_ops)
    assert "Opaque" not in saturn.load(str(out)).op_counts  # read back as IR operators
    for at in [None, *sizes]:
        feeds = random_feeds(path, 7, at)
        want, got = ort_outputs(path, feeds), ort_outputs(out, feeds)
        for name, v in want.items():
            same(got[name], v, f"{name} at {at}")


def test_rounding_and_sign(tmp_path):
    f = TensorProto.FLOAT
    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ("Ceil", "Floor", "Round", "Sign")]
    nodes.append(helper.make_node("Sign", ["n"], ["sign_n"]))
    path = save(tmp_path / "m.onnx", nodes, [value("x", f, [4, 6]), value("n", TensorProto.INT32, [5])],
                [value(o, f, [4, 6]) for o in ("ceil", "floor", "round", "sign")] +
                [value("sign_n", TensorProto.INT32, [5])])
    check_against_onnxruntime(tmp_path, path, ["Ceil", "Floor", "Round", "Sign"])


def test_min_max_cumsum_and_tile(tmp_path):
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("Min", ["x", "y"], ["least"]),
             helper.make_node("Max", ["a", "b"], ["most"]),
             helper.make_node("CumSum", ["x", "axis1"], ["sum1"]),
             helper.make_node("CumSum", ["x", "axis0"], ["sum0"], exclusive=1, reverse=1),
             helper.make_node("CumSum", ["a", "axis_last"], ["isum"], exclusive=1),
             helper.make_node("Tile", ["a", "repeats"], ["tiled"])]
    path = save(tmp_path / "m.onnx", nodes,
                [value("x", f, [3, 5]), value("y", f, [5]), value("a", i64, [2, 4]), value("b", i64, [2, 1])],
                [value("least", f, [3, 5]), value("most", i64, [2, 4]), value("sum1", f, [3, 5]),
                 value("sum0", f, [3, 5]), value("isum", i64, [2, 4]), value("tiled", i64, [6, 8])],
                [helper.make_tensor("axis1", i64, [], [1]), helper.make_tensor("axis0", i64, [], [0]),
                 helper.make_tensor("axis_last", TensorProto.INT32, [], [-1]), ints("repeats", [3, 2])])
    check_against_onnxruntime(tmp_path, path, ["Min", "Max", "CumSum", "Tile"])


def test_gather_elements_and_gather_nd(tmp_path):
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("GatherElements", ["x", "idx_e"], ["rows"], axis=1),
             helper.make_node("GatherElements", ["x", "idx_e0"], ["cols"], axis=0),
             helper.make_node("GatherND", ["x3", "idx_nd"], ["picked"]),
             helper.make_node("GatherND", ["x3", "idx_b"], ["batched"], batch_dims=1)]
    path = save(tmp_path / "m.onnx", nodes,
                [value("x", f, [3, 4]), value("idx_e", i64, [3, 2]), value("idx_e0", i64, [2, 4]),
                 value("x3", f, [3, 4, 5]), value("idx_nd", i64, [2, 2]), value("idx_b", i64, [3, 2, 1])],
                [value("rows", f, [3, 2]), value("cols", f, [2, 4]), value("picked", f, [2, 5]),
                 value("batched", f, [3, 2, 5])])
    check_against_onnxruntime(tmp_path, path, ["GatherElements", "GatherND"])


def test_scatter_nd_and_scatter_elements(tmp_path):
    """Every reduction at opset 18, on floats and on integers (which wrap):
    ScatterND of rows and of single elements, ScatterElements along each
    axis; indices negative and positive."""
    f, i64, i8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT8
    nodes = [helper.make_node("ScatterND", ["x", "perm_rows", "rows"], ["set_rows"]),
             helper.make_node("ScatterND", ["x", "idx_points", "points"], ["added"], reduction="add"),
             helper.make_node("ScatterND", ["n", "idx_n", "n_updates"], ["n_mul"], reduction="mul"),
             helper.make_node("ScatterElements", ["x", "perm_e", "e_updates"], ["set_e"]),
             helper.make_node("ScatterElements", ["x", "idx_e1", "e1_updates"], ["most"], axis=1,
                              reduction="max"),
             helper.make_node("ScatterElements", ["n", "idx_ne", "ne_updates"], ["least"], axis=-1,
                              reduction="min"),
             helper.make_node("ScatterElements", ["n", "idx_ne", "ne_updates"], ["n_add"], axis=1,
                              reduction="add")]
    path = save(tmp_path / "m.onnx", nodes,
                [value("x", f, [6, 4]), value("perm_rows", i64, [3, 1]), value("rows", f, [3, 4]),
                 value("idx_points", i64, [5, 2]), value("points", f, [5]),
                 value("n", i8, [6, 3]), value("idx_n", i64, [4, 1]), value("n_updates", i8, [4, 3]),
                 value("perm_e", i64, [3, 4]), value("e_updates", f, [3, 4]),
                 value("idx_e1", i64, [6, 2]), value("e1_updates", f, [6, 2]),
                 value("idx_ne", TensorProto.INT32, [6, 2]), value("ne_updates", i8, [6, 2])],
                [value(o, t, s) for o, t, s in [("set_rows", f, [6, 4]), ("added", f, [6, 4]),
                                                ("n_mul", i8, [6, 3]), ("set_e", f, [6, 4]),
                                                ("most", f, [6, 4]), ("least", i8, [6, 3]),
                                                ("n_add", i8, [6, 3])]], opset=18)
    check_against_onnxruntime(tmp_path, path, ["ScatterND", "ScatterElements"])


def test_integer_reductions(tmp_path):
    """ReduceSum (axes as an input) and ReduceProd of int64 and int32,
    ReduceMax and ReduceMin of int32 and int8. (An int32 product that
    overflows wraps in saturn's interpreter; onnxruntime's gives INT32_MIN:
    ONNX leaves it undefined, so no input here overflows.)"""
    i64, i32, i8 = TensorProto.INT64, TensorProto.INT32, TensorProto.INT8
    nodes = [helper.make_node("ReduceSum", ["a", "axes1"], ["sum"], keepdims=0),
             helper.make_node("ReduceProd", ["b"], ["prod1"], axes=[1], keepdims=1),
             helper.make_node("ReduceProd", ["b"], ["prod"], axes=[0], keepdims=0),
             helper.make_node("ReduceMax", ["b"], ["most"], axes=[-1], keepdims=1),
             helper.make_node("ReduceMin", ["c"], ["least"], keepdims=0)]
    path = save(tmp_path / "m.onnx", nodes,
                [value("a", i64, [3, 7]), value("b", i32, [2, 5]), value("c", i8, [4, 9])],
                [value("sum", i64, [3]), value("prod1", i32, [2, 1]), value("prod", i32, [5]),
                 value("most", i32, [2, 1]), value("least", i8, [])], [ints("axes1", [1])])
    check_against_onnxruntime(tmp_path, path, ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin"])


TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("opset", [11, 13, 18])
def test_resize(tmp_path, mode, opset):
    """Every coordinate transformation, up and down, by scales (2, 0.5,
    1.5 and 0.6 on one axis: floored sizes) and by sizes; nearest with
    each rounding, cubic with another coefficient and exclude_outside;
    nearest on uint8 and int8 too. Opset 11 spells an absent roi or
    scales as an empty tensor, later ones as ''."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    empty = "empty" if opset < 13 else ""
    nodes, outputs, inits = [], [], [helper.make_tensor("empty", f, [0], [])]
    resizes = [("up", [1, 1, 2, 1.5], None), ("down", [1, 1, 0.5, 0.6], None),
               ("sized", None, [1, 2, 7, 3])]
    for t in TRANSFORMS:
        for name, scales, sizes in resizes:
            out = f"{name}_{t}"
            extra = {}
            if mode == "nearest":
                extra["nearest_mode"] = ["round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"][len(nodes) % 4]
            if mode == "cubic" and name == "up":
                extra.update(cubic_coeff_a=-0.5, exclude_outside=1)
            if scales:
                inits.append(helper.make_tensor(f"{out}_scales", f, [4], scales))
                ins = ["x", empty, f"{out}_scales"]
                dims = [int(np.floor(d * s)) for d, s in zip([1, 2, 6, 5], scales)]
            else:
                inits.append(ints(f"{out}_sizes", sizes))
                ins, dims = ["x", empty, empty, f"{out}_sizes"], sizes
            nodes.append(helper.make_node("Resize", ins, [out], mode=mode,
                                          coordinate_transformation_mode=t, **extra))
            outputs.append(value(out, f, dims))
    inputs = [value("x", f, [1, 2, 6, 5])]
    if mode == "nearest":
        for name, t in [("q", TensorProto.UINT8), ("n", TensorProto.INT8)]:
            inputs.append(value(name, t, [1, 3, 4]))
            nodes.append(helper.make_node("Resize", [name, empty, "up3"], [f"{name}_up"]))
            outputs.append(value(f"{name}_up", t, [1, 6, 6]))
        inits.append(helper.make_tensor("up3", f, [3], [1, 2, 1.5]))
    path = save(tmp_path / "m.onnx", nodes, inputs, outputs, inits, opset=opset)
    # onnxruntime weighs in float32, saturn's interpreter in double.
    check_against_onnxruntime(tmp_path, path, ["Resize"], tol=1e-5)


def test_resize_to_a_computed_size(tmp_path):
    """A feature map resized to another input's spatial size (as
    segmentation heads upsample to the image): written once, it gives
    onnxruntime's outputs at sizes other than the one saturn read it at."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("Shape", ["image"], ["image_shape"]),
             helper.make_node("Slice", ["image_shape", "two", "four"], ["hw"]),
             helper.make_node("Shape", ["x"], ["x_shape"]),
             helper.make_node("Slice", ["x_shape", "zero", "two"], ["nc"]),
             helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")]
    path = save(tmp_path / "m.onnx", nodes,
                [value("x", f, [1, 3, "h", "w"]), value("image", f, [1, 1, "H", "W"])],
                [value("y", f, [1, 3, "H", "W"])],
                [ints("zero", [0]), ints("two", [2]), ints("four", [4])])
    check_against_onnxruntime(tmp_path, path, ["Resize"], tol=1e-5,
                              sizes=[{"h": 4, "w": 6, "H": 16, "W": 24},
                                     {"h": 7, "w": 3, "H": 9, "W": 5}])


def test_an_index_out_of_range_is_an_error(tmp_path):
    i64 = TensorProto.INT64
    path = save(tmp_path / "m.onnx", [helper.make_node("GatherElements", ["x", "i"], ["y"])],
                [value("x", TensorProto.FLOAT, [2, 2]), value("i", i64, [2, 2])],
                [value("y", TensorProto.FLOAT, [2, 2])])
    model = saturn.load(str(path))
    with pytest.raises(Exception, match="out of range"):
        model.run({"x": np.zeros((2, 2), np.float32), "i": np.array([[0, 1], [2, 0]], np.int64)})


def test_sizes_computed_at_run_time(tmp_path):
    """A causal mask and position ids of a symbolic sequence, as decoders'
    exports build them: Range to the length, ConstantOfShape and Tile of
    the computed shape, and an Expand of the mask to [batch, 1, seq, seq]."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             helper.make_node("Range", ["zero", "seq", "one"], ["positions"]),
             helper.make_node("Unsqueeze", ["positions", "axes0"], ["row"]),
             helper.make_node("Unsqueeze", ["positions", "axes1"], ["column"]),
             helper.make_node("LessOrEqual", ["row", "column"], ["causal"]),
             helper.make_node("Cast", ["causal"], ["causal_f"], to=f),
             helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
             helper.make_node("Unsqueeze", ["seq", "axes0"], ["seq1"]),
             helper.make_node("Concat", ["batch1", "ones", "seq1", "seq1"], ["mask_shape"], axis=0),
             helper.make_node("Expand", ["causal_f", "mask_shape"], ["mask"]),
             helper.make_node("Concat", ["batch1", "seq1"], ["ids_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["ids_shape"], ["filled"],
                              value=helper.make_tensor("v", i64, [1], [3])),
             helper.make_node("Concat", ["batch1", "one_repeat"], ["repeats"], axis=0),
             helper.make_node("Tile", ["bias", "repeats"], ["tiled"]),
             helper.make_node("ReduceSum", ["x", "axes2"], ["summed"], keepdims=0),
             helper.make_node("Add", ["summed", "tiled"], ["with_bias"])]
    path = save(tmp_path / "m.onnx", nodes, [value("x", f, ["batch", "seq", 8])],
                [value("mask", f, ["batch", 1, "seq", "seq"]), value("filled", i64, ["batch", "seq"]),
                 value("with_bias", f, ["batch", "seq"])],
                [helper.make_tensor("zero", i64, [], [0]), helper.make_tensor("one", i64, [], [1]),
                 ints("axes0", [0]), ints("axes1", [1]), ints("axes2", [2]), ints("ones", [1]),
                 ints("one_repeat", [1]), helper.make_tensor("bias", f, [1, 1], [0.5])])
    check_against_onnxruntime(tmp_path, path, ["Range", "ConstantOfShape", "Tile", "Expand"],
                              sizes=[{"batch": 2, "seq": 5}, {"batch": 3, "seq": 11}])


def with_bait(nodes, initializers, x, out):
    """`x` by 2 then by 0.5 into `out` before `nodes`: the rewrite a search
    makes, so that the written model comes from the IR, not a copy."""
    nodes = [helper.make_node("Mul", [x, "by_two"], [f"{x}/doubled"]),
             helper.make_node("Mul", [f"{x}/doubled", "by_half"], [out])] + nodes
    return nodes, list(initializers) + [helper.make_tensor("by_two", TensorProto.FLOAT, [], [2.0]),
                                        helper.make_tensor("by_half", TensorProto.FLOAT, [], [0.5])]


def written_from_the_ir(tmp_path, path):
    """The model saturn writes for `path` (with_bait's products merged, so
    written from the IR), checked at full strictness, and its operators."""
    out = tmp_path / "written.onnx"
    optimize(path, out, tmp_path / "report.json")
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    ops = [n.op_type for n in written.graph.node]
    assert ops.count("Mul") == 1, ops
    return out, written, ops


@pytest.mark.parametrize("opset", [11, 17])
def test_top_k_and_trilu(tmp_path, opset):
    """TopK (largest and smallest, along the last and the first axis, ties
    among integers broken by the lower index) and Trilu (upper and lower, k
    positive, negative and absent; on floats, integers and booleans), read as
    IR operators, computed as onnxruntime computes them, and written back
    from the IR."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes, inits = with_bait([
        helper.make_node("TopK", ["xb", "three"], ["top_v", "top_i"]),
        helper.make_node("TopK", ["n", "two"], ["low_v", "low_i"], axis=0, largest=0),
        helper.make_node("TopK", ["n", "two"], ["n_top", "n_top_i"], axis=-1),
    ], [ints("three", [3]), ints("two", [2])], "x", "xb")
    outputs = [value("top_v", f, [4, 3]), value("top_i", i64, [4, 3]), value("low_v", i64, [2, 6]),
               value("low_i", i64, [2, 6]), value("n_top", i64, [5, 2]), value("n_top_i", i64, [5, 2])]
    if opset >= 14:
        nodes += [helper.make_node("Trilu", ["xb"], ["upper"]),
                  helper.make_node("Trilu", ["xb", "minus_one"], ["lower"], upper=0),
                  helper.make_node("Trilu", ["n", "two_s"], ["n_upper"]),
                  helper.make_node("Trilu", ["mask"], ["mask_lower"], upper=0)]
        inits += [helper.make_tensor("minus_one", i64, [], [-1]), helper.make_tensor("two_s", i64, [], [2])]
        outputs += [value("upper", f, [4, 7]), value("lower", f, [4, 7]), value("n_upper", i64, [5, 6]),
                    value("mask_lower", TensorProto.BOOL, [2, 3, 3])]
    inputs = [value("x", f, [4, 7]), value("n", i64, [5, 6])]
    if opset >= 14:
        inputs.append(value("mask", TensorProto.BOOL, [2, 3, 3]))
    path = save(tmp_path / "m.onnx", nodes, inputs, outputs, inits, opset=opset)
    model = saturn.load(str(path))
    assert "Opaque" not in model.op_counts, model.op_counts
    for seed in range(3):
        feeds = random_feeds(path, seed)
        feeds["n"] = feeds["n"] % 4  # many ties
        if opset >= 14:
            feeds["mask"] = np.random.default_rng(seed).random((2, 3, 3)) < 0.5
        want, got = ort_outputs(path, feeds), model.run(feeds)
        for name, v in want.items():
            assert got[name].dtype == v.dtype, name
            same(got[name], v, f"{name}, seed {seed}")
    if not CLI:
        return
    out, _, ops = written_from_the_ir(tmp_path, path)
    assert ops.count("TopK") == 3 and ops.count("Trilu") == (4 if opset >= 14 else 0), ops
    assert "Opaque" not in saturn.load(str(out)).op_counts
    feeds = random_feeds(path, 7)
    feeds["n"] = feeds["n"] % 4
    if opset >= 14:
        feeds["mask"] = np.random.default_rng(7).random((2, 3, 3)) < 0.5
    want, got = ort_outputs(path, feeds), ort_outputs(out, feeds)
    for name, v in want.items():
        same(got[name], v, f"{name} written")


@pytest.mark.parametrize("opset", [16, 20])
def test_grid_sample(tmp_path, opset):
    """GridSample in each mode, padding and alignment (opset 20 spells the
    modes linear and cubic), grid points inside and past [-1, 1], read as an
    IR operator, computed as onnxruntime computes it and written back from
    the IR at the model's opset."""
    f = TensorProto.FLOAT
    names = {"bilinear": "linear", "bicubic": "cubic"} if opset >= 20 else {}
    nodes, outputs = [], []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for corners in (0, 1):
                out = f"{mode}_{padding}_{corners}"
                nodes.append(helper.make_node("GridSample", ["xb", "grid"], [out],
                                              mode=names.get(mode, mode), padding_mode=padding,
                                              align_corners=corners))
                outputs.append(value(out, f, [2, 3, 4, 5]))
    nodes, inits = with_bait(nodes, [], "x", "xb")
    path = save(tmp_path / "m.onnx", nodes, [value("x", f, [2, 3, 6, 7]), value("grid", f, [2, 4, 5, 2])],
                outputs, inits, opset=opset)
    model = saturn.load(str(path))
    assert model.op_counts.get("GridSample") == len(outputs) and "Opaque" not in model.op_counts

    def feeds_for(seed):
        rng = np.random.default_rng(seed)
        return {"x": rng.standard_normal((2, 3, 6, 7)).astype(np.float32),
                "grid": rng.uniform(-1.3, 1.3, (2, 4, 5, 2)).astype(np.float32)}

    for seed in range(3):
        feeds = feeds_for(seed)
        want, got = ort_outputs(path, feeds), model.run(feeds)
        for name, v in want.items():
            same(got[name], v, f"{name}, seed {seed}", tol=1e-5)
    if not CLI:
        return
    out, written, ops = written_from_the_ir(tmp_path, path)
    assert ops.count("GridSample") == len(outputs), ops
    modes = {helper.get_attribute_value(a) for n in written.graph.node if n.op_type == "GridSample"
             for a in n.attribute if a.name == "mode"}
    assert modes == ({b"linear", b"nearest", b"cubic"} if opset >= 20 else
                     {b"bilinear", b"nearest", b"bicubic"})
    feeds = feeds_for(7)
    want, got = ort_outputs(path, feeds), ort_outputs(out, feeds)
    for name, v in want.items():
        same(got[name], v, f"{name} written", tol=1e-5)
