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
  pybind11-dev python3-dev python3-venv python3-numpy python3-pytest python3-torch
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

# The Python packages from PyPI, at the versions tools/requirements.txt pins,
# in a virtual environment over Debian's python3 (build/venv, or
# $SATURN_VENV): onnxruntime for the harness (saturn verify, calibrate,
# --keep-faster, real_latency), onnx for its checker, numpy, pytest. It sees
# Debian's packages too (--system-site-packages): the Python module is built
# for that interpreter. Reinstalled only when the pins change.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${SATURN_VENV:-$root/build/venv}"
requirements="$root/tools/requirements.txt"
stamp="$venv/.saturn-requirements"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$requirements" "$stamp"; then
  echo "install-deps: installing the Python packages of tools/requirements.txt into $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$requirements" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  cp "$requirements" "$stamp"
fi
