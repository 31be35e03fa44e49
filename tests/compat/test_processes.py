"""PyTorch programs that start processes run unchanged under ``python -m fabric.run``.

Each program in ``programs/`` runs in its own interpreter (children re-import
``__main__``, so they cannot share the batch runner of ``test_scripts.py``):
on fabric always, and under the real torch where it is installed, which must
print the same lines (these programs print facts, not numbers that depend on
how processes interleave).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 240


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run(args, use_fabric=True):
    cmd = [sys.executable] + (["-m", "fabric.run"] if use_fabric else []) + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=PROGRAMS, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _shm_entries():
    """fabric's names in /dev/shm (other programs on the machine make their own)."""
    return {n for n in os.listdir("/dev/shm") if n.startswith("fab")} if os.path.isdir("/dev/shm") else set()


@pytest.fixture(scope="module")
def hogwild():
    before = _shm_entries()
    out = run(["hogwild.py"])
    return out, _shm_entries() - before


def test_hogwild_under_spawn_trains_the_parents_model(hogwild):
    out, _ = hogwild
    assert out.splitlines() == ["shared True", "exit codes [0, 0]", "parent's parameters trained True",
                                "loss fell by half True"]


def test_no_shared_memory_left_behind(hogwild):
    _, leaked = hogwild
    assert not leaked


def test_every_child_process_gets_the_alias_and_shares_tensors():
    out = run(["children.py"])
    assert out.splitlines() == ["spawn True", "forkserver True", "fork True", "shared writes [1.0, 2.0, 3.0, 10.0, 20.0]",
                                "dataloader [[0.0, 1.0], [4.0, 9.0]] True"]


def test_pytorch_launcher_workers_get_the_alias():
    out = run(["-m", "torch.distributed.run", "--nproc-per-node", "2", "launcher.py"])
    # the two workers share one stdout: their lines may interleave
    found = sorted(re.findall(r"rank \d of 2: \w+ sum [\d.]+", out))
    assert found == ["rank 0 of 2: fabric sum 3.0", "rank 1 of 2: fabric sum 3.0"], out


@pytest.mark.torch
@pytest.mark.parametrize("program", ["hogwild.py", "children.py"])
def test_programs_print_what_torch_prints(program):
    assert run([program]) == run([program], use_fabric=False)
