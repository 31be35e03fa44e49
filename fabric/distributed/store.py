"""Key-value stores for rendezvous: ``TCPStore`` (a server thread in one
process, clients anywhere on the network), ``FileStore`` (a file on a shared
file system), ``HashStore`` (in-process) and ``PrefixStore`` — PyTorch's
``torch.distributed`` store API (``set``/``get``/``add``/``wait``/``check``/
``compare_set``/``delete_key``/``num_keys``).

Values are bytes (a ``str`` is stored as its UTF-8 encoding); ``add`` keeps
the counter as its decimal text, as PyTorch does, so ``get`` after ``add``
returns ``b"3"``.  ``get`` and ``wait`` block until the key exists and raise
:class:`DistStoreError` (a RuntimeError) after the store's timeout.

Example::

    >>> from fabric.distributed import TCPStore
    >>> server = TCPStore("127.0.0.1", 0, 1, is_master=True)
    >>> server.set("first", "hello")
    >>> client = TCPStore("127.0.0.1", server.port, is_master=False)
    >>> client.get("first"), client.add("counter", 2), client.add("counter", 3)
    (b'hello', 2, 5)
"""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
import threading
import time
from datetime import timedelta

__all__ = [
    "DistBackendError",
    "DistError",
    "DistStoreError",
    "FileStore",
    "HashStore",
    "PrefixStore",
    "Store",
    "TCPStore",
]

_DEFAULT_STORE_TIMEOUT = timedelta(seconds=300)


class DistError(RuntimeError):
    """Base class of fabric.distributed's errors (PyTorch's ``torch.distributed.DistError``)."""


class DistStoreError(DistError):
    """A store operation failed or timed out."""


class DistBackendError(DistError):
    """A collective failed in the backend (peer gone, size mismatch, timeout)."""


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


def _as_bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, list):  # PyTorch accepts a list of ints (byte values)
        return bytes(value)
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


def _timeout_error(keys, seconds) -> DistStoreError:
    return DistStoreError(f"wait timeout after {int(seconds * 1000)}ms, keys: " + ", ".join(f"/{k}" for k in keys))


class Store:
    """The store interface; subclasses hold the data in ``_table``-like
    backends and implement ``_op``.  Shared helpers implement the rest."""

    def __init__(self, timeout=_DEFAULT_STORE_TIMEOUT) -> None:
        self._timeout = _seconds(timeout)

    @property
    def timeout(self) -> timedelta:
        return timedelta(seconds=self._timeout)

    def set_timeout(self, timeout) -> None:
        self._timeout = _seconds(timeout)

    # the primitives each store provides
    def set(self, key: str, value) -> None:
        raise NotImplementedError(f"{type(self).__name__}.set")

    def get(self, key: str) -> bytes:
        raise NotImplementedError(f"{type(self).__name__}.get")

    def add(self, key: str, value: int) -> int:
        raise NotImplementedError(f"{type(self).__name__}.add")

    def check(self, keys) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.check")

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        raise NotImplementedError(f"{type(self).__name__}.compare_set")

    def delete_key(self, key: str) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.delete_key")

    def num_keys(self) -> int:
        raise NotImplementedError(f"{type(self).__name__}.num_keys")

    def append(self, key: str, value) -> None:
        raise NotImplementedError(f"{type(self).__name__}.append")

    # composites
    def wait(self, keys, timeout=None) -> None:
        """Block until every key in ``keys`` exists (DistStoreError after ``timeout``)."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        seconds = self._timeout if timeout is None else _seconds(timeout)
        deadline = time.monotonic() + seconds
        delay = 0.001
        while not self.check(keys):
            if time.monotonic() >= deadline:
                raise _timeout_error(keys, seconds)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def multi_get(self, keys) -> list:
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values) -> None:
        for k, v in zip(keys, values):
            self.set(k, v)

    def has_extended_api(self) -> bool:
        return True


class _Table:
    """A thread-safe dict with blocking reads (shared by HashStore and the TCPStore server)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key, seconds):
        deadline = time.monotonic() + seconds
        with self.cond:
            while key not in self.data:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.data[key]

    def wait(self, keys, seconds):
        deadline = time.monotonic() + seconds
        with self.cond:
            while not all(k in self.data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def add(self, key, delta):
        with self.cond:
            value = int(self.data.get(key, b"0")) + delta
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def append(self, key, value):
        with self.cond:
            self.data[key] = self.data.get(key, b"") + value
            self.cond.notify_all()

    def compare_set(self, key, expected, desired):
        with self.cond:
            current = self.data.get(key)
            if current is None:
                if expected == b"":
                    self.data[key] = desired
                    self.cond.notify_all()
                    return desired
                return expected
            if current == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return current

    def check(self, keys):
        with self.cond:
            return all(k in self.data for k in keys)

    def delete(self, key):
        with self.cond:
            return self.data.pop(key, None) is not None

    def num_keys(self):
        with self.cond:
            return len(self.data)


class HashStore(Store):
    """An in-process store (threads of one process).

    Example::

        >>> s = HashStore(); s.set("k", b"v"); s.get("k")
        b'v'
    """

    def __init__(self) -> None:
        super().__init__()
        self._table = _Table()

    def set(self, key, value):
        self._table.set(key, _as_bytes(value))

    def get(self, key):
        value = self._table.get(key, self._timeout)
        if value is None:
            raise _timeout_error([key], self._timeout)
        return value

    def wait(self, keys, timeout=None):
        keys = [keys] if isinstance(keys, str) else list(keys)
        seconds = self._timeout if timeout is None else _seconds(timeout)
        if not self._table.wait(keys, seconds):
            raise _timeout_error(keys, seconds)

    def add(self, key, value):
        return self._table.add(key, int(value))

    def append(self, key, value):
        self._table.append(key, _as_bytes(value))

    def compare_set(self, key, expected_value, desired_value):
        return self._table.compare_set(key, _as_bytes(expected_value), _as_bytes(desired_value))

    def check(self, keys):
        return self._table.check(list(keys))

    def delete_key(self, key):
        return self._table.delete(key)

    def num_keys(self):
        return self._table.num_keys()


# --- TCPStore wire protocol: a message is a count of fields, then each field as <length><bytes>.
_SET, _GET, _ADD, _CHECK, _WAIT, _DELETE, _NUM_KEYS, _COMPARE_SET, _APPEND, _PING = range(10)
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def _recv_exact(sock, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed")
        got += k
    return bytes(buf)


def _send_msg(sock, fields) -> None:
    parts = [_U32.pack(len(fields))]
    for f in fields:
        parts.append(_U64.pack(len(f)))
        parts.append(f)
    sock.sendall(b"".join(parts))


def _recv_msg(sock) -> list:
    (n,) = _U32.unpack(_recv_exact(sock, 4))
    fields = []
    for _ in range(n):
        (k,) = _U64.unpack(_recv_exact(sock, 8))
        fields.append(_recv_exact(sock, k))
    return fields


class _StoreServer:
    """The TCPStore daemon: one thread accepting, one thread per client."""

    def __init__(self, host: str, port: int) -> None:
        self.table = _Table()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            if e.errno != errno.EADDRNOTAVAIL:
                self.sock.close()
                raise DistStoreError(f"The server socket has failed to listen on any local network address. "
                                     f"port: {port}, useIpv6: false, code: -{e.errno}, name: "
                                     f"{errno.errorcode.get(e.errno, '')}, message: {e.strerror}") from None
            self.sock.bind(("", port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.clients: list = []
        self.closed = False
        threading.Thread(target=self._accept_loop, name="fabric-TCPStore-server", daemon=True).start()

    def _accept_loop(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.clients.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        t = self.table
        try:
            while True:
                fields = _recv_msg(conn)
                cmd = fields[0][0]
                if cmd == _SET:
                    t.set(fields[1].decode(), fields[2])
                    reply = [b""]
                elif cmd == _GET:
                    value = t.get(fields[1].decode(), float(fields[2]))
                    reply = [b"0"] if value is None else [b"1", value]
                elif cmd == _ADD:
                    reply = [str(t.add(fields[1].decode(), int(fields[2]))).encode()]
                elif cmd == _CHECK:
                    reply = [b"1" if t.check([f.decode() for f in fields[1:]]) else b"0"]
                elif cmd == _WAIT:
                    ok = t.wait([f.decode() for f in fields[2:]], float(fields[1]))
                    reply = [b"1" if ok else b"0"]
                elif cmd == _DELETE:
                    reply = [b"1" if t.delete(fields[1].decode()) else b"0"]
                elif cmd == _NUM_KEYS:
                    reply = [str(t.num_keys()).encode()]
                elif cmd == _COMPARE_SET:
                    reply = [t.compare_set(fields[1].decode(), fields[2], fields[3])]
                elif cmd == _APPEND:
                    t.append(fields[1].decode(), fields[2])
                    reply = [b""]
                else:  # _PING
                    reply = [b"pong"]
                _send_msg(conn, reply)
        except (OSError, ConnectionError, IndexError, ValueError):
            conn.close()

    def close(self):
        self.closed = True
        self.sock.close()
        for c in self.clients:
            try:
                c.close()
            except OSError:
                pass


_servers: dict = {}   # port -> _StoreServer, for multi_tenant masters in one process
_servers_lock = threading.Lock()


class TCPStore(Store):
    """A store served over TCP by the process created with ``is_master=True``.

    ``port=0`` on the master picks a free port (read it back from ``.port``).
    Clients retry connecting until ``timeout``; with ``wait_for_workers`` the
    master's constructor returns once ``world_size`` stores have connected.
    """

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout=_DEFAULT_STORE_TIMEOUT, wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True) -> None:
        super().__init__(timeout)
        if not 0 <= int(port) < 2 ** 16:
            raise ValueError(f"port must have value from 0 to 65535 but was {port}.")
        self.host = host_name
        self._server = None
        if is_master:
            with _servers_lock:
                server = _servers.get(port) if (multi_tenant and port) else None
                if server is None:
                    server = _StoreServer(host_name, int(port))
                    if multi_tenant:
                        _servers[server.port] = server
                self._server = server
            port = server.port
        self.port = int(port)
        self._lock = threading.Lock()
        self._sock = self._connect()
        self.add("__fabric_tcpstore_workers", 1)
        if is_master and wait_for_workers and world_size:
            deadline = time.monotonic() + self._timeout
            while int(self.get_nowait("__fabric_tcpstore_workers") or 0) < world_size:
                if time.monotonic() >= deadline:
                    raise DistStoreError(f"Timed out after {int(self._timeout)} seconds waiting for clients. "
                                         f"{int(self.get_nowait('__fabric_tcpstore_workers') or 0)}/{world_size} "
                                         f"clients joined.")
                time.sleep(0.005)

    def _connect(self):
        deadline = time.monotonic() + self._timeout
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=max(0.1, min(5.0, self._timeout)))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(None)
                return sock
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise DistStoreError(f"The client socket has timed out after {self._timeout:g}s while trying "
                                         f"to connect to ({self.host}, {self.port}): {e}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def _request(self, fields, wait_s: float = 0.0):
        with self._lock:
            # a server-side wait may last wait_s; past that (plus slack) the server is gone
            self._sock.settimeout(wait_s + max(self._timeout, 1.0))
            try:
                _send_msg(self._sock, fields)
                return _recv_msg(self._sock)
            except (OSError, ConnectionError) as e:
                raise DistStoreError(f"TCPStore at {self.host}:{self.port} failed: {e}") from None

    def local_address(self) -> str:
        """The address of this process's end of the connection to the server
        (the interface that reaches the master; peers on the LAN reach us there)."""
        return self._sock.getsockname()[0]

    def set(self, key, value):
        self._request([bytes([_SET]), key.encode(), _as_bytes(value)])

    def get(self, key):
        reply = self._request([bytes([_GET]), key.encode(), repr(self._timeout).encode()], self._timeout)
        if reply[0] != b"1":
            raise _timeout_error([key], self._timeout)
        return reply[1]

    def get_nowait(self, key):
        reply = self._request([bytes([_GET]), key.encode(), b"0"])
        return reply[1] if reply[0] == b"1" else None

    def wait(self, keys, timeout=None):
        keys = [keys] if isinstance(keys, str) else list(keys)
        if not keys:
            return
        seconds = self._timeout if timeout is None else _seconds(timeout)
        reply = self._request([bytes([_WAIT]), repr(seconds).encode()] + [k.encode() for k in keys], seconds)
        if reply[0] != b"1":
            raise _timeout_error(keys, seconds)

    def add(self, key, value):
        return int(self._request([bytes([_ADD]), key.encode(), str(int(value)).encode()])[0])

    def append(self, key, value):
        self._request([bytes([_APPEND]), key.encode(), _as_bytes(value)])

    def compare_set(self, key, expected_value, desired_value):
        return self._request([bytes([_COMPARE_SET]), key.encode(), _as_bytes(expected_value),
                              _as_bytes(desired_value)])[0]

    def check(self, keys):
        return self._request([bytes([_CHECK])] + [k.encode() for k in keys])[0] == b"1"

    def delete_key(self, key):
        return self._request([bytes([_DELETE]), key.encode()])[0] == b"1"

    def num_keys(self):
        return int(self._request([bytes([_NUM_KEYS])])[0])

    def close(self) -> None:
        """Close the connection (and the server, on the master)."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                with _servers_lock:
                    if _servers.get(self._server.port) is self._server:
                        del _servers[self._server.port]
                self._server.close()
                self._server = None


class FileStore(Store):
    """A store kept in one file (a shared file system reaches other machines).

    Every operation takes an exclusive ``flock`` on the file, re-reads the
    records appended so far and appends its own: a record is
    ``<key length><key><value length><value>``, a value length of 2**64-1
    deletes the key.  The file is removed when the last of ``world_size``
    users closes it.
    """

    _DELETED = 2 ** 64 - 1

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = file_name
        self.world_size = world_size
        self._data: dict[str, bytes] = {}
        self._pos = 0
        self._fd = os.open(file_name, os.O_RDWR | os.O_CREAT, 0o644)
        self._closed = False
        self._lock = threading.Lock()
        self.add("__fabric_filestore_users", 1)

    def _locked(self, fn):
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._refresh()
                return fn()
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _refresh(self):
        end = os.fstat(self._fd).st_size
        if end <= self._pos:
            return
        raw = os.pread(self._fd, end - self._pos, self._pos)
        i = 0
        while i + 8 <= len(raw):
            (kn,) = _U64.unpack_from(raw, i)
            key = raw[i + 8:i + 8 + kn].decode()
            (vn,) = _U64.unpack_from(raw, i + 8 + kn)
            i += 16 + kn
            if vn == self._DELETED:
                self._data.pop(key, None)
            else:
                self._data[key] = raw[i:i + vn]
                i += vn
        self._pos = end

    def _write(self, key: str, value: bytes | None):
        k = key.encode()
        rec = _U64.pack(len(k)) + k + (_U64.pack(self._DELETED) if value is None else _U64.pack(len(value)) + value)
        os.lseek(self._fd, 0, os.SEEK_END)
        os.write(self._fd, rec)
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value
        self._pos += len(rec)

    def set(self, key, value):
        value = _as_bytes(value)
        self._locked(lambda: self._write(key, value))

    def get(self, key):
        self.wait([key])
        return self._locked(lambda: self._data[key])

    def add(self, key, value):
        def op():
            new = int(self._data.get(key, b"0")) + int(value)
            self._write(key, str(new).encode())
            return new
        return self._locked(op)

    def append(self, key, value):
        value = _as_bytes(value)
        self._locked(lambda: self._write(key, self._data.get(key, b"") + value))

    def compare_set(self, key, expected_value, desired_value):
        expected, desired = _as_bytes(expected_value), _as_bytes(desired_value)

        def op():
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._write(key, desired)
                return desired
            return expected if current is None else current
        return self._locked(op)

    def check(self, keys):
        return self._locked(lambda: all(k in self._data for k in keys))

    def delete_key(self, key):
        def op():
            present = key in self._data
            if present:
                self._write(key, None)
            return present
        return self._locked(op)

    def num_keys(self):
        return self._locked(lambda: sum(1 for k in self._data if not k.startswith("__fabric_filestore")))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        left = self.add("__fabric_filestore_users", -1)
        os.close(self._fd)
        if self.world_size > 0 and left == 0 and int(self._data.get("__fabric_filestore_users", b"1")) == 0:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __del__(self):
        try:
            if not self._closed:
                self._closed = True
                os.close(self._fd)
        except Exception:
            return


class PrefixStore(Store):
    """Every key of ``store`` seen through ``prefix + "/"``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key):
        return f"{self.prefix}/{key}"

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def get(self, key):
        return self.underlying_store.get(self._k(key))

    def add(self, key, value):
        return self.underlying_store.add(self._k(key), value)

    def append(self, key, value):
        self.underlying_store.append(self._k(key), value)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def check(self, keys):
        return self.underlying_store.check([self._k(k) for k in keys])

    def wait(self, keys, timeout=None):
        keys = [keys] if isinstance(keys, str) else list(keys)
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()
