"""saturn: a superoptimizer for tensor computation graphs.

    import onnx, saturn
    optimized, report = saturn.optimize_onnx(onnx.load("model.onnx"), search="mcts")
    result = saturn.optimize("model.onnx")          # a path, a ModelProto or a saturn.Model
    result.save("model.opt.onnx")

The options are `saturn optimize`'s (saturn.OPTIONS; underscores for
dashes). The `onnx` package is needed only to pass or receive an
onnx.ModelProto.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from . import _saturn
from ._saturn import (DEFAULT_ORDER, DEFAULT_PASS_ITERATIONS, OP_NAMES, OPTIONS, Environment,
                      Model, Result, load)

if TYPE_CHECKING:
    import onnx

__version__: str = _saturn.__version__
__all__ = ["DEFAULT_ORDER", "DEFAULT_PASS_ITERATIONS", "OP_NAMES", "OPTIONS", "Environment",
           "Model", "Result", "__version__", "load", "optimize", "optimize_onnx"]

# An installed package carries onnxruntime's harness (the measured cost and
# timing run it); it runs under this interpreter, where onnxruntime is
# installed beside saturn. A build tree's module knows its own.
_HARNESS = Path(__file__).resolve().parent / "ort_harness"
if _HARNESS.is_dir():
    os.environ.setdefault("SATURN_ORT_DIR", str(_HARNESS))
    os.environ.setdefault("SATURN_ORT_PYTHON", sys.executable)

# Protocol buffers refuse to serialize a message of 2 GiB or more.
_MAX_PROTO_BYTES = (1 << 31) - 1

ModelLike = Union[str, "os.PathLike[str]", "onnx.ModelProto", Model]


def _as_model(model: Any, dims: dict[str, int] | None) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, (str, os.PathLike)):
        return load(os.fspath(model), dims or {})
    if type(model).__name__ == "ModelProto" and hasattr(model, "SerializeToString"):
        name = (model.graph.name or "model") + ".onnx"
        return Model.from_onnx_bytes(model.SerializeToString(), name, dims or {})
    raise TypeError(f"saturn.optimize takes a path, an onnx.ModelProto or a saturn.Model, "
                    f"not {type(model).__name__}")


def optimize(model: ModelLike, dims: dict[str, int] | None = None, **options: Any) -> Result:
    """Optimizes a model as `saturn optimize` does, with the same options and
    defaults (NAME=VALUE for --NAME VALUE, underscores for dashes; a flag
    takes True or False, rules a list of files). `model` is a path (ONNX, saturn JSON or a zoo
    model's name), an onnx.ModelProto or a saturn.Model; `dims` sizes
    symbolic dimensions of an ONNX model for shape inference and costing."""
    return _saturn.optimize(_as_model(model, dims), **options)


# The options' help, from the option table (as `saturn optimize --help`).
_OPTIONS_HELP = (_saturn.optimize.__doc__ or "").partition("Options:")[2]
optimize.__doc__ = f"{optimize.__doc__}\n\nOptions:{_OPTIONS_HELP}"


def optimize_onnx(model: "onnx.ModelProto", folder: str | os.PathLike[str] | None = None,
                  dims: dict[str, int] | None = None,
                  **options: Any) -> tuple["onnx.ModelProto", dict[str, Any]]:
    """An onnx.ModelProto in, the optimized onnx.ModelProto and the report
    out (the input itself where saturn keeps it). A model of 2 GiB or more
    goes through `folder` (created if missing; any model may): it is saved
    there with its weights beside it, and the result is written there and
    loaded back. Its external data must be loaded (onnx.load does). The
    options are optimize()'s."""
    import onnx

    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"optimize_onnx takes an onnx.ModelProto, not {type(model).__name__}")
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        raise ValueError("the model's external data is not loaded: onnx.load(path) loads it "
                         "(or pass the path to saturn.optimize)")
    if folder is None and model.ByteSize() > _MAX_PROTO_BYTES:
        raise ValueError("the model is 2 GiB or more, over what one protocol buffer holds: pass "
                         "folder=, where saturn writes it with its weights beside it, and its result")
    if folder is None:
        result = optimize(model, dims, **options)
        if result.kept_input:
            return model, result.report
        return onnx.load_from_string(result.model.to_onnx_bytes()), result.report
    where = Path(folder)
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=where) as scratch:
        source = Path(scratch) / "input.onnx"
        onnx.save(model, str(source), save_as_external_data=True, all_tensors_to_one_file=True,
                  location="input.onnx.data", size_threshold=1024)
        result = optimize(source, dims, **options)
        if result.kept_input:
            return model, result.report
        written = where / "optimized.onnx"
        result.save(str(written))
        return onnx.load(str(written)), result.report
