#!/usr/bin/env python3
"""saturn's onnxruntime harness (CPU execution provider, optimization level "all").

Needs the project's virtual environment (onnxruntime, onnx and numpy from
PyPI at the versions tools/requirements.txt pins); the saturn command line
runs it with that interpreter and reads the one JSON object it prints.

  ort_run.py verify A.onnx B.onnx [--runs N] [--warmup N] [--rtol R]
             [--atol A] [--seed S] [--threads T]
    Runs both models on the same seeded random inputs, compares every
    output, checks B with PyPI's ONNX checker (full check, strict shape
    inference), and times them: each model in its own session, the timed
    runs alternating A, B, A, B, ... so that drift in the machine's speed
    hits both alike.
  ort_run.py decide INPUT.onnx CANDIDATE.onnx [--seconds S] [--max-seconds S]
             [--min-rounds N] [--max-rounds N] [--min-gain G] [--warmup N] [--rtol R] [--atol A]
             [--seed S] [--threads T] [--check-threads N] [--float-model F.onnx]
    Whether the candidate runs measurably faster than the input: outputs
    compared (for a quantized input, by their distance to the float model F
    it quantizes, or without one to quantized.float_reference's stand-in)
    and the candidate checked as for verify, then timed. With one thread
    (--threads 1), by the session thread's CPU time, which other load on
    the machine does not inflate, in pairs of sessions: the input's and the
    candidate's held together and run in alternating rounds (a short burst
    of each, the order reversing each round), so that the machine's
    changing speed weighs on both alike; each pair is released before the
    next loads (where the two would press on the machine's memory, four
    times their files' size, they run one at a time as with more threads).
    A session can run a few percent faster or slower than
    another session of the same model for as long as it lives, so each
    pair's speedup (the median of its rounds' ratios) is one sample: the
    speedup is their geometric mean, with a 90% interval from their spread
    (Student's t; each end a one-sided 95% bound), and blocks of three
    pairs are added until the interval clears 1 + min-gain (faster) or lies
    below it, up to three blocks within two thirds of the time. With more
    threads, by the wall clock, one session at a time (two live thread
    pools would spin against each other), in blocks of four whose order
    reverses each block (input, candidate, candidate, input; then
    candidate, input, input, candidate; ...), the speedup the ratio of the
    models' geometric means of the session medians with its interval. An
    undecided first block is followed by a second one where it ends within
    two thirds of --max-seconds (a slow model's one block leaves its
    interval too wide to
    decide). With --check-threads N (more
    than one), a candidate found faster is timed again with N threads by the
    wall clock in the rest of the time, and is not faster after all where
    that interval lies wholly below 1 (measurably slower at the threads the
    model will run with). Other load on the machine cannot make the first
    timing find a gain; it can only widen the second's interval.
  ort_run.py time M.onnx... [--runs N] [--warmup N] [--seed S] [--threads T]
             [--profile 0|1] [--kernel-offset US] [--kernel-floor US]
    The latency of each model (for measured cost tables): the wall time of
    a run (median_us) and, from onnxruntime's profiler, the time its kernels
    took (kernel_us, the mean of the middle half of the runs), which leaves
    out feeding the inputs, copying the outputs back, and the layout
    reorders a lone convolution needs at its edges (a model pays those once
    per chain of convolutions, not per operator). Also each kernel's own
    time (kernels: operator, first input and output shapes, us), so that a
    caller can attribute the reorders an operator causes. Each kernel's time
    is first lowered by --kernel-offset (what the profiler adds to it) and
    raised to at least --kernel-floor. With --profile 0 the runs are not
    profiled, and only their wall time is reported.

Exit codes: 0 with the JSON on stdout; 1 with a message on stderr; 3 when
onnxruntime, onnx or numpy cannot be imported (the environment is missing).
"""
import json
import os
import shutil
import sys
import tempfile
import time

try:
    import onnxruntime as ort
    from onnx_checker import checker_report
    from sessions import (HarnessError, input_metas, inputs_for, open_session,  # noqa: F401
                          outputs_by_name, random_tensor, release_memory, same_inputs, timed_run)
    import quantized
    from outputs import compare, compare_outputs, json_number, judge  # noqa: F401 (used by callers)
    from timing_stats import (median, middle_mean, paired_verdict, quantile, settled,  # noqa: F401
                              speedup_verdict, summary)
except ImportError as err:  # the caller tells the user to run tools/install-deps.sh
    sys.stderr.write(f"ort_run: {err} (the interpreter is {sys.executable})\n")
    sys.exit(3)

OPTIONS = {"runs": 20, "warmup": 3, "rtol": 1e-3, "atol": 1e-4, "seed": 1, "threads": 2,
           "profile": 1, "kernel-offset": 0, "kernel-floor": 0, "seconds": 10, "max-seconds": 0,
           "min-rounds": 5,
           "max-rounds": 41, "min-gain": 0.01, "check-threads": 0}

# Operators that only convert between layouts at the edge of a chain of
# convolutions in the blocked layout onnxruntime's CPU provider uses.
LAYOUT_REORDERS = {"ReorderInput", "ReorderOutput"}

def parse_args(argv):
    opts = dict(OPTIONS, dims={})
    files = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--dim" and i + 1 < len(argv):
            name, _, size = argv[i + 1].rpartition("=")
            if not name or not size.isdigit():
                raise HarnessError(f"--dim needs NAME=SIZE, got {argv[i + 1]}")
            opts["dims"][name] = int(size)
            i += 2
        elif a == "--float-model" and i + 1 < len(argv):
            if not os.path.isfile(argv[i + 1]):
                raise HarnessError(f"--float-model: no file {argv[i + 1]}")
            opts["float-model"] = argv[i + 1]
            i += 2
        elif a.startswith("--"):
            key = a[2:]
            if key not in opts or i + 1 >= len(argv):
                raise HarnessError(f"bad option {a}")
            try:
                value = float(argv[i + 1])
            except ValueError:
                raise HarnessError(f"{a} needs a number") from None
            if value != value or value in (float("inf"), float("-inf")):
                raise HarnessError(f"{a} needs a number")
            opts[key] = value
            i += 2
        else:
            files.append(a)
            i += 1
    for key in ("runs", "warmup", "seed", "threads", "profile", "min-rounds", "max-rounds",
                "check-threads"):
        opts[key] = int(opts[key])
    if opts["runs"] < 1:
        raise HarnessError("--runs must be at least 1")
    return opts, files


def verify(opts, files):
    if len(files) != 2:
        raise HarnessError("verify needs two models: ORIGINAL OPTIMIZED")
    fa, fb = files
    a = open_session(fa, opts["threads"])
    b = open_session(fb, opts["threads"])
    same_inputs(a.get_inputs(), b.get_inputs())
    feeds = inputs_for(a, opts["seed"])
    outputs, ok = compare_outputs(outputs_by_name(a, feeds), outputs_by_name(b, feeds), opts)
    checker = checker_report(fb)
    for _ in range(opts["warmup"]):
        a.run(None, feeds)
        b.run(None, feeds)
    ta, tb = [], []
    for _ in range(opts["runs"]):
        ta.append(timed_run(a, feeds)[1])
        tb.append(timed_run(b, feeds)[1])
    sa, sb = summary(ta), summary(tb)
    # The speedup is paired: run i of A and run i of B ran back to back, so
    # their ratio cancels the machine's slower drifts; its median and spread
    # are over the pairs.
    ratios = sorted(x / y for x, y in zip(ta, tb))
    return {
        "original": fa, "optimized": fb, "ok": ok, "rtol": opts["rtol"], "atol": opts["atol"],
        "seed": opts["seed"], "outputs": outputs,
        "checker": checker,
        "onnxruntime": ort.__version__,
        "latency": {"original": sa, "optimized": sb},
        "speedup": quantile(ratios, 0.5), "speedup_p10": quantile(ratios, 0.1),
        "speedup_p90": quantile(ratios, 0.9),
        "speedup_of_medians": sa["median_us"] / sb["median_us"],
    }


def clock_run(session, feeds, cpu):
    """One run's time in microseconds: the calling thread's CPU time when
    `cpu` (with one intra-op thread onnxruntime runs the kernels on the
    calling thread, so time the machine's other load takes from it does
    not count), else the wall clock."""
    read = time.thread_time_ns if cpu else time.perf_counter_ns
    t0 = read()
    session.run(None, feeds)
    return (read() - t0) / 1e3


def time_session(session, feeds, opts, cpu, deadline):
    """A session's run times: after the warm-up, at least min-rounds runs,
    then until its median is settled, max-rounds are run or the deadline
    passes."""
    for _ in range(opts["warmup"]):
        session.run(None, feeds)
    times = []
    while len(times) < opts["max-rounds"]:
        times.append(clock_run(session, feeds, cpu))
        if len(times) >= opts["min-rounds"] and (
                settled(times, opts["min-gain"]) or time.perf_counter() > deadline):
            break
    return times


# The order of the sessions, input (0) and candidate (1): blocks of four
# whose order reverses each time, so that a drift in the machine's speed
# that is linear in time weighs on both alike within each block.
SESSION_ORDER = [0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0]


def stop_before_block(k, per_block, settled, start, checking, seconds, second_block):
    """Whether step k (a session, or a pair) of a timing, at the start of a
    block of `per_block` steps, is not run: the verdict so far is settled,
    or the block (as long as the blocks so far took each) would not end
    within `seconds` (the second block within `second_block`, where that is
    more). checking: the first steps' check time, spent once, not a block's."""
    if k == 0 or k % per_block:
        return False
    elapsed = time.perf_counter() - start - checking
    limit = max(seconds, second_block) if k == per_block else seconds
    return settled() or checking + elapsed * (k + per_block) / k > limit


def time_sessions(files, threads, opts, seconds, gain, first_pair=None, second_block=0):
    """The two models' sessions timed one at a time (each released before
    the next loads, so onnxruntime holds one model's weights at once) with
    `threads` intra-op threads, in blocks of four (SESSION_ORDER) until the
    speedup's interval settles against 1 + gain (speedup_verdict), the
    sessions run out or the next block would not end within `seconds`. One
    thread is timed by the session thread's CPU time, more by the wall
    clock. first_pair(k, session), where given, sees the first two sessions
    before they are timed (k 0 and 1) and may stop everything (False). No
    single pair of sessions decides: two sessions of one model differ by up
    to ~9% on a quiet 2-core machine and by over a third beside load on the
    other core (a candidate measured at 0.73x on one pair, 1.06x on full
    blocks), so the first verdict comes from a whole block. The second block
    may end as late as `second_block` seconds (where that is more than
    `seconds`): one block leaves each model two sessions, whose interval
    (Student's t at 2 degrees of freedom, 2.92 times the spread) is half
    again as wide as two blocks' (6 degrees, 1.94); on a noisy machine a
    model of 0.4 s a run, which fits one block in 20 s, was kept at 1.17x
    [1.00, 1.36] after one and written at 1.11x [1.01, 1.21] after two.
    Returns the run times per model, per session, or None."""
    start = time.perf_counter()
    cpu = threads == 1
    times = ([], [])
    checking = 0.0  # first_pair's time: once, not a block's
    # A session's median is one sample, and one model's sessions differ by
    # more than their runs: many short sessions beat few long ones (an
    # eighth of a block's share of the time each).
    per_session = seconds / 16
    for k, model in enumerate(SESSION_ORDER):
        if stop_before_block(k, 4, lambda: speedup_verdict(*times, gain)["settled"], start,
                             checking, seconds, second_block):
            break
        session = open_session(files[model], threads)
        if first_pair and k < 2:
            began = time.perf_counter()
            if not first_pair(k, session):
                return None
            checking += time.perf_counter() - began
        deadline = time.perf_counter() + per_session
        times[model].append(time_session(session, opts["feeds"], opts, cpu, deadline))
        del session
        release_memory()
    return times


# A round runs each model of a pair for about this long (at least once):
# the median of a burst leaves out its first run, which finds the caches
# holding the other model's weights.
BURST_SECONDS = 0.1
# Pairs of sessions per block: the first block's interval has two degrees of
# freedom (Student's t 2.92), where two pairs would leave one (6.31).
PAIRS_PER_BLOCK = 3
# The fewest rounds a pair runs (fewer where --min-rounds asks): a pair is
# one sample however long it runs, so the time of a slow model goes further
# in more pairs. The quantized GPT-2 (0.4 s a run, two sessions loading in 3
# s) fitted one block of five-round pairs in 20 s and was kept at 1.08x
# [0.99, 1.18].
PAIR_MIN_ROUNDS = 3


def available_memory():
    """The memory the system can give without swapping (MemAvailable), in
    bytes, or None where /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# What a live session holds against its model file's size: two sessions of
# the 559 MB BART-base held 1.9 GB; four leaves room for the accuracy
# check's reference session beside a pair.
SESSION_MEMORY_PER_BYTE = 4


def pair_fits(files):
    """Whether the input's and the candidate's sessions can be held together
    (time_pairs) without pressing on the machine's memory; otherwise the
    one-thread decision times them one at a time (time_sessions)."""
    free = available_memory()
    need = SESSION_MEMORY_PER_BYTE * sum(os.path.getsize(f) for f in files)
    return free is None or need < free


def time_pair(sessions, feeds, opts, deadline, first):
    """Rounds of two live one-thread sessions (input, candidate): each round
    runs a burst of each model back to back, `first` (0 or 1) first in even
    rounds and the other in odd ones, at least PAIR_MIN_ROUNDS rounds (or
    min-rounds, where fewer), then until the median of the rounds' ratios
    is settled, max-rounds are run or the deadline passes. Each session is
    first warmed by up to --warmup runs (at least one; no more once a burst's
    time is spent). Returns each round's burst medians (input_us,
    candidate_us), by the thread's CPU time, and how many runs were timed."""
    bursts = []
    for session in sessions:
        began, warm = time.perf_counter(), 0
        while warm < max(opts["warmup"], 1) and (
                warm == 0 or time.perf_counter() - began < BURST_SECONDS):
            session.run(None, feeds)
            warm += 1
        each = (time.perf_counter() - began) / warm
        bursts.append(max(1, round(BURST_SECONDS / max(each, 1e-6))))
    least = min(opts["min-rounds"], PAIR_MIN_ROUNDS)
    rounds, runs = [], 0
    while len(rounds) < opts["max-rounds"]:
        order = (first, 1 - first) if len(rounds) % 2 == 0 else (1 - first, first)
        medians = [0.0, 0.0]
        for m in order:
            medians[m] = median([clock_run(sessions[m], feeds, True) for _ in range(bursts[m])])
        rounds.append(tuple(medians))
        runs += sum(bursts)
        if len(rounds) >= least and (
                settled([a / b for a, b in rounds], opts["min-gain"]) or
                time.perf_counter() > deadline):
            break
    return rounds, runs


def time_pairs(files, opts, seconds, gain, first_pair=None, second_block=0):
    """The one-thread decision's timing: pairs of sessions, the input's and
    the candidate's held together (each pair released before the next
    loads) and run in alternating rounds (time_pair), so that the machine's
    changing speed, which moves two sessions timed one after the other by
    more than a tenth on a busy host, weighs on both alike. Pairs come in
    blocks of PAIRS_PER_BLOCK, which load input or candidate first by turns,
    until the speedup's interval settles against 1 + gain (paired_verdict)
    or the next block would not end within `seconds` (the second block
    within `second_block`, where that is more: one block's interval is wide
    for a slow model). first_pair(k, session) sees the first pair's input
    (k 0) and candidate (k 1) before they are timed and may stop everything
    (False). Returns each pair's speedup, each model's per-pair medians and
    the number of runs timed, or None."""
    start = time.perf_counter()
    ratios, medians, runs = [], ([], []), 0
    checking = 0.0  # first_pair's time: once, not a block's
    per_pair = seconds / (4 * PAIRS_PER_BLOCK)
    for k in range(3 * PAIRS_PER_BLOCK):
        if stop_before_block(k, PAIRS_PER_BLOCK, lambda: paired_verdict(ratios, gain)["settled"],
                             start, checking, seconds, second_block):
            break
        sessions = [None, None]
        for model in ((0, 1) if k % 2 == 0 else (1, 0)):
            sessions[model] = open_session(files[model], 1)
        if first_pair and k == 0:
            began = time.perf_counter()
            if not (first_pair(0, sessions[0]) and first_pair(1, sessions[1])):
                return None
            checking += time.perf_counter() - began
        rounds, timed = time_pair(sessions, opts["feeds"], opts, time.perf_counter() + per_pair,
                                  k % 2)
        runs += timed
        del sessions
        release_memory()
        ratios.append(median([a / b for a, b in rounds]))
        for model in (0, 1):
            medians[model].append(median([r[model] for r in rounds]))
    return ratios, medians, runs


def accuracy_feeds(session, opts, seeds):
    """The seeded feeds of the accuracy check's inputs `seeds` (a range of
    indices): input 0 is the timing's feeds, input i the seed i after it."""
    return [inputs_for(session, opts["seed"] + i, opts["dims"]) for i in seeds]


def outputs_on(path, opts, seeds):
    """The outputs of the model at `path` on the accuracy check's inputs
    `seeds`, from a session of its own that is gone when this returns."""
    session = open_session(path, opts["threads"])
    out = [outputs_by_name(session, feeds) for feeds in accuracy_feeds(session, opts, seeds)]
    del session
    release_memory()
    return out


def decide(opts, files):
    """decide_with_reference, the stand-in for the float model a quantized
    input approximates (where one is made) in a folder gone when it returns."""
    with tempfile.TemporaryDirectory(prefix="ort-reference-", ignore_cleanup_errors=True) as folder:
        return decide_with_reference(opts, files, folder)


def decide_with_reference(opts, files, folder):
    """Whether the candidate is measurably faster (see the module's help):
    its outputs compared, then the sessions timed on one thread by the
    thread's CPU time, which decides (time_sessions); where it is faster and
    --check-threads asks for more threads, sessions with those threads timed
    by the wall clock must not find it measurably slower."""
    if len(files) != 2:
        raise HarnessError("decide needs two models: INPUT CANDIDATE")
    start = time.perf_counter()
    check = opts["check-threads"]
    result = {"input": files[0], "candidate": files[1], "onnxruntime": ort.__version__,
              "threads": opts["threads"],
              "clock": "thread CPU time" if opts["threads"] == 1 else "wall clock",
              "min_gain": opts["min-gain"], "rounds": 0, "faster": False}
    # The checker first: its parse of the candidate is released before any
    # session loads.
    checker = checker_report(files[1])
    inputs, expected = [], []
    # A quantized input: the outputs of the float model it approximates
    # (--float-model, else quantized.float_reference's stand-in; none for a
    # model with no activation Quantize/Dequantize pair), one session that
    # is gone before the timed ones load.
    reference_model = opts.get("float-model") or quantized.float_reference(files[0], folder)
    reference = (None if reference_model is None else
                 outputs_on(reference_model, opts, range(quantized.ACCURACY_INPUTS)))

    # The outputs compared: on the timing's feeds, and for a quantized input
    # on as many as its reference has.
    count = 1 if reference is None else len(reference)

    def first_pair(k, session):
        if k == 0:
            inputs.append(input_metas(session))
            feeds = accuracy_feeds(session, opts, range(count))
            opts["feeds"] = feeds[0]
            expected.extend(outputs_by_name(session, f) for f in feeds)
            return True
        same_inputs(inputs[0], input_metas(session), symbolic=True)
        produced = [outputs_by_name(session, f) for f in accuracy_feeds(session, opts, range(count))]
        outputs, ok, how = judge(expected, produced, reference, opts)
        if reference is not None and quantized.to_confirm(outputs):
            # Less accurate on the first inputs: the verdict is taken over
            # more (the input's and the reference's sessions load again).
            more = range(count, quantized.CONFIRMING_INPUTS)
            produced.extend(outputs_by_name(session, f) for f in accuracy_feeds(session, opts, more))
            reference.extend(outputs_on(reference_model, opts, more))
            expected.extend(outputs_on(files[0], opts, more))
            outputs, ok, how = judge(expected, produced, reference, opts)
        if reference is not None:
            result["compared_by"] = how
        result.update(outputs=outputs, outputs_match=ok, checker=checker)
        return ok and checker["ok"]

    # Two thirds of the time decide; the check at more threads has the rest,
    # and at least a third of --seconds where the decision took a second
    # block past its share.
    share = 2 / 3 if check > 1 else 1
    seconds, second_block = opts["seconds"] * share, opts["max-seconds"] * share
    if opts["threads"] == 1 and pair_fits(files):
        timed = time_pairs(files, opts, seconds, opts["min-gain"], first_pair, second_block)
        if timed is not None:
            ratios, session_medians, result["rounds"] = timed
            result.update(paired_verdict(ratios, opts["min-gain"]))
            result["pair_speedups"] = [round(r, 4) for r in ratios]
    else:
        timed = time_sessions(files, opts["threads"], opts, seconds, opts["min-gain"],
                              first_pair, second_block)
        if timed is not None:
            result.update(speedup_verdict(*timed, opts["min-gain"]))
            result["rounds"] = sum(len(t) for model in timed for t in model)
            session_medians = [[median(s) for s in model] for model in timed]
    if timed is not None:
        result["input_median_us"] = median(session_medians[0])
        result["candidate_median_us"] = median(session_medians[1])
        # Each session's median in the order they ran: the samples the
        # interval is made of (with one thread, of their pairs' ratios).
        result["session_medians_us"] = [[round(m, 1) for m in model] for model in session_medians]
    if result["faster"] and check > 1:
        rest = max(opts["seconds"] - (time.perf_counter() - start), opts["seconds"] / 3)
        more = time_sessions(files, check, opts, rest, 0)
        verdict = speedup_verdict(*more, 0)
        slower = verdict["speedup_high"] < 1
        result["at_threads"] = {"threads": check, "clock": "wall clock", "slower": slower,
                                **{k: verdict[k] for k in ("speedup", "speedup_low",
                                                           "speedup_high", "sessions")}}
        result["rounds"] += sum(len(t) for model in more for t in model)
        result["faster"] = not slower
    result["seconds"] = time.perf_counter() - start
    return result


def kernels_by_run(events):
    """The kernels of an onnxruntime profile, one list per model_run event
    (in the order the runs happened)."""
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e["ts"])
    spans = [(e["ts"], e["ts"] + e["dur"], []) for e in runs]
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        for start, end, kernels in spans:
            if start <= e["ts"] <= end:
                kernels.append(e)
                break
    return [kernels for _, _, kernels in spans]


def first_shape(e, key):
    """The shape of an event's first input or output, or None."""
    entries = (e.get("args") or {}).get(key)
    if not isinstance(entries, list) or not entries:
        return None
    shape = next(iter(entries[0].values()), None)
    return shape if isinstance(shape, list) else None


def kernels_per_node(runs):
    """Every kernel with its first input and output shapes and its time over
    the runs (middle_mean)."""
    nodes = {}
    for run, kernels in enumerate(runs):
        for e in kernels:
            op = e["args"]["op_name"]
            node = nodes.setdefault(f"{e['name']} {op}", {
                "op": op, "input": first_shape(e, "input_type_shape"),
                "output": first_shape(e, "output_type_shape"), "samples": [0.0] * len(runs)})
            node["samples"][run] += e["dur"]
    return [{"op": n["op"], "input": n["input"], "output": n["output"],
             "us": middle_mean(n["samples"])} for n in nodes.values()]


def time_once(file, opts):
    folder = tempfile.mkdtemp(prefix="ort-profile-") if opts["profile"] else None
    try:
        s = open_session(file, opts["threads"], folder and os.path.join(folder, "run"))
        feeds = inputs_for(s, opts["seed"])
        for _ in range(opts["warmup"]):
            s.run(None, feeds)
        t = [timed_run(s, feeds)[1] for _ in range(opts["runs"])]
        if not folder:
            return summary(t)
        with open(s.end_profiling(), encoding="utf-8") as f:
            events = json.load(f)
        # The profile holds the warm-up runs too: keep the timed ones.
        runs = kernels_by_run(events)[opts["warmup"]:]
        if len(runs) != opts["runs"]:
            raise HarnessError(f"the profile shows {len(runs)} timed runs, not {opts['runs']}")
        for kernels in runs:
            for e in kernels:
                e["dur"] = max(e["dur"] - opts["kernel-offset"], opts["kernel-floor"])
        per_run = [sum(e["dur"] for e in kernels if e["args"]["op_name"] not in LAYOUT_REORDERS)
                   for kernels in runs]
        return {**summary(t), "kernel_us": middle_mean(per_run), "kernels": kernels_per_node(runs)}
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def time_models(opts, files):
    results = []
    for model in files:
        # A model the harness cannot run (an input type it does not generate,
        # an operator onnxruntime lacks) is reported, not fatal.
        try:
            results.append({"model": model, **time_once(model, opts)})
        except Exception as err:  # onnxruntime raises several types
            results.append({"model": model, "error": str(err)})
    return {"models": results}


def main(argv):
    if not argv:
        raise HarnessError("usage: ort_run.py verify|decide|time FILES... [--OPTION VALUE]...")
    command, rest = argv[0], argv[1:]
    opts, files = parse_args(rest)
    if command == "verify":
        result = verify(opts, files)
    elif command == "decide":
        result = decide(opts, files)
    elif command == "time":
        result = time_models(opts, files)
    else:
        raise HarnessError(f"unknown command '{command}' (verify, decide or time)")
    sys.stdout.write(json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except HarnessError as err:
        sys.stderr.write(f"ort_run: {err}\n")
        sys.exit(1)
