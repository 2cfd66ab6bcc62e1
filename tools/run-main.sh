#!/usr/bin/env bash
# Installs what is missing, builds, and runs saturn's main job on built-in
# models: NasRNN from the zoo and the SqueezeNet 1.1 ONNX fixture, each
# optimized with the MCTS search under a 2,000 e-node budget and written back
# as ONNX, which saturn then loads again and runs in its interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
build/tools/saturn optimize nasrnn --search mcts --budget-nodes 2000 --cost roofline:gpu-a100 \
  -o build/nasrnn_optimized.onnx --report build/nasrnn_report.json
build/tools/saturn check build/nasrnn_optimized.onnx --eval
build/tools/saturn optimize tensor/fixtures/squeezenet1_1.onnx --search mcts --budget-nodes 2000 \
  --cost roofline:gpu-a100 -o build/squeezenet1_1_optimized.onnx
build/tools/saturn check build/squeezenet1_1_optimized.onnx --eval
