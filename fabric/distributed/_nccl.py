"""The "nccl" engine: fabric's collectives on NCCL communicators (``cupy.cuda.nccl``).

Every operation runs on the tensors' device memory, on a communication stream
of the group's device (one per communicator, as PyTorch's ``ProcessGroupNCCL``):

1. the communication stream waits for an event recorded on the caller's
   current stream (the inputs are ready there);
2. the NCCL call(s) are queued on the communication stream (one
   ``groupStart``/``groupEnd`` around the send/recv pairs of the composed
   operations: gather, scatter, all_to_all);
3. an event recorded after them completes the returned :class:`Pending`.

``Pending.wait()`` makes the caller's current stream wait for that event and
does not block the host (``Work.wait()`` in PyTorch); ``test()`` queries the
event.  Host arrays (the pickled payloads of the object collectives) are
staged through the device and copied back after a host wait that raises
``DistBackendError`` after the group's timeout, aborting the communicator.
An operation still unfinished after the timeout is also reported at the next
launch (PyTorch's watchdog does it from a thread).

The unique id of each communicator travels through the process group's store:
the group's rank 0 creates it, the others read it.

Example (one process per GPU, ``python -m fabric.distributed.run --nproc-per-node 2 script.py``)::

    import fabric, fabric.distributed as dist
    dist.init_process_group("nccl")
    fabric.cuda.set_device(dist.get_rank())
    t = fabric.ones(4, device="cuda")
    dist.all_reduce(t)        # on the device, on NCCL's stream; later work on t waits for it
"""
from __future__ import annotations

import collections
import importlib
import os
import pickle
import time
import warnings

import numpy as np

from .store import DistBackendError

_OPS = {"sum": "NCCL_SUM", "avg": "NCCL_AVG", "product": "NCCL_PROD", "min": "NCCL_MIN", "max": "NCCL_MAX"}
# bool tensors travel as bytes: "sum" and "max" are a logical or, "product" and "min" a logical and
_BOOL_OPS = {"sum": "NCCL_MAX", "avg": "NCCL_MAX", "max": "NCCL_MAX", "product": "NCCL_MIN", "min": "NCCL_MIN"}
_DTYPES = {np.dtype(np.int8): "NCCL_INT8", np.dtype(np.uint8): "NCCL_UINT8", np.dtype(np.int32): "NCCL_INT32",
           np.dtype(np.uint32): "NCCL_UINT32", np.dtype(np.int64): "NCCL_INT64", np.dtype(np.uint64): "NCCL_UINT64",
           np.dtype(np.float16): "NCCL_FLOAT16", np.dtype(np.float32): "NCCL_FLOAT32",
           np.dtype(np.float64): "NCCL_FLOAT64"}
_TORCH_DTYPE_NAMES = {"int16": "Short", "uint16": "UInt16", "complex64": "ComplexFloat",
                      "complex128": "ComplexDouble"}


def nccl():
    """``cupy.cuda.nccl``, or a RuntimeError that says what to install."""
    try:
        with warnings.catch_warnings():   # a CuPy without libnccl warns on import: the error below says it
            warnings.simplefilter("ignore")
            mod = importlib.import_module("cupy.cuda.nccl")
    except ImportError as e:
        raise RuntimeError("the NCCL backend needs CuPy with NCCL: pip install 'fabric-dl[cuda12]' (cupy-cuda12x "
                           f"and nvidia-nccl-cu12) ({e})") from None
    if not getattr(mod, "available", True):
        raise RuntimeError("the NCCL backend needs the NCCL library, which CuPy did not find: pip install "
                           "nvidia-nccl-cu12 (part of 'fabric-dl[cuda12]')")
    return mod


def available() -> bool:
    """Whether CuPy and its NCCL bindings can be imported and a device exists."""
    try:
        nccl()
        return _cupy().cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _cupy():
    return importlib.import_module("cupy")


def _dtype_code(dtype, op: str | None = None):
    """(NCCL datatype constant, element count factor) for ``dtype``."""
    mod = nccl()
    dtype = np.dtype(dtype)
    name = _DTYPES.get(dtype)
    if name is None:
        if dtype.kind == "c" and op in (None, "sum", "avg"):    # complex sums are sums of (re, im) pairs
            return getattr(mod, _DTYPES[np.dtype(dtype.char.lower())]), 2
        label = _TORCH_DTYPE_NAMES.get(dtype.name, dtype.name)
        raise TypeError(f"Input tensor data type is not supported for NCCL process group: {label}")
    return getattr(mod, name), 1


def _op_code(op: str, dtype):
    mod = nccl()
    if np.dtype(dtype) == np.bool_:
        name = _BOOL_OPS.get(op)
    else:
        name = _OPS.get(op)
    if name is None:
        raise ValueError(f"Cannot use ReduceOp.{op.upper()} with NCCL")
    return getattr(mod, name)


class Pending:
    """An operation queued on the communication stream, completed by ``event``."""

    __slots__ = ("after", "arrays", "engine", "event", "started", "waited")

    def __init__(self, engine, event, arrays, after=()):
        self.engine, self.event, self.arrays = engine, event, arrays
        self.after = list(after)
        self.started = time.monotonic()
        self.waited = False

    def test(self) -> bool:
        """True once the operation has finished on the device (the event's query)."""
        if not self.event.done:
            return False
        self.wait()
        return True

    def wait(self) -> None:
        """Make the caller's current stream wait for the operation (the host does not block, unless
        ``TORCH_NCCL_BLOCKING_WAIT=1``, as in PyTorch), then run the write-backs, which are ordered after
        it on that stream."""
        if not self.waited:
            self.engine.check_error()
            with _cupy().cuda.Device(self.engine.device):
                _cupy().cuda.get_current_stream().wait_event(self.event)
            self.waited = True
            if os.environ.get("TORCH_NCCL_BLOCKING_WAIT", "0") == "1":
                self.host_wait()
        after, self.after = self.after, []
        for fn in after:
            fn()

    def host_wait(self) -> None:
        """Block the host until the operation has finished, at most the group's timeout."""
        self.engine.host_wait(self)


class NcclComm:
    """An NCCL communicator with fabric's collectives on device arrays (group ranks)."""

    def __init__(self, comm, rank: int, size: int, device: int, store, timeout: float | None):
        cupy = _cupy()
        self.comm, self.rank, self.size, self.device = comm, rank, size, device
        self.store, self.timeout = store, timeout
        with cupy.cuda.Device(device):
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.inflight: collections.deque = collections.deque()
        self.error: str | None = None
        self._splits = 0

    # --- launching -------------------------------------------------------------------------------------
    def _reap(self) -> None:
        """Forget finished operations (their buffers may be freed now); report one past the timeout."""
        q = self.inflight
        while q and q[0].event.done:
            q.popleft()
        if q and self.timeout is not None and time.monotonic() - q[0].started > self.timeout:
            self._abort(f"Watchdog caught collective operation timeout: an NCCL operation ran for more than "
                        f"{self.timeout * 1000:.0f} milliseconds before timing out")
        self.check_error()

    def check_error(self) -> None:
        if self.error is not None:
            raise DistBackendError(self.error)

    def _abort(self, why: str) -> None:
        if self.error is None:
            self.error = f"NCCL communicator was aborted on rank {self.rank}. {why}"
            try:
                self.comm.abort()
            except Exception:
                pass

    def _launch(self, enqueue, arrays, after=()) -> Pending:
        """Order the communication stream after the caller's stream, queue ``enqueue(stream_ptr)``,
        record the completion event.  ``arrays`` stay referenced until the event has completed."""
        self._reap()
        cupy = _cupy()
        with cupy.cuda.Device(self.device):
            self.stream.wait_event(cupy.cuda.get_current_stream().record())
            enqueue(self.stream.ptr)
            event = cupy.cuda.Event(disable_timing=True)
            event.record(self.stream)
        pending = Pending(self, event, arrays, after)
        self.inflight.append(pending)
        return pending

    def host_wait(self, pending: Pending) -> None:
        deadline = None if self.timeout is None else pending.started + self.timeout
        pause = 1e-5
        while not pending.event.done:
            if deadline is not None and time.monotonic() > deadline:
                self._abort(f"Watchdog caught collective operation timeout: the operation ran for "
                            f"{self.timeout * 1000:.0f} milliseconds before timing out (a peer never reached it)")
                self.check_error()
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
        self.check_error()

    # --- device buffers --------------------------------------------------------------------------------
    def _dev_in(self, a):
        """``a`` on the device: device arrays as they are, host arrays copied (object payloads)."""
        if isinstance(a, np.ndarray):
            with _cupy().cuda.Device(self.device):
                return _cupy().asarray(np.ascontiguousarray(a))
        return a

    def _dev_out(self, a, after: list):
        """A device array to receive into; for a host array, a device twin copied back after a host wait."""
        if not isinstance(a, np.ndarray):
            return a
        with _cupy().cuda.Device(self.device):
            d = _cupy().empty(a.shape, a.dtype)
        holder: list = []     # the Pending, once launched (see _finish)

        def back():
            holder[0].host_wait()
            a[...] = d.get().reshape(a.shape)
        after.append((holder, back))
        return d

    def _finish(self, pending: Pending, after: list, extra=()) -> Pending:
        for item in after:
            if isinstance(item, tuple):
                item[0].append(pending)
                pending.after.append(item[1])
            else:
                pending.after.append(item)
        pending.after.extend(extra)
        return pending

    @staticmethod
    def _ptr(a) -> int:
        return int(a.data.ptr)

    # --- reductions ------------------------------------------------------------------------------------
    def all_reduce(self, buf, op: str) -> Pending:
        after: list = []
        d = self._dev_out(buf, after)
        if d is not buf:
            d[...] = self._dev_in(buf)
        dtype, count, code, wire = self._reduction(d, op)
        p = self._launch(lambda s: self.comm.allReduce(self._ptr(wire), self._ptr(wire), count, dtype, code, s), [d])
        self._int_avg(p, d, op)
        return self._finish(p, after)

    def _reduction(self, d, op):
        mod = nccl()
        if d.dtype == np.bool_:
            wire = d.view(np.uint8)
            return mod.NCCL_UINT8, d.size, _op_code(op, np.bool_), wire
        dtype, factor = _dtype_code(d.dtype, op)
        code = _op_code("sum" if op == "avg" and d.dtype.kind in "iu" else op, d.dtype)
        return dtype, d.size * factor, code, d

    def _int_avg(self, pending: Pending, d, op) -> None:
        """Integer AVG: NCCL sums, then floor division on the communication stream (fabric's semantics);
        ``pending`` then completes after the division."""
        if op != "avg" or d.dtype.kind not in "iu":
            return
        cupy = _cupy()
        with cupy.cuda.Device(self.device), self.stream:
            cupy.floor_divide(d, self.size, out=d)
            pending.event = cupy.cuda.Event(disable_timing=True)
            pending.event.record(self.stream)

    def reduce(self, buf, root: int, op: str) -> Pending:
        after: list = []
        d = self._dev_out(buf, after) if self.rank == root else self._dev_in(buf)
        if d is not buf and self.rank == root:
            d[...] = self._dev_in(buf)
        dtype, count, code, wire = self._reduction(d, op)
        p = self._launch(lambda s: self.comm.reduce(self._ptr(wire), self._ptr(wire), count, dtype, code, root, s),
                         [d])
        if self.rank == root:
            self._int_avg(p, d, op)
        return self._finish(p, after)

    def reduce_scatter_block(self, flat_in, out, op: str) -> Pending:
        after: list = []
        src = self._dev_in(flat_in).reshape(-1)
        d = self._dev_out(out, after)
        dtype, count, code, wire = self._reduction(d, op)
        swire = src.view(np.uint8) if d.dtype == np.bool_ else src
        p = self._launch(lambda s: self.comm.reduceScatter(self._ptr(swire), self._ptr(wire), count, dtype, code, s),
                         [src, d])
        self._int_avg(p, d, op)
        return self._finish(p, after)

    # --- data movement (as bytes: any dtype) -----------------------------------------------------------
    def broadcast(self, buf, root: int) -> Pending:
        after: list = []
        d = self._dev_in(buf) if self.rank == root else self._dev_out(buf, after)
        n = d.nbytes
        mod = nccl()
        p = self._launch(lambda s: self.comm.broadcast(self._ptr(d), self._ptr(d), n, mod.NCCL_UINT8, root, s), [d])
        return self._finish(p, after)

    def all_gather_into(self, buf, out) -> Pending:
        after: list = []
        src, d = self._dev_in(buf), self._dev_out(out, after)
        n = src.nbytes
        if d.nbytes != n * self.size:
            raise ValueError("output tensor size must be equal to world_size times input tensor size")
        mod = nccl()
        p = self._launch(lambda s: self.comm.allGather(self._ptr(src), self._ptr(d), n, mod.NCCL_UINT8, s),
                         [src, d])
        return self._finish(p, after)

    def all_gather(self, buf, outs) -> Pending:
        """``outs[r]`` receives rank ``r``'s ``buf``; sizes may differ (padded to the largest, as
        PyTorch's all_gather_object does)."""
        cupy = _cupy()
        widest = max(o.nbytes for o in outs)
        with cupy.cuda.Device(self.device):
            send = cupy.zeros(widest, np.uint8)
            src = self._dev_in(buf)
            send[:src.nbytes] = src.reshape(-1).view(np.uint8)
            stage = cupy.empty(widest * self.size, np.uint8)
        mod = nccl()
        p = self._launch(lambda s: self.comm.allGather(self._ptr(send), self._ptr(stage), widest, mod.NCCL_UINT8, s),
                         [send, stage])
        return self._finish(p, [], [lambda: self._unstage(p, stage, [widest * r for r in range(self.size)], outs)])

    def _unstage(self, pending, stage, offsets, outs) -> None:
        """Copy pieces of a device staging buffer into ``outs`` (after ``pending``)."""
        for off, o in zip(offsets, outs):
            piece = stage[off:off + o.nbytes]
            if isinstance(o, np.ndarray):
                pending.host_wait()
                o.reshape(-1).view(np.uint8)[...] = piece.get()
            else:
                o.reshape(-1).view(np.uint8)[...] = piece

    def _group_p2p(self, sends, recvs, keep, after=()) -> Pending:
        """One NCCL group of sends ``(device array, peer)`` and receives ``(device array, peer)``."""
        mod = nccl()

        def enqueue(s):
            mod.groupStart()
            try:
                for a, peer in sends:
                    self.comm.send(self._ptr(a), a.nbytes, mod.NCCL_UINT8, peer, s)
                for a, peer in recvs:
                    self.comm.recv(self._ptr(a), a.nbytes, mod.NCCL_UINT8, peer, s)
            finally:
                mod.groupEnd()
        return self._finish(self._launch(enqueue, keep), list(after))

    def gather(self, buf, root: int, outs) -> Pending:
        src = self._dev_in(buf)
        if self.rank != root:
            return self._group_p2p([(src, root)], [], [src])
        after: list = []
        targets = [self._dev_out(o, after) for o in outs]
        targets[root][...] = src.reshape(targets[root].shape)
        recvs = [(targets[p], p) for p in range(self.size) if p != root]
        return self._group_p2p([], recvs, [src, *targets], after)

    def scatter(self, ins, out, root: int) -> Pending:
        after: list = []
        d = self._dev_out(out, after)
        if self.rank != root:
            return self._group_p2p([], [(d, root)], [d], after)
        srcs = [self._dev_in(a) for a in ins]
        d[...] = srcs[root].reshape(d.shape)
        return self._group_p2p([(srcs[p], p) for p in range(self.size) if p != root], [], [d, *srcs], after)

    def all_to_all(self, ins, outs) -> Pending:
        after: list = []
        srcs = [self._dev_in(a) for a in ins]
        targets = [self._dev_out(o, after) for o in outs]
        me = self.rank
        if targets[me].size:
            targets[me][...] = srcs[me].reshape(targets[me].shape)
        others = [p for p in range(self.size) if p != me]
        return self._group_p2p([(srcs[p], p) for p in others if srcs[p].nbytes],
                               [(targets[p], p) for p in others if targets[p].nbytes], [*srcs, *targets], after)

    def barrier(self) -> Pending:
        """An all-reduce of one element, then a host wait (PyTorch's NCCL barrier)."""
        cupy = _cupy()
        with cupy.cuda.Device(self.device):
            token = cupy.zeros(1, np.int32)
        p = self.all_reduce(token, "sum")
        p.after.append(p.host_wait)
        return p

    # --- point to point --------------------------------------------------------------------------------
    def send(self, buf, peer: int, tag: int) -> Pending:   # NCCL has no tags (PyTorch ignores them too)
        src = self._dev_in(buf)
        return self._group_p2p([(src, peer)], [], [src])

    def recv(self, buf, peer: int, tag: int) -> Pending:
        after: list = []
        d = self._dev_out(buf, after)
        return self._group_p2p([], [(d, peer)], [d], after)

    def recv_any(self, buf, tag: int) -> int:
        raise RuntimeError("ProcessGroupNCCL does not support recvAnysource")

    # --- groups ----------------------------------------------------------------------------------------
    def split(self, member: bool, key: int, size: int | None = None) -> NcclComm | None:
        """A communicator of the members (every rank of this one calls it, in the same order)."""
        self._splits += 1
        if not member:
            return None
        from .store import PrefixStore

        return connect(PrefixStore(f"split{self._splits}", self.store), key, size, self.device, self.timeout)

    def free(self) -> None:
        """Destroy the communicator once its queued work has finished."""
        try:
            if self.error is None:
                self.stream.synchronize()
                self.comm.destroy()
        finally:
            self.inflight.clear()


def connect(store, rank: int, size: int, device: int, timeout: float | None) -> NcclComm:
    """The unique-id rendezvous: rank 0 creates the id and publishes it in ``store``; every rank
    then joins the communicator on ``device`` (``ncclCommInitRank``)."""
    mod = nccl()
    cupy = _cupy()
    if rank == 0:
        uid = mod.get_unique_id()
        store.set("nccl_unique_id", pickle.dumps(tuple(uid)))
    else:
        uid = pickle.loads(store.get("nccl_unique_id"))
    with cupy.cuda.Device(device):
        comm = mod.NcclCommunicator(size, uid, rank)
    return NcclComm(comm, rank, size, device, store, timeout)
