"""The "gloo" backend: collectives on NumPy arrays over a full mesh of TCP
sockets, in pure Python.

Rendezvous: every rank listens on a fresh port, publishes ``host:port`` in
the store, connects to every lower rank and accepts every higher one.  All
traffic between two ranks then flows through their one socket, in program
order, as frames ``<payload bytes: u64><tag: i64><payload>``; a receiver
checks the length and tag it expects, so mismatched calls raise instead of
corrupting data.

``all_reduce`` is reduce-scatter + all-gather: rank ``r`` owns the ``r``-th
chunk, receives that chunk from every rank, reduces the contributions in
rank order 0, 1, ..., W-1 and sends the result to everyone.  Every element is
therefore reduced exactly once, in a fixed order: all ranks end with the
same bits, and repeated runs give the same bits.

Every transfer runs through one non-blocking selector loop (no deadlock when
all ranks send at once) with a deadline: a silent peer raises
DistBackendError after the timeout, a dead one (connection closed) at once.
"""
from __future__ import annotations

import selectors
import socket
import struct
import time
from collections import deque

import numpy as np

from .store import DistBackendError
from .store import _recv_exact as _recv_store_bytes

_HEADER = struct.Struct("<Qq")
_HANDSHAKE = struct.Struct("<8sq")
_MAGIC = b"fabricgl"

# the tag of collective traffic (send/recv use the user's tag)
TAG_COLLECTIVE = -(2 ** 62)


def _byte_view(arr: np.ndarray) -> memoryview:
    """A writable/readable flat byte view of a C-contiguous array."""
    return memoryview(arr.reshape(-1).view(np.uint8))


class _Recv:
    __slots__ = ("got", "header", "nbytes_seen", "out", "stage", "tag", "tag_seen")

    def __init__(self, tag, out):
        self.tag = tag
        self.out = out            # the byte view to fill
        self.header = bytearray(_HEADER.size)
        self.got = 0
        self.stage = 0            # 0: header, 1: payload
        self.nbytes_seen = 0
        self.tag_seen = 0


class Mesh:
    """Sockets to every other rank of the world."""

    def __init__(self, store, rank: int, size: int, timeout: float, host: str) -> None:
        self.rank, self.size, self.timeout = rank, size, timeout
        self.socks: dict[int, socket.socket] = {}
        self.sel = selectors.DefaultSelector()
        if size == 1:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((host, 0))
        except OSError:
            listener.bind(("", 0))
        listener.listen(size)
        listener.settimeout(timeout)
        store.set(f"gloo/addr/{rank}", f"{host}:{listener.getsockname()[1]}")
        try:
            for peer in range(rank):
                addr = store.get(f"gloo/addr/{peer}").decode()
                h, p = addr.rsplit(":", 1)
                s = self._connect(h, int(p), peer)
                s.sendall(_HANDSHAKE.pack(_MAGIC, rank))
                self._add(peer, s)
            for _ in range(size - 1 - rank):
                try:
                    s, _ = listener.accept()
                except TimeoutError:
                    raise DistBackendError(f"[rank {rank}] timed out after {timeout:g}s waiting for peers to "
                                           f"connect ({len(self.socks)} of {size - 1} connected)") from None
                s.settimeout(timeout)
                magic, peer = _HANDSHAKE.unpack(_recv_exact(s, _HANDSHAKE.size))
                if magic != _MAGIC or not rank < peer < size or peer in self.socks:
                    s.close()
                    raise DistBackendError(f"[rank {rank}] bad handshake from a connecting peer")
                self._add(peer, s)
        finally:
            listener.close()

    def _connect(self, host, port, peer):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return socket.create_connection((host, port), timeout=max(0.1, min(self.timeout, 10.0)))
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise DistBackendError(f"[rank {self.rank}] could not connect to rank {peer} at "
                                           f"{host}:{port}: {e}") from None
                time.sleep(0.02)

    def _add(self, peer, s):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        self.socks[peer] = s

    def close(self):
        for s in self.socks.values():
            try:
                s.close()
            except OSError:
                pass
        self.socks.clear()
        self.sel.close()

    # --- the one transfer loop ---------------------------------------------------------------------
    def exchange(self, sends, recvs, timeout: float | None = None) -> None:
        """Send and receive concurrently.

        ``sends``: list of ``(peer, tag, array)``; ``recvs``: list of
        ``(peer, tag, array)`` with the array (C-contiguous) filled in place.
        Messages to/from one peer are handled in list order.
        """
        timeout = self.timeout if timeout is None else timeout
        outq: dict[int, deque] = {}
        inq: dict[int, deque] = {}
        for peer, tag, arr in sends:
            payload = _byte_view(arr)
            outq.setdefault(peer, deque()).extend((memoryview(_HEADER.pack(payload.nbytes, tag)), payload))
        for peer, tag, arr in recvs:
            inq.setdefault(peer, deque()).append(_Recv(tag, _byte_view(arr)))
        self._run(outq, inq, timeout)

    def _sock(self, peer):
        s = self.socks.get(peer)
        if s is None:
            raise DistBackendError(f"[rank {self.rank}] no connection to rank {peer} (process group destroyed?)")
        return s

    def _run(self, outq, inq, timeout):
        sel = self.sel
        peers = set(outq) | set(inq)
        for peer in peers:
            ev = (selectors.EVENT_WRITE if outq.get(peer) else 0) | (selectors.EVENT_READ if inq.get(peer) else 0)
            if ev:
                sel.register(self._sock(peer), ev, peer)
        deadline = time.monotonic() + timeout
        try:
            live = len(sel.get_map())
            while live:
                left = deadline - time.monotonic()
                if left <= 0:
                    waiting = sorted(p for p in peers if inq.get(p) or outq.get(p))
                    raise DistBackendError(f"[rank {self.rank}] timed out after {timeout:g}s in a collective or "
                                           f"send/recv, waiting on rank(s) {waiting}")
                for key, mask in sel.select(left):
                    peer = key.data
                    s = key.fileobj
                    if mask & selectors.EVENT_WRITE:
                        q = outq[peer]
                        while q:
                            try:
                                n = s.send(q[0])
                            except BlockingIOError:
                                break
                            except OSError as e:
                                raise self._lost(peer, e) from None
                            if n == len(q[0]):
                                q.popleft()
                            else:
                                q[0] = q[0][n:]
                                break
                    if mask & selectors.EVENT_READ:
                        self._read(peer, s, inq[peer])
                    ev = (selectors.EVENT_WRITE if outq.get(peer) else 0) | \
                         (selectors.EVENT_READ if inq.get(peer) else 0)
                    if ev == 0:
                        sel.unregister(s)
                        live -= 1
                    elif ev != key.events:
                        sel.modify(s, ev, peer)
        finally:
            for key in list(sel.get_map().values()):
                sel.unregister(key.fileobj)

    def _lost(self, peer, err=None):
        why = f": {err}" if err else ""
        return DistBackendError(f"[rank {self.rank}] connection to rank {peer} closed{why} (did that process "
                                f"exit or fail?)")

    def _read(self, peer, s, q):
        while q:
            r = q[0]
            try:
                if r.stage == 0:
                    n = s.recv_into(memoryview(r.header)[r.got:])
                else:
                    n = s.recv_into(r.out[r.got:], r.nbytes_seen - r.got)
            except BlockingIOError:
                return
            except OSError as e:
                raise self._lost(peer, e) from None
            if n == 0:
                raise self._lost(peer)
            r.got += n
            if r.stage == 0 and r.got == _HEADER.size:
                r.nbytes_seen, r.tag_seen = _HEADER.unpack(r.header)
                if r.tag_seen != r.tag:
                    raise DistBackendError(f"[rank {self.rank}] message from rank {peer} has tag {r.tag_seen}, "
                                           f"expected {r.tag} (ranks called collectives/send/recv in different "
                                           f"orders?)")
                if r.nbytes_seen != r.out.nbytes:
                    raise DistBackendError(f"[rank {self.rank}] message from rank {peer} has {r.nbytes_seen} "
                                           f"bytes, expected {r.out.nbytes} (tensor sizes or dtypes differ "
                                           f"between ranks)")
                r.stage, r.got = 1, 0
            if r.stage == 1 and r.got == r.nbytes_seen:
                q.popleft()

    def recv_any(self, out: np.ndarray, tag: int, peers, timeout: float | None = None) -> int:
        """Receive one message into ``out`` from whichever of ``peers`` sends first; returns its rank."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        sel = self.sel
        for p in peers:
            sel.register(self._sock(p), selectors.EVENT_READ, p)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistBackendError(f"[rank {self.rank}] timed out after {timeout:g}s in recv from any "
                                           f"source")
                peer = None
                for key, _ in sel.select(left):
                    # only a peer whose next frame carries our tag qualifies (its collective traffic doesn't)
                    head = key.fileobj.recv(_HEADER.size, socket.MSG_PEEK)
                    if len(head) == 0:
                        raise self._lost(key.data)
                    if len(head) < _HEADER.size:
                        time.sleep(0.0005)
                    elif _HEADER.unpack(head)[1] == tag:
                        peer = key.data
                        break
                    else:
                        sel.unregister(key.fileobj)
                if peer is not None:
                    break
        finally:
            for key in list(sel.get_map().values()):
                sel.unregister(key.fileobj)
        self.exchange([], [(peer, tag, out)], max(0.0, deadline - time.monotonic()) or 0.001)
        return peer


def _recv_exact(sock, n):
    try:
        return _recv_store_bytes(sock, n)
    except ConnectionError as e:
        raise DistBackendError(f"connection closed during the gloo handshake ({e})") from None


# --- reduction ops on arrays -----------------------------------------------------------------------
def _reduce_into(op: str, acc: np.ndarray, x: np.ndarray) -> None:
    if op in ("sum", "avg"):
        np.add(acc, x, out=acc)
    elif op == "product":
        np.multiply(acc, x, out=acc)
    elif op == "min":
        np.minimum(acc, x, out=acc)
    elif op == "max":
        np.maximum(acc, x, out=acc)
    elif op == "band":
        np.bitwise_and(acc, x, out=acc)
    elif op == "bor":
        np.bitwise_or(acc, x, out=acc)
    elif op == "bxor":
        np.bitwise_xor(acc, x, out=acc)
    else:
        raise ValueError(f"unknown reduce op {op}")


def _finish(op: str, acc: np.ndarray, count: int) -> None:
    if op == "avg":
        if acc.dtype.kind in "fc":
            acc /= count
        else:
            np.floor_divide(acc, count, out=acc)


def reduce_in_rank_order(op: str, parts) -> np.ndarray:
    """Reduce the arrays ``parts`` (in rank order) into a new array."""
    acc = parts[0].copy()
    for x in parts[1:]:
        _reduce_into(op, acc, x)
    _finish(op, acc, len(parts))
    return acc


def chunk_bounds(n: int, k: int) -> list:
    return [(n * i) // k for i in range(k + 1)]
