"""One rank of ``fabric.multiprocessing.spawn`` started by ``mpiexec`` (``FABRIC_DISTRIBUTED_ENGINE=mpi``):
``mpiexec -n N python -m fabric.multiprocessing._mpi_child PAYLOAD ERROR_PREFIX``.

The payload (written by the parent) names ``fn``, its ``args``, the parent's ``sys.path`` and its
main script, which is loaded as ``__mp_main__`` first (as multiprocessing's spawn does), so that
functions defined in the parent's script unpickle.  The rank runs ``fn(rank, *args)`` with its MPI
rank; an exception is written to ``ERROR_PREFIX<rank>`` and aborts the job (the others stop).
"""
from __future__ import annotations

import pickle
import sys


def main(argv=None) -> None:
    payload_path, error_prefix = (sys.argv[1:] if argv is None else argv)[:2]
    with open(payload_path, "rb") as fh:
        head = pickle.load(fh)
        sys.path[:] = head["sys_path"]
        if head["main_path"]:
            from multiprocessing import spawn as mp_spawn

            mp_spawn._fixup_main_from_path(head["main_path"])
        fn, args = pickle.load(fh)
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    from .spawn import _wrap

    try:
        _wrap(fn, rank, args, f"{error_prefix}{rank}")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code:
            sys.stdout.flush()
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(code)
        raise


if __name__ == "__main__":
    main()
