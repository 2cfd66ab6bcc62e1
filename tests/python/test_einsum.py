"""Einsum read as the canonical operators (ReduceSum, Transpose, Reshape,
MatMul): every equation below is read with no opaque operator, computed by
saturn's interpreter as onnxruntime computes it, written back and run by
onnxruntime with the input's outputs, and, with symbolic sizes, at sizes
other than the ones saturn read it at. The equations are XLNet's relative
attention, attention's scores and context, outer products, sums and pure
transposes. Run by CTest (python_tests, the venv's python, SATURN_CLI set).
"""
import pytest
from onnx import TensorProto, helper

from test_value_operators import check_against_onnxruntime, save, value

F = TensorProto.FLOAT
# equation, the operands' shapes, the output's shape (letters' sizes:
# i 5, j 6, b 2, n 3, d 4, s 2, h 7, k 3)
EQUATIONS = [
    ("bhid,bhjd->bhij", [[2, 3, 5, 4], [2, 3, 6, 4]], [2, 3, 5, 6]),
    ("ibnd,jbnd->bnij", [[5, 2, 3, 4], [6, 2, 3, 4]], [2, 3, 5, 6]),
    ("ibnd,snd->ibns", [[5, 2, 3, 4], [2, 3, 4]], [5, 2, 3, 2]),
    ("ijbs,ibns->bnij", [[5, 6, 2, 2], [5, 2, 3, 2]], [2, 3, 5, 6]),
    ("bnij,jbnd->ibnd", [[2, 3, 5, 6], [6, 2, 3, 4]], [5, 2, 3, 4]),
    ("ibnd,hnd->ibh", [[5, 2, 3, 4], [7, 3, 4]], [5, 2, 7]),
    ("ibh,hnd->ibnd", [[5, 2, 7], [7, 3, 4]], [5, 2, 3, 4]),
    ("i,d->id", [[5], [4]], [5, 4]),
    ("ij,jk->ik", [[5, 6], [6, 3]], [5, 3]),
    ("bik,bk->bi", [[2, 5, 3], [2, 3]], [2, 5]),
    ("ijk,k->ij", [[5, 6, 3], [3]], [5, 6]),
    ("ij,ij->i", [[5, 6], [5, 6]], [5]),
    ("bij,kj->bki", [[2, 5, 6], [3, 6]], [2, 3, 5]),
    ("ij,jk->k", [[5, 6], [6, 3]], [3]),
    ("ijbn->bnij", [[5, 6, 2, 3]], [2, 3, 5, 6]),
    ("ijk->ki", [[5, 6, 3]], [3, 5]),
]


@pytest.mark.parametrize("equation,shapes,out", EQUATIONS, ids=[e[0] for e in EQUATIONS])
def test_einsum_is_read_as_products_and_transposes(tmp_path, equation, shapes, out):
    names = [f"x{k}" for k in range(len(shapes))]
    path = save(tmp_path / "m.onnx", [helper.make_node("Einsum", names, ["y"], equation=equation)],
                [value(n, F, s) for n, s in zip(names, shapes)], [value("y", F, out)], opset=13)
    check_against_onnxruntime(tmp_path, path, [], tol=1e-5)


def test_einsum_at_symbolic_sizes(tmp_path):
    """XLNet's scores, ibnd,jbnd->bnij, with the sequences and the batch
    symbolic: written once, run at other sizes."""
    path = save(tmp_path / "m.onnx",
                [helper.make_node("Einsum", ["q", "k"], ["scores"], equation="ibnd,jbnd->bnij"),
                 helper.make_node("Einsum", ["scores", "v"], ["context"], equation="bnij,jbnd->ibnd")],
                [value("q", F, ["i", "b", 3, 4]), value("k", F, ["j", "b", 3, 4]),
                 value("v", F, ["j", "b", 3, 4])],
                [value("context", F, ["i", "b", 3, 4])], opset=13)
    check_against_onnxruntime(tmp_path, path, [], tol=1e-5,
                              sizes=[{"i": 3, "j": 7, "b": 2}, {"i": 9, "j": 4, "b": 3}])


def test_a_shape_read_from_an_einsum_types_what_follows(tmp_path):
    """XLNet's relative shift reads the scores' length with a Shape and
    indexes them with a Range of it: typed (the Einsum's dimensions are
    found where ONNX's inference of this build gives only its rank), so
    nothing after it stays opaque, at any size."""
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Einsum", ["q", "k"], ["s"], equation="ibnd,jbnd->bnij"),
             helper.make_node("Shape", ["s"], ["shape"]),
             helper.make_node("Gather", ["shape", "three"], ["length"], axis=0),
             helper.make_node("Range", ["zero", "length", "one"], ["positions"]),
             helper.make_node("Gather", ["s", "positions"], ["y"], axis=3)]
    path = save(tmp_path / "m.onnx", nodes,
                [value("q", F, ["seq", "batch", 4, 8]), value("k", F, ["seq", "batch", 4, 8])],
                [value("y", F, ["batch", 4, "seq", "seq"])],
                [helper.make_tensor(n, i64, [], [v]) for n, v in
                 [("three", 3), ("zero", 0), ("one", 1)]], opset=17)
    check_against_onnxruntime(tmp_path, path, ["Range"], tol=1e-5,
                              sizes=[{"seq": 5, "batch": 2}, {"seq": 9, "batch": 1}])
