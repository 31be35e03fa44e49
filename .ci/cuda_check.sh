#!/usr/bin/env bash
# The CUDA-path checks that need no GPU (docs/cuda.md): installs CuPy with
# NVRTC and the CUDA headers (pip wheels, no driver or device needed), then
# runs tests/cuda - NVRTC compile checks for sm_75/80/90, the kernels executed
# on the CPU by the g++ harness, dispatch-without-device tests.  The GPU
# agreement tests (marker `cuda`) skip here and run where a device exists.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet --disable-pip-version-check \
    cupy-cuda12x "nvidia-cuda-nvrtc-cu12==12.9.*" "nvidia-cuda-runtime-cu12==12.9.*"

python -m pytest tests/cuda -q "$@"
