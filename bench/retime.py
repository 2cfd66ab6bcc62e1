"""The true speedup of a candidate over its input in onnxruntime, for the
benchmarks that judge saturn's decisions (small_gains.py,
corpus/decision_under_load.py): `sessions` sessions of each model, one at a
time in the harness's alternating order, each the median of `runs` runs
after a warm-up (by the thread's CPU time with one thread, else the wall
clock), and the ratio of the geometric means with its 90% interval (the
harness's own statistic, ort/harness/ort_run.py speedup_verdict). Needs
onnxruntime and numpy (the venv's python or the corpus environment's)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "ort", "harness"))
import ort_run  # noqa: E402  (the harness is a script, not a package)


def true_speedup(original, candidate, threads, dims=None, sessions=8, runs=30, seed=1):
    """(speedup, low, high) of `candidate` over `original`."""
    opts = dict(ort_run.OPTIONS, dims=dims or {}, **{"min-rounds": runs, "max-rounds": runs,
                                                      "warmup": 3})
    times = ([], [])
    feeds = None
    for k in range(2 * sessions):
        model = ort_run.SESSION_ORDER[k % len(ort_run.SESSION_ORDER)]
        session = ort_run.open_session((original, candidate)[model], threads)
        if feeds is None:
            feeds = ort_run.inputs_for(session, seed, opts["dims"])
        times[model].append(ort_run.time_session(session, feeds, opts, threads == 1,
                                                 deadline=float("inf")))
        del session
        ort_run.release_memory()
    v = ort_run.speedup_verdict(*times, 0)
    return v["speedup"], v["speedup_low"], v["speedup_high"]
