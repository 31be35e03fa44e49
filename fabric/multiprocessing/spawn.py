"""``fabric.multiprocessing.spawn`` (PyTorch's ``torch.multiprocessing.spawn``):
``spawn``/``start_processes`` run one process per rank and raise errors in the parent.

``spawn(fn, args, nprocs)`` runs ``fn(i, *args)`` in ``nprocs`` new
processes.  When one raises, the parent terminates the others and raises
:class:`ProcessRaisedException` carrying the child's traceback; a child that
dies from a signal or ``sys.exit(n)`` gives :class:`ProcessExitedException`.
Tensors in ``args`` travel as handles to shared memory (see
:mod:`fabric.multiprocessing.reductions`).

With ``FABRIC_DISTRIBUTED_ENGINE=mpi`` in the environment (and the ``mpi``
extra installed) the processes are MPI ranks started by ``mpiexec``, so that
``init_process_group`` in ``fn`` runs on the MPI engine; ``fn`` and ``args``
are pickled by value then (tensors are copies, not shared memory).

Example::

    >>> import fabric.multiprocessing as mp
    >>> mp.spawn(print, args=("ready",), nprocs=1)   # doctest: +SKIP
    0 ready
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback

__all__ = [
    "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException"]


class ProcessException(Exception):
    """A child process failed."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process exited with a non-zero code or was killed by a signal."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # terminated by the parent
    except Exception:
        with open(error_file, "w", encoding="utf-8") as fh:
            fh.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by :func:`start_processes`; ``join()`` waits and raises on failure."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list:
        return [int(p.pid) for p in self.processes]

    def _join_procs_with_timeout(self, timeout: float) -> None:
        import time

        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes; True once all have exited cleanly, False on
        ``timeout`` with some still running.  If one failed, terminate the
        others and raise."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        failed = self.processes[error_index]
        path = self.error_files[error_index]
        trace = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                trace = fh.read()
        self._cleanup()
        if not trace:
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {error_index:d} terminated with signal {name}",
                                             error_index, failed.pid, code, name)
            raise ProcessExitedException(f"process {error_index:d} terminated with exit code {code:d}",
                                         error_index, failed.pid, code)
        raise ProcessRaisedException(f"\n\n-- Process {error_index:d} terminated with the following error:\n"
                                     + trace, error_index, failed.pid)

    def _cleanup(self):
        for path in self.error_files:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class SpawnContext(ProcessContext):
    """The context :func:`spawn` returns with ``join=False``."""


class _MpiContext(ProcessContext):
    """The ranks of one ``mpiexec`` job, as a :class:`ProcessContext`: ``join()`` waits for the job and
    raises like the multiprocessing path (the failing rank's traceback, or its exit code)."""

    def __init__(self, proc, error_files, payload):
        self.proc, self.error_files, self.processes, self._payload = proc, error_files, [proc], payload
        self.sentinels = {}

    def pids(self) -> list:
        return [self.proc.pid]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        import subprocess

        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        failed = [i for i, path in enumerate(self.error_files) if os.path.exists(path)]
        trace = None
        if failed:
            with open(self.error_files[failed[0]], encoding="utf-8") as fh:
                trace = fh.read()
        self._cleanup()
        if code == 0 and not failed:
            return True
        index = failed[0] if failed else 0
        if trace:
            raise ProcessRaisedException(f"\n\n-- Process {index:d} terminated with the following error:\n" + trace,
                                         index, self.proc.pid)
        raise ProcessExitedException(f"process {index:d} terminated with exit code {code:d}", index, self.proc.pid,
                                     code)

    def _cleanup(self):
        super()._cleanup()
        try:
            os.unlink(self._payload)
        except FileNotFoundError:
            pass


def _mpiexec_for_spawn():
    """``mpiexec`` when the environment asks for MPI ranks (``FABRIC_DISTRIBUTED_ENGINE=mpi``)."""
    if os.environ.get("FABRIC_DISTRIBUTED_ENGINE", "").lower() != "mpi":
        return None
    from ..distributed.run import _mpiexec

    mpiexec = _mpiexec()
    if mpiexec is None:
        raise RuntimeError("FABRIC_DISTRIBUTED_ENGINE=mpi: spawn needs the mpi extra (pip install 'fabric-dl[mpi]': "
                           "mpi4py and mpiexec) to start MPI ranks")
    return mpiexec


def _start_mpi(mpiexec, fn, args, nprocs):
    import pickle
    import subprocess

    main = sys.modules.get("__main__")
    main_path = getattr(main, "__file__", None) if getattr(main, "__spec__", None) is None else None
    fd, payload = tempfile.mkstemp(prefix="fabric-mp-payload-")
    with os.fdopen(fd, "wb") as fh:
        pickle.dump({"sys_path": list(sys.path), "main_path": main_path}, fh)
        pickle.dump((fn, tuple(args)), fh)
    prefix = payload + "-error-"
    env = dict(os.environ)
    env.pop("FABRIC_DISTRIBUTED_ENGINE", None)   # the ranks are MPI's: init_process_group finds it
    proc = subprocess.Popen([mpiexec, "-n", str(nprocs), sys.executable, "-m", "fabric.multiprocessing._mpi_child",
                             payload, prefix], env=env)
    return _MpiContext(proc, [f"{prefix}{i}" for i in range(nprocs)], payload)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method`` (MPI ranks under
    ``mpiexec`` when ``FABRIC_DISTRIBUTED_ENGINE=mpi``)."""
    mpiexec = _mpiexec_for_spawn()
    if mpiexec is not None:
        context = _start_mpi(mpiexec, fn, args, nprocs)
        if join:
            while not context.join():
                pass
            return None
        return context
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="fabric-mp-error-")
        os.close(fd)
        os.unlink(path)   # the child creates it only when it fails
        error_files.append(path)
        p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    context._cleanup()
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process.

    With ``join`` wait for all and raise :class:`ProcessRaisedException` (the
    child's traceback) or :class:`ProcessExitedException` if one fails;
    otherwise return the :class:`ProcessContext`."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
