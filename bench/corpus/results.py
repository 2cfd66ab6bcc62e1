"""The corpus benchmark's results (bench/corpus/run.py measures them): the
geometric means per part, corpus.json, corpus.md and corpus.svg, and one
result merged from the runs of several shards. Standard library only."""
import datetime
import json
import math
import os
import platform

CORPUS = os.path.dirname(os.path.abspath(__file__))
PEERS = ("onnxsim", "ort_transformers")


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(rows):
    out = {}
    for part in ("tuning", "held-out"):
        part_rows = [r for r in rows if r["part"] == part]
        out[part] = {
            "models": len(part_rows),
            # A kept input is the same file: 1, whatever the timing noise shows.
            "saturn": geomean([1.0 if r.get("kept_input") and r.get("speedup_measured")
                               else r.get("speedup_measured") for r in part_rows]),
            "saturn_predicted": geomean([r.get("speedup_predicted") for r in part_rows]),
            **{p: geomean([r["peers"].get(p) for r in part_rows if r.get("peers")]) for p in PEERS},
            "opaque_fraction": (sum(r.get("opaque_ops") or 0 for r in part_rows)
                                / max(1, sum(r.get("ops_after_fold") or 0 for r in part_rows))),
        }
    return out


def memory_bound_mb(r):
    """What saturn may hold with its defaults (issue 69): twice the model
    file plus 300 MB, for saturn's process and for onnxruntime's harness
    (each its own process)."""
    return 2 * r["file_mb"] + 300


def memory_summary(rows):
    """Peak memory against the bound, per process."""
    done = [r for r in rows if r.get("file_mb") is not None]
    if not done:
        return "No memory figures (rows made before run.py recorded the file size)."
    over = [f"{r['model']} ({r['peak_rss_mb']:.0f} / {r.get('harness_peak_mb') or 0:.0f} MB of "
            f"{memory_bound_mb(r):.0f})" for r in done
            if max(r["peak_rss_mb"], r.get("harness_peak_mb") or 0) > memory_bound_mb(r)]
    heaviest = max(done, key=lambda r: r["peak_rss_mb"] / memory_bound_mb(r))
    timed = [r for r in done if r.get("harness_peak_mb")]
    return (f"Peak memory with the defaults against twice the model file plus 300 MB, for "
            f"saturn's process and for onnxruntime's harness (which times saturn's result against "
            f"the input in a process of its own): {len(done) - len(over)} of {len(done)} models "
            f"within{' (not: ' + ', '.join(over) + ')' if over else ''}. saturn's closest: "
            f"{heaviest['model']}, {heaviest['peak_rss_mb']:.0f} MB of {memory_bound_mb(heaviest):.0f} "
            f"({heaviest['file_mb']:.0f} MB file)"
            + (f"; the harness ran for {len(timed)} models, at most "
               f"{max(r['harness_peak_mb'] for r in timed):.0f} MB" if timed else "") + ".")


def with_timing(done):
    """The median total time, saturn's own timing included, against the
    median untimed time (optimize seconds), over the models and over those
    timed."""
    def median(values):
        v = sorted(values)
        return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2

    total = [r["optimize_seconds"] + (r.get("timing_seconds") or 0) for r in done]
    timed = [r for r in done if (r.get("timing_seconds") or 0) > 0]
    line = (f"median total with the timing {median(total):.2f} s, "
            f"{median(total) / median([r['optimize_seconds'] for r in done]):.2f}x the untimed median")
    if timed:
        ratios = [(r["optimize_seconds"] + r["timing_seconds"]) / r["optimize_seconds"] for r in timed
                  if r["optimize_seconds"] > 0]
        line += f" (on the timed models alone: median {median(ratios):.1f}x their untimed time)"
    return line


def time_summary(rows):
    """saturn's optimize seconds against its targets: under 300 operators in
    2 s, every model in 60 s (its own timing in onnxruntime apart)."""
    done = [r for r in rows if r.get("optimize_seconds") is not None]
    if not done:
        return "No timings."
    small = [r for r in done if (r.get("ops_after_fold") or r["ops"]) < 300]
    slow_small = [r["model"] for r in small if r["optimize_seconds"] > 2]
    slow = [r["model"] for r in done if r["optimize_seconds"] > 60]
    seconds = sorted(r["optimize_seconds"] for r in done)
    timing = [r.get("timing_seconds") or 0 for r in done]
    checks = sorted(r["check_seconds"] for r in done if r.get("check_seconds") is not None)
    # Timed again one at a time, unpinned (run.py --retime-small).
    retimed = [r for r in small if r.get("optimize_seconds_all_cores") is not None]
    slow_retimed = [r["model"] for r in retimed if r["optimize_seconds_all_cores"] > 2]
    all_cores = (f" (timed again by run.py --retime-small, one model at a time on the "
                 f"machine's {os.cpu_count()} cores: "
                 f"{len(retimed) - len(slow_retimed)} of {len(retimed)} in 2 s"
                 f"{' (not: ' + ', '.join(slow_retimed) + ')' if slow_retimed else ''}, max "
                 f"{max(r['optimize_seconds_all_cores'] for r in retimed)} s)" if retimed else "")
    return (f"Optimize seconds: median {seconds[len(seconds) // 2]}, max {seconds[-1]}; "
            f"{len(small) - len(slow_small)} of {len(small)} models under 300 operators in 2 s"
            f"{' (not: ' + ', '.join(slow_small) + ')' if slow_small else ''}{all_cores}; "
            f"{len(done) - len(slow)} of {len(done)} in 60 s"
            f"{' (not: ' + ', '.join(slow) + ')' if slow else ''}. "
            f"saturn's own timing in onnxruntime: {sum(1 for t in timing if t > 0)} models, "
            f"max {max(timing):.1f} s; {with_timing(done)}."
            + (f" Checks (the self-check and the check at other sizes, within the optimize "
               f"seconds): {sum(1 for c in checks if c > 0)} models, max {checks[-1]:.2f} s."
               if checks else ""))


def fold_summary(rows):
    """Operators after saturn's import and folding against onnxsim's count."""
    both = [r for r in rows if r.get("ops_after_fold") and (r.get("peer_ops") or {}).get("onnxsim")]
    over = [f"{r['model']} {r['ops_after_fold']}/{r['peer_ops']['onnxsim']}" for r in both
            if r["ops_after_fold"] > r["peer_ops"]["onnxsim"]]
    return (f"Operators after import and folding at most onnxsim's on {len(both) - len(over)} of "
            f"{len(both)} models" + (f" (not: {', '.join(over)})" if over else "") + ".")


def blocks_summary(rows):
    """The transformer blocks of each part's models (attention, normalization,
    rotary) fused in the model saturn wrote, against the blocks present
    (saturn's report: tensor/blocks.h says how a block is found), and where
    it differs, how many onnxruntime's own fusions make when it loads the
    model (as saturn models them: optimize/runtime_view.h)."""
    kinds = ("attention", "normalization", "rotary")
    lines = ["| part | model | " + " | ".join(f"{k} fused of present" for k in kinds) + " |",
             "|---|---|" + "---|" * len(kinds)]
    totals = {}
    for r in rows:
        blocks = r.get("blocks") or {}
        if not any((blocks.get(k) or {}).get("present") for k in kinds):
            continue
        cells = []
        for k in kinds:
            b = blocks.get(k) or {}
            fused, present = b.get("fused_after", 0), b.get("present", 0)
            at_load = b.get("fused_at_load")
            at_load = fused if at_load is None else at_load
            t = totals.setdefault((r["part"], k), [0, 0, 0])
            t[0] += fused
            t[1] += present
            t[2] += at_load
            cells.append((f"{fused} of {present}" + (f" ({at_load} at load)" if at_load != fused else ""))
                         if present else "—")
        lines.append(f"| {r['part']} | {r['model']} | " + " | ".join(cells) + " |")
    for part in ("tuning", "held-out"):
        cells = []
        for k in kinds:
            fused, present, at_load = totals.get((part, k), [0, 0, 0])
            cells.append(f"{fused} of {present}" + (f" ({at_load} at load)" if at_load != fused else ""))
        lines.append(f"| {part} | **all** | " + " | ".join(cells) + " |")
    return lines


def self_check_summary(rows):
    """What saturn's self-check (its interpreter, per searched region) covered."""
    checked = [r for r in rows if r.get("self_check")]
    if not checked:
        return ["No self-check notes recorded."]
    kept = [r for r in checked if r["self_check"].startswith("the input was kept")]
    gaps = [r for r in checked if "not checked" in r["self_check"]]
    lines = [f"Of {len(checked)} models, {len(kept)} kept their input (nothing to check); "
             f"{len(checked) - len(kept) - len(gaps)} had every changed region matched in the "
             f"interpreter; {len(gaps)} name a region the interpreter could not run:"]
    lines += [f"- {r['model']}: {r['self_check']}" for r in gaps]
    return lines


def fmt(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def cpu_label(row):
    """The short name of the CPU a quantized row was measured on: what its
    machine names in parentheses (the vector instructions), or all of it."""
    machine = row.get("machine", "")
    return machine[machine.rfind("(") + 1:-1] if machine.endswith(")") else machine


def kept(row):
    """Whether saturn kept a quantized row's input: its model was written
    byte for byte."""
    return row.get("kept_input", not row.get("decision", "").startswith("taken"))


def saturn_speedup(row):
    """saturn over a quantized row's input: 1 where it kept the input (the
    same file, whatever the timing noise shows; the corpus counts its float
    rows so too), else as timed."""
    return 1.0 if kept(row) else row["speedup_over_default"]


# The quantized models' accuracy check (issue 71): a result's error against
# the float model may exceed the input's by at most 10%. And the speed asked
# of saturn on quantize_static's defaults: within 10% of the U8S8 twin.
ACCURACY_MARGIN = 1.10
TWIN_MARGIN = 1.10


def twin_summary(rows):
    """For quantize_static's defaults (the rows of one CPU): on how many
    models saturn runs within 10% of the U8S8 twin, over all and over those
    whose twin passes the accuracy check itself (an AVX2 CPU's U8S8 kernels
    saturate, so its twin may not), naming the models beyond; None where no
    row has a twin."""
    rows = [r for r in rows if "u8s8" in r["ms"] and "u8s8" in r["relative_l2_to_float"]]
    if not rows:
        return None
    def within(r):
        return r["ms"]["saturn"] <= TWIN_MARGIN * r["ms"]["u8s8"]
    def twin_passes(r):
        error = r["relative_l2_to_float"]
        return error["u8s8"] <= ACCURACY_MARGIN * error["default"]
    passing = [r for r in rows if twin_passes(r)]
    beyond = [f"{r['model']} {r['ms']['saturn'] / r['ms']['u8s8']:.2f}x its twin's time"
              + ("" if twin_passes(r) else
                 f", the twin's error {r['relative_l2_to_float']['u8s8']:.3f} against the "
                 f"input's {r['relative_l2_to_float']['default']:.3f}")
              for r in rows if not within(r)]
    return (f"saturn within 10% of the U8S8 twin's time: {sum(map(within, rows))} of {len(rows)}; "
            f"of the {len(passing)} whose twin passes the accuracy check (its error against the "
            f"float model at most 10% above the input's), {sum(map(within, passing))}"
            + (f". Beyond: {'; '.join(beyond)}." if beyond else "."))


def quantized_table(rows):
    """The quantized part's table (bench/corpus/quantized.py's rows), one
    line per model, way of quantizing it and CPU; `—` where the way has no
    twin (U8S8 for the 8-bit ways and PT2E, MatMulNBits for int4)."""
    lines = ["| model | part | CPU | float ms | input ms | twin ms | saturn ms | "
             "saturn over input | integer kernels (input, twin, saturn) | "
             "relative L2 to float (input, twin, saturn) | saturn's decision |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        way = r.get("way", "default")
        model = r["model"] if way == "default" else f"{r['model']} ({way})"
        if "error" in r:
            lines.append(f"| {model} | {r['part']} | {cpu_label(r)} | | | | | | | | error: {r['error']} |")
            continue
        ms, acc, ld = r["ms"], r["relative_l2_to_float"], r["loaded"]
        kernels = ", ".join(str(ld[k]["integer_kernels"]) if k in ld else "—"
                            for k in ("default", "u8s8", "saturn"))
        errors = ", ".join(f"{acc[k]:.3f}" if k in acc else "—" for k in ("default", "u8s8", "saturn"))
        twin = f"{ms['u8s8']:.1f}" if "u8s8" in ms else "—"
        speedup = (f"1 (kept; timed {r['speedup_over_default']:.3f}x)" if kept(r)
                   else f"{r['speedup_over_default']:.3f}x")
        lines.append(f"| {model} | {r['part']} | {cpu_label(r)} | {ms['float']:.1f} | {ms['default']:.1f} | "
                     f"{twin} | {ms['saturn']:.1f} | {speedup} | "
                     f"{kernels} | {errors} | {r['decision']} |")
    return "\n".join(lines)


def quantized_section(path):
    """The quantized part (bench/corpus/quantized.py's last run, `path`),
    as lines of the corpus page; none before its first run."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = doc["rows"]
    lines = ["## The quantized part", "",
             "Made by `build/corpus-venv/bin/python bench/corpus/quantized.py` (onnxruntime "
             f"{doc['onnxruntime']}, CPU, {doc['threads']} intra-op thread, 21 alternating rounds, "
             "medians): each model quantized by onnxruntime's quantizer (the input: `quantize_static` "
             "with its defaults, QDQ with int8 activations and weights, unless the model's name says "
             "another way; `pt2e-x86` and `pt2e-xnnpack` are PyTorch's PT2E flow with torchao's "
             "quantizers, exported by the dynamo exporter beside the float module), its twin (the same "
             "quantization as onnxruntime's CPU kernels run it in integers: with uint8 activations, "
             "U8S8, or for `int4` the quantizer's MatMulNBits format; for the PT2E ways onnxruntime's "
             "U8S8 quantization of the same float export, a reference for integer speed calibrated its "
             "own way), and the input optimized by `saturn optimize` with its defaults and "
             "`--float-model` naming the float model, which judges its accuracy. Accuracy is "
             "the relative L2 distance of the first output to the float model's, the mean over 5 "
             "inputs. Integer kernels count the QLinear*, QGemm, MatMulInteger, MatMulIntegerToFloat, "
             "DynamicQuantizeMatMul and MatMulNBits nodes onnxruntime runs after loading the model. "
             "A model saturn kept (its input written byte for byte) counts as 1 in the means, its "
             "timing beside it showing the noise.", ""]
    for way, machine in dict.fromkeys((r.get("way", "default"), r.get("machine")) for r in rows):
        of_way = [r for r in rows if (r.get("way", "default"), r.get("machine")) == (way, machine)
                  and "speedup_over_default" in r]
        by_part = {part: [saturn_speedup(r) for r in of_way if r.get("part") == part]
                   for part in ("tuning", "held-out")}
        means = "; ".join(f"{part} {geomean(v):.3f}x over {len(v)}" for part, v in by_part.items() if v)
        speedups = [saturn_speedup(r) for r in of_way]
        if speedups:
            lines.append(f"Geometric mean of saturn over the inputs quantized `{way}`"
                         + (f" on {machine}" if machine else "")
                         + f": {geomean(speedups):.3f}x over {len(speedups)} models ({means}).")
            lines.append("")
            twins = twin_summary(of_way) if way == "default" else None
            if twins:
                lines += [twins, ""]
    return lines + [quantized_table(rows), ""]


def write_markdown(path, doc):
    rows, summary = doc["rows"], doc["summary"]
    lines = [
        "# The corpus: saturn beside its peers on models written elsewhere",
        "",
        f"Made by {' and '.join(f'`{c}`' for c in doc['command'])} on {doc['date']} ({doc['machine']}; onnxruntime "
        f"{doc['versions']['onnxruntime']}, CPU, one intra-op thread, optimization level \"all\"; "
        f"{doc['pairs']} timed rounds per model). Speedups are measured in onnxruntime against the "
        "original model (the median over rounds of the original's time over the candidate's); "
        "`—` where a candidate does not apply, failed, or computes something else (the reason is "
        "under Notes). saturn runs with its defaults (onnxruntime's measured cost, the shipped "
        "table; MCTS after greedy "
        "saturation, 2.5 ms per operator up to 60 s; its result timed against the input in "
        "onnxruntime and written only where measurably faster), the symbolic dimensions sized as "
        "the manifest says. Saturn predicted is the gain its best graph was predicted, taken or "
        "not. Optimize seconds are its wall time less its own timing in onnxruntime, which timing "
        "s shows; check s is the part of them its checks took (the self-check in its interpreter "
        "and the check at other sizes) (each shard pinned to one core, where the command line names shards); peak RSS "
        "is its resident "
        "high-water mark (VmHWM), harness MB that of onnxruntime's harness timing its result (from "
        "saturn's report), file MB the materialized model's size"
        + (", read in a second run of the same command (`--remeasure-rss`)"
           if any(r.get("peak_rss_pass") == "separate" for r in rows) else "") + ".",
        "",
        "## Geometric means per part",
        "",
        "saturn's mean counts a model it kept unchanged (the same file) as 1.",
        "",
        "| part | models | saturn measured | saturn predicted | onnxsim | ort transformers | opaque ops |",
        "|---|---|---|---|---|---|---|",
    ]
    for part, s in summary.items():
        lines.append(f"| {part} | {s['models']} | {fmt(s['saturn'])} | {fmt(s['saturn_predicted'])} | "
                     f"{fmt(s['onnxsim'])} | {fmt(s['ort_transformers'])} | "
                     f"{100 * s['opaque_fraction']:.1f}% |")
    lines += ["", "## Models", "",
              "| model | family | exporter | opset | part | ops | opaque | ops after import | "
              "onnxsim ops | original ms | saturn predicted | saturn measured [p10, p90] | onnxsim | "
              "ort transformers | optimize s | check s | timing s | file MB | peak RSS MB | harness MB | "
              "outputs |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['family']} | {r['exporter']} | {r['opset']} | "
                         f"{r['part']} | | | | | | | failed: {r['error']} | | | | | | | | | |")
            continue
        spread = r.get("speedup_p10_p90") or [None, None]
        measured = f"{fmt(r.get('speedup_measured'))} [{fmt(spread[0])}, {fmt(spread[1])}]"
        if r.get("kept_input") and r.get("speedup_measured"):
            measured = f"1 (input kept; noise {measured})"
        lines.append(
            f"| {r['model']} | {r['family']} | {r['exporter']} | {r['opset']} | {r['part']} | "
            f"{r['ops']} | {r.get('opaque_ops', '')} | {r.get('ops_after_fold', '')} | "
            f"{(r.get('peer_ops') or {}).get('onnxsim') or '—'} | "
            f"{r['original_ms']} | {fmt(r.get('speedup_predicted'))} | "
            f"{measured} | "
            f"{fmt(r['peers'].get('onnxsim'))} | {fmt(r['peers'].get('ort_transformers'))} | "
            f"{r.get('optimize_seconds')} | {r.get('check_seconds', '—')} | "
            f"{r.get('timing_seconds', '—')} | {r.get('file_mb', '—')} | {r.get('peak_rss_mb')} | "
            f"{r.get('harness_peak_mb') or '—'} | "
            f"{'match' if r.get('outputs_match') else 'DIFFER'} |")
    lines += ["", fold_summary(rows), "", "## Time", "", time_summary(rows), "",
              "## Memory", "", memory_summary(rows), "",
              "## Transformer blocks", "",
              "Blocks fused in the written model (a kept input counts its own fused operators) "
              "against the blocks present after import, spelled out or fused; in brackets, where "
              "it differs, the blocks fused once onnxruntime loads the written model (its own "
              "LayerNorm, RMSNorm and skip fusions, as saturn models them).", "",
              *blocks_summary(rows), "",
              "## Self-check", "", *self_check_summary(rows), "", "## Notes", ""]
    for r in rows:
        timed = r.get("saturn_timed") or {}
        if timed.get("timed"):
            lines.append(f"- {r['model']}, saturn's own timing: {timed['note']}")
        if r.get("not_searched"):
            lines.append(f"- {r['model']}, saturn: kept unsearched: {r['not_searched']}")
        for who, note in (r.get("notes") or {}).items():
            lines.append(f"- {r['model']}, {who}: {note}")
        if r.get("error"):
            lines.append(f"- {r['model']}: {r['error']}")
    opaque = {}
    for r in rows:
        for op, n in (r.get("opaque_by_type") or {}).items():
            opaque[op] = opaque.get(op, 0) + n
    lines += ["", "## Opaque operators over the corpus", "",
              ", ".join(f"{op} {n}" for op, n in sorted(opaque.items(), key=lambda kv: -kv[1])), ""]
    lines += quantized_section(os.path.join(os.path.dirname(path), "quantized.json"))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def write_svg(path, rows):
    """Measured speedups per model: saturn and the two peers, one row each."""
    shown = [r for r in rows if "error" not in r]
    series = [("saturn", "#1f77b4"), ("onnxsim", "#ff7f0e"), ("ort_transformers", "#2ca02c")]
    row_h, left, width = 16, 190, 420
    height = 40 + row_h * len(shown) + 30
    lo, hi = 0.5, 2.0
    def x_of(v):
        v = min(max(v, lo), hi)
        return left + width * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
             'font-family="sans-serif" font-size="11">',
             '<text x="10" y="16" font-size="13">Measured speedup in onnxruntime (log scale, 0.5-2x)</text>']
    for i, (name, color) in enumerate(series):
        parts.append(f'<rect x="{left + 130 * i}" y="24" width="10" height="10" fill="{color}"/>'
                     f'<text x="{left + 14 + 130 * i}" y="33">{name}</text>')
    one = x_of(1.0)
    parts.append(f'<line x1="{one}" y1="40" x2="{one}" y2="{height - 25}" stroke="#888"/>')
    for k, r in enumerate(shown):
        y = 44 + row_h * k
        parts.append(f'<text x="{left - 6}" y="{y + 10}" text-anchor="end">{r["model"]}'
                     f'{" *" if r["part"] == "held-out" else ""}</text>')
        values = [r.get("speedup_measured"), r["peers"].get("onnxsim"),
                  r["peers"].get("ort_transformers")]
        for j, ((_, color), v) in enumerate(zip(series, values)):
            if v:
                parts.append(f'<rect x="{min(one, x_of(v))}" y="{y + 4 * j}" '
                             f'width="{abs(x_of(v) - one) + 1}" height="4" fill="{color}"/>')
    for v in (0.5, 0.8, 1.0, 1.25, 2.0):
        parts.append(f'<text x="{x_of(v)}" y="{height - 10}" text-anchor="middle">{v}x</text>')
    parts.append(f'<text x="10" y="{height - 10}">* held out</text></svg>')
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


def write_results(out, meta, rows):
    doc = {
        "command": meta["command"],
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} hardware threads",
        "versions": meta["versions"],
        "pairs": meta["pairs"], "rows": rows, "summary": summarize(rows),
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    write_markdown(os.path.join(out, "corpus.md"), doc)
    write_svg(os.path.join(out, "corpus.svg"), rows)


def merge(dirs, out):
    """One result of several shard runs, rows in the manifest's order; a
    model measured in several runs keeps the row of the last one named (a
    model measured again after a fix)."""
    with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as f:
        order = {m["name"]: i for i, m in enumerate(json.load(f)["models"])}
    by_model, commands, pairs = {}, [], []
    for d in dirs:
        with open(os.path.join(d, "corpus.json"), encoding="utf-8") as f:
            doc = json.load(f)
        by_model.update((r["model"], r) for r in doc["rows"])
        commands += doc["command"]
        pairs.append(doc["pairs"])
    rows = sorted(by_model.values(), key=lambda r: order.get(r["model"], len(order)))
    write_results(out, {"command": commands, "pairs": min(pairs), "versions": doc["versions"]},
                  rows)
