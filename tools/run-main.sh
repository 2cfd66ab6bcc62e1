#!/usr/bin/env bash
# Installs what is missing, builds, and runs saturn's main job: optimizing a
# built-in model (NasRNN) with the MCTS search under a 2,000 e-node budget.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
build/tools/saturn optimize nasrnn --search mcts --budget-nodes 2000 --cost roofline:gpu-a100 \
  -o build/nasrnn_optimized.json --report build/nasrnn_report.json
