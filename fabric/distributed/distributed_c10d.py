"""Process groups and collectives with ``torch.distributed``'s API.

Two engines carry the data.  On MPI (:mod:`fabric.distributed._mpi`, the
``mpi`` extra) every collective is a non-blocking MPI call and
``async_op=True`` returns a :class:`Work` with the requests in flight; the
group's ``_engine`` is its communicator.  Without it, the "gloo" transport
(:mod:`fabric.distributed._gloo`: pure Python, TCP sockets, NumPy arrays)
runs collectives eagerly: ``async_op=True`` returns a :class:`Work` that is
already complete, except ``isend``/``irecv``, whose transfers are queued and
run at ``wait()`` or with the next blocking communication of the process, so
a symmetric ``isend``+``irecv`` exchange cannot deadlock on full socket
buffers.

Example (one process, world size 1)::

    >>> import fabric, fabric.distributed as dist
    >>> store = dist.HashStore()
    >>> dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    >>> t = fabric.tensor([1.0, 2.0]); dist.all_reduce(t); t
    tensor([1., 2.])
    >>> dist.destroy_process_group()
"""
from __future__ import annotations

import enum
import os
import pickle
import warnings
from datetime import timedelta
from urllib.parse import urlparse

import numpy as np

from .._tensor import Tensor
from . import _gloo, _mpi, _nccl
from .store import DistBackendError, FileStore, HashStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend",
    "GroupMember",
    "P2POp",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_backend_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "is_ucc_available",
    "isend",
    "monitored_barrier",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``; ``Backend.GLOO`` ..."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    XCCL = "xccl"
    UCC = "ucc"
    MPI = "mpi"
    FAKE = "fake"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = name.lower()
        if value not in cls.backend_list and ":" not in value:
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class _RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


class ReduceOp:
    """Reduction operations: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR``."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM


def _op_name(op) -> str:
    if isinstance(op, _RedOpType) and op is not _RedOpType.PREMUL_SUM:
        return op.name.lower()
    if op is _RedOpType.PREMUL_SUM:
        raise NotImplementedError("ReduceOp.PREMUL_SUM is not supported by fabric's gloo backend (NCCL only in "
                                  "PyTorch)")
    raise ValueError(f"unknown reduce op {op!r}")


class Work:
    """Handle of a (possibly queued) communication: ``wait()``, ``is_completed()``, ``result()``."""

    def __init__(self, tensors=(), group=None, pending=False):
        self._tensors = list(tensors)
        self._group = group
        # True: gloo transfers queued in the world; a _mpi.Pending: MPI requests in flight
        self._pending = pending
        self._exc = None

    def wait(self, timeout=None) -> bool:
        if self._pending:
            try:
                if self._pending is True:
                    self._group._flush()
                else:
                    self._pending.wait()
            except Exception as e:
                self._exc = e
                raise
            self._pending = False
        return True

    def is_completed(self) -> bool:
        if self._pending is True and self._group._nothing_pending() or self._pending and self._pending.test():
            self._pending = False
        return not self._pending

    def is_success(self) -> bool:
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def result(self) -> list:
        return self._tensors

    def synchronize(self) -> None:
        self.wait()

    def get_future(self) -> Future:
        return Future(self)


class Future:
    """A ``Work``'s result as a future (``torch.futures.Future``'s protocol):
    ``wait()``/``value()`` give the result, ``done()`` polls (driving the
    engine's progress), ``then(fn)`` chains ``fn(completed_future)``, which
    runs when the chained future is waited on."""

    def __init__(self, work: Work | None = None, value=None, parent: Future | None = None, callback=None):
        self._work = work
        self._value = value
        self._parent = parent
        self._callback = callback

    def wait(self):
        if self._callback is not None:
            self._parent.wait()
            self._value = self._callback(self._parent)
            self._callback = self._parent = None
        elif self._work is not None:
            self._work.wait()
            self._value, self._work = self._work.result(), None
        return self._value

    def value(self):
        return self.wait()

    def done(self) -> bool:
        if self._callback is not None:
            return self._parent.done()
        return self._work is None or self._work.is_completed()

    def set_result(self, value) -> None:
        self._work, self._parent, self._callback, self._value = None, None, None, value

    def then(self, callback) -> Future:
        return Future(parent=self, callback=callback)


class ProcessGroup:
    """A set of ranks (global ranks, sorted) sharing the world's connections."""

    def __init__(self, world: _World, ranks: list, timeout: float, name: str, engine=None):
        self._world = world
        self._ranks = list(ranks)
        self._group_rank = {g: i for i, g in enumerate(self._ranks)}
        self._timeout = timeout
        self.group_name = name
        # the group's communicator on an engine (_mpi.MpiComm); None on the built-in TCP transport
        self._engine = engine

    def rank(self) -> int:
        return self._group_rank.get(self._world.rank, -1)

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return self._world.engine

    @property
    def group_desc(self) -> str:
        return self.group_name

    def __repr__(self):
        return f"<fabric.distributed.ProcessGroup {self.group_name!r} ranks={self._ranks}>"

    # --- queued point-to-point -------------------------------------------------------------------------
    def _flush(self):
        self._world.exchange([], [], self._timeout)

    def _nothing_pending(self) -> bool:
        return not self._world.pending_sends and not self._world.pending_recvs


class GroupMember:
    """``GroupMember.WORLD`` (the default group once initialised) and ``NON_GROUP_MEMBER``."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


class _GroupNamespace:
    @property
    def WORLD(self):
        return GroupMember.WORLD


group = _GroupNamespace()


class _World:
    """The process-wide state: rank, size, the socket mesh and its queued p2p transfers."""

    def __init__(self, store, rank, size, timeout, host, mpi=None, engine=None):
        self.store, self.rank, self.size = store, rank, size
        self.engine = engine or ("gloo" if mpi is None else "mpi")
        self.mpi = mpi             # the world's engine communicator (MPI's or NCCL's); None on TCP
        self.mesh = _gloo.Mesh(store, rank, size, timeout, host) if mpi is None else None
        self.pending_sends: list = []
        self.pending_recvs: list = []
        self.after: list = []      # write-backs of queued receives

    def exchange(self, sends, recvs, timeout):
        if self.pending_sends or self.pending_recvs:
            sends = self.pending_sends + list(sends)
            recvs = self.pending_recvs + list(recvs)
            after, self.after = self.after, []
            self.pending_sends, self.pending_recvs = [], []
        else:
            after = ()
        self.mesh.exchange(sends, recvs, timeout)
        for fn in after:
            fn()


_world: _World | None = None
_groups: dict = {}
_backend = None


# --- helpers -----------------------------------------------------------------------------------------
def _default_group() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def _resolve(group) -> ProcessGroup:
    if group is None or group is GroupMember.WORLD:
        return _default_group()
    if group == GroupMember.NON_GROUP_MEMBER:
        return group
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if group.group_name not in _groups:
        raise ValueError("Invalid process group specified")
    return group


def _not_in_group(g, op_name) -> bool:
    if isinstance(g, ProcessGroup) and g.rank() >= 0:
        return False
    rank = -1 if GroupMember.WORLD is None else GroupMember.WORLD.rank()
    warnings.warn(f"Running {op_name} on global rank {rank} which does not belong to the given group.",
                  stacklevel=3)
    return True


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")


def _check_tensor_list(ts, name):
    if not isinstance(ts, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(ts)} instead.")
    if not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(ts)} with elements of type {[type(t) for t in ts]}.")


def _on_device() -> bool:
    """Whether the collectives run on device memory (the NCCL engine)."""
    return _world is not None and _world.engine == "nccl"


def _host(t: Tensor) -> np.ndarray:
    """A C-contiguous array with ``t``'s values (``t``'s own memory when possible): NumPy, or
    CuPy on the NCCL engine, which works on device memory."""
    a = t._data
    if not isinstance(a, np.ndarray):
        if _on_device():
            return a if a.flags.c_contiguous else _xp(a).ascontiguousarray(a)
        a = a.get()                  # CuPy: a host copy
    elif _on_device():
        raise RuntimeError("No backend type associated with device type cpu")
    return np.ascontiguousarray(a)


def _xp(a):
    from ..backends import backend_of

    return backend_of(a).xp


def _store_back(t: Tensor, host: np.ndarray) -> None:
    """Make ``t`` hold ``host``'s values (in place) and bump its version."""
    a = t._data
    if a is not host:
        if isinstance(a, np.ndarray):
            a[...] = host.reshape(a.shape)
        else:   # CuPy: copy the host result back to the device
            from ..backends import backend_of

            a[...] = backend_of(a).xp.asarray(host.reshape(a.shape))
    t._bump_version()


def _recv_target(t: Tensor):
    """(array to receive into, write-back) for a tensor that a transfer overwrites."""
    a = t._data
    if isinstance(a, np.ndarray) and a.flags.c_contiguous and not _on_device():
        return a, t._bump_version
    if _on_device():
        if isinstance(a, np.ndarray):
            raise RuntimeError("No backend type associated with device type cpu")
        if a.flags.c_contiguous:
            return a, t._bump_version
        stage = _xp(a).empty(a.shape, dtype=a.dtype)
        return stage, lambda: _store_back(t, stage)
    host = np.empty(a.shape, dtype=a.dtype)
    return host, lambda: _store_back(t, host)


def _global(g: ProcessGroup, grank: int | None, rank: int | None, what: str) -> int:
    """The group rank named by ``rank`` (global) or ``grank`` (group rank); default group rank 0."""
    if grank is not None and rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if grank is None:
        if rank is None:
            rank = 0
        if rank not in g._group_rank:
            raise ValueError(f"Global rank {rank} is not part of group {g}")
        return g._group_rank[rank]
    if not 0 <= grank < g.size():
        raise ValueError(f"Group rank {grank} is not part of group {g}")
    return grank


def _work(async_op, tensors=(), g=None, pending=False):
    return Work(tensors, g, pending) if async_op else None


def _complete(g, pending, async_op, tensors, after=()):
    """Finish a collective: gloo's (``pending`` None) has run already; MPI's
    requests are waited on now, or handed back in a Work with ``async_op``.
    ``after`` (write-backs into the tensors) runs once the data is there."""
    if pending is None:
        for fn in after:
            fn()
        return _work(async_op, tensors)
    pending.after.extend(after)
    if async_op:
        return Work(tensors, g, pending)
    pending.wait()
    return None


def _sync(pending) -> None:
    if pending is not None:
        pending.wait()


# --- init / teardown ---------------------------------------------------------------------------------
def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def is_gloo_available() -> bool:
    return True


def is_nccl_available() -> bool:
    return _nccl.available()


def is_mpi_available() -> bool:
    return _mpi.available()


def is_ucc_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    name = str(backend).lower()
    return name == "gloo" or name == "mpi" and _mpi.available() or name == "nccl" and _nccl.available()


def is_torchelastic_launched() -> bool:
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not set")
    return value


def _rendezvous(url: str, rank: int, world_size: int, timeout: timedelta):
    if not isinstance(url, str):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    parsed = urlparse(url)
    query = dict(p.split("=") for p in parsed.query.split("&") if p)
    if rank != -1:
        query.setdefault("rank", str(rank))
    if world_size != -1:
        query.setdefault("world_size", str(world_size))
    if parsed.scheme == "env":
        rank = int(query["rank"]) if "rank" in query else int(_env("RANK"))
        world_size = int(query["world_size"]) if "world_size" in query else int(_env("WORLD_SIZE"))
        host, port = _env("MASTER_ADDR"), int(_env("MASTER_PORT"))
    elif parsed.scheme == "tcp":
        def err(msg):
            return ValueError("Error initializing torch.distributed using tcp:// rendezvous: " + msg)
        if parsed.port is None:
            raise err("port number missing")
        if "rank" not in query:
            raise err("rank parameter missing")
        if "world_size" not in query:
            raise err("world size parameter missing")
        rank, world_size = int(query["rank"]), int(query["world_size"])
        host, port = parsed.hostname, parsed.port
    elif parsed.scheme == "file":
        def err(msg):
            return ValueError("Error initializing torch.distributed using file:// rendezvous: " + msg)
        if not parsed.path:
            raise err("path missing")
        if "rank" not in query:
            raise err("rank parameter missing")
        if "world_size" not in query:
            raise err("world size parameter missing")
        rank, world_size = int(query["rank"]), int(query["world_size"])
        return FileStore(parsed.path, world_size), rank, world_size
    else:
        raise RuntimeError(f"No rendezvous handler for {parsed.scheme}://")
    if not 0 <= port < 2 ** 16:
        raise ValueError(f"port must have value from 0 to 65535 but was {port}.")
    store = TCPStore(host, port, world_size, is_master=(rank == 0), timeout=timeout, multi_tenant=True)
    return store, rank, world_size


def _local_host(store) -> str:
    inner = store
    while isinstance(inner, PrefixStore):
        inner = inner.underlying_store
    if isinstance(inner, TCPStore):
        return inner.local_address()
    return os.environ.get("FABRIC_GLOO_HOST", "127.0.0.1")


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store: Store | None = None, group_name: str = "",
                       pg_options=None, device_id=None, _ranks=None) -> None:
    """Join the default process group (PyTorch's rendezvous rules).

    ``init_method`` ``"env://"`` (the default without ``store``) reads
    ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK`` and ``WORLD_SIZE``;
    ``"tcp://host:port"`` and ``"file:///path"`` need ``rank`` and
    ``world_size``.  Rank 0 serves the TCPStore.  ``backend`` is ``"gloo"``
    (``None`` picks it); ``"nccl"`` raises.
    """
    global _world, _backend
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    if store is not None:
        if not world_size > 0:
            raise AssertionError("world_size must be positive if using store")
        if not rank >= 0:
            raise AssertionError("rank must be non-negative if using store")
    elif init_method is None:
        init_method = "env://"
    name = Backend(backend if backend is not None else "gloo")
    if ":" in name:   # "cpu:gloo,cuda:nccl": the CPU entry decides
        parts = dict(p.split(":") for p in name.split(","))
        name = Backend(parts.get("cpu", "gloo"))
    if name == Backend.NCCL:
        from .. import cuda

        if not cuda.is_available():
            raise RuntimeError("Distributed package doesn't have NCCL built in: no CUDA device (CuPy) here; use "
                               "backend='gloo'")
        _nccl.nccl()    # a clear error when CuPy's NCCL bindings are missing
    if name not in (Backend.GLOO, Backend.UNDEFINED, Backend.MPI, Backend.NCCL):
        raise RuntimeError(f"fabric.distributed supports the 'gloo', 'mpi' and 'nccl' backends, got '{name}'")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    if name == Backend.MPI:
        if not _mpi.available():
            raise RuntimeError("Distributed package doesn't have MPI built in: pip install 'fabric-dl[mpi]' "
                               "(mpi4py and the mpich wheel) and launch with mpiexec")
        return _init_mpi(name, rank, world_size, timeout, group_name)
    if store is None and name != Backend.NCCL and _mpi.launched_by_mpi() and _mpi.available() and \
            os.environ.get("FABRIC_DISTRIBUTED_ENGINE", "mpi").lower() != "gloo":
        _init_mpi(name, rank, world_size, timeout, group_name)
        if _world.rank == 0:
            _log_once(f"fabric.distributed: backend '{name}' runs on MPI (mpi4py), the process manager that started "
                      "these processes; set FABRIC_DISTRIBUTED_ENGINE=gloo for the pure-Python TCP transport")
        return None
    if store is None:
        store, rank, world_size = _rendezvous(init_method, rank, world_size, timeout)
        store.set_timeout(timeout)
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank} for world size {world_size}")
    seconds = timeout.total_seconds()
    base = PrefixStore("default_pg", store)
    generation = (base.add("gloo/joined", 1) - 1) // world_size   # a store reused for a later init
    if name == Backend.NCCL:
        return _init_nccl(PrefixStore(f"gen{generation}/nccl", base), store, rank, world_size, seconds, group_name,
                          device_id)
    world = _World(PrefixStore(f"gen{generation}", base), rank, world_size, seconds, _local_host(store))
    _world, _backend = world, Backend.GLOO
    pg = ProcessGroup(world, list(range(world_size)), seconds, group_name or "0")
    _groups.clear()
    _groups[pg.group_name] = pg
    GroupMember.WORLD = pg
    world._root_store = store
    # every rank has finished its connections (and its store reads) before any rank goes on, so an early
    # destroy_process_group on rank 0 cannot pull the store from under a rank still connecting
    _all_reduce_array(pg, np.zeros(1, dtype=np.int64), "sum")


_logged: set = set()


def _log_once(msg: str) -> None:
    if msg not in _logged:
        _logged.add(msg)
        import sys

        print(msg, file=sys.stderr, flush=True)


def _init_mpi(name, rank, world_size, timeout, group_name) -> None:
    """The default group on MPI: rank and size come from the MPI launcher."""
    global _world, _backend
    comm = _mpi.world()
    comm.timeout = timeout.total_seconds()
    if rank not in (-1, comm.rank) or world_size not in (-1, comm.size):
        raise ValueError(f"rank {rank} / world_size {world_size} disagree with the MPI launcher's rank {comm.rank} "
                         f"of {comm.size}")
    seconds = timeout.total_seconds()
    world = _World(None, comm.rank, comm.size, seconds, None, mpi=comm)
    _world, _backend = world, Backend(name)
    pg = ProcessGroup(world, list(range(comm.size)), seconds, group_name or "0", engine=comm)
    _groups.clear()
    _groups[pg.group_name] = pg
    GroupMember.WORLD = pg


def _init_nccl(store, root_store, rank, world_size, seconds, group_name, device_id) -> None:
    """The default group on NCCL: one communicator on this process's current device (or ``device_id``),
    its unique id passed through the store."""
    global _world, _backend
    device = _nccl._cupy().cuda.runtime.getDevice() if device_id is None else _device_index(device_id)
    comm = _nccl.connect(store, rank, world_size, device, seconds)
    world = _World(None, rank, world_size, seconds, None, mpi=comm, engine="nccl")
    world._root_store = root_store
    _world, _backend = world, Backend.NCCL
    pg = ProcessGroup(world, list(range(world_size)), seconds, group_name or "0", engine=comm)
    _groups.clear()
    _groups[pg.group_name] = pg
    GroupMember.WORLD = pg


def _device_index(device_id) -> int:
    index = getattr(device_id, "index", device_id)
    if not isinstance(index, int):
        raise ValueError(f"device_id must be a CUDA device with an index, got {device_id!r}")
    return index


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroy ``group``; with no argument, every group and the connections."""
    global _world
    if group is None or group is GroupMember.WORLD:
        if _world is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        if _world.mpi is not None:
            for g in _groups.values():
                if g._engine is not None and g._engine is not _world.mpi:
                    g._engine.free()
            _world.mpi.free()
            root = getattr(_world, "_root_store", None)
            if isinstance(root, (TCPStore, FileStore)):
                root.close()
            _world = None
            _groups.clear()
            GroupMember.WORLD = None
            return
        _world.mesh.close()
        root = getattr(_world, "_root_store", None)
        if isinstance(root, (TCPStore, FileStore)):
            root.close()
        _world = None
        _groups.clear()
        GroupMember.WORLD = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    _groups.pop(group.group_name, None)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Number of processes in ``group`` (-1 if this process is not a member)."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return _resolve(group).size()


def get_backend(group: ProcessGroup | None = None) -> Backend:
    _resolve(group)
    return Backend(_backend)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization: bool = False,
              group_desc=None, device_id=None, sort_ranks: bool = True):
    """A group of ``ranks`` (all ranks by default); every rank of the world
    must call it, with the same ranks.  Non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world_pg = _default_group()
    if backend is not None and Backend(backend) not in (Backend.GLOO, Backend.UNDEFINED, Backend.MPI, Backend.NCCL):
        raise RuntimeError(f"fabric.distributed supports the 'gloo', 'mpi' and 'nccl' backends, got '{backend}'")
    ranks = list(range(world_pg.size())) if ranks is None or len(ranks) == 0 else list(ranks)
    if sort_ranks:
        ranks = sorted(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks passed to new_group must be unique, got {ranks}")
    for r in ranks:
        if not 0 <= r < world_pg.size():
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    seconds = world_pg._timeout if timeout is None else timeout.total_seconds()
    name = str(len(_groups))
    while name in _groups:
        name += "'"
    sub = _world.mpi.split(_world.rank in ranks, ranks.index(_world.rank) if _world.rank in ranks else 0,
                           len(ranks)) \
        if _world.mpi is not None else None   # every rank takes part in MPI's split, members get a communicator
    pg = ProcessGroup(_world, ranks, seconds, name, engine=sub)
    _groups[name] = pg
    if _world.rank not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    return pg


def get_process_group_ranks(group) -> list:
    return list(_resolve(group)._ranks)


def get_global_rank(group, group_rank: int) -> int:
    g = _resolve(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    g = _resolve(group)
    if global_rank not in g._group_rank:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}")
    return g._group_rank[global_rank]


# --- collectives on arrays (group ranks) --------------------------------------------------------------
_TAG = _gloo.TAG_COLLECTIVE


def _x(g, sends, recvs):
    g._world.exchange(sends, recvs, g._timeout)


def _all_reduce_array(g: ProcessGroup, buf: np.ndarray, op: str):
    """In-place all-reduce of a C-contiguous array (see _gloo for the algorithm).

    The array primitives return None when the work is done (gloo), or the
    MPI engine's Pending (requests in flight)."""
    if g._engine is not None:
        return g._engine.all_reduce(buf, op)
    n_ranks, me, peers = g.size(), g.rank(), g._ranks
    flat = buf.reshape(-1)
    if n_ranks == 1:
        _gloo._finish(op, flat, 1)
        return
    b = _gloo.chunk_bounds(flat.size, n_ranks)
    mine = flat[b[me]:b[me + 1]]
    parts = [np.empty_like(mine) for _ in range(n_ranks)]
    parts[me] = mine
    _x(g, [(peers[p], _TAG, flat[b[p]:b[p + 1]]) for p in range(n_ranks) if p != me],
       [(peers[p], _TAG, parts[p]) for p in range(n_ranks) if p != me])
    mine[...] = _gloo.reduce_in_rank_order(op, parts)
    _x(g, [(peers[p], _TAG, mine) for p in range(n_ranks) if p != me],
       [(peers[p], _TAG, flat[b[p]:b[p + 1]]) for p in range(n_ranks) if p != me])


def _broadcast_array(g, buf, root):
    if g._engine is not None:
        return g._engine.broadcast(buf, root)
    me, peers = g.rank(), g._ranks
    if me == root:
        _x(g, [(peers[p], _TAG, buf) for p in range(g.size()) if p != me], [])
    else:
        _x(g, [], [(peers[root], _TAG, buf)])


def _gather_arrays(g, buf, root, outs):
    """``outs`` (on root): one array per group rank."""
    if g._engine is not None:
        return g._engine.gather(buf, root, outs)
    me, peers = g.rank(), g._ranks
    if me == root:
        outs[me][...] = buf
        _x(g, [], [(peers[p], _TAG, outs[p]) for p in range(g.size()) if p != me])
    else:
        _x(g, [(peers[root], _TAG, buf)], [])


def _all_gather_arrays(g, buf, outs):
    if g._engine is not None:
        return g._engine.all_gather(buf, outs)
    me, peers = g.rank(), g._ranks
    if outs[me] is not buf:
        outs[me][...] = buf
    _x(g, [(peers[p], _TAG, buf) for p in range(g.size()) if p != me],
       [(peers[p], _TAG, outs[p]) for p in range(g.size()) if p != me])


def _reduce_scatter_arrays(g, ins, out, op):
    """``ins``: one array per group rank; ``out`` gets the reduction of every rank's ``ins[me]``."""
    if g._engine is not None:
        return g._engine.reduce_scatter_block(np.concatenate([a.reshape(-1) for a in ins]), out, op)
    me, peers, n_ranks = g.rank(), g._ranks, g.size()
    parts = [np.empty_like(out) for _ in range(n_ranks)]
    parts[me] = ins[me]
    _x(g, [(peers[p], _TAG, ins[p]) for p in range(n_ranks) if p != me],
       [(peers[p], _TAG, parts[p]) for p in range(n_ranks) if p != me])
    out[...] = _gloo.reduce_in_rank_order(op, parts)


def _exchange_sizes(g, nbytes: int, mode: str, root: int = 0) -> np.ndarray:
    sizes = np.zeros(g.size(), dtype=np.int64)
    mine = np.array([nbytes], dtype=np.int64)
    outs = [sizes[i:i + 1] for i in range(g.size())]
    if mode == "all":
        _sync(_all_gather_arrays(g, mine, outs))
    else:
        _sync(_gather_arrays(g, mine, root, outs if g.rank() == root else None))
    return sizes


# --- public collectives ------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` over the group, in place on every rank.

    SUM adds the ranks' values in rank order, so every rank gets the same
    bits and reruns repeat them."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "all_reduce"):
        return None
    name = _op_name(op)
    buf = _host(tensor)
    return _complete(g, _all_reduce_array(g, buf, name), async_op, [tensor], [lambda: _store_back(tensor, buf)])


def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False, group_src: int | None = None):
    """Copy ``tensor`` from rank ``src`` (global) to every rank of the group."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "broadcast"):
        return None
    root = _global(g, group_src, src, "src")
    if g.rank() == root:
        return _complete(g, _broadcast_array(g, _host(tensor), root), async_op, [tensor])
    target, done = _recv_target(tensor)
    return _complete(g, _broadcast_array(g, target, root), async_op, [tensor], [done])


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduce ``tensor`` over the group into rank ``dst``'s tensor (others are unchanged)."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "reduce"):
        return None
    root = _global(g, group_dst, dst, "dst")
    name = _op_name(op)
    buf = _host(tensor)
    if g._engine is not None:
        if g.rank() != root:
            buf = buf.copy()   # MPI reads it after this returns (async): the user's tensor stays unchanged
        after = [lambda: _store_back(tensor, buf)] if g.rank() == root else []
        return _complete(g, g._engine.reduce(buf, root, name), async_op, [tensor], after)
    if g.rank() == root:
        parts = [np.empty_like(buf) for _ in range(g.size())]
        _gather_arrays(g, buf, root, parts)
        buf = _gloo.reduce_in_rank_order(name, parts)
        _store_back(tensor, buf)
    else:
        _gather_arrays(g, buf, root, None)
    return _work(async_op, [tensor])


def _check_same(tensors, ref, what):
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(ref.shape):
            raise RuntimeError(f"ProcessGroupGloo::{what}: invalid tensor size at index {i} (expected "
                               f"({', '.join(map(str, ref.shape))}), got ({', '.join(map(str, t.shape))}))")
        if t.dtype != ref.dtype:
            raise RuntimeError(f"ProcessGroupGloo::{what}: invalid tensor type at index {i} (expected "
                               f"{ref.dtype}, got {t.dtype})")


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[r]`` receives rank ``r``'s ``tensor`` on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "all_gather"):
        return None
    if len(tensor_list) != g.size():
        raise RuntimeError(f"ProcessGroupGloo::allgather: invalid output tensor list at index 0; expected "
                           f"{g.size()} tensors, got {len(tensor_list)}")
    _check_same(tensor_list, tensor, "allgather")
    targets = [_recv_target(t) for t in tensor_list]
    return _complete(g, _all_gather_arrays(g, _host(tensor), [a for a, _ in targets]), async_op, tensor_list,
                     [done for _, done in targets])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Concatenate every rank's ``input_tensor`` (in rank order) into ``output_tensor``."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    g = _resolve(group)
    if _not_in_group(g, "all_gather_into_tensor"):
        return None
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    out, done = _recv_target(output_tensor)
    if g._engine is not None:
        return _complete(g, g._engine.all_gather_into(_host(input_tensor), out), async_op, [output_tensor], [done])
    flat = out.reshape(g.size(), -1)
    _all_gather_arrays(g, _host(input_tensor).reshape(-1), [flat[i] for i in range(g.size())])
    done()
    return _work(async_op, [output_tensor])


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Rank ``dst`` receives every rank's ``tensor`` in ``gather_list``."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "gather"):
        return None
    root = _global(g, group_dst, dst, "dst")
    if g.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        if len(gather_list) != g.size():
            raise RuntimeError(f"ProcessGroupGloo::gather: Incorrect output list size {len(gather_list)}. Output "
                               f"list size should be {g.size()}, same as size of the process group.")
        _check_same(gather_list, tensor, "gather")
        targets = [_recv_target(t) for t in gather_list]
        return _complete(g, _gather_arrays(g, _host(tensor), root, [a for a, _ in targets]), async_op, [tensor],
                         [done for _, done in targets])
    if gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _complete(g, _gather_arrays(g, _host(tensor), root, None), async_op, [tensor])


def scatter(tensor, scatter_list=None, src: int | None = None, group=None, async_op: bool = False,
            group_src: int | None = None):
    """Rank ``r`` receives ``scatter_list[r]`` from rank ``src`` in ``tensor``."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "scatter"):
        return None
    root = _global(g, group_src, src, "src")
    me, peers = g.rank(), g._ranks
    if me == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != g.size():
            raise RuntimeError(f"ProcessGroupGloo::scatter: Incorrect input list size {len(scatter_list)}. Input "
                               f"list size should be {g.size()}, same as size of the process group.")
        _check_same(scatter_list, tensor, "scatter")
        if g._engine is not None:
            target, done = _recv_target(tensor)
            pending = g._engine.scatter([_host(t) for t in scatter_list], target, root)
            return _complete(g, pending, async_op, [tensor], [done])
        _x(g, [(peers[p], _TAG, _host(scatter_list[p])) for p in range(g.size()) if p != me], [])
        _store_back(tensor, _host(scatter_list[me]).copy())
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        target, done = _recv_target(tensor)
        if g._engine is not None:
            return _complete(g, g._engine.scatter(None, target, root), async_op, [tensor], [done])
        _x(g, [], [(peers[root], _TAG, target)])
        done()
    return _work(async_op, [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` on rank ``r`` = reduction over ranks of ``input_list[r]``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    g = _resolve(group)
    if _not_in_group(g, "reduce_scatter"):
        return None
    if len(input_list) != g.size():
        raise ValueError(f"input_list must have {g.size()} tensors, got {len(input_list)}")
    _check_same(input_list, output, "reduce_scatter")
    out, done = _recv_target(output)
    ins = [_host(t) for t in input_list]
    if g._engine is not None:
        flat = _xp(ins[0]).concatenate([a.reshape(-1) for a in ins]) if _on_device() else \
            np.concatenate([a.reshape(-1) for a in ins])
        pending = g._engine.reduce_scatter_block(flat, out, _op_name(op))
        return _complete(g, pending, async_op, [output], [done])
    _reduce_scatter_arrays(g, ins, out, _op_name(op))
    done()
    return _work(async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` on rank ``r`` = reduction over ranks of the ``r``-th chunk of ``input``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _resolve(group)
    if _not_in_group(g, "reduce_scatter_tensor"):
        return None
    if input.numel() != output.numel() * g.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if input.dtype != output.dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    flat = _host(input).reshape(g.size(), -1)
    if g._engine is not None:
        target, done = _recv_target(output)
        return _complete(g, g._engine.reduce_scatter_block(flat, target, _op_name(op)), async_op, [output], [done])
    out = np.empty(output.numel(), dtype=flat.dtype)
    _reduce_scatter_arrays(g, [flat[i] for i in range(g.size())], out, _op_name(op))
    _store_back(output, out)
    return _work(async_op, [output])


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """Split ``input`` along dim 0, send piece ``r`` to rank ``r``; receive into ``output`` in rank order."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _resolve(group)
    if _not_in_group(g, "all_to_all_single"):
        return None
    n, me, peers = g.size(), g.rank(), g._ranks
    src = _host(input)
    target, done = _recv_target(output)

    def pieces(arr, splits, name):
        rows = arr.shape[0] if arr.ndim else 1
        if splits is None or len(splits) == 0:
            if rows % n:
                raise ValueError(f"{name} tensor's dim 0 ({rows}) is not divisible by the group size {n}")
            splits = [rows // n] * n
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"{name} split sizes {list(splits)} do not match dim 0 ({rows}) and group size {n}")
        b = np.cumsum([0] + list(splits))
        return [arr[b[i]:b[i + 1]] for i in range(n)]

    ins = pieces(src, input_split_sizes, "input")
    outs = pieces(target, output_split_sizes, "output")
    if g._engine is not None:
        return _complete(g, g._engine.all_to_all(ins, outs), async_op, [output], [done])
    outs[me][...] = ins[me]
    _x(g, [(peers[p], _TAG, np.ascontiguousarray(ins[p])) for p in range(n) if p != me],
       [(peers[p], _TAG, outs[p]) for p in range(n) if p != me])
    done()
    return _work(async_op, [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Send ``input_tensor_list[r]`` to rank ``r``; ``output_tensor_list[r]`` receives from rank ``r``."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    g = _resolve(group)
    if _not_in_group(g, "all_to_all"):
        return None
    n, me, peers = g.size(), g.rank(), g._ranks
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all needs {n} input and {n} output tensors")
    targets = [_recv_target(t) for t in output_tensor_list]
    if g._engine is not None:
        pending = g._engine.all_to_all([_host(t) for t in input_tensor_list], [a for a, _ in targets])
        return _complete(g, pending, async_op, output_tensor_list, [done for _, done in targets])
    targets[me][0][...] = _host(input_tensor_list[me]).reshape(targets[me][0].shape)
    _x(g, [(peers[p], _TAG, _host(input_tensor_list[p])) for p in range(n) if p != me],
       [(peers[p], _TAG, targets[p][0]) for p in range(n) if p != me])
    for _, done in targets:
        done()
    return _work(async_op, output_tensor_list)


# --- point to point ----------------------------------------------------------------------------------
def _p2p_peer(g, rank, grank, what):
    r = _global(g, grank, rank, what) if (rank is not None or grank is not None) else None
    if r is None:
        raise ValueError(f"Must specify {what} or group_{what}")
    if r == g.rank():
        raise ValueError(f"Invalid {'destination' if what == 'dst' else 'source'} rank: "
                         f"{'destination' if what == 'dst' else 'source'} rank should not be the same as the rank "
                         f"of the current process.")
    return g._ranks[r]


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None):
    """Queue sending ``tensor`` to ``dst``; returns a Work (the transfer runs at ``wait()`` or with the
    next blocking communication)."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "isend"):
        return None
    peer = _p2p_peer(g, dst, group_dst, "dst")
    if g._engine is not None:
        return Work([tensor], g, g._engine.send(_host(tensor).copy(), g._group_rank[peer], int(tag)))
    _world.pending_sends.append((peer, int(tag), _host(tensor).copy()))
    return Work([tensor], g, pending=True)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None):
    """Queue receiving ``tensor`` from ``src`` (``src=None``: receive now, from any rank)."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "irecv"):
        return None
    if src is None and group_src is None:
        recv(tensor, None, group, tag)
        return Work([tensor], g)
    peer = _p2p_peer(g, src, group_src, "src")
    target, done = _recv_target(tensor)
    if g._engine is not None:
        pending = g._engine.recv(target, g._group_rank[peer], int(tag))
        pending.after.append(done)
        return Work([tensor], g, pending)
    _world.pending_recvs.append((peer, int(tag), target))
    _world.after.append(done)
    return Work([tensor], g, pending=True)


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocks until the data is handed to the socket)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive ``tensor`` from rank ``src`` (any rank when None); returns the sender's global rank."""
    _check_tensor(tensor, "tensor")
    g = _resolve(group)
    if _not_in_group(g, "recv"):
        return -1
    if src is None and group_src is None and g._engine is not None:
        target, done = _recv_target(tensor)
        sender = g._ranks[g._engine.recv_any(target, int(tag))]
        done()
        return sender
    if src is None and group_src is None:
        g._flush()
        target, done = _recv_target(tensor)
        others = [r for r in g._ranks if r != _world.rank]
        sender = _world.mesh.recv_any(target, int(tag), others, g._timeout)
        done()
        return sender
    peer = _p2p_peer(g, src, group_src, "src")
    if g._engine is not None:
        irecv(tensor, src, group, tag, group_src).wait()
        return peer
    target, done = _recv_target(tensor)
    _world.exchange([], [(peer, int(tag), target)], g._timeout)
    done()
    return peer


class P2POp:
    """One ``isend``/``irecv`` for :func:`batch_isend_irecv`."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Run the point-to-point operations together; returns their Works (complete)."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]
    for w in works:
        if w is not None:
            w.wait()
    return works


def barrier(group=None, async_op: bool = False, device_ids=None, timeout: timedelta | None = None):
    """Wait until every rank of the group reaches the barrier."""
    g = _resolve(group)
    if _not_in_group(g, "barrier"):
        return None
    if g._engine is not None:
        return _complete(g, g._engine.barrier(), async_op, [])
    buf = np.zeros(1, dtype=np.int64)
    _all_reduce_array(g, buf, "sum")
    return _work(async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that raises after ``timeout`` (the group's timeout by default)."""
    g = _resolve(group)
    if _not_in_group(g, "monitored_barrier"):
        return
    saved = g._timeout
    if timeout is not None:
        g._timeout = timeout.total_seconds()
    try:
        barrier(g)
    finally:
        g._timeout = saved
    return


# --- Python objects (pickled, like PyTorch: only exchange objects with ranks you trust) --------------
def _dumps(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def broadcast_object_list(object_list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank with those of rank ``src``."""
    g = _resolve(group)
    if _not_in_group(g, "broadcast_object_list"):
        return
    root = _global(g, group_src, src, "src")
    if g.rank() == root:
        payload = _dumps(list(object_list))
        _sync(_broadcast_array(g, np.array([payload.size], dtype=np.int64), root))
        _sync(_broadcast_array(g, payload, root))
    else:
        size = np.zeros(1, dtype=np.int64)
        _sync(_broadcast_array(g, size, root))
        payload = np.empty(int(size[0]), dtype=np.uint8)
        _sync(_broadcast_array(g, payload, root))
        object_list[:] = pickle.loads(payload.tobytes())


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` = rank ``r``'s ``obj`` on every rank."""
    g = _resolve(group)
    if _not_in_group(g, "all_gather_object"):
        return
    payload = _dumps(obj)
    sizes = _exchange_sizes(g, payload.size, "all")
    outs = [np.empty(int(s), dtype=np.uint8) for s in sizes]
    _sync(_all_gather_arrays(g, payload, outs))
    for i, o in enumerate(outs):
        object_list[i] = pickle.loads(o.tobytes())


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """Rank ``dst`` receives every rank's ``obj`` in ``object_gather_list``."""
    g = _resolve(group)
    if _not_in_group(g, "gather_object"):
        return
    root = _global(g, group_dst, dst, "dst")
    payload = _dumps(obj)
    sizes = _exchange_sizes(g, payload.size, "gather", root)
    if g.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        outs = [np.empty(int(s), dtype=np.uint8) for s in sizes]
        _sync(_gather_arrays(g, payload, root, outs))
        for i, o in enumerate(outs):
            object_gather_list[i] = pickle.loads(o.tobytes())
    else:
        _sync(_gather_arrays(g, payload, root, None))


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src: int | None = None,
                        group=None, group_src: int | None = None) -> None:
    """Rank ``r`` receives ``scatter_object_input_list[r]`` (from ``src``) in ``scatter_object_output_list[0]``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    g = _resolve(group)
    if _not_in_group(g, "scatter_object_list"):
        return
    root = _global(g, group_src, src, "src")
    me, peers = g.rank(), g._ranks
    if g._engine is not None:   # sizes first (scattered), then the payloads
        size = np.zeros(1, dtype=np.int64)
        payloads = [_dumps(o) for o in scatter_object_input_list] if me == root else None
        sizes = [np.array([p.size], dtype=np.int64) for p in payloads] if me == root else None
        _sync(g._engine.scatter(sizes, size, root))
        payload = np.empty(int(size[0]), dtype=np.uint8)
        _sync(g._engine.scatter(payloads, payload, root))
        scatter_object_output_list[0] = pickle.loads(payload.tobytes())
        return
    if me == root:
        payloads = [_dumps(o) for o in scatter_object_input_list]
        sizes = [np.array([p.size], dtype=np.int64) for p in payloads]
        _x(g, [(peers[p], _TAG, sizes[p]) for p in range(g.size()) if p != me]
           + [(peers[p], _TAG, payloads[p]) for p in range(g.size()) if p != me], [])
        scatter_object_output_list[0] = pickle.loads(payloads[me].tobytes())
    else:
        size = np.zeros(1, dtype=np.int64)
        _x(g, [], [(peers[root], _TAG, size)])
        payload = np.empty(int(size[0]), dtype=np.uint8)
        _x(g, [], [(peers[root], _TAG, payload)])
        scatter_object_output_list[0] = pickle.loads(payload.tobytes())


__all__ += [
    "DistBackendError",
    "FileStore",
    "Future",
    "HashStore",
    "PrefixStore",
    "Store",
    "TCPStore",
    "is_available",
]
