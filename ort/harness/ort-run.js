#!/usr/bin/env node
// saturn's onnxruntime harness (CPU execution provider, graph optimization
// level "all"). The saturn command line calls it; it prints one JSON object.
//
//   node ort-run.js verify A.onnx B.onnx [--runs N] [--warmup N] [--rtol R]
//                   [--atol A] [--seed S] [--threads T]
//     Runs both models on the same seeded random inputs, compares every
//     output, and times them: each model in a fresh session, the timed runs
//     alternating A, B, A, B, ... so that drift in the machine's speed hits
//     both alike.
//   node ort-run.js time M.onnx... [--runs N] [--warmup N] [--seed S] [--threads T]
//                   [--profile 0|1] [--kernel-offset US] [--kernel-floor US]
//     The median latency of each model (for measured cost tables): the wall
//     time of a run (median_us) and, from onnxruntime's profiler, the time
//     its kernels took (kernel_us, the mean of the middle half of the runs),
//     which leaves out what feeding the inputs
//     and copying the outputs back to JavaScript costs, and the layout
//     reorders a lone convolution needs at its edges (a model pays those once
//     per chain of convolutions, not per operator). Also each kernel's own
//     time (kernels: operator, first input and output shapes, us), so
//     that a caller can attribute the reorders an operator causes. Each
//     kernel's time is first lowered by --kernel-offset (what the profiler
//     adds to it) and raised to at least --kernel-floor. With --profile 0
//     the runs are not profiled, and only their wall time is reported.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const opts = {
    runs: 20, warmup: 3, rtol: 1e-3, atol: 1e-4, seed: 1, threads: 2,
    profile: 1, 'kernel-offset': 0, 'kernel-floor': 0, files: [],
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const key = a.slice(2);
      if (!(key in opts) || key === 'files' || i + 1 >= argv.length) throw new Error(`bad option ${a}`);
      const v = Number(argv[++i]);
      if (!Number.isFinite(v)) throw new Error(`${a} needs a number`);
      opts[key] = v;
    } else {
      opts.files.push(a);
    }
  }
  if (!(opts.runs >= 1)) throw new Error('--runs must be at least 1');
  return opts;
}

// FNV-1a over a string, then a 32-bit mixing generator (mulberry32): the
// same inputs for the same seed and input name, in every run.
function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; ++i) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
function generator(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// float16 as its 16 bits (rounded to nearest, ties to even) and back.
const f32Scratch = new Float32Array(1), u32Scratch = new Uint32Array(f32Scratch.buffer);
function halfBits(x) {
  f32Scratch[0] = x;
  const b = u32Scratch[0];
  const sign = (b >>> 16) & 0x8000, biased = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (biased === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const exp = biased - 127 + 15;
  if (exp >= 31) return sign | 0x7c00;
  let shift = 13, h;
  if (exp <= 0) {  // a subnormal half
    if (exp < -10) return sign;
    mant |= 0x800000;
    shift = 14 - exp;
    h = mant >>> shift;
  } else {
    h = (exp << 10) | (mant >>> 13);
  }
  const rest = mant & ((1 << shift) - 1), halfway = 1 << (shift - 1);
  if (rest > halfway || (rest === halfway && (h & 1))) h += 1;  // a carry rounds up the exponent
  return sign | h;
}
function halfValue(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >>> 10) & 0x1f, mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function randomTensor(meta, seed) {
  if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor`);
  const dims = meta.shape.map((d) => {
    if (typeof d !== 'number' || d < 0) throw new Error(`input '${meta.name}' has a dynamic shape`);
    return d;
  });
  const n = dims.reduce((a, b) => a * b, 1);
  const next = generator(seed ^ hash32(meta.name));
  switch (meta.type) {
    case 'float32': {
      const v = new Float32Array(n);
      for (let i = 0; i < n; ++i) v[i] = 2 * next() - 1;
      return new ort.Tensor('float32', v, dims);
    }
    case 'float16': {
      const v = new Uint16Array(n);
      for (let i = 0; i < n; ++i) v[i] = halfBits(2 * next() - 1);
      return new ort.Tensor('float16', v, dims);
    }
    case 'int64': {
      const v = new BigInt64Array(n);
      for (let i = 0; i < n; ++i) v[i] = BigInt(Math.floor(10 * next()));
      return new ort.Tensor('int64', v, dims);
    }
    case 'int32': {
      const v = new Int32Array(n);
      for (let i = 0; i < n; ++i) v[i] = Math.floor(10 * next());
      return new ort.Tensor('int32', v, dims);
    }
    case 'bool': {
      const v = new Uint8Array(n);
      for (let i = 0; i < n; ++i) v[i] = next() < 0.5 ? 1 : 0;
      return new ort.Tensor('bool', v, dims);
    }
    default:
      throw new Error(`input '${meta.name}' has element type ${meta.type}, which the harness does not generate`);
  }
}

async function openSession(file, threads, profilePrefix) {
  return ort.InferenceSession.create(file, {
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    ...(profilePrefix ? { enableProfiling: true, profileFilePrefix: profilePrefix } : {}),
  });
}

// Operators that only convert between layouts at the edge of a chain of
// convolutions in the blocked layout onnxruntime's CPU provider uses.
const LAYOUT_REORDERS = new Set(['ReorderInput', 'ReorderOutput']);

// The kernels of an onnxruntime profile, one list per model_run event (in
// the order the runs happened).
function kernelsByRun(events) {
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run')
    .sort((a, b) => a.ts - b.ts).map((e) => ({ start: e.ts, end: e.ts + e.dur, kernels: [] }));
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const run = runs.find((r) => e.ts >= r.start && e.ts <= r.end);
    if (run) run.kernels.push(e);
  }
  return runs.map((r) => r.kernels);
}

// For each run, the summed time of its kernels (layout reorders excepted),
// in microseconds.
function kernelTimePerRun(runs) {
  return runs.map((kernels) => kernels
    .filter((e) => !(e.args && LAYOUT_REORDERS.has(e.args.op_name)))
    .reduce((us, e) => us + e.dur, 0));
}

// The shape of an event's first input or output ('input_type_shape' or
// 'output_type_shape'), or null.
function firstShape(e, key) {
  const list = e.args && e.args[key];
  if (!Array.isArray(list) || list.length === 0) return null;
  const shape = Object.values(list[0])[0];
  return Array.isArray(shape) ? shape : null;
}

// Every kernel with its first input and output shapes and its time
// over the runs (middleMean).
function kernelsPerNode(runs) {
  const nodes = new Map();
  runs.forEach((kernels, run) => {
    for (const e of kernels) {
      const key = `${e.name} ${e.args.op_name}`;
      if (!nodes.has(key)) {
        nodes.set(key, { op: e.args.op_name, input: firstShape(e, 'input_type_shape'),
          output: firstShape(e, 'output_type_shape'), samples: new Array(runs.length).fill(0) });
      }
      nodes.get(key).samples[run] += e.dur;
    }
  });
  return [...nodes.values()].map(({ samples, ...k }) => ({ ...k, us: middleMean(samples) }));
}

function inputsFor(session, seed) {
  const feeds = {};
  for (const meta of session.inputMetadata) feeds[meta.name] = randomTensor(meta, seed);
  return feeds;
}

async function timedRun(session, feeds) {
  const t0 = process.hrtime.bigint();
  const out = await session.run(feeds);
  return { out, us: Number(process.hrtime.bigint() - t0) / 1e3 };
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
// The mean of the middle half of the samples: as robust as the median to a
// slow run, and finer for the profiler's whole microseconds (a median of a
// small operator's runs moves in steps of 0.5 us).
function middleMean(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const middle = s.slice(Math.floor(s.length / 4), s.length - Math.floor(s.length / 4));
  return middle.reduce((sum, x) => sum + x, 0) / middle.length;
}
function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { median_us: quantile(s, 0.5), p10_us: quantile(s, 0.1), p90_us: quantile(s, 0.9), runs: s.length };
}

// Largest |a-b| / (atol + rtol*|b|) over the elements (<= 1 means close).
function compare(a, b, rtol, atol) {
  if (a.type !== b.type || a.dims.join(',') !== b.dims.join(','))
    return { ratio: Infinity, max_abs: Infinity, detail: `shape or type ${a.type}[${a.dims}] vs ${b.type}[${b.dims}]` };
  let ratio = 0, maxAbs = 0;
  if (a.type === 'string') {
    const same = a.data.every((x, i) => x === b.data[i]);
    return same ? { ratio: 0, max_abs: 0 } : { ratio: Infinity, max_abs: Infinity, detail: 'strings differ' };
  }
  const value = a.type === 'float16' ? halfValue : Number;
  for (let i = 0; i < a.data.length; ++i) {
    const x = value(a.data[i]), y = value(b.data[i]);
    if (x === y) continue;  // also equal infinities, and 0 with atol 0
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (Number.isNaN(x) !== Number.isNaN(y)) return { ratio: Infinity, max_abs: Infinity, detail: `NaN at ${i}` };
      continue;
    }
    const d = Math.abs(x - y);
    maxAbs = Math.max(maxAbs, d);
    ratio = Math.max(ratio, d / (atol + rtol * Math.abs(y)));
  }
  return { ratio, max_abs: maxAbs };
}

async function verify(opts) {
  if (opts.files.length !== 2) throw new Error('verify needs two models: ORIGINAL OPTIMIZED');
  const [fa, fb] = opts.files;
  const a = await openSession(fa, opts.threads);
  const b = await openSession(fb, opts.threads);
  // Inputs are fed by name: the same names, types and shapes, in any order.
  const names = (s) => s.inputMetadata.map((m) => `${m.name}:${m.type}[${m.shape}]`).sort().join(' ');
  if (names(a) !== names(b)) throw new Error(`the models' inputs differ: ${names(a)} vs ${names(b)}`);
  const feeds = inputsFor(a, opts.seed);
  const ra = await a.run(feeds), rb = await b.run(feeds);
  const outputs = [];
  let ok = true;
  for (const name of a.outputNames) {
    if (!(name in rb)) {
      outputs.push({ name, ok: false, detail: 'missing from the optimized model' });
      ok = false;
      continue;
    }
    const c = compare(rb[name], ra[name], opts.rtol, opts.atol);
    const good = c.ratio <= 1;
    ok = ok && good;
    outputs.push({ name, ok: good, max_abs_diff: c.max_abs, error_ratio: c.ratio, ...(c.detail ? { detail: c.detail } : {}) });
  }
  for (let i = 0; i < opts.warmup; ++i) {
    await a.run(feeds);
    await b.run(feeds);
  }
  const ta = [], tb = [];
  for (let i = 0; i < opts.runs; ++i) {
    ta.push((await timedRun(a, feeds)).us);
    tb.push((await timedRun(b, feeds)).us);
  }
  await a.release();
  await b.release();
  const sa = summary(ta), sb = summary(tb);
  // The speedup is paired: run i of A and run i of B ran back to back, so
  // their ratio cancels the machine's slower drifts; its median and spread
  // are over the pairs.
  const ratios = ta.map((x, i) => x / tb[i]).sort((x, y) => x - y);
  return {
    original: fa, optimized: fb, ok, rtol: opts.rtol, atol: opts.atol, seed: opts.seed,
    outputs, latency: { original: sa, optimized: sb },
    speedup: quantile(ratios, 0.5),
    speedup_p10: quantile(ratios, 0.1), speedup_p90: quantile(ratios, 0.9),
    speedup_of_medians: sa.median_us / sb.median_us,
  };
}

// Times a model in a fresh session (see time()).
async function timeOnce(file, opts) {
  const dir = opts.profile ? fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-')) : null;
  try {
    const s = await openSession(file, opts.threads, dir && path.join(dir, 'run'));
    const feeds = inputsFor(s, opts.seed);
    for (let i = 0; i < opts.warmup; ++i) await s.run(feeds);
    const t = [];
    for (let i = 0; i < opts.runs; ++i) t.push((await timedRun(s, feeds)).us);
    if (!dir) {
      await s.release();
      return summary(t);
    }
    const profile = s.endProfiling();
    await s.release();
    const profileFile = typeof profile === 'string' && fs.existsSync(profile) ? profile
      : path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.json')));
    // The profile holds the warm-up runs too: keep the timed ones.
    const runs = kernelsByRun(JSON.parse(fs.readFileSync(profileFile, 'utf8'))).slice(opts.warmup);
    if (runs.length !== opts.runs) throw new Error(`the profile shows ${runs.length} timed runs, not ${opts.runs}`);
    for (const kernels of runs) {
      for (const e of kernels) e.dur = Math.max(e.dur - opts['kernel-offset'], opts['kernel-floor']);
    }
    return { ...summary(t), kernel_us: middleMean(kernelTimePerRun(runs)),
      kernels: kernelsPerNode(runs) };
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function time(opts) {
  const results = [];
  for (const model of opts.files) {
    // A model the harness cannot run (an input type it does not generate,
    // an operator onnxruntime lacks) is reported, not fatal.
    try {
      results.push({ model, ...(await timeOnce(model, opts)) });
    } catch (e) {
      results.push({ model, error: e.message });
    }
  }
  return { models: results };
}

(async () => {
  const [command, ...rest] = process.argv.slice(2);
  const opts = parseArgs(rest);
  let result;
  if (command === 'verify') result = await verify(opts);
  else if (command === 'time') result = await time(opts);
  else throw new Error(`unknown command '${command}' (verify or time)`);
  process.stdout.write(JSON.stringify(result) + '\n');
})().catch((e) => {
  process.stderr.write(`ort-run: ${e.message}\n`);
  process.exit(1);
});
