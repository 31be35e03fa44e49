"""The "mpi" engine: fabric's collectives on an MPI communicator (mpi4py).

Every operation works on C-contiguous NumPy buffers handed to MPI directly
(no pickling, no extra copy where the layout allows one buffer) and starts a
non-blocking MPI call; it returns a :class:`Pending` whose ``wait()``
completes the MPI requests and then runs the write-backs (average division,
staging copies).  ``async_op=True`` hands that to the user as a ``Work``;
blocking calls wait at once.

mpi4py is the optional extra ``fabric-dl[mpi]`` (with the ``mpich`` wheel);
this module is imported only when an MPI backend is asked for.

Example (run with ``mpiexec -n 2 python script.py``)::

    import fabric, fabric.distributed as dist
    dist.init_process_group("mpi")
    t = fabric.tensor([float(dist.get_rank())])
    dist.all_reduce(t)          # 0 + 1 on both ranks
"""
from __future__ import annotations

import collections
import os
import time

import numpy as np

from .store import DistBackendError

_MPI = None

# environment variables that MPI process managers set in every rank they start
_LAUNCHER_VARS = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def mpi():
    """The ``mpi4py.MPI`` module (imported on first use)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError("the MPI backend needs mpi4py and an MPI library: pip install 'fabric-dl[mpi]' "
                               f"(mpi4py and the mpich wheel) ({e})") from None
        _MPI = MPI
    return _MPI


def available() -> bool:
    """Whether mpi4py can be imported (without importing it twice)."""
    if _MPI is not None:
        return True
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def launched_by_mpi() -> bool:
    """Whether this process was started by an MPI launcher (``mpiexec``)."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def _op(name: str, dtype):
    MPI = mpi()
    if dtype == np.bool_:  # MPI defines no arithmetic on C bools: sum/max are "or", product/min "and"
        return MPI.LOR if name in ("sum", "avg", "max", "bor", "bxor") else MPI.LAND
    return {"sum": MPI.SUM, "avg": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX,
            "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}[name]


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)


class Pending:
    """MPI requests in flight and what to do once they complete."""

    __slots__ = ("after", "requests", "timeout")

    def __init__(self, requests=(), after=(), timeout=None):
        self.requests = list(requests)
        self.after = list(after)
        self.timeout = timeout

    def test(self) -> bool:
        """Drive MPI's progress; True once every request has completed (the write-backs then run)."""
        if self.requests and not mpi().Request.Testall(self.requests):
            return False
        self._finish()
        return True

    def wait(self) -> None:
        """Complete the requests, raising DistBackendError after the group's timeout
        (a peer that stopped communicating must not hang this rank forever)."""
        if self.requests:
            MPI = mpi()
            try:
                if self.timeout is None:
                    MPI.Request.Waitall(self.requests)
                else:
                    deadline = time.monotonic() + self.timeout
                    spins = 0
                    while not MPI.Request.Testall(self.requests):
                        spins += 1
                        if spins > 2000:   # past the latency of a small message: poll gently
                            if time.monotonic() > deadline:
                                raise DistBackendError(f"MPI operation timed out after {self.timeout:g} s (a peer "
                                                       "stopped communicating)")
                            time.sleep(2e-4)
            except MPI.Exception as e:
                raise DistBackendError(f"MPI operation failed: {e}") from None
        self._finish()

    def reaped(self) -> bool:
        """Whether the requests have completed (tests them; the write-backs still wait for ``wait()``)."""
        return not self.requests or mpi().Request.Testall(self.requests)

    def _finish(self):
        self.requests = []
        after, self.after = self.after, []
        for fn in after:
            fn()


def _avg(buf, n):
    from ._gloo import _finish

    return lambda: _finish("avg", buf.reshape(-1), n)


class MpiComm:
    """An MPI communicator with fabric's collectives on arrays (group ranks)."""

    def __init__(self, comm, timeout=None):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout     # seconds a wait may take before raising (the group's timeout)
        # operations in flight: their requests and buffers stay referenced until MPI is done with them,
        # even when the caller drops the Work (a freed buffer would be reused while MPI still writes it)
        self.inflight: collections.deque = collections.deque()
        self._probe_comm = None
        self.progress_interval = 5e-5

    # --- progress -------------------------------------------------------------------------------------
    def progress_while(self, busy) -> None:
        """Drive MPI's progress from a helper thread while ``busy()`` is true.

        MPICH advances a non-blocking collective only inside MPI calls; while backward computes a large
        gradient (NumPy releases the GIL) nothing calls MPI, and the bucket all-reduces DDP started stay
        where they were.  The thread calls ``Iprobe`` on a private communicator (it never touches the
        requests themselves, which MPI forbids sharing between threads) every ``interval`` seconds and
        stops as soon as ``busy()`` is false.  mpi4py initialises MPI with ``MPI_THREAD_MULTIPLE``."""
        MPI = mpi()
        if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
            return
        if self._probe_comm is None:
            self._probe_comm = MPI.COMM_SELF.Dup()
        probe = self._probe_comm

        def run():
            while busy():
                probe.Iprobe()
                time.sleep(self.progress_interval)
        import threading

        threading.Thread(target=run, name="fabric-mpi-progress", daemon=True).start()

    def _pending(self, requests, after=()):
        q = self.inflight
        while q and q[0].reaped():
            q.popleft()
        pending = Pending(requests, after, self.timeout)
        q.append(pending)
        return pending

    # --- reductions -----------------------------------------------------------------------------------
    def all_reduce(self, buf: np.ndarray, op: str) -> Pending:
        MPI = mpi()
        if buf.dtype == np.float16:  # MPI has no half type: reduce in float32 (documented)
            wide = buf.astype(np.float32)
            req = self.comm.Iallreduce(MPI.IN_PLACE, wide, _op(op, wide.dtype))
            after = [_avg(wide, self.size)] if op == "avg" else []
            return self._pending([req], after + [lambda: np.copyto(buf, wide, casting="unsafe")])
        req = self.comm.Iallreduce(MPI.IN_PLACE, buf, _op(op, buf.dtype))
        return self._pending([req], [_avg(buf, self.size)] if op == "avg" else ())

    def reduce(self, buf: np.ndarray, root: int, op: str) -> Pending:
        MPI = mpi()
        if self.rank == root:
            req = self.comm.Ireduce(MPI.IN_PLACE, buf, _op(op, buf.dtype), root)
            return self._pending([req], [_avg(buf, self.size)] if op == "avg" else ())
        # MPI may write into the send buffer's twin only at the root: send a copy-free view
        return self._pending([self.comm.Ireduce(buf, None, _op(op, buf.dtype), root)])

    def reduce_scatter_block(self, flat_in: np.ndarray, out: np.ndarray, op: str) -> Pending:
        """``out`` = reduction over ranks of the ``rank``-th block of ``flat_in`` (blocks of out's size)."""
        req = self.comm.Ireduce_scatter_block(flat_in.reshape(-1), out.reshape(-1), _op(op, out.dtype))
        return self._pending([req], [_avg(out, self.size)] if op == "avg" else ())

    # --- data movement ------------------------------------------------------------------------------
    def broadcast(self, buf: np.ndarray, root: int) -> Pending:
        return self._pending([self.comm.Ibcast(_bytes(buf), root)])

    def all_gather_into(self, buf: np.ndarray, out: np.ndarray) -> Pending:
        """``out`` (size × buf's bytes, contiguous) receives every rank's ``buf`` in rank order."""
        return self._pending([self.comm.Iallgather(_bytes(buf), _bytes(out))])

    def all_gather(self, buf: np.ndarray, outs) -> Pending:
        """``outs[r]`` receives rank ``r``'s ``buf`` (sizes may differ per rank)."""
        counts = [o.nbytes for o in outs]
        stage = np.empty(sum(counts), np.uint8)
        req = self.comm.Iallgatherv(_bytes(buf), [stage, counts])
        return self._pending([req], [lambda: _unstage(stage, counts, outs)])

    def gather(self, buf: np.ndarray, root: int, outs) -> Pending:
        if self.rank != root:
            return self._pending([self.comm.Igatherv(_bytes(buf), None, root)])
        counts = [o.nbytes for o in outs]
        stage = np.empty(sum(counts), np.uint8)
        req = self.comm.Igatherv(_bytes(buf), [stage, counts], root)
        return self._pending([req], [lambda: _unstage(stage, counts, outs)])

    def scatter(self, ins, out: np.ndarray, root: int) -> Pending:
        if self.rank != root:
            return self._pending([self.comm.Iscatterv(None, _bytes(out), root)])
        counts = [a.nbytes for a in ins]
        stage = np.concatenate([_bytes(np.ascontiguousarray(a)) for a in ins]) if ins else np.empty(0, np.uint8)
        return self._pending([self.comm.Iscatterv([stage, counts], _bytes(out), root)])

    def all_to_all(self, ins, outs) -> Pending:
        send_counts = [a.nbytes for a in ins]
        recv_counts = [o.nbytes for o in outs]
        send = np.concatenate([_bytes(np.ascontiguousarray(a)) for a in ins])
        stage = np.empty(sum(recv_counts), np.uint8)
        req = self.comm.Ialltoallv([send, send_counts], [stage, recv_counts])
        return self._pending([req], [lambda: _unstage(stage, recv_counts, outs)])

    def barrier(self) -> Pending:
        return self._pending([self.comm.Ibarrier()])

    # --- point to point -----------------------------------------------------------------------------
    def send(self, buf: np.ndarray, peer: int, tag: int) -> Pending:
        return self._pending([self.comm.Isend(_bytes(buf), peer, _tag(tag))])

    def recv(self, buf: np.ndarray, peer: int, tag: int) -> Pending:
        return self._pending([self.comm.Irecv(_bytes(buf), peer, _tag(tag))])

    def recv_any(self, buf: np.ndarray, tag: int) -> int:
        """Receive from whichever rank sends first; returns its group rank."""
        MPI = mpi()
        status = MPI.Status()
        self.comm.Recv(_bytes(buf), MPI.ANY_SOURCE, _tag(tag), status)
        return status.Get_source()

    # --- groups -------------------------------------------------------------------------------------
    def split(self, member: bool, key: int, size: int | None = None) -> MpiComm | None:
        """A communicator of the members (called by every rank of this one)."""
        MPI = mpi()
        sub = self.comm.Split(0 if member else MPI.UNDEFINED, key)
        return MpiComm(sub, self.timeout) if member else None

    def free(self) -> None:
        MPI = mpi()
        if self._probe_comm is not None:
            self._probe_comm.Free()
            self._probe_comm = None
        if self.comm not in (MPI.COMM_WORLD, MPI.COMM_SELF) and self.comm != MPI.COMM_NULL:
            self.comm.Free()


def _tag(tag: int) -> int:
    if tag < 0:
        raise ValueError(f"tags must be non-negative with the MPI backend, got {tag}")
    return tag


def _unstage(stage, counts, outs) -> None:
    off = 0
    for o, n in zip(outs, counts):
        _bytes(o)[...] = stage[off:off + n]
        off += n


def world() -> MpiComm:
    """A private duplicate of ``MPI.COMM_WORLD`` (fabric's traffic never mixes with the user's own MPI)."""
    MPI = mpi()
    if not MPI.Is_initialized():
        MPI.Init()
    return MpiComm(MPI.COMM_WORLD.Dup())
