"""The DataLoader worker process: its loop, its seeding and
:func:`get_worker_info`.

A worker reads ``(task index, batch indices)`` from its index queue, fetches
and collates the batch, and sends it back through its pipe with the arrays in
shared memory (:mod:`fabric.data._shm`). It seeds ``random``, fabric and NumPy
the way PyTorch's workers seed ``random``, torch and NumPy, so
``get_worker_info().seed == base_seed + worker_id`` and the streams match
PyTorch's for the same base seed. An exception is caught with its traceback
and re-raised in the main process; a ``None`` task ends the loop; the worker
also ends when its parent process is gone.

Example::

    >>> from fabric.data import get_worker_info
    >>> get_worker_info() is None   # in the main process
    True
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from . import _shm

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

# how often a waiting worker checks that its parent still lives, in seconds
MP_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: ``id`` (0 to
    ``num_workers - 1``), ``num_workers``, ``seed`` (``base_seed + id``) and
    ``dataset`` (this worker's own copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info() -> WorkerInfo | None:
    """The :class:`WorkerInfo` of the current DataLoader worker process, or
    ``None`` in the main process. Use it in ``IterableDataset.__iter__`` or a
    ``worker_init_fn`` to give each worker its own shard of the data."""
    return _worker_info


class KeyErrorMessage(str):
    """A str whose repr is itself, so that KeyError shows the traceback text."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, carried across processes."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __getstate__(self):
        state = dict(self.__dict__, exc_name=self.exc_type.__name__)
        try:  # an exception class that cannot travel (e.g. a local class) comes back as RuntimeError
            pickle.dumps(self.exc_type)
        except Exception:
            state["exc_type"] = None
        return state

    def reraise(self):
        """Raise the exception again (same type when it can be built from a
        message, RuntimeError otherwise), its text holding the original
        traceback."""
        name = self.exc_type.__name__ if self.exc_type is not None else self.__dict__.get("exc_name", "Exception")
        msg = f"Caught {name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is None:
            raise RuntimeError(msg)
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    seed: int | None = None


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The NumPy seed of a worker: PyTorch's SeedSequence-style hash of
    ``(worker_id, base_seed)`` into four 32-bit words."""
    init_a, mult_a, init_b, mult_b = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    mix_mult_l, mix_mult_r, xshift, mask32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    hash_const_a = init_a

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> xshift)) & mask32

    def mix(x, y):
        result = ((mix_mult_l * x) & mask32) - ((mix_mult_r * y) & mask32)
        result &= mask32
        return (result ^ (result >> xshift)) & mask32

    pool = [hash_(e) for e in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = init_b
    state = []
    for i_dst in range(4):
        v = (pool[i_dst] ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        v = (v * hash_const_b) & mask32
        state.append((v ^ (v >> xshift)) & mask32)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    import numpy as np

    from ..random import manual_seed

    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(dataset_kind, dataset, index_queue, data_conn, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers, persistent_workers, max_slots) -> None:
    """Runs in the worker process until told to stop (a ``None`` task) or
    until the parent process is gone. Sends ``(task index, message)`` pairs,
    the message made by :meth:`fabric.data._shm.SlotWriter.pack`."""
    from .dataloader import _DatasetKind

    global _worker_info
    writer = None
    try:
        writer = _shm.SlotWriter(data_conn, worker_id, max_slots)
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        parent = os.getppid()
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_conn.send((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            try:
                writer.send(idx, data)
            except OSError:
                raise
            except Exception:  # the batch cannot be pickled: nothing was sent, say why instead
                writer.send(idx, ExceptionWrapper(where=f"in DataLoader worker process {worker_id} while sending "
                                                        "a batch"))
            del data, idx, index, r
    except (KeyboardInterrupt, OSError, EOFError):
        # the main process went away or is shutting down: nothing left to tell it
        pass
    finally:
        if writer is not None:
            writer.close()
