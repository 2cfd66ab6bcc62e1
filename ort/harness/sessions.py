"""The onnxruntime sessions the harness (ort_run.py) runs: opening one as
saturn times models (CPU provider, optimization level "all"), its seeded
inputs, its outputs copied out, and the memory of released ones returned.
Needs numpy and onnxruntime (the project's virtual environment)."""
import ctypes
import gc
import time
import types
import zlib

import numpy as np
import onnxruntime as ort


# The element types the harness feeds, by onnxruntime's type names.
NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_,
}


class HarnessError(Exception):
    pass


def random_tensor(meta, seed, sizes=None):
    """Seeded inputs: uniform in [-1, 1) for floats, 0..9 for integers, a
    coin for booleans; the same for the same seed and input name. A symbolic
    dimension takes its size from `sizes` (by its name, or an unnamed one as
    unk__INPUT_AXIS)."""
    dims = []
    sizes = sizes or {}
    for axis, d in enumerate(meta.shape):
        if not isinstance(d, int) or d < 0:
            named = d if isinstance(d, str) and d in sizes else f"unk__{meta.name}_{axis}"
            if named not in sizes:
                raise HarnessError(f"input '{meta.name}' has a dynamic shape {meta.shape}")
            d = sizes[named]
        dims.append(d)
    dtype = NUMPY_TYPES.get(meta.type)
    if dtype is None:
        raise HarnessError(f"input '{meta.name}' has element type {meta.type}, "
                           "which the harness does not generate")
    rng = np.random.default_rng([seed, zlib.crc32(meta.name.encode())])
    # np.asarray: a scalar input (no dimensions) is fed as a 0-d array.
    if np.issubdtype(dtype, np.floating):
        return np.asarray(2 * rng.random(dims) - 1, dtype=dtype)
    if dtype is np.bool_:
        return np.asarray(rng.random(dims) < 0.5)
    return np.asarray(rng.integers(0, 10, size=dims), dtype=dtype)


def open_session(file, threads, profile_prefix=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    try:
        return ort.InferenceSession(file, so, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises several types for a model it refuses
        raise HarnessError(f"{file}: onnxruntime cannot load it: {err}") from None


def inputs_for(session, seed, sizes=None):
    return {m.name: random_tensor(m, seed, sizes) for m in session.get_inputs()}


def timed_run(session, feeds):
    t0 = time.perf_counter_ns()
    out = session.run(None, feeds)
    return out, (time.perf_counter_ns() - t0) / 1e3


def same_inputs(a, b, symbolic=False):
    """Inputs are fed by name: the same names, types and shapes, in any order
    (with symbolic dimensions, the same ranks: one model may name an axis
    the other leaves unnamed). a, b: two sessions' get_inputs()."""
    def shape(m):
        return f"[rank {len(m.shape)}]" if symbolic else f"{m.shape}"
    def names(inputs):
        return " ".join(sorted(f"{m.name}:{m.type}{shape(m)}" for m in inputs))
    if names(a) != names(b):
        raise HarnessError(f"the models' inputs differ: {names(a)} vs {names(b)}")


def input_metas(session):
    """A session's inputs as plain values (onnxruntime's own keep the session
    alive)."""
    return [types.SimpleNamespace(name=m.name, type=m.type, shape=list(m.shape))
            for m in session.get_inputs()]


def outputs_by_name(session, feeds):
    """The outputs of a run, copied: onnxruntime's arrays keep their session
    (and its memory arena) alive."""
    return {o.name: np.array(v) for o, v in zip(session.get_outputs(), session.run(None, feeds))}


def release_memory():
    """Returns the memory of released sessions to the system (glibc keeps
    freed heap pages otherwise)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
