"""How a candidate's outputs are judged against the input's (the venv's
python; imported by ort_run.py): elementwise within a tolerance, or, for a
quantized input, by their distance to the float model it quantizes
(quantized.py)."""
import numpy as np

import quantized


def compare(a, b, rtol, atol):
    """Largest |a-b| / (atol + rtol*|b|) over the elements (<= 1 means close)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return {"ratio": float("inf"), "max_abs": float("inf"),
                "detail": f"shape or type {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"}
    if a.dtype.kind in "OUS":
        same = bool(np.array_equal(a, b))
        return {"ratio": 0.0 if same else float("inf"), "max_abs": 0.0 if same else float("inf"),
                **({} if same else {"detail": "strings differ"})}
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    if np.any(nan_x != nan_y):
        at = int(np.argmax(nan_x != nan_y))
        return {"ratio": float("inf"), "max_abs": float("inf"), "detail": f"NaN at {at}"}
    keep = ~nan_x & (x != y)  # equal values (and equal infinities) are close
    if not np.any(keep):
        return {"ratio": 0.0, "max_abs": 0.0}
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(x[keep] - y[keep])
        ratio = d / (atol + rtol * np.abs(y[keep]))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    return {"ratio": float(np.max(ratio)), "max_abs": float(np.max(d))}


def json_number(x):
    return x if x == x and abs(x) != float("inf") else None


def compare_outputs(out_a, out_b, opts):
    """Each of a's outputs (by name) compared with b's."""
    outputs, ok = [], True
    for name, value in out_a.items():
        if name not in out_b:
            outputs.append({"name": name, "ok": False, "detail": "missing from the optimized model"})
            ok = False
            continue
        c = compare(np.asarray(out_b[name]), np.asarray(value), opts["rtol"], opts["atol"])
        good = c["ratio"] <= 1
        ok = ok and good
        entry = {"name": name, "ok": good, "max_abs_diff": json_number(c["max_abs"]),
                 "error_ratio": json_number(c["ratio"])}
        if "detail" in c:
            entry["detail"] = c["detail"]
        outputs.append(entry)
    return outputs, ok


def judge(expected, produced, reference, opts):
    """(entries, ok, how): the candidate's outputs `produced` against the
    input's `expected`, each a list of {name: output}, one per input (the
    first input's compared elementwise); where the input is quantized
    (`reference` holds its float reference's outputs on the same inputs)
    elementwise closeness is beside the point (a few quantization steps
    apart is no error, and an output smaller than atol would pass a less
    accurate model), so accuracy over the inputs decides."""
    if reference is None:
        return (*compare_outputs(expected[0], produced[0], opts), "elementwise")
    return (*quantized.as_accurate(expected, produced, reference),
            "distance to the float model" if opts.get("float-model")
            else "distance to the float reference")
