"""A test double of ``cupy.cuda.nccl`` for processes running on the fake CuPy
(tests/cuda/fake_cupy.py): N ranks, one process each, exchange their buffers
through files in the directory that the unique id names, and reduce them with
NumPy, in rank order.

It keeps NCCL's execution model on fake_cupy's model of streams: a call
(``allReduce``, ``send``...) only *queues* its work on the stream it is given;
the work runs when that stream runs (a host synchronisation, an event wait,
later work on the stream), reads the send buffer at that moment, and cannot
finish before every peer's matching work has run (it stays at the head of its
stream, blocking what is queued after it, until then).  It checks, and raises
on, what real NCCL would silently get wrong or hang on:

* a pointer outside any live allocation of the communicator's device, or a
  buffer too small for ``count`` elements (``NcclError``, at the call);
* a buffer freed before the queued work ran;
* ranks that disagree on the operation, count, datatype, reduction or root
  of the n-th collective, or on the size or type of a send and its receive;
* a device buffer read or written, on the host or from another stream, while
  a queued collective will still read or write it (the reader never waited
  for the collective's event) - through ``fake_cupy.guard_inflight``;
* a stream waiting on an event that was never recorded (fake_cupy's
  ``Config.strict_event_waits``, turned on by :func:`install`).

``calls`` records every call as ``(name, stream pointer)`` for tests of
which stream the engine uses.

What it does not model: NCCL's algorithms and their float rounding (sums are
NumPy's, in rank order), sends completing before the matching receive is
posted (NCCL may block them), and the true concurrency of the ranks' GPUs.
"""
from __future__ import annotations

import functools
import os
import pickle
import tempfile
import time
import weakref

import fake_cupy
import numpy as np

available = True
NCCL_INT8, NCCL_CHAR, NCCL_UINT8, NCCL_INT32, NCCL_INT, NCCL_UINT32 = 0, 0, 1, 2, 2, 3
NCCL_INT64, NCCL_UINT64, NCCL_FLOAT16, NCCL_HALF, NCCL_FLOAT32, NCCL_FLOAT = 4, 5, 6, 6, 7, 7
NCCL_FLOAT64, NCCL_DOUBLE, NCCL_BFLOAT16 = 8, 8, 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4

_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64, 6: np.float16,
           7: np.float32, 8: np.float64}
_OP_NAMES = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}
POLL_S = 2e-4
calls: list = []


class NcclError(RuntimeError):
    """``cupy.cuda.nccl.NcclError``."""


def get_version() -> int:
    return 22105


def get_unique_id() -> tuple:
    """A fresh exchange directory, its path encoded in the 128 bytes of an id."""
    path = tempfile.mkdtemp(prefix="nccl-", dir=os.environ.get("FAKE_NCCL_DIR"))
    raw = path.encode()
    if len(raw) > 127:
        raise NcclError("fake NCCL: exchange directory path too long for a unique id")
    return tuple(raw + bytes(128 - len(raw)))


# --- groups: the calls between groupStart and groupEnd are queued as one piece of work -------------
_group: list | None = None
_depth = [0]


def groupStart() -> None:
    global _group
    if _depth[0] == 0:
        _group = []
    _depth[0] += 1


def groupEnd() -> None:
    global _group
    if _depth[0] == 0:
        raise NcclError("fake NCCL: groupEnd without groupStart")
    _depth[0] -= 1
    if _depth[0] == 0:
        ops, _group = _group, None
        by_queue: dict = {}
        for comm, queue, work in ops:
            by_queue.setdefault(id(queue), (comm, queue, []))[2].append(work)
        for comm, queue, works in by_queue.values():
            comm._enqueue(queue, _Fused(works))


def _write(path: str, payload) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def _read(path: str):
    with open(path, "rb") as f:
        return pickle.load(f)


class _Buffer:
    """A device buffer named by a pointer: checked when the call is made, read or written when the work runs."""

    def __init__(self, comm, ptr: int, count: int, dtype, what: str):
        dtype = np.dtype(dtype)
        nbytes = int(count) * dtype.itemsize
        hit = fake_cupy.resolve_pointer(int(ptr), nbytes)
        if hit is None:
            raise NcclError(f"fake NCCL: {what} pointer {ptr:#x} ({nbytes} bytes) is not inside a live device "
                            "allocation (invalid device pointer)")
        root, dev = hit
        if dev != comm._dev:
            raise NcclError(f"fake NCCL: {what} buffer is on device {dev}, the communicator on device {comm._dev}")
        self._root = weakref.ref(root)
        self._offset = int(ptr) - fake_cupy._addr(root)
        self.count, self.dtype, self.what = int(count), dtype, what

    def view(self, work) -> np.ndarray:
        """The buffer's memory, when ``work`` runs: it must be alive, and nothing queued elsewhere (an
        asynchronous copy the communication stream did not wait for) may still write it."""
        root = self._root()
        if root is None:
            raise NcclError(f"fake NCCL: the {self.what} buffer was freed before the queued operation ran (keep a "
                            "reference until its event has completed)")
        fake_cupy.check_inflight(root, owner=tuple(work.fused.works))
        flat = root.reshape(-1, order="A").view(np.uint8)
        return flat[self._offset:self._offset + self.count * self.dtype.itemsize].view(self.dtype)

    def guard(self, work) -> None:
        root = self._root()
        if root is not None:
            fake_cupy.guard_inflight(root, lambda: work.finished, f"NCCL {work.describe()}", owner=work)


def _reduce(op: int, parts: list) -> np.ndarray:
    name = _OP_NAMES[op]
    if name == "avg":
        total = functools.reduce(np.add, parts)
        return (total / len(parts)).astype(parts[0].dtype) if total.dtype.kind == "f" else total // len(parts)
    fn = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[name]
    return functools.reduce(fn, parts)


class _Work:
    """One rank's part of one collective or point-to-point transfer."""

    finished = False

    def describe(self) -> str:
        return self.kind


class _Collective(_Work):
    def __init__(self, comm, seq, kind, meta, send, recv, combine):
        self.comm, self.seq, self.kind, self.meta = comm, seq, kind, meta
        self.send, self.recv, self.combine = send, recv, combine
        self.posted = False

    def describe(self) -> str:
        return f"{self.kind} #{self.seq}"

    def step(self) -> bool:
        c = self.comm
        if c._aborted:
            self.finished = True
            return True
        if not self.posted:
            data = None if self.send is None else self.send.view(self).copy()
            _write(c._file(f"c{self.seq}.r{c._rank}"), (self.meta, data))
            self.posted = True
        paths = [c._file(f"c{self.seq}.r{r}") for r in range(c._n)]
        if not all(os.path.exists(p) for p in paths):
            return False
        got = [_read(p) for p in paths]
        for r, (meta, _) in enumerate(got):
            if meta != self.meta:
                raise NcclError(f"fake NCCL: collective #{self.seq} differs between ranks: rank {c._rank} called "
                                f"{self.kind}{self.meta}, rank {r} called {meta[0]}{meta}")
        result = self.combine([d for _, d in got])
        if result is not None:
            self.recv.view(self)[...] = result
        self.finished = True
        return True


class _P2P(_Work):
    def __init__(self, comm, kind, buf, peer, index):
        self.comm, self.kind, self.buf, self.peer, self.index = comm, kind, buf, peer, index
        self.posted = False

    def describe(self) -> str:
        return f"{self.kind} with rank {self.peer}"

    def step(self) -> bool:
        c = self.comm
        if c._aborted:
            self.finished = True
            return True
        if self.kind == "send":
            if not self.posted:
                _write(c._file(f"p{c._rank}to{self.peer}.{self.index}"), (self.buf.count, self.buf.dtype.str,
                                                                          self.buf.view(self).copy()))
                self.posted = True
            self.finished = True
            return True
        path = c._file(f"p{self.peer}to{c._rank}.{self.index}")
        if not os.path.exists(path):
            return False
        count, dtype, data = _read(path)
        if (count, dtype) != (self.buf.count, self.buf.dtype.str):
            raise NcclError(f"fake NCCL: rank {c._rank} receives {self.buf.count} x {self.buf.dtype} from rank "
                            f"{self.peer}, which sent {count} x {np.dtype(dtype)}")
        self.buf.view(self)[...] = data
        self.finished = True
        return True


class _Fused(fake_cupy.Blocking):
    """Work queued on one stream by one call or one NCCL group: runs when every part can."""

    def __init__(self, works):
        self.works = works
        for w in works:
            w.fused = self

    def try_run(self) -> bool:
        # sends first, so that symmetric exchanges in one group cannot wait on each other
        try:
            done = [w.finished or w.step() for w in sorted(self.works, key=lambda w: w.kind != "send")]
        except Exception:
            self.finished_or_failed = True
            raise
        self.finished_or_failed = all(done)
        return self.finished_or_failed

    def __repr__(self):
        return "NCCL " + ", ".join(w.describe() for w in self.works)


class NcclCommunicator:
    """``cupy.cuda.nccl.NcclCommunicator(ndev, commId, rank)`` on the current (fake) device."""

    def __init__(self, ndev: int, commId, rank: int):
        if not 0 <= rank < ndev:
            raise NcclError(f"fake NCCL: invalid rank {rank} for {ndev} ranks")
        self._dir = bytes(int(b) & 0xFF for b in commId).rstrip(b"\0").decode()
        if not os.path.isdir(self._dir):
            raise NcclError("fake NCCL: the unique id does not name an exchange directory (was it passed intact?)")
        self._n, self._rank, self._dev = int(ndev), int(rank), fake_cupy._current()
        self._seq = 0
        self._p2p: dict = {}
        self._aborted = False
        self._destroyed = False
        _write(self._file(f"init.r{rank}"), ndev)     # ncclCommInitRank blocks until every rank has joined
        deadline = time.monotonic() + fake_cupy.Blocking.host_wait_s
        while not all(os.path.exists(self._file(f"init.r{r}")) for r in range(ndev)):
            if time.monotonic() > deadline:
                raise NcclError("fake NCCL: not every rank joined the communicator")
            time.sleep(POLL_S)

    def _file(self, name: str) -> str:
        return os.path.join(self._dir, name)

    def _queue(self, stream: int):
        return fake_cupy._queue_of(fake_cupy.ExternalStream(stream, self._dev))

    def _enqueue(self, queue, fused: _Fused) -> None:
        queue.enqueue(fused)

    def _submit(self, name, stream, work, buffers) -> None:
        if self._destroyed:
            raise NcclError("fake NCCL: the communicator was destroyed")
        calls.append((name, int(stream)))
        for b in buffers:
            b.guard(work)
        queue = self._queue(stream)
        if _group is not None:
            _group.append((self, queue, work))
        else:
            self._enqueue(queue, _Fused([work]))

    def _collective(self, name, stream, meta, send, recv, combine) -> None:
        work = _Collective(self, self._seq, name, (name, *meta), send, recv, combine)
        self._seq += 1
        self._submit(name, stream, work, [b for b in (send, recv) if b is not None])

    # --- NCCL's calls (CuPy's signatures: pointers and counts) -----------------------------------------
    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        dt = _DTYPES[datatype]
        send, recv = _Buffer(self, sendbuf, count, dt, "send"), _Buffer(self, recvbuf, count, dt, "receive")
        self._collective("allReduce", stream, (count, datatype, op), send, recv, lambda parts: _reduce(op, parts))

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        dt = _DTYPES[datatype]
        send = _Buffer(self, sendbuf, count, dt, "send")
        recv = _Buffer(self, recvbuf, count, dt, "receive") if self._rank == root else None
        self._collective("reduce", stream, (count, datatype, op, root), send, recv,
                         lambda parts: _reduce(op, parts) if self._rank == root else None)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        dt = _DTYPES[datatype]
        send = _Buffer(self, sendbuf, count, dt, "send") if self._rank == root else None
        recv = _Buffer(self, recvbuf, count, dt, "receive")
        self._collective("broadcast", stream, (count, datatype, root), send, recv, lambda parts: parts[root])

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        dt = _DTYPES[datatype]
        send = _Buffer(self, sendbuf, count, dt, "send")
        recv = _Buffer(self, recvbuf, count * self._n, dt, "receive")
        self._collective("allGather", stream, (count, datatype), send, recv, np.concatenate)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        dt = _DTYPES[datatype]
        send = _Buffer(self, sendbuf, recvcount * self._n, dt, "send")
        recv = _Buffer(self, recvbuf, recvcount, dt, "receive")
        me, k = self._rank, int(recvcount)
        self._collective("reduceScatter", stream, (recvcount, datatype, op), send, recv,
                         lambda parts: _reduce(op, [p[me * k:(me + 1) * k] for p in parts]))

    def send(self, sendbuf, count, datatype, peer, stream):
        self._p2p_call("send", sendbuf, count, datatype, peer, stream)

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._p2p_call("recv", recvbuf, count, datatype, peer, stream)

    def _p2p_call(self, kind, ptr, count, datatype, peer, stream):
        if not 0 <= peer < self._n or peer == self._rank:
            raise NcclError(f"fake NCCL: invalid peer {peer} for rank {self._rank} of {self._n}")
        key = (kind, peer)
        index = self._p2p.get(key, 0)
        self._p2p[key] = index + 1
        buf = _Buffer(self, ptr, count, _DTYPES[datatype], kind)
        self._submit(kind, stream, _P2P(self, kind, buf, peer, index), [buf])

    # --- the communicator ------------------------------------------------------------------------------
    def rank_id(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._n

    def device_id(self) -> int:
        return self._dev

    def abort(self) -> None:
        """Queued work of this communicator completes without data (as aborted kernels exit)."""
        self._aborted = True
        self._destroyed = True

    def destroy(self) -> None:
        self._destroyed = True

    def check_async_error(self) -> None:
        return None


def install():
    """Make ``cupy.cuda.nccl`` this module (fake_cupy must be installed) and turn on the strict
    checks it relies on.  Returns a function that undoes both."""
    import sys

    cuda = sys.modules["cupy.cuda"]
    this = sys.modules[__name__]
    cfg = fake_cupy.Config
    saved = (cfg.progress_on_query, cfg.strict_event_waits, cfg.guard_async_copies)
    cfg.progress_on_query = cfg.strict_event_waits = cfg.guard_async_copies = True
    cuda.nccl = this
    sys.modules["cupy.cuda.nccl"] = this

    def undo():
        cfg.progress_on_query, cfg.strict_event_waits, cfg.guard_async_copies = saved
        sys.modules.pop("cupy.cuda.nccl", None)
        if getattr(cuda, "nccl", None) is this:
            del cuda.nccl
    return undo
