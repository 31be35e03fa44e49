"""``python -m fabric.distributed.run``: a small ``torchrun`` (static launch only).

Starts ``--nproc-per-node`` copies of a script with the environment that
``init_process_group("gloo")`` (``env://``) reads: ``MASTER_ADDR``,
``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``.  Several machines: run it on each with
the same ``--nnodes``/``--master-addr``/``--master-port`` and its own
``--node-rank``.  ``--torch-alias`` runs the script through
``python -m fabric.run`` so that an unmodified ``import torch`` script uses
fabric.  If one worker fails, the others are terminated and the launcher
exits with that worker's code.  There is no elastic restart or rendezvous
backend (``--rdzv-*``), unlike torchrun.

Engine: on one node, when mpi4py and ``mpiexec`` are installed (the
``fabric-dl[mpi]`` extra), the workers are started by ``mpiexec`` and the
process group runs on MPI whatever backend name the script asks for
(``--engine gloo`` or ``FABRIC_DISTRIBUTED_ENGINE=gloo`` keeps the
pure-Python TCP transport; ``--engine mpi`` insists on MPI).

Usage::

    python -m fabric.distributed.run --nproc-per-node 2 train.py --epochs 3
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fabric.distributed.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=None,
                   help="default: 29500 with several nodes, a free port with one")
    p.add_argument("--standalone", action="store_true", help="one node on a free port (the default here)")
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the target as an executable")
    p.add_argument("--torch-alias", action="store_true",
                   help="run through `python -m fabric.run` (import torch -> fabric)")
    p.add_argument("--engine", choices=("auto", "mpi", "gloo"),
                   default=os.environ.get("FABRIC_DISTRIBUTED_ENGINE", "auto").lower(),
                   help="auto: mpiexec + MPI when the mpi extra is installed (one node), else the TCP transport")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise SystemExit("invalid --nproc-per-node/--nnodes/--node-rank")
    mpiexec = _mpiexec()
    if args.engine == "mpi" and (mpiexec is None or args.nnodes > 1 or args.no_python):
        raise SystemExit("--engine mpi needs the mpi extra (pip install 'fabric-dl[mpi]'), one node and a Python "
                         "target; on several machines run `mpiexec -f hostfile -n N python train.py` directly")
    if args.engine != "gloo" and mpiexec is not None and args.nnodes == 1 and not args.no_python:
        return _run_mpi(mpiexec, args)
    port = args.master_port if args.master_port is not None else (29500 if args.nnodes > 1 else _free_port())
    world = args.nproc_per_node * args.nnodes
    if args.no_python:
        cmd = [args.script]
    elif args.module:
        cmd = [sys.executable, "-u", "-m", args.script]
    elif args.torch_alias:
        cmd = [sys.executable, "-u", "-m", "fabric.run", args.script]
    else:
        cmd = [sys.executable, "-u", args.script]
    cmd += args.script_args
    procs = []
    for local in range(args.nproc_per_node):
        env = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(port),
                   RANK=str(args.node_rank * args.nproc_per_node + local), WORLD_SIZE=str(world),
                   LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(args.nproc_per_node), GROUP_RANK=str(args.node_rank))
        procs.append(subprocess.Popen(cmd, env=env))
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                i, code = failed[0]
                print(f"[fabric.distributed.run] local rank {i} exited with code {code}; terminating the others",
                      file=sys.stderr)
                _stop(procs)
                return code if code > 0 else 128 - code
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(procs)
        return 130


def _mpiexec():
    """The ``mpiexec`` of the mpi extra (beside this Python first), when mpi4py is importable too."""
    from ._mpi import available

    if not available():
        return None
    import shutil

    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.access(here, os.X_OK) else shutil.which("mpiexec")


def _run_mpi(mpiexec, args) -> int:
    """Start the workers with ``mpiexec``; each sets torchrun's variables from MPI's (``_mpi_boot``)."""
    boot = [sys.executable, "-u", "-m", "fabric.distributed._mpi_boot"]
    if args.module:
        boot.append("--module")
    elif args.torch_alias:
        boot.append("--torch-alias")
    env = dict(os.environ)
    env.pop("FABRIC_DISTRIBUTED_ENGINE", None)
    proc = subprocess.Popen([mpiexec, "-n", str(args.nproc_per_node)] + boot + [args.script] + args.script_args,
                            env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        _stop([proc])
        return 130


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


if __name__ == "__main__":
    raise SystemExit(main())
