"""The quantized part of the corpus: corpus models quantized the way users
quantize them for a CPU, optimized by saturn as it comes, and timed in
onnxruntime. Run with the corpus environment's python (build/corpus-venv:
onnxruntime, onnx, numpy; tools/install-deps.sh --corpus makes it):

    build/corpus-venv/bin/python bench/corpus/quantized.py [--models A B ...]
        [--saturn build/tools/saturn] [--work DIR] [--out bench/results/quantized.json]
    build/corpus-venv/bin/python bench/corpus/quantized.py --table   # the table of the last run

For each model (its seeded weights filled in, bench/corpus/run.py) and each
way of quantizing it (--ways, WAYS below; `default` unless told):
  - the input: the model quantized that way, calibrated on 8 seeded inputs;
    `default` is onnxruntime's quantize_static with its defaults (QDQ format,
    int8 activations, int8 weights, per tensor), the model a user brings;
    `pt2e-x86` and `pt2e-xnnpack` quantize the PyTorch module with PT2E
    (pt2e.py, in the environment --pt2e-python names) and bring their own
    float model, the module's export;
  - `u8s8`: the twin to reach, the same quantization spelled as
    onnxruntime's CPU kernels run it in integers: uint8 activations for the
    8-bit ways (the spelling whose groups its x86 kernels fuse), MatMulNBits
    for `int4`; none for quantize_dynamic, whose activations are quantized
    at run time;
  - `saturn`: `saturn optimize` of the input with its defaults (the
    onnxruntime cost, the measured decision) and `--float-model` naming the
    float model, which judges the result's accuracy in the decision.
Timed with one intra-op thread, the models' runs alternating (21 rounds
after a warm-up, medians); accuracy as the relative L2 distance of each
model's output to the float model's, the mean over 5 seeded inputs. The
operators onnxruntime runs after loading are counted (QLinear*, float Conv
and MatMul left between Quantize/Dequantize nodes).
"""
import argparse
import collections
import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import run as corpus  # noqa: E402  (materialize, feeds_for, session, time_rounds)
from results import quantized_table, saturn_speedup  # noqa: E402

# Tuning part first, then held-out families (bench/corpus/manifest.json):
# CNNs, transformer encoders, decoders, vision transformers and an audio model.
DEFAULT_MODELS = ["tv-resnet50", "timm-resnet18", "tv-mobilenet_v3_large", "tv-regnet_y_400mf",
                  "tv-convnext_tiny", "bert-base-uncased", "distilbert-base-uncased",
                  "vit-base-patch16-224", "gpt2", "opt-125m",
                  "tv-efficientnet_b0", "tv-densenet121", "roberta-base", "deit-small-patch16-224",
                  "pythia-160m", "wav2vec2-base"]


class Calibration(CalibrationDataReader):
    def __init__(self, path, entry, count):
        s = corpus.session(path)
        self.batches = iter([corpus.feeds_for(s, entry, 100 + i) for i in range(count)])

    def get_next(self):
        return next(self.batches, None)


def static(activations, quant_format=QuantFormat.QDQ, per_channel=False):
    def quantize(float_path, out, entry, args=None):
        quantize_static(float_path, out, Calibration(float_path, entry, 8), quant_format=quant_format,
                        activation_type=activations, weight_type=QuantType.QInt8,
                        per_channel=per_channel)
    return quantize


def dynamic(float_path, out, entry, args=None):
    quantize_dynamic(float_path, out, weight_type=QuantType.QInt8)


def int4(quant_format):
    """onnxruntime's 4-bit weight quantizer with its defaults (blocks of 128
    along the reduced axis, asymmetric) on the MatMuls, written as opset
    21's blocked DequantizeLinear before each MatMul (QDQ) or as its
    MatMulNBits kernel (QOperator). The model is converted to opset 21 first:
    the quantizer only stamps the opset, which leaves an older model invalid."""
    from onnx import version_converter
    from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                                 MatMulNBitsQuantizer)

    def quantize(float_path, out, entry, args=None):
        model = onnx.load(float_path)
        if next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) < 21:
            model = version_converter.convert_version(model, 21)
        quantizer = MatMulNBitsQuantizer(
            model, algo_config=DefaultWeightOnlyQuantConfig(quant_format=quant_format))
        quantizer.process()
        quantizer.model.save_model_to_file(out, use_external_data_format=False)
    return quantize


def pt2e(quantizer):
    """PyTorch's PT2E flow with torchao's `quantizer` (bench/corpus/pt2e.py,
    run in the generator's environment, --pt2e-python): it quantizes the
    PyTorch module, so it writes the float model beside the input, both
    exported by the dynamo exporter from the same module."""
    def quantize(float_path, out, entry, args=None):
        folder = os.path.dirname(out)
        done = subprocess.run([args.pt2e_python, os.path.join(HERE, "pt2e.py"), "--model", entry["name"],
                               "--quantizer", quantizer, "--out", folder], capture_output=True, text=True)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            raise RuntimeError(f"PT2E ({quantizer}): {lines[-1]}")
    return quantize


class Way:
    """How users quantize a model for a CPU: `quantize(float_path, out,
    entry, args)` writes the input; `twin`, where there is one, the same
    quantization spelled as onnxruntime's CPU kernels run it in integers:
    U8S8 (uint8 activations) for the 8-bit ways, MatMulNBits for `int4`.
    A way `from_module` quantizes the PyTorch module rather than the ONNX
    float model: it writes the float model too, and its twin is quantize_static's U8S8 of that float
    export (its own calibration: a reference for integer speed, not the
    same quantized values)."""
    def __init__(self, quantize, twin=None, from_module=False):
        self.quantize, self.twin, self.from_module = quantize, twin, from_module


WAYS = {
    "default": Way(static(QuantType.QInt8), static(QuantType.QUInt8)),
    "per-channel": Way(static(QuantType.QInt8, per_channel=True),
                       static(QuantType.QUInt8, per_channel=True)),
    "qoperator": Way(static(QuantType.QInt8, QuantFormat.QOperator),
                     static(QuantType.QUInt8, QuantFormat.QOperator)),
    "dynamic": Way(dynamic),
    "int4": Way(int4(QuantFormat.QDQ), int4(QuantFormat.QOperator)),
    "pt2e-x86": Way(pt2e("x86"), static(QuantType.QUInt8), from_module=True),
    "pt2e-xnnpack": Way(pt2e("xnnpack"), static(QuantType.QUInt8), from_module=True),
}


# onnxruntime's integer kernels besides the QLinear* ones (MatMulIntegerToFloat:
# a product of dequantized operands whose output is not quantized).
INTEGER_KERNELS = ("QGemm", "MatMulInteger", "MatMulNBits", "MatMulIntegerToFloat",
                   "DynamicQuantizeMatMul")


def loaded_ops(path, work):
    """The operators onnxruntime runs after loading `path` (one thread)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = os.path.join(work, "loaded.onnx")
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ops = collections.Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node)
    integer = sum(c for op, c in ops.items()
                  if op.startswith("QLinear") or op in INTEGER_KERNELS)
    return {"integer_kernels": integer, "float_conv_matmul": ops["Conv"] + ops["MatMul"] + ops["Gemm"] +
            ops["FusedConv"] + ops["FusedMatMul"], "dequantize": ops["DequantizeLinear"]}


def accuracy(paths, entry):
    """Relative L2 distance of each quantized model's first output to the
    float model's, the mean over 5 inputs."""
    sessions = {k: corpus.session(p) for k, p in paths.items()}
    out = {k: [] for k in paths if k != "float"}
    for seed in range(5):
        feeds = corpus.feeds_for(sessions["float"], entry, 1000 + seed)
        ref = sessions["float"].run(None, feeds)[0].astype(np.float64)
        for k in out:
            y = sessions[k].run(None, feeds)[0].astype(np.float64)
            out[k].append(float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30)))
    return {k: float(np.mean(v)) for k, v in out.items()}


def timing(paths, entry, rounds=21):
    sessions = {k: corpus.session(p) for k, p in paths.items()}
    feeds = corpus.feeds_for(next(iter(sessions.values())), entry, 1)
    times = corpus.time_rounds(sessions, feeds, rounds)
    return {k: float(np.median(v)) / 1e3 for k, v in times.items()}  # ms


@functools.cache
def machine():
    """The CPU a row was measured on and whether onnxruntime's x86 integer
    kernels have VNNI there (without it they sum uint8 x int8 products in
    pairs in 16 bits, which saturate)."""
    name, flags = platform.processor() or platform.machine(), set()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    vector = ("AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-VNNI" if "avx_vnni" in flags
              else "AVX-512, no VNNI" if "avx512f" in flags else "AVX2, no VNNI" if "avx2" in flags
              else None)
    return f"{name} ({vector})" if vector else name


def model_paths(work):
    """The files of a row in its work folder, by column."""
    return {"float": os.path.join(work, "float.onnx"), "default": os.path.join(work, "input.onnx"),
            "u8s8": os.path.join(work, "u8s8.onnx"), "saturn": os.path.join(work, "saturn.onnx")}


def measure(entry, way, args):
    """One row: `entry` quantized `way`, its U8S8 twin and saturn's result,
    timed and checked against the float model. The input is named `default`
    in the row's columns whatever the way."""
    work = os.path.join(args.work, entry["name"], way)
    os.makedirs(work, exist_ok=True)
    how = WAYS[way]
    has_twin = how.twin is not None
    paths = model_paths(work)
    if not has_twin:
        del paths["u8s8"]
    try:
        if not how.from_module:
            corpus.materialize(os.path.join(HERE, "models", entry["name"] + ".onnx"), paths["float"], 0)
        how.quantize(paths["float"], paths["default"], entry, args)
        if has_twin:
            how.twin(paths["float"], paths["u8s8"], entry)
    except Exception as e:  # the quantizer's own failure: no input to optimize
        return {"model": entry["name"], "part": entry["part"], "way": way, "machine": machine(),
                "error": f"the quantizer failed: {type(e).__name__}: {e}"}
    report = os.path.join(work, "saturn_report.json")
    # The float model the input quantizes judges the result's accuracy
    # (--float-model), as a user who quantized it has it.
    cmd = [args.saturn, "optimize", paths["default"], "-o", paths["saturn"], "--report", report,
           "--float-model", paths["float"], "--quiet"]
    for name, size in (entry.get("dims") or {}).items():
        cmd += ["--dim", f"{name}={size}"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    row = {"model": entry["name"], "part": entry["part"], "way": way, "machine": machine(),
           "saturn_seconds": round(time.perf_counter() - start, 1)}
    if done.returncode != 0:
        row["error"] = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return row
    with open(report, encoding="utf-8") as f:
        r = json.load(f)
    row["kept_input"] = not r["decision"]["taken"]
    row["decision"] = r["decision"]["evidence"] if not r["decision"]["taken"] else "taken"
    if (r.get("measured") or {}).get("candidate"):
        row["decision"] += f" ({r['measured']['candidate']})"
    row["opaque_before"] = sum((r.get("opaque_ops_before") or {}).values())
    try:
        row["ms"] = timing(paths, entry)
        row["relative_l2_to_float"] = accuracy(paths, entry)
        row["loaded"] = {k: loaded_ops(paths[k], work) for k in paths if k != "float"}
    except Exception as e:  # onnxruntime refuses one of the models (the input, as it came)
        row["error"] = f"onnxruntime could not run the models: {type(e).__name__}: {str(e).strip()[:300]}"
        return row
    ms = row["ms"]
    row["speedup_over_default"] = ms["default"] / ms["saturn"]
    if has_twin:
        row["saturn_over_u8s8"] = ms["saturn"] / ms["u8s8"]
    return row


def recount(args):
    with open(args.out, encoding="utf-8") as f:
        doc = json.load(f)
    for row in doc["rows"]:
        if "loaded" not in row:
            continue
        work = os.path.join(args.work, row["model"], row.get("way", "default"))
        paths = model_paths(work)
        row["loaded"] = {k: loaded_ops(paths[k], work) for k in row["loaded"]}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    p.add_argument("--ways", nargs="*", default=["default"], choices=sorted(WAYS),
                   help="how each model is quantized (default: quantize_static's defaults)")
    p.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    p.add_argument("--pt2e-python", default=os.path.join(ROOT, "build", "pt2e-venv", "bin", "python"),
                   help="the python of the generator's environment with torchao, for the pt2e-* ways")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "saturn-quantized"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "quantized.json"))
    p.add_argument("--table", action="store_true", help="print the table of the results in --out")
    p.add_argument("--keep-other-rows", action="store_true",
                   help="keep the rows of --out that this run does not measure again (other ways, "
                        "other models, other CPUs)")
    p.add_argument("--recount", action="store_true",
                   help="count again the operators onnxruntime runs for every row of --out, from the "
                        "models its run left in --work (the counting changed, the models did not)")
    args = p.parse_args()
    if args.recount:
        recount(args)
        return
    if args.table:
        with open(args.out, encoding="utf-8") as f:
            print(quantized_table(json.load(f)["rows"]))
        return
    with open(os.path.join(HERE, "manifest.json"), encoding="utf-8") as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    rows = []
    for way in args.ways:
        for name in args.models:
            corpus.log(f"{name} ({way}): quantizing, optimizing, timing")
            rows.append(measure(entries[name], way, args))
            corpus.log(json.dumps(rows[-1]))
    if args.keep_other_rows and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            # A row stands for a model, a way and the CPU it was measured on.
            def key(r):
                return r["model"], r.get("way", "default"), r.get("machine")
            done = {key(r) for r in rows}
            rows = [r for r in json.load(f)["rows"] if key(r) not in done] + rows
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"onnxruntime": ort.__version__, "threads": 1, "rows": rows}, f, indent=1)
    print(quantized_table(rows))
    for way in args.ways:
        speedups = [saturn_speedup(r) for r in rows
                    if r["way"] == way and "speedup_over_default" in r]
        if speedups:
            print(f"geometric mean of saturn over the models quantized {way}: "
                  f"{float(np.exp(np.mean(np.log(speedups)))):.3f}x ({len(speedups)} models)")


if __name__ == "__main__":
    main()
