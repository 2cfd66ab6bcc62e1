"""Sample statistics the onnxruntime harness (ort_run.py) times by: quantiles
and robust means of run times, when a session's median is settled, and the
speedup of one model's sessions over another's with its interval."""
import math


def quantile(sorted_samples, q):
    pos = (len(sorted_samples) - 1) * q
    lo, hi = int(pos // 1), int(-(-pos // 1))
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def middle_mean(samples):
    """The mean of the middle half of the samples: as robust as the median
    to a slow run, and finer for the profiler's whole microseconds."""
    s = sorted(samples)
    cut = len(s) // 4
    middle = s[cut:len(s) - cut]
    return sum(middle) / len(middle)


def summary(samples):
    s = sorted(samples)
    return {"median_us": quantile(s, 0.5), "p10_us": quantile(s, 0.1),
            "p90_us": quantile(s, 0.9), "runs": len(s)}


def median(samples):
    return quantile(sorted(samples), 0.5)


def settled(samples, min_gain):
    """Whether the median of `samples` is known to a quarter of the gain
    sought: its standard error (1.253 sigma / sqrt(n), sigma from the
    interquartile range) against the median."""
    s = sorted(samples)
    sigma = (quantile(s, 0.75) - quantile(s, 0.25)) / 1.349
    return 1.253 * sigma / len(s) ** 0.5 <= quantile(s, 0.5) * min_gain / 4


# Student's t at one-sided 95% by degrees of freedom (any table of the t
# distribution); past the last entry, 1.645.
T95 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860,
       9: 1.833, 10: 1.812, 12: 1.782, 14: 1.761, 16: 1.746, 20: 1.725, 30: 1.697}


def t95(df):
    return next((T95[k] for k in sorted(T95) if k >= df), 1.645)


def verdict_on_logs(d, spread, half, sessions, min_gain):
    """The verdict on a speedup exp(d) whose 90% interval is exp(d -+ half)
    (each end a one-sided 95% bound), `spread` the logs' standard deviation:
    faster where the low end clears 1 + min_gain, settled where either end
    decides."""
    goal = math.log(1 + min_gain)
    return {"speedup": math.exp(d), "sessions": sessions, "threshold": 1 + min_gain,
            "speedup_low": math.exp(d - half), "speedup_high": math.exp(d + half),
            "noise": math.exp(spread) - 1, "faster": d - half > goal,
            "settled": d - half > goal or d + half <= goal}


def speedup_verdict(a, b, min_gain):
    """a, b: the run times of the input's and the candidate's sessions. A
    session's median is one sample of the model's time: two sessions of one
    model differ by more than their runs vary (where the runtime's buffers
    fall in memory). The speedup is the ratio of the geometric means of the
    session medians; its 90% interval (each end a one-sided 95% bound)
    comes from their spread within each model (Student's t on the logs,
    pooled). The candidate is
    faster when the interval's low end clears 1 + min_gain; it is clearly
    not when the high end does not."""
    la = [math.log(median(s)) for s in a]
    lb = [math.log(median(s)) for s in b]
    d = sum(la) / len(la) - sum(lb) / len(lb)
    df = len(la) + len(lb) - 2
    if df < 1:
        return {**verdict_on_logs(d, 0.0, 0.0, [len(la), len(lb)], min_gain),
                "faster": False, "settled": d <= 0}
    ss = sum((x - sum(la) / len(la)) ** 2 for x in la) + \
        sum((x - sum(lb) / len(lb)) ** 2 for x in lb)
    spread = math.sqrt(ss / df)
    half = t95(df) * spread * math.sqrt(1 / len(la) + 1 / len(lb))
    return verdict_on_logs(d, spread, half, [len(la), len(lb)], min_gain)


def paired_verdict(ratios, min_gain):
    """ratios: the speedups of pairs of sessions held together, each the
    median of its rounds' input over candidate times. Each pair is one
    sample (its two sessions may run a few percent off their models' times
    for as long as they live); the speedup is their geometric mean, with a
    90% interval from their spread (Student's t on the logs, one fewer
    degree than pairs). One pair decides nothing."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    d = sum(logs) / n
    if n < 2:
        return {**verdict_on_logs(d, 0.0, 0.0, [n, n], min_gain),
                "faster": False, "settled": False}
    spread = math.sqrt(sum((x - d) ** 2 for x in logs) / (n - 1))
    return verdict_on_logs(d, spread, t95(n - 1) * spread / math.sqrt(n), [n, n], min_gain)
