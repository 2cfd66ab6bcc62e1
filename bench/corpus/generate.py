#!/usr/bin/env python3
"""Generate saturn's model corpus: real-architecture ONNX graphs with their weights stripped.

Run from the repository root with the corpus virtual environment (see README.md for creating it):

    build/corpus-venv/bin/python bench/corpus/generate.py [--only NAME ...]

For every model in SPECS (specs.py holds the models, their configs, wrappers and inputs, and the held-out
families) this script builds the network from a config (no hub access, random weights from
torch.manual_seed(SEED)), exports it to ONNX (TorchScript exporter or dynamo exporter), moves every float32
initializer with more than 64 elements into a graph input whose value range is recorded in the metadata entry
`saturn.seeded_weights`, checks the result (onnx checker, onnxruntime load, one onnxruntime run of the
materialized model with uniform random weights), writes models/NAME.onnx and finally rewrites manifest.json and
README.md. Each model is exported in its own subprocess so that a crash or a failure only loses that model.
"""
from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata as md
from pathlib import Path

from specs import HELD_OUT_FAMILIES, SEED, SPEC_BY_NAME, SPECS

HERE = Path(__file__).resolve().parent
MODELS_DIR = HERE / "models"
MANIFEST = HERE / "manifest.json"
README = HERE / "README.md"
GENERATOR = "build/corpus-venv/bin/python bench/corpus/generate.py"
SEEDED_MIN_ELEMENTS = 64  # float32 initializers with more elements than this become seeded graph inputs

# --------------------------------------------------------------------------------------------------------------
# Export, stripping and checks (run in a worker subprocess, one model each)
# --------------------------------------------------------------------------------------------------------------


def example_inputs(spec, dims, seed=SEED):
    import torch
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in spec.inputs:
        shape = [dims[d] if isinstance(d, str) else d for d in i.shape]
        if i.dtype == "int64":
            out.append(torch.randint(0, i.high, shape, generator=g, dtype=torch.int64))
        elif i.name == "timestep":
            out.append(torch.tensor(500.0))
        else:
            out.append(torch.randn(shape, generator=g, dtype=torch.float32))
    return tuple(out)


def export(spec, model, path):
    import torch
    args = example_inputs(spec, spec.export_dims)
    in_names = [i.name for i in spec.inputs]
    if spec.exporter == "torchscript":
        dyn = {}
        if spec.dynamic:
            for i in spec.inputs:
                axes = {a: d for a, d in enumerate(i.shape) if isinstance(d, str)}
                if axes:
                    dyn[i.name] = axes
        torch.onnx.export(model, args, str(path), dynamo=False, opset_version=spec.opset, input_names=in_names,
                          output_names=spec.outputs, dynamic_axes=dyn or None, do_constant_folding=True)
    else:
        dyn = None
        if spec.dynamic:
            dyn = [{a: torch.export.Dim.AUTO for a, d in enumerate(i.shape) if isinstance(d, str)} or None
                   for i in spec.inputs]
            # a forward(*args) / forward(x, *rest) signature takes the var-positional part as one nested tuple
            params = list(inspect.signature(model.forward).parameters.values())
            nfixed = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            if any(p.kind == p.VAR_POSITIONAL for p in params):
                dyn = dyn[:nfixed] + [tuple(dyn[nfixed:])]
            dyn = tuple(dyn)
        prog = torch.onnx.export(model, args, dynamo=True, opset_version=spec.opset, input_names=in_names,
                                 output_names=spec.outputs, dynamic_shapes=dyn)
        prog.save(str(path), external_data=True)


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.g is not None and a.HasField("g"):
                n += count_nodes(a.g)
            for sg in a.graphs:
                n += count_nodes(sg)
    return n


def rename_dims(model, spec):
    """Give symbolic dims the names of the spec (dynamo calls them s0, s1, ...); report which stayed symbolic."""
    g = model.graph
    mapping = {}
    by_name = {vi.name: vi for vi in g.input}
    for i in spec.inputs:
        vi = by_name.get(i.name)
        if vi is None:
            continue
        for a, want in enumerate(i.shape):
            if not isinstance(want, str):
                continue
            d = vi.type.tensor_type.shape.dim[a]
            if d.HasField("dim_param") and d.dim_param != want and d.dim_param not in mapping:
                mapping[d.dim_param] = want
    if mapping:
        pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if not vi.type.HasField("tensor_type"):
                continue
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param"):
                    d.dim_param = pat.sub(lambda m: mapping[m.group(1)], d.dim_param)
    symbolic = set()
    for vi in g.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                symbolic.add(d.dim_param)
    return symbolic


def seedable(tensor):
    """Whether a TensorProto is float32 with more than SEEDED_MIN_ELEMENTS elements (a weight to strip)."""
    import onnx
    n = 1
    for d in tensor.dims:
        n *= d
    return tensor.data_type == onnx.TensorProto.FLOAT and n > SEEDED_MIN_ELEMENTS


def constants_to_initializers(model):
    from onnx import numpy_helper
    g = model.graph
    keep = []
    moved = 0
    for node in g.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            t = node.attribute[0].t
            if seedable(t):
                arr = numpy_helper.to_array(t)
                g.initializer.append(numpy_helper.from_array(arr, node.output[0]))
                moved += 1
                continue
        keep.append(node)
    if moved:
        del g.node[:]
        g.node.extend(keep)
    return moved


def strip_weights(model):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    g = model.graph
    seeded = {}
    keep = []
    new_inputs = []
    existing_inputs = {i.name for i in g.input}
    for init in g.initializer:
        if seedable(init):
            arr = numpy_helper.to_array(init)
            lo, hi = float(arr.min()), float(arr.max())
            if not np.isfinite(lo) or not np.isfinite(hi):
                raise ValueError(f"non-finite initializer {init.name}")
            if hi <= lo:
                hi = lo + 1e-6
            seeded[init.name] = {"low": lo, "high": hi}
            if init.name not in existing_inputs:
                new_inputs.append(helper.make_tensor_value_info(init.name, onnx.TensorProto.FLOAT, list(init.dims)))
        else:
            keep.append(init)
    del g.initializer[:]
    g.initializer.extend(keep)
    g.input.extend(new_inputs)
    for p in list(model.metadata_props):
        if p.key == "saturn.seeded_weights":
            model.metadata_props.remove(p)
    entry = model.metadata_props.add()
    entry.key = "saturn.seeded_weights"
    entry.value = json.dumps(seeded, sort_keys=True)
    return seeded


def run_materialized(model, spec, seeded, workdir):
    """Fill seeded inputs with uniform random values as initializers, run once in onnxruntime at spec.dims."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    rng = np.random.default_rng(SEED)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep = [i for i in g.input if i.name not in seeded]
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in g.input if i.name in seeded}
    del g.input[:]
    g.input.extend(keep)
    for name, r in seeded.items():
        arr = (r["low"] + (r["high"] - r["low"]) * rng.random(shapes[name], dtype=np.float32)).astype(np.float32)
        g.initializer.append(numpy_helper.from_array(arr, name))
        del arr
    p = Path(workdir) / "materialized.onnx"
    onnx.save(m, str(p), save_as_external_data=True, all_tensors_to_one_file=True, location="materialized.data",
              size_threshold=1024)
    del m
    gc.collect()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in spec.inputs:
        shape = [spec.dims[d] if isinstance(d, str) else d for d in i.shape]
        if i.dtype == "int64":
            feeds[i.name] = rng.integers(0, i.high, shape, dtype=np.int64)
        elif i.name == "timestep":
            feeds[i.name] = np.array(500.0, dtype=np.float32)
        else:
            feeds[i.name] = rng.standard_normal(shape, dtype=np.float32)
    t0 = time.time()
    outs = sess.run(None, feeds)
    dt = time.time() - t0
    finite = all(bool(np.isfinite(o).all()) for o in outs)
    shapes = [list(o.shape) for o in outs]
    return finite, dt, shapes


def io_desc(model, seeded):
    import onnx
    out = []
    for vi in model.graph.input:
        if vi.name in seeded:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in tt.shape.dim]
        out.append({"name": vi.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name,
                    "shape": shape})
    return out


def worker(name, result_path):
    import numpy as np  # noqa: F401
    import onnx
    import onnxruntime as ort
    import torch
    torch.set_num_threads(1)
    spec = SPEC_BY_NAME[name]
    res = {"name": name, "ok": False}
    t_start = time.time()
    try:
        with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as tmp:
            t0 = time.time()
            if spec.fetch is not None:  # exported by someone else, read as they ship it
                m, cls, info = spec.fetch(tmp)
            else:
                model, cls, info = spec.build()
                model.eval()
                for p in model.parameters():
                    p.requires_grad_(False)
                raw = Path(tmp) / "raw.onnx"
                with torch.no_grad():
                    export(spec, model, raw)
                del model
                gc.collect()
                m = onnx.load(str(raw), load_external_data=True)
            export_s = time.time() - t0
            moved = constants_to_initializers(m)
            symbolic = rename_dims(m, spec)
            seeded = strip_weights(m)
            for f in Path(tmp).iterdir():
                f.unlink()
            MODELS_DIR.mkdir(parents=True, exist_ok=True)
            dst = MODELS_DIR / f"{name}.onnx"
            onnx.save(m, str(dst))
            check = True
            try:
                onnx.checker.check_model(onnx.load(str(dst)), full_check=True)
            except Exception as e:  # record it, fall back to the plain check
                check = f"full_check failed: {str(e).splitlines()[0][:300]}"
                onnx.checker.check_model(onnx.load(str(dst)))
            ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
            finite, run_s, out_shapes = run_materialized(m, spec, seeded, tmp)
            dims = {d: v for d, v in spec.dims.items() if d in symbolic}
            ins = io_desc(m, seeded)
            int_high = {i.name: i.high for i in spec.inputs if i.dtype == "int64"}
            res.update(
                ok=True, cls=cls, config=info, opset=max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
                inputs=ins, dims=dims, int_input_high=int_high, ops=count_nodes(m.graph),
                file_bytes=dst.stat().st_size, seeded_weights=len(seeded),
                seeded_elements=int(sum(np.prod([d.dim_value for d in i.type.tensor_type.shape.dim])
                                        for i in m.graph.input if i.name in seeded)),
                constants_moved=moved, full_check=check, finite=finite, export_seconds=round(export_s, 1),
                ort_run_seconds=round(run_s, 3), output_shapes=out_shapes, outputs=[o.name for o in m.graph.output])
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:400] if str(e).strip() else ''}"
        traceback.print_exc()
    res["seconds"] = round(time.time() - t_start, 1)
    Path(result_path).write_text(json.dumps(res))


# --------------------------------------------------------------------------------------------------------------
# Driver: manifest and README
# --------------------------------------------------------------------------------------------------------------


def versions():
    v = {"python": platform.python_version()}
    for p in ["torch", "torchvision", "transformers", "timm", "diffusers", "onnx", "onnxscript", "onnxruntime",
              "numpy", "accelerate"]:
        try:
            v[p] = md.version(p)
        except md.PackageNotFoundError:
            v[p] = None
    return v


def entry(spec, res):
    return {
        "name": spec.name, "family": spec.family, "source": spec.source, "class": res["cls"],
        "config": res["config"], "real_config": spec.real_config, "reduced": spec.reduced,
        "exporter": spec.exporter, "opset": res["opset"], "inputs": res["inputs"], "outputs": res["outputs"],
        "dims": res["dims"], "int_input_high": res["int_input_high"],
        "part": "held-out" if spec.family in HELD_OUT_FAMILIES else "tuning",
        "ops": res["ops"], "file_bytes": res["file_bytes"], "seeded_weights": res["seeded_weights"],
        "seeded_elements": res["seeded_elements"], "finite": res["finite"], "full_check": res["full_check"],
        "export_seconds": res["export_seconds"], "ort_run_seconds": res["ort_run_seconds"],
        "output_shapes": res["output_shapes"],
    }


def write_readme(man):
    ms = man["models"]
    fams = sorted({m["family"] for m in ms})
    tuning = sorted({m["family"] for m in ms if m["part"] == "tuning"})
    held = sorted({m["family"] for m in ms if m["part"] == "held-out"})
    n_dyn = sum(m["exporter"] == "dynamo" for m in ms)
    total = sum(m["file_bytes"] for m in ms)
    L = []
    L.append("# saturn model corpus\n")
    L.append("Real-architecture ONNX graphs for developing and benchmarking saturn: decoders (LLaMA-family with "
             "grouped-query attention, a KV-cache decode step, GPT-2, GPT-NeoX, OPT, Phi), encoders, "
             "encoder-decoders, audio, vision transformers, detection/segmentation, CNNs and a diffusion UNet. "
             "Every model is built from a configuration (no downloaded checkpoints) and exported with PyTorch's "
             "TorchScript or dynamo ONNX exporter, or, for the exports of other tools (source `pypi`: paddle2onnx's "
             "PaddleOCR models), read from the ONNX file a PyPI package ships at a pinned version; each is stripped "
             "of its weights: each float32 initializer with more "
             f"than {SEEDED_MIN_ELEMENTS} elements became a graph input of the same name, type and shape, and the "
             "metadata entry `saturn.seeded_weights` maps its name to `{\"low\": L, \"high\": H}`, the range of the "
             "original tensor. A runner materializes those inputs with uniform random values in [L, H). "
             "`manifest.json` describes every model: class, key config numbers, what was reduced and why, exporter, "
             "opset, inputs with symbolic dims, `dims` (sizes to give each symbolic dimension), `int_input_high` "
             "(exclusive upper bound of valid integer input values; 0..9 is always valid), node count, size, "
             "whether the materialized model's outputs were finite in onnxruntime, and the tuning/held-out part.\n")
    L.append("Conventions: symbolic batch/sequence dims are named `batch`, `seq`, `dec_seq`, `past` (KV-cache "
             "length of the decode steps, which take 1 new token), `text_batch`/`text_seq` (CLIP), `samples` "
             "(wav2vec2); image height/width are static. Integer inputs are token ids; float inputs (pixels, mel "
             "features, audio, latents, past keys/values) are fed standard-normal values; the UNet's `timestep` is "
             "a float32 scalar (500 in the checks). Decoders build their attention mask inside the graph as "
             "ones_like(input_ids), so no mask input exists (without a mask, transformers 5 probes the position ids for "
             "packed sequences with aten::diff, which the TorchScript exporter cannot export; whisper-tiny does the "
             "same for its decoder mask). `real_config: true` means the widths, heads, KV heads, "
             "vocabulary and image size are those of the named checkpoint; `reduced` says what was cut (usually "
             "layers) and why. `ops` counts nodes including subgraphs. Dynamo exports keep per-node metadata "
             "(source stack traces), which makes them larger per node than TorchScript exports.\n")
    L.append("Checks done by generate.py for every model: `onnx.checker.check_model(full_check=True)` on the "
             "stripped file, an onnxruntime load of it, and one onnxruntime run of the materialized model (seeded "
             "inputs filled uniformly in [low, high) as initializers, symbolic dims at `dims`) whose outputs must "
             "be finite (recorded as `finite`).\n")
    n_ts = sum(m["exporter"] == "torchscript" for m in ms)
    others = sorted({m["exporter"] for m in ms} - {"dynamo", "torchscript"})
    L.append(f"{len(ms)} models, {len(fams)} families, {n_dyn} exported with the dynamo exporter, "
             f"{n_ts} with the TorchScript exporter"
             + (f", {len(ms) - n_dyn - n_ts} by {', '.join(others)}" if others else "")
             + f"; models/ totals {total / 1e6:.1f} MB.\n")
    L.append("## Regenerate\n")
    L.append("From the repository root (about 20-25 minutes on 2 cores; models are exported one at a time, each in its own subprocess):\n")
    L.append("```sh\n/usr/bin/python3 -m venv build/corpus-venv\n"
             "build/corpus-venv/bin/pip install -r bench/corpus/requirements.txt\n"
             f"{GENERATOR}                 # all models\n"
             f"{GENERATOR} --only gpt2 t5-small   # just these; the others keep their manifest entries\n```\n")
    L.append(f"Versions: " + ", ".join(f"{k} {v}" for k, v in man["versions"].items()) + f"; seed {man['seed']}.\n")
    L.append("## Split\n")
    L.append("Families are split once, by the fixed list `HELD_OUT_FAMILIES` in specs.py (about a third of the "
             "families; both parts hold decoders, encoders, encoder-decoder/audio, vision transformers and CNNs). "
             "All models of a family are in the same part. **Rewrite rules, canonical forms and cost-model decisions "
             "are developed and tuned on the tuning part only; the held-out part is only ever reported**, never "
             "used to choose or adjust anything.\n")
    L.append(f"- tuning ({len(tuning)} families, {sum(m['part'] == 'tuning' for m in ms)} models): "
             + ", ".join(tuning))
    L.append(f"- held-out ({len(held)} families, {sum(m['part'] == 'held-out' for m in ms)} models): "
             + ", ".join(held) + "\n")
    L.append("## Benchmark\n")
    L.append("`run.py` measures saturn with its defaults beside its peers on every model (after tools/build.sh; "
             "onnxsim comes with this environment's requirements, onnxruntime's transformer optimizer with "
             "onnxruntime). Each model is materialized (weights filled in their ranges), optimized by saturn, by "
             "onnxsim and by onnxruntime's transformer optimizer (each peer in a process of its own), every "
             "candidate's outputs are compared with the original's in onnxruntime, and the matching ones are timed "
             "in rounds against it (CPU, one intra-op thread). It writes bench/results/corpus.json, .md and .svg. "
             "run.py needs less than the generator: onnx, onnxruntime, numpy and onnxsim at the pins of "
             "requirements.txt, and torch for onnxruntime's transformer optimizer, which imports it (the CPU build "
             "`torch==2.13.0` does; the results of 2026-11-28 were made so):\n")
    L.append("```sh\n/usr/bin/python3 -m venv build/corpus-venv\n"
             "build/corpus-venv/bin/pip install onnx==1.23.2 onnxruntime==1.30.0 numpy==2.4.6 onnxsim==0.4.36 "
             "sympy==1.14.0 packaging==26.4 protobuf==7.36.2 torch==2.13.0\n```\n")
    L.append("Then:\n")
    L.append("```sh\nbuild/corpus-venv/bin/python bench/corpus/run.py                      # every model, 21 rounds each\n"
             "build/corpus-venv/bin/python bench/corpus/run.py --part tuning --models gpt2  # a subset\n"
             "taskset -c 0 build/corpus-venv/bin/python bench/corpus/run.py --shard 1/2 --out build/s1 &  # two shards,\n"
             "taskset -c 1 build/corpus-venv/bin/python bench/corpus/run.py --shard 2/2 --out build/s2    # one per core\n"
             "build/corpus-venv/bin/python bench/corpus/run.py --retime-small build/s1 build/s2  # optional: small "
             "models on all cores\n"
             "build/corpus-venv/bin/python bench/corpus/run.py --merge build/s1 build/s2  # then one table\n```\n")
    L.append("A shard times saturn pinned to its core (saturn's check at the threads a model runs with then uses that "
             "one core: `--runtime-threads` defaults to the cores the process may use); `--retime-small` times it "
             "again, one model at a time on all the machine's cores, on the models under 300 operators after import "
             "(the quick target is stated for 2 cores), and the time line of corpus.md gives both.\n")
    L.append("`decision_under_load.py` asks whether a busy machine changes saturn's decisions: each model optimized "
             "with the defaults twice, quiet and beside a CPU-bound process it starts on the last core, and each "
             "model the loaded run wrote timed again quietly against its input (`--models`, `--part` as for "
             "run.py):\n")
    L.append("```sh\nbuild/corpus-venv/bin/python bench/corpus/decision_under_load.py [--models NAME...]\n```\n")
    L.append("`quantized.py` makes and measures the quantized part: corpus models quantized by onnxruntime's "
             "`quantize_static` (its defaults, and the U8S8 twin), optimized by saturn and timed "
             "(bench/results/quantized.json, the quantized section of corpus.md):\n")
    L.append("```sh\nbuild/corpus-venv/bin/python bench/corpus/quantized.py [--models NAME...]\n```\n")
    L.append("## Models\n")
    L.append("| name | family | source | exporter | opset | part | ops | KB | reduced |")
    L.append("| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |")
    for m in ms:
        red = m["reduced"] or ("not a real config" if not m["real_config"] else "")
        fin = "" if m["finite"] else " **outputs not finite with uniform random weights**"
        L.append(f"| {m['name']} | {m['family']} | {m['source']} | {m['exporter']} | {m['opset']} | {m['part']} | "
                 f"{m['ops']} | {m['file_bytes'] // 1024} | {red}{fin} |")
    L.append("")
    notes = [m for m in ms if m["full_check"] is not True]
    if notes:
        L.append("onnx full_check failures (the plain checker passes):\n")
        for m in notes:
            L.append(f"- {m['name']}: {m['full_check']}")
        L.append("")
    if man.get("failed"):
        L.append("## Tried, failed\n")
        for f in man["failed"]:
            L.append(f"- {f['name']} ({f['family']}, {f['exporter']}): {f['error']}")
        L.append("")
    README.write_text("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="regenerate only these models")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per model")
    ap.add_argument("--docs-only", action="store_true", help="only rewrite manifest.json and README.md")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.result)
        return
    names = [] if a.docs_only else a.only or [s.name for s in SPECS]
    unknown = [n for n in names if n not in SPEC_BY_NAME]
    if unknown:
        sys.exit(f"unknown model(s): {unknown}")
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    entries = {m["name"]: m for m in old.get("models", [])}
    failed = {f["name"]: f for f in old.get("failed", [])}
    for n in names:
        spec = SPEC_BY_NAME[n]
        print(f"=== {n} ({spec.exporter})", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            rp = Path(tmp) / "res.json"
            env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            try:
                subprocess.run([sys.executable, __file__, "--worker", n, "--result", str(rp)], env=env,
                               timeout=a.timeout, check=False)
                res = json.loads(rp.read_text()) if rp.exists() else {"ok": False, "error": "worker crashed"}
            except subprocess.TimeoutExpired:
                res = {"ok": False, "error": f"timeout after {a.timeout} s"}
        if res["ok"]:
            entries[n] = entry(spec, res)
            failed.pop(n, None)
            print(f"    ok: {res['ops']} nodes, {res['file_bytes'] / 1e3:.0f} KB, {res['seeded_weights']} seeded, "
                  f"finite={res['finite']}, dims={res['dims']}, {res['seconds']} s", flush=True)
        else:
            entries.pop(n, None)
            (MODELS_DIR / f"{n}.onnx").unlink(missing_ok=True)
            failed[n] = {"name": n, "family": spec.family, "exporter": spec.exporter, "error": res["error"]}
            print(f"    FAILED: {res['error']}", flush=True)
    order = {s.name: i for i, s in enumerate(SPECS)}
    man = {
        "generator": GENERATOR,
        "versions": versions(),
        "seed": SEED,
        "seeded_min_elements": SEEDED_MIN_ELEMENTS,
        "held_out_families": sorted(HELD_OUT_FAMILIES),
        "models": sorted((e for k, e in entries.items() if k in order), key=lambda e: order[e["name"]]),
        "failed": sorted((f for k, f in failed.items() if k in order), key=lambda f: order[f["name"]]),
    }
    MANIFEST.write_text(json.dumps(man, indent=1) + "\n")
    write_readme(man)
    print(f"{len(man['models'])} models, {len(man['failed'])} failed")


if __name__ == "__main__":
    main()
