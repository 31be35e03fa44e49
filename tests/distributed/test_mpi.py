"""The MPI engine of fabric.distributed, run for real under ``mpiexec``
(the ``mpi`` extra: mpi4py + the mpich wheel); skipped cleanly without it.
The worker scripts beside this file check every collective's values and DDP
gradients against single-process references."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

pytest.importorskip("mpi4py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
if not os.access(MPIEXEC, os.X_OK):
    MPIEXEC = shutil.which("mpiexec")
if MPIEXEC is None:
    pytest.skip("no mpiexec (pip install 'fabric-dl[mpi]')", allow_module_level=True)


@pytest.fixture(autouse=True)
def _no_stale_segments():
    """An aborted or killed MPI job leaves MPICH's shared-memory segments behind: remove those its
    ranks created (the job is over when the test ends)."""
    shm = "/dev/shm"
    before = set(os.listdir(shm)) if os.path.isdir(shm) else set()
    yield
    if os.path.isdir(shm):
        for name in set(os.listdir(shm)) - before:
            if name.startswith("mpich_shm_"):
                try:
                    os.unlink(os.path.join(shm, name))
                except OSError:
                    pass


def _env():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FABRIC_DISTRIBUTED_ENGINE", None)
    return env


def _mpiexec(n, *args, timeout=120):
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=_env(), check=False)


def _oks(out, n):
    lines = sorted(line for line in out.stdout.split("\n") if line.startswith("OK"))
    return lines == [f"OK {r}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("backend", ["mpi", "gloo"])
def test_every_collective_under_mpiexec(n, backend):
    out = _mpiexec(n, os.path.join(HERE, "mpi_worker.py"), backend)
    assert out.returncode == 0 and _oks(out, n), out.stdout + out.stderr
    if backend == "gloo":  # an unmodified "gloo" script runs on MPI and says so, once
        assert out.stderr.count("runs on MPI") == 1, out.stderr


@pytest.mark.parametrize("n,hook", [(2, "default"), (3, "fp16")])
def test_ddp_matches_single_process_training(n, hook):
    out = _mpiexec(n, os.path.join(HERE, "ddp_worker.py"), hook)
    assert out.returncode == 0 and _oks(out, n), out.stdout + out.stderr


def test_ddp_with_the_mpi_progress_thread(monkeypatch):
    """FABRIC_MPI_PROGRESS_THREAD=1: a thread drives MPI's progress while buckets are in flight; the
    gradients are unchanged and the thread stops with backward."""
    monkeypatch.setenv("FABRIC_MPI_PROGRESS_THREAD", "1")
    out = _mpiexec(2, os.path.join(HERE, "ddp_worker.py"), "default")
    assert out.returncode == 0 and _oks(out, 2), out.stdout + out.stderr


def test_launcher_starts_ranks_under_mpiexec(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import os, torch, torch.distributed as dist\n"
                      "dist.init_process_group('gloo')\n"
                      "t = torch.tensor([dist.get_rank() + 1.0]); dist.all_reduce(t)\n"
                      "os.write(1, f\"r{os.environ['RANK']} l{os.environ['LOCAL_RANK']} {t.item()} "
                      "{dist.group.WORLD.name()}\\n\".encode())\n"
                      "dist.destroy_process_group()\n")
    out = subprocess.run([sys.executable, "-m", "fabric.distributed.run", "--nproc-per-node", "3", "--torch-alias",
                          str(script)], capture_output=True, text=True, timeout=120, env=_env(), check=False)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n"))[-3:] == ["r0 l0 6.0 mpi", "r1 l1 6.0 mpi", "r2 l2 6.0 mpi"]


def test_a_killed_rank_stops_the_others(tmp_path):
    """kill -9 of one rank: the launcher's others stop with an error, promptly, never hang."""
    script = tmp_path / "victim.py"
    script.write_text("import os, signal, time, fabric, fabric.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "if dist.get_rank() == 1:\n"
                      "    os.kill(os.getpid(), signal.SIGKILL)\n"
                      "t = fabric.ones(1)\n"
                      "for _ in range(1000):\n"
                      "    dist.all_reduce(t)\n"
                      "    time.sleep(0.01)\n")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fabric.distributed.run", "--nproc-per-node", "2", str(script)],
                         capture_output=True, text=True, timeout=60, env=_env(), check=False)
    assert out.returncode != 0
    assert time.monotonic() - start < 30


def test_launcher_reports_a_failing_rank(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os, sys, time\nif os.environ['RANK'] == '1': sys.exit(3)\ntime.sleep(30)\n")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fabric.distributed.run", "--nproc-per-node", "2", str(bad)],
                         capture_output=True, text=True, timeout=60, env=_env(), check=False)
    assert out.returncode == 3 and "local rank 1 exited with code 3" in out.stderr
    assert time.monotonic() - start < 20


def test_silent_peer_times_out(tmp_path):
    """A rank that stays alive but never joins the collective: the others raise after the group timeout."""
    script = tmp_path / "silent.py"
    script.write_text("import time, datetime, fabric, fabric.distributed as dist\n"
                      "dist.init_process_group('mpi', timeout=datetime.timedelta(seconds=2))\n"
                      "if dist.get_rank() == 0:\n"
                      "    try:\n"
                      "        dist.all_reduce(fabric.ones(1))\n"
                      "    except RuntimeError as e:\n"
                      "        print('raised', type(e).__name__, 'timed out' in str(e), flush=True)\n"
                      "        import os; os._exit(0)\n"
                      "else:\n"
                      "    time.sleep(8)\n"
                      "    import os; os._exit(0)\n")
    out = _mpiexec(2, str(script), timeout=60)
    assert "raised DistBackendError True" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("n", [3])
def test_join_with_uneven_inputs(n):
    """DDP.join() and Join with rank r holding 2 + r batches: gradients as PyTorch's semantics give
    (divide by the initial world size, or by the ranks still training), one model at the end,
    throw_on_early_termination, a custom Joinable whose Work objects are dropped unwaited."""
    out = _mpiexec(n, os.path.join(HERE, "join_worker.py"))
    assert out.returncode == 0 and _oks(out, n), out.stdout + out.stderr


@pytest.mark.parametrize("n", [3])
def test_zero_redundancy_optimizer(n):
    """PyTorch's partition, the unsharded Adam trajectory bit for bit, consolidate/state_dict/load."""
    out = _mpiexec(n, os.path.join(HERE, "zero_worker.py"))
    assert out.returncode == 0 and _oks(out, n), out.stdout + out.stderr


_SPAWN_SCRIPT = """
import os, sys, time
import fabric, fabric.distributed as dist, fabric.multiprocessing as mp

def worker(rank, world, out_dir, fail):
    dist.init_process_group("gloo")          # an unmodified PyTorch-style script
    t = fabric.tensor([rank + 1.0])
    dist.all_reduce(t)
    with open(os.path.join(out_dir, f"r{rank}"), "w") as fh:
        fh.write(f"{dist.get_rank()} {dist.get_world_size()} {t.item()} {dist.group.WORLD.name()}")
    if fail and rank == 1:
        raise ValueError("boom in rank 1")
    if fail:
        time.sleep(30)                        # the job is aborted: spawn must not wait for this

if __name__ == "__main__":
    fail = sys.argv[2] == "fail"
    try:
        mp.spawn(worker, args=(3, sys.argv[1], fail), nprocs=3)
    except mp.ProcessRaisedException as e:
        print("raised", e.error_index, "boom in rank 1" in str(e), flush=True)
"""


@pytest.mark.parametrize("fail", ["ok", "fail"])
def test_spawn_starts_mpi_ranks(tmp_path, fail):
    """FABRIC_DISTRIBUTED_ENGINE=mpi: mp.spawn starts its processes with mpiexec (a function of the
    script's __main__, as multiprocessing's spawn allows); a raising rank stops the job."""
    script = tmp_path / "spawner.py"
    script.write_text(_SPAWN_SCRIPT)
    env = dict(_env(), FABRIC_DISTRIBUTED_ENGINE="mpi")
    start = time.monotonic()
    out = subprocess.run([sys.executable, str(script), str(tmp_path), fail], capture_output=True, text=True,
                         timeout=120, env=env, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    got = sorted((tmp_path / f"r{r}").read_text() for r in range(3) if (tmp_path / f"r{r}").exists())
    if fail == "ok":
        assert got == [f"{r} 3 6.0 mpi" for r in range(3)], out.stdout + out.stderr
    else:
        assert "raised 1 True" in out.stdout, out.stdout + out.stderr
        assert time.monotonic() - start < 25
