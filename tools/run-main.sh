#!/usr/bin/env bash
# Installs what is missing, builds, and runs saturn's main job. Until the
# tensor optimizer lands this is the engine benchmark (bench/engine_math).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
build/bench/engine_math
