"""``mpiexec -n N python -m fabric.distributed._mpi_boot [--module|--torch-alias] target args...``

What ``python -m fabric.distributed.run`` starts under ``mpiexec``: each rank
sets torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``/``MASTER_PORT``) from
the MPI launcher's own variables before the script runs, so scripts that read
them (``int(os.environ["LOCAL_RANK"])``) work unchanged; then
``init_process_group`` finds the MPI launcher and uses the MPI engine.
"""
from __future__ import annotations

import os
import runpy
import sys

_RANK_VARS = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")


def _first(names, default=None):
    for n in names:
        if n in os.environ:
            return os.environ[n]
    return default


def set_torchrun_env() -> None:
    """Fill torchrun's variables from the MPI launcher's (what is already set wins)."""
    rank = _first(_RANK_VARS)
    size = _first(_SIZE_VARS)
    if rank is None or size is None:
        raise SystemExit("fabric.distributed._mpi_boot must be started by mpiexec")
    local = _first(_LOCAL_RANK_VARS, rank)
    local_size = _first(_LOCAL_SIZE_VARS, size)
    os.environ.setdefault("RANK", rank)
    os.environ.setdefault("WORLD_SIZE", size)
    os.environ.setdefault("LOCAL_RANK", local)
    os.environ.setdefault("LOCAL_WORLD_SIZE", local_size)
    os.environ.setdefault("GROUP_RANK", str(int(rank) // max(1, int(local_size))))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = "script"
    while argv and argv[0] in ("--module", "--torch-alias"):
        mode = argv.pop(0)[2:]
    if not argv:
        raise SystemExit("usage: python -m fabric.distributed._mpi_boot [--module|--torch-alias] target [args...]")
    set_torchrun_env()
    from mpi4py import MPI  # noqa: F401  (every rank joins MPI now, so a failing rank can abort them all)

    target, sys.argv = argv[0], argv
    try:
        _run(mode, target, argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code:
            _abort(code)
        raise
    except BaseException:
        import traceback

        traceback.print_exc()
        _abort(1)


def _abort(code: int) -> None:
    """Stop every rank now, as torchrun does when one worker fails (MPI's launcher alone would let the
    others run on until they block)."""
    print(f"[fabric.distributed.run] local rank {os.environ['LOCAL_RANK']} exited with code {code}; terminating "
          "the others", file=sys.stderr, flush=True)
    from mpi4py import MPI

    MPI.COMM_WORLD.Abort(code)


def _run(mode, target, argv) -> None:
    if mode == "module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    elif mode == "torch-alias":
        from ..run import main as run_main

        sys.argv = ["fabric.run"] + argv
        run_main()
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()
