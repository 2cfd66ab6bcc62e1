#!/usr/bin/env node
// A stand-in for ort/harness/ort-run.js that crashes like onnxruntime can:
// on any batch of more than one model, and on the model named op0.onnx. The
// models it does "time" take 5 us. Tests point SATURN_ORT_DIR at a copy.
'use strict';

const files = process.argv.slice(3).filter((a, i, all) => !a.startsWith('--') && !(all[i - 1] || '').startsWith('--'));
if (process.argv[2] !== 'time' || files.length !== 1 || files[0].endsWith('op0.onnx')) process.abort();
const model = { model: files[0], median_us: 5, p10_us: 5, p90_us: 5, runs: 1, kernel_us: 5, kernels: [] };
process.stdout.write(JSON.stringify({ models: [model] }) + '\n');
