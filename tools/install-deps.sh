#!/usr/bin/env bash
# Installs the Debian packages saturn needs, and only those that are missing.
# Idempotent and quiet: `apt-get update` runs only when something must be installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libabsl-dev libboost-dev libfmt-dev libtbb-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libcli11-dev libboost-graph-dev coinor-libcbc-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  clang libclang-rt-14-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch
  libboost-mpi-dev libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The onnxruntime harness (saturn verify, saturn calibrate): onnxruntime-node
# from the npm registry, CPU only (ONNXRUNTIME_NODE_INSTALL=skip: no CUDA
# downloads), at the version package-lock.json pins.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install-deps: installing nodejs npm"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
ort_dir="$(dirname "$0")/../ort/harness"
if [[ ! -d "$ort_dir/node_modules/onnxruntime-node" ]]; then
  echo "install-deps: installing onnxruntime-node"
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --silent >/dev/null)
fi
