#!/usr/bin/env python3
"""The corpus benchmark: saturn with its defaults beside its peers, on models
written elsewhere (bench/corpus/models, see README.md there).

Run from the repository root with the corpus's environment (onnxruntime,
onnx, onnxsim and the transformer optimizer; bench/corpus/README.md says how
to create it) after tools/build.sh:

    build/corpus-venv/bin/python bench/corpus/run.py [--models NAME...]
        [--part tuning|held-out] [--pairs 21] [--out bench/results]

For each model of bench/corpus/manifest.json:
  1. its stripped weights are filled with seeded values in their ranges and
     the model is written whole (what a user has): `original`;
  2. four candidates are made from it: saturn (`saturn optimize` with its
     defaults, the symbolic dimensions sized as the manifest says; its wall
     time and peak RSS measured), onnxsim, onnxruntime's offline transformer
     optimizer (for the model types it supports), and the original itself
     (onnxruntime alone);
  3. every candidate's outputs are compared with the original's in
     onnxruntime (all outputs, rtol/atol), and the candidates that match are
     timed in rounds: each round runs the original and every candidate once,
     in a rotating order, in onnxruntime on the CPU with one intra-op
     thread; a candidate's speedup is the median over the rounds of the
     original's time over its own (at least 21 rounds).
Writes corpus.json, corpus.md and corpus.svg into --out.
"""
import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "ort", "harness"))
import ort_run  # noqa: E402  (the harness's comparison and statistics)
from results import PEERS, merge, write_results  # noqa: E402

CORPUS = os.path.join(ROOT, "bench", "corpus")
SEEDED_KEY = "saturn.seeded_weights"
# The quick target's small models: under this many operators after import,
# optimized in at most 2 s on 2 cores (issue 56).
SMALL_OPS = 300
LARGE_BYTES = 1_800_000_000

# onnxruntime.transformers.optimizer's model type for each corpus family, as
# its users pick one: the family's own type where the optimizer has one, the
# nearest otherwise (it has no LLaMA-family type: those decoders go through
# its GPT-2 fusions; the vision transformers through its ViT ones). A family
# not named here (the CNNs) has none: the peer does not apply.
ORT_MODEL_TYPES = {
    "bert": "bert", "roberta": "bert", "distilbert": "bert", "deberta-v2": "bert",
    "albert": "bert", "electra": "bert", "mobilebert": "bert", "wav2vec2": "bert",
    "gpt2": "gpt2", "gpt-neox": "gpt_neox", "opt": "gpt2", "llama": "gpt2", "mistral": "gpt2",
    "qwen2": "gpt2", "phi3": "gpt2", "phi": "gpt2",
    "t5": "t5", "bart": "bart", "whisper": "bart",
    "vit": "vit", "deit": "vit", "mobilevit": "vit", "levit": "vit", "efficientformer": "vit",
    "mlp-mixer": "vit", "detr": "vit", "segformer": "vit",
    "swin": "swin", "clip": "clip", "unet2d": "unet",
}
# Models whose seeded weights pass this many elements go to the first shard
# (--shard), so that two shards never hold two of them in memory at once.
LARGE_MODEL_ELEMENTS = 200_000_000


class Failed(Exception):
    """A candidate that could not be made or does not compute the same."""


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def materialize(stripped_path, out_path, seed):
    """The stripped model with its seeded weights filled in: each input named
    under saturn.seeded_weights becomes an initializer of uniform random
    values in [low, high)."""
    model = onnx.load(stripped_path)
    meta = {p.key: p.value for p in model.metadata_props}
    ranges = json.loads(meta.get(SEEDED_KEY, "{}"))
    rng = np.random.default_rng(seed)
    kept_inputs = []
    for value in model.graph.input:
        r = ranges.get(value.name)
        if r is None:
            kept_inputs.append(value)
            continue
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        data = rng.uniform(r["low"], r["high"], size=dims).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(data, value.name))
    del model.graph.input[:]
    model.graph.input.extend(kept_inputs)
    kept_meta = [p for p in model.metadata_props if p.key != SEEDED_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept_meta)
    save(model, out_path)
    return model


def is_large(model):
    """Whether the model's weights pass what one protobuf message holds
    (2 GiB), with a margin for the graph."""
    return sum(t.ByteSize() for t in model.graph.initializer) > LARGE_BYTES


def save(model, path):
    """Writes a model, its weights in an external data file beside it when
    they would not fit in the file itself."""
    if is_large(model):
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(path) + ".data", size_threshold=1024)
    else:
        onnx.save(model, path)


def feeds_for(session, entry, seed):
    """Seeded inputs at the manifest's sizes for the symbolic dimensions:
    floats in [-1, 1), integers in [0, min(10, int_input_high)), masks all
    ones."""
    dims = entry.get("dims") or {}
    feeds = {}
    for meta in session.get_inputs():
        shape = []
        for d in meta.shape:
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(int(dims[d]))
            else:
                raise Failed(f"input {meta.name}: no size for dimension {d!r} in the manifest")
        proxy = type("Meta", (), {"name": meta.name, "type": meta.type, "shape": shape})
        value = ort_run.random_tensor(proxy, seed)
        if np.issubdtype(value.dtype, np.integer):
            if "mask" in meta.name:
                value = np.ones_like(value)
            else:
                high = min(10, int((entry.get("int_input_high") or {}).get(meta.name) or 10))
                value = value % high
        feeds[meta.name] = value
    return feeds


def session(path, threads=1):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def peak_rss_mb(pid):
    """The process's resident-set high-water mark (VmHWM), or None once it
    has ended. (The rusage of a child counts the parent's memory at the fork,
    so it overstates a child started from a large process.)"""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run_measured(cmd, timeout):
    """Runs a command; returns (exit code, output, seconds, peak RSS in MB,
    read from /proc every 20 ms while it runs)."""
    start = time.monotonic()
    peak = 0.0
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            rss = peak_rss_mb(proc.pid)
            if rss is not None:
                peak = max(peak, rss)
            if time.monotonic() - start > timeout:
                proc.kill()
                proc.wait()
                break
            time.sleep(0.02)
        seconds = time.monotonic() - start
        out.seek(0)
        text = out.read().decode(errors="replace")
    return proc.returncode, text, seconds, peak


def update_rows(dirs, update):
    """Calls update(row) on every row of each DIR/corpus.json and writes the
    file back."""
    for d in dirs:
        path = os.path.join(d, "corpus.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for r in doc["rows"]:
            update(r)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)


def remeasure_rss(dirs):
    """Runs saturn again on each row's model, as the row's command says,
    and records its peak RSS alone (for runs made before peak_rss_mb read
    /proc)."""
    def update(r):
        if not r.get("saturn_command"):
            return
        _, _, _, rss = run_measured(shlex.split(r["saturn_command"]), timeout=3600)
        log(f"{r['model']}: peak RSS {rss:.1f} MB (was {r.get('peak_rss_mb')})")
        r["peak_rss_mb"] = round(rss, 1)
        r["peak_rss_pass"] = "separate"
    update_rows(dirs, update)


def retime_small(dirs, args):
    """Times saturn again on each model under SMALL_OPS operators after
    import, one model at a time on all of the machine's cores: the quick
    target is stated for 2 cores, while a shard runs pinned to one."""
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}

    def update(r):
        if r.get("optimize_seconds") is None or (r.get("ops_after_fold") or r["ops"]) >= SMALL_OPS:
            return
        work = os.path.join(args.work, r["model"])
        os.makedirs(work, exist_ok=True)
        original = os.path.join(work, "original.onnx")
        materialize(os.path.join(CORPUS, "models", f"{r['model']}.onnx"), original, args.seed)
        os.sync()
        _, info = make_saturn(original, work, entries[r["model"]], args.saturn, args.time_limit)
        timing = ((info.get("report") or {}).get("seconds") or {}).get("measure") or 0.0
        r["optimize_seconds_all_cores"] = round(info["optimize_seconds"] - timing, 2)
        log(f"{r['model']}: {r['optimize_seconds_all_cores']} s on all cores "
            f"(pinned: {r['optimize_seconds']} s)")
        if not args.keep_work:
            clear_work(work)
    update_rows(dirs, update)


def make_saturn(original, work, entry, saturn, time_limit):
    out = os.path.join(work, "saturn.onnx")
    report = os.path.join(work, "saturn_report.json")
    cmd = [saturn, "optimize", original, "-o", out, "--report", report, "--quiet"]
    for name, size in (entry.get("dims") or {}).items():
        cmd += ["--dim", f"{name}={size}"]
    if time_limit:
        cmd += ["--time-limit", str(time_limit)]
    code, text, seconds, rss = run_measured(cmd, timeout=3600)
    info = {"command": " ".join(shlex.quote(c) for c in cmd), "optimize_seconds": seconds,
            "peak_rss_mb": rss, "exit_code": code}
    if code != 0:
        info["error"] = text.strip().splitlines()[-1] if text.strip() else f"exit {code}"
        return None, info
    with open(report, encoding="utf-8") as f:
        info["report"] = json.load(f)
    return out, info


def make_onnxsim(original, work, entry):
    import onnxsim
    model = onnx.load(original)
    shapes = {}
    dims = entry.get("dims") or {}
    for value in model.graph.input:
        shape = []
        for d in value.type.tensor_type.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else int(dims.get(d.dim_param, 1)))
        shapes[value.name] = shape
    # onnxsim folds with the given input shapes; the symbolic dimensions stay
    # symbolic in its output only where it cannot fold them (it is run as its
    # users run it on a dynamic model: shapes for checking, not fixed).
    simplified, ok = onnxsim.simplify(model, test_input_shapes=shapes)
    if not ok:
        raise Failed("onnxsim's own check failed")
    out = os.path.join(work, "onnxsim.onnx")
    save(simplified, out)
    return out


def make_ort_transformers(original, work, entry):
    from onnxruntime.transformers import optimizer
    model_type = ORT_MODEL_TYPES.get(entry["family"])
    if model_type is None:
        raise Failed(f"no onnxruntime.transformers model type for the family {entry['family']}")
    # The attention's heads and width from the model's configuration where
    # it names them as numbers; 0 lets the optimizer read them off the graph.
    cfg = entry.get("config") or {}
    def number(*keys):
        for key in keys:
            if isinstance(cfg.get(key), int):
                return cfg[key]
        return 0
    opt = optimizer.optimize_model(original, model_type=model_type,
                                   num_heads=number("num_attention_heads", "n_head"),
                                   hidden_size=number("hidden_size", "n_embd", "d_model"),
                                   opt_level=1, use_gpu=False)
    out = os.path.join(work, "ort_transformers.onnx")
    opt.save_model_to_file(out, use_external_data_format=is_large(opt.model))
    return out


PEER_MAKERS = {"onnxsim": make_onnxsim, "ort_transformers": make_ort_transformers}


def make_peer_apart(peer, original, work, entry):
    """Runs a peer's optimizer in a process of its own (a large model's
    copies are freed when it ends); returns its output file."""
    cmd = [sys.executable, os.path.abspath(__file__), "--make-peer", peer, original, work,
           json.dumps(entry)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode == 0 and last.startswith("made "):
        return last[len("made "):]
    if last.startswith("failed "):
        raise Failed(last[len("failed "):])
    tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    raise Failed(f"the peer crashed (exit {done.returncode}): {tail}")


def make_peer_main(peer, original, work, entry_json):
    """The child of make_peer_apart: prints `made PATH` or `failed WHY`."""
    try:
        print("made " + PEER_MAKERS[peer](original, work, json.loads(entry_json)), flush=True)
    except Failed as err:
        print(f"failed {err}", flush=True)
    except Exception as err:  # a peer's own failure is reported, not fatal
        text = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"failed {type(err).__name__}: {text}", flush=True)


def check_outputs(reference, candidate_path, feeds, rtol, atol):
    s = session(candidate_path)
    names = [o.name for o in s.get_outputs()]
    got = dict(zip(names, s.run(None, feeds)))
    worst = 0.0
    for name, want in reference.items():
        if name not in got:
            raise Failed(f"output {name} is missing")
        c = ort_run.compare(np.asarray(got[name]), np.asarray(want), rtol, atol)
        if c["ratio"] > 1:
            raise Failed(f"output {name} differs: {c.get('detail') or 'error ratio %.3g' % c['ratio']}")
        worst = max(worst, c["ratio"])
    return s, worst


def time_rounds(sessions, feeds, pairs, warmup=2):
    """Times every session once per round in a rotating order; returns each
    one's list of times (us)."""
    names = list(sessions)
    for _ in range(warmup):
        for n in names:
            sessions[n].run(None, feeds)
    times = {n: [] for n in names}
    for r in range(pairs):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            t0 = time.perf_counter_ns()
            sessions[n].run(None, feeds)
            times[n].append((time.perf_counter_ns() - t0) / 1e3)
    return times


def ops_of(path):
    return len(onnx.load(path, load_external_data=False).graph.node)


def measure_model(entry, args):
    name = entry["name"]
    row = {"model": name, "family": entry["family"], "exporter": entry["exporter"],
           "opset": entry["opset"], "part": entry["part"], "source": entry.get("source")}
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    original = os.path.join(work, "original.onnx")
    materialize(os.path.join(CORPUS, "models", f"{name}.onnx"), original, args.seed)
    row["ops"] = ops_of(original)
    base = session(original)
    feeds = feeds_for(base, entry, args.seed)
    reference = dict(zip([o.name for o in base.get_outputs()], base.run(None, feeds)))
    row["outputs_finite"] = all(np.all(np.isfinite(v)) for v in reference.values()
                                if np.issubdtype(np.asarray(v).dtype, np.floating))
    candidates, notes = {}, {}

    # The materialized model (up to 1.6 GB) is written out before saturn is
    # timed: the kernel's writeback of the harness's own file would
    # otherwise slow saturn's copy of it (TinyLlama-4l, the first model of
    # its shard, took 4.7 s where it takes 1.8 s after the writes settle).
    os.sync()
    saturn_out, info = make_saturn(original, work, entry, args.saturn, args.time_limit)
    rep = info.get("report", {})
    # saturn's own timing of its result in onnxruntime (the never-slower
    # decision) apart from the rest of its wall time.
    timing = (rep.get("seconds") or {}).get("measure") or 0.0
    row.update({
        "optimize_seconds": round(info["optimize_seconds"] - timing, 2),
        "timing_seconds": round(timing, 2),
        # The self-check and the check at other sizes, inside optimize_seconds.
        "check_seconds": round((rep.get("seconds") or {}).get("check") or 0.0, 2),
        "saturn_timed": rep.get("measured"),
        "peak_rss_mb": round(info["peak_rss_mb"], 1),
        # onnxruntime's harness, in a process of its own while saturn waits.
        "harness_peak_mb": round(((rep.get("peak_memory_mb") or {}).get("onnxruntime_harness")
                                  or 0.0), 1),
        "file_mb": round(os.path.getsize(original) / 1e6, 1),
        "ops_after_fold": rep.get("ops_before"),
        "opaque_ops": sum((rep.get("opaque_ops_before") or {}).values()) if rep else None,
        "opaque_by_type": rep.get("opaque_ops_before"),
        "ops_after": rep.get("ops_after"),
        # Transformer blocks present and fused in the written model.
        "blocks": rep.get("blocks"),
        # What the search's best graph was predicted to gain, taken or not.
        "speedup_predicted": rep.get("predicted_speedup"),
        "kept_input": rep.get("kept_input"),
        "self_check": rep.get("self_check"),
        "not_searched": rep.get("not_searched"),
        "cost_model": rep.get("cost_model"),
        "saturn_command": info["command"],
    })
    if saturn_out is None:
        notes["saturn"] = f"saturn optimize failed: {info.get('error')}"
    else:
        candidates["saturn"] = saturn_out

    for peer in PEERS:
        try:
            candidates[peer] = make_peer_apart(peer, original, work, entry)
        except Failed as err:
            notes[peer] = str(err)

    sessions, match = {"original": base}, {}
    for cand, path in candidates.items():
        try:
            sessions[cand], worst = check_outputs(reference, path, feeds, args.rtol, args.atol)
            match[cand] = True
        except Failed as err:
            match[cand], notes[cand] = False, str(err)
        except Exception as err:  # onnxruntime refusing the candidate
            match[cand] = False
            notes[cand] = f"onnxruntime cannot run it: {str(err).strip().splitlines()[0]}"
    times = time_rounds(sessions, feeds, args.pairs)
    base_t = times["original"]

    def speedup(cand):
        ratios = sorted(b / c for b, c in zip(base_t, times[cand]))
        return round(ort_run.quantile(ratios, 0.5), 4), [round(ort_run.quantile(ratios, q), 4)
                                                         for q in (0.1, 0.9)]

    row["original_ms"] = round(ort_run.quantile(sorted(base_t), 0.5) / 1e3, 3)
    row["outputs_match"] = match.get("saturn", False)
    row["speedup_measured"], row["speedup_p10_p90"] = (speedup("saturn") if "saturn" in sessions
                                                       else (None, None))
    row["peers"] = {p: (speedup(p)[0] if p in sessions else None) for p in PEERS}
    row["peer_ops"] = {p: (ops_of(candidates[p]) if p in sessions else None) for p in PEERS}
    row["notes"] = notes
    row["pairs"] = args.pairs
    return row


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--make-peer":
        make_peer_main(*sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="only these models (by name)")
    p.add_argument("--part", choices=["tuning", "held-out"], help="only this part")
    p.add_argument("--pairs", type=int, default=21, help="timed rounds per model (>= 21)")
    p.add_argument("--time-limit", type=float, default=0,
                   help="saturn's --time-limit (0: its default)")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--saturn", default=os.path.join(ROOT, "build", "tools", "saturn"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "corpus-work"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--keep-work", action="store_true",
                   help="keep each model's materialized files in --work (several GB for a "
                   "large model; by default only saturn's report is kept)")
    p.add_argument("--shard", help="K/N: run the K-th of N shards (K from 1), for N runs side "
                   "by side, each pinned to its own core")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help="merge the corpus.json of shard runs into --out (nothing is run)")
    p.add_argument("--remeasure-rss", nargs="+", metavar="DIR",
                   help="run saturn again on each row of DIR/corpus.json for its peak RSS alone")
    p.add_argument("--retime-small", nargs="+", metavar="DIR",
                   help=f"time saturn again, unpinned, on each model of DIR/corpus.json under "
                   f"{SMALL_OPS} operators (then --merge DIR again for the tables)")
    args = p.parse_args()
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    if args.remeasure_rss:
        remeasure_rss(args.remeasure_rss)
        return
    if args.retime_small:
        retime_small(args.retime_small, args)
        return
    if args.merge:
        merge(args.merge, args.out)
        return
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    entries = [e for e in manifest["models"]
               if (not args.models or e["name"] in args.models)
               and (not args.part or e["part"] == args.part)]
    unknown = set(args.models or []) - {e["name"] for e in manifest["models"]}
    if unknown:
        p.error(f"not in bench/corpus/manifest.json: {', '.join(sorted(unknown))}")
    if args.shard:
        try:
            k, n = (int(x) for x in args.shard.split("/"))
            assert 1 <= k <= n
        except (ValueError, AssertionError):
            p.error(f"--shard needs K/N with 1 <= K <= N, got {args.shard}")
        entries = shard(entries, k, n)
    rows = []
    command = " ".join(["build/corpus-venv/bin/python", "bench/corpus/run.py"]
                       + [shlex.quote(a) for a in sys.argv[1:]])
    versions = {"onnxruntime": ort.__version__, "onnx": onnx.__version__,
                "python": platform.python_version()}
    for k, entry in enumerate(entries):
        log(f"{k + 1}/{len(entries)} {entry['name']}")
        try:
            row = measure_model(entry, args)
        except Exception as err:  # one model's failure is a row, not the end of the run
            traceback.print_exc()
            row = {"model": entry["name"], "family": entry["family"], "exporter": entry["exporter"],
                   "opset": entry["opset"], "part": entry["part"],
                   "error": f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"}
        log(f"  {json.dumps({k: row.get(k) for k in ('speedup_measured', 'peers', 'optimize_seconds', 'error')})}")
        if not args.keep_work:
            clear_work(os.path.join(args.work, entry["name"]))
        rows.append(row)
        write_results(args.out, {"command": [command], "pairs": args.pairs, "versions": versions},
                      rows)


def clear_work(folder):
    """Removes a model's materialized files, keeping saturn's report."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        if name != "saturn_report.json":
            os.remove(os.path.join(folder, name))


def shard(entries, k, n):
    """The K-th of N shards: the large models all in the first (each
    counted as two models), the rest dealt out in turn."""
    large = [e for e in entries if (e.get("seeded_elements") or 0) > LARGE_MODEL_ELEMENTS]
    rest = [e for e in entries if e not in large]
    share = max(0, -(-len(entries) // n) - 2 * len(large))
    if k == 1:
        return large + rest[:share]
    return [e for i, e in enumerate(rest[share:]) if i % (n - 1) == k - 2]


if __name__ == "__main__":
    main()
