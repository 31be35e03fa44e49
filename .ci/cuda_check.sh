#!/usr/bin/env bash
# The CUDA-path checks that need no GPU (docs/cuda.md): installs the `cuda12`
# extra of pyproject.toml - CuPy with NVRTC and the CUDA runtime headers (pip
# wheels, no driver or device needed), exactly what a GPU machine gets from
# `pip install fabric[cuda12]` - then runs tests/cuda: NVRTC compile checks
# for sm_75/80/90, the kernels executed on the CPU by the g++ harness (plain
# and race-checked, with the mutation tests), the fake-device matrices and the
# dispatch-without-device tests.  The GPU agreement tests (marker `cuda`) skip
# here and run where a device exists.
set -euo pipefail
cd "$(dirname "$0")/.."

# the extra's requirements, read from pyproject.toml (installing `.[cuda12]`
# itself would also reinstall fabric, which CI has installed already)
mapfile -t reqs < <(python - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["cuda12"]))
PY
)
python -m pip install --quiet --disable-pip-version-check "${reqs[@]}"

python -m pytest tests/cuda -q "$@"
