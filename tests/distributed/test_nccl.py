"""The NCCL engine of fabric.distributed.

Without a GPU the ranks run in separate processes on the fake CuPy
(tests/cuda/fake_cupy.py) with the NCCL test double beside this file
(fake_nccl.py), which exchanges buffers through files and checks stream and
event ordering, pointers and per-rank agreement; nccl_worker.py checks every
operation's values.  The ``cuda`` test runs the same worker on real CuPy and
NCCL where a device exists.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import fabric
import fabric.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "nccl_worker.py")


def _run_ranks(scenario, n, tmp_path, fake=True, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               FAKE_NCCL_DIR=str(tmp_path))
    env.pop("FABRIC_DISTRIBUTED_ENGINE", None)
    if fake:
        env["FAKE"] = "1"
    else:
        env.pop("FAKE", None)
    store = str(tmp_path / f"store-{scenario}")
    procs = [subprocess.Popen([sys.executable, WORKER, scenario, str(r), str(n), store], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for r in range(n)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=timeout)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    text = "\n".join(f"--- rank {r} (exit {p.returncode})\n{o}" for r, (p, o) in enumerate(zip(procs, outs)))
    return [p.returncode for p in procs], outs, text


def test_every_collective_on_the_nccl_double(tmp_path):
    n = 3
    codes, outs, text = _run_ranks("collectives", n, tmp_path)
    assert codes == [0] * n and all(f"OK {r}" in o for r, o in enumerate(outs)), text


def test_ranks_that_disagree_on_a_count_are_caught(tmp_path):
    codes, outs, text = _run_ranks("mismatch", 2, tmp_path)
    assert codes == [0, 0] and all(f"OK {r}" in o for r, o in enumerate(outs)), text


def test_a_silent_peer_times_out_and_aborts(tmp_path):
    codes, outs, text = _run_ranks("timeout", 2, tmp_path)
    assert codes[0] == 0 and "OK 0" in outs[0], text


@pytest.mark.cuda
def test_every_collective_on_real_nccl(tmp_path):
    import cupy

    pytest.importorskip("cupy.cuda.nccl")
    n = min(2, cupy.cuda.runtime.getDeviceCount())
    codes, outs, text = _run_ranks("collectives", n, tmp_path, fake=False, timeout=300)
    assert codes == [0] * n, text


def test_nccl_without_cuda_says_so():
    if fabric.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert not dist.is_nccl_available() and not dist.is_backend_available("nccl")
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in"):
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    assert not dist.is_initialized()


@pytest.mark.filterwarnings("ignore::UserWarning")   # a partial CuPy install warns that libnccl is missing
def test_nccl_without_the_bindings_says_what_to_install(monkeypatch):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cuda"))
    import fake_cupy

    monkeypatch.delitem(sys.modules, "cupy.cuda.nccl", raising=False)   # a real one imported earlier

    with fake_cupy.installed():
        assert fabric.cuda.is_available()
        with pytest.raises(RuntimeError, match=r"fabric-dl\[cuda12\]"):
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        assert not dist.is_initialized()


def test_ddp_on_the_nccl_double(tmp_path):
    codes, outs, text = _run_ranks("ddp", 2, tmp_path)
    assert codes == [0, 0] and all(f"OK {r}" in o for r, o in enumerate(outs)), text
