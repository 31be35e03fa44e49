"""``DataLoader``: batches from a dataset, in the main process or in worker
processes, with the arguments, defaults, errors and random streams of
``torch.utils.data.DataLoader``.

With ``num_workers > 0`` each worker is a process (the platform's default
start method, or ``multiprocessing_context``) with its own copy of the
dataset. Tasks go out round-robin, at most ``prefetch_factor`` per worker
ahead; batches come back through shared memory (:mod:`fabric.data._shm`) and
are handed out in sampler order (``in_order=True``) or as they arrive. The
main process waits on the workers' pipes and process sentinels together, so a
worker that dies is reported at once, by id, pid and signal, instead of
hanging; ``timeout`` bounds the wait for one batch.

Example::

    >>> import fabric
    >>> from fabric.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(fabric.arange(10.0), fabric.arange(10))
    >>> [y.tolist() for x, y in DataLoader(ds, batch_size=4)]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""
from __future__ import annotations

import itertools
import os
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from math import ceil
from typing import Any, Generic, TypeVar

from ..autograd.observe import hook as _hook
from . import _collate, _shm, _worker
from ._fetch import _IterableDatasetFetcher, _MapDatasetFetcher
from ._pin import pin_memory as _pin_memory
from ._pin import pinning_available
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _random_int64

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _collate.default_collate
default_convert = _collate.default_convert
get_worker_info = _worker.get_worker_info

_T_co = TypeVar("_T_co", covariant=True)

# seconds a worker gets to exit on its own at shutdown before it is terminated
_SHUTDOWN_GRACE = 5.0
# shared-memory slots per worker beyond its prefetched batches: the batches the user still holds
_SPARE_SLOTS = 4

def _mp_wait(objects, timeout):
    from multiprocessing.connection import wait

    return wait(objects, timeout)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """``itertools.repeat(None)``: the sampler of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Iterate over ``dataset`` in batches.

    Args follow PyTorch: ``batch_size`` (1; ``None`` turns batching off),
    ``shuffle``, ``sampler``, ``batch_sampler``, ``num_workers`` (0: load in the
    main process), ``collate_fn`` (:func:`default_collate`, or
    :func:`default_convert` without batching), ``pin_memory``, ``drop_last``,
    ``timeout`` (seconds to wait for a worker's batch; 0 waits forever, but a
    dead worker is reported either way), ``worker_init_fn(worker_id)``,
    ``multiprocessing_context``, ``generator`` (for the sampler and the
    workers' ``base_seed``), ``prefetch_factor`` (2 with workers),
    ``persistent_workers``, ``in_order``.

    Randomness matches PyTorch for the same seed: each iterator draws
    ``base_seed`` from ``generator`` (or the default generator), then the
    :class:`RandomSampler` draws its own seed. Worker ``i`` seeds ``random``,
    fabric and NumPy from ``base_seed + i`` like PyTorch's workers do.

    Example::

        >>> from fabric.data import DataLoader
        >>> list(DataLoader(range(5), batch_size=2, drop_last=True))
        [tensor([0, 1]), tensor([2, 3])]
    """

    __initialized = False

    def __init__(self, dataset: Dataset[_T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            # samplers make no sense for a stream (see PyTorch's NOTE [ Custom Samplers and IterableDataset ])
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            elif batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = _collate.default_collate if self._auto_collation else _collate.default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        if multiprocessing_context is not None:
            import multiprocessing

            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method in "
                            f"{valid_start_methods!r}, but got multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
                if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                    f"specifying the start method, but got multiprocessing_context="
                                    f"{multiprocessing_context}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self):
        # a persistent-workers loader keeps one iterator (and its workers) for its lifetime
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # trusts the dataset's own length, as PyTorch does; warns later if more samples come
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than CPUs are usable."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if cpuset_checked:
            try:
                max_num_worker_suggest = len(os.sched_getaffinity(0))
            except Exception:
                max_num_worker_suggest = os.cpu_count()
        else:
            max_num_worker_suggest = os.cpu_count()
        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            if max_num_worker_suggest is not None:
                suggest = (f"Our suggested max number of worker in current system is {max_num_worker_suggest}"
                           f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller "
                           "than what this DataLoader is going to create.")
            else:
                suggest = "DataLoader is not able to compute a suggested max number of worker in current system."
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggest} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or even "
                          "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=2)
        self._pin_memory = loader.pin_memory and pinning_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _random_int64(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self) -> Any:
        if _hook.observer is not None and _hook.observer.claim():  # a profiled fetch (autograd/observe.py)
            return _hook.observer.call("region", f"enumerate(DataLoader)#{type(self).__name__}.__next__", (),
                                       self.__next__)
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but {self._num_yielded} "
                        "samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                             "IterableDataset replica at each worker. Use fabric.data.get_worker_info() to shard it.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset, self._auto_collation,
                                                            self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration
        if self._pin_memory:
            data = _pin_memory(data)
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Iterates once over the dataset with worker processes (or once per epoch
    with ``persistent_workers``); see the module docstring."""

    def __init__(self, loader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        import multiprocessing

        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_init_fn = loader.worker_init_fn
        self._shutdown = False
        # the processes, pipes and queues live in a pool that the iterator does not reach back to: its
        # finalizer (run on shutdown, garbage collection or interpreter exit) keeps them alive until it
        # has stopped the workers, even when the iterator dies in a reference cycle
        pool = self._pool = _WorkerPool(ctx, self._num_workers, self._prefetch_factor + _SPARE_SLOTS)
        self._finalizer = weakref.finalize(self, pool.shutdown)
        self._workers, self._readers, self._index_queues = pool.workers, pool.readers, pool.index_queues
        try:
            for i in range(self._num_workers):
                pool.start(_worker._worker_loop, dict(
                    dataset_kind=self._dataset_kind, dataset=self._dataset, auto_collation=self._auto_collation,
                    collate_fn=self._collate_fn, drop_last=self._drop_last, base_seed=self._base_seed,
                    init_fn=self._worker_init_fn, worker_id=i, num_workers=self._num_workers,
                    persistent_workers=self._persistent_workers))
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # index of the next task sent to a worker
        self._rcvd_idx = 0  # index of the next task returned by __next__
        self._task_info = {}  # task index -> (worker id,) or (worker id, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_worker._ResumeIteration())
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                conn, (idx, message) = self._get_message()
                if isinstance(idx, _worker._ResumeIteration):
                    resume_iteration_cnt -= 1
                else:  # a batch of an abandoned epoch
                    self._pool.receiver.discard(conn, message)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # --- receiving --------------------------------------------------------
    def _wait_message(self, timeout):
        """``(pipe, message)``: the next message from any worker, or None
        after ``timeout`` seconds (None: no limit). Raises when an active
        worker has died."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            readers = [r for r in self._readers if not r.closed]
            sentinels = {self._workers[i].sentinel: i for i in range(self._num_workers) if self._workers_status[i]}
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = _mp_wait(readers + list(sentinels), timeout=remaining)
            if not ready:
                return None
            for obj in ready:
                if not isinstance(obj, int):  # a pipe (process sentinels are ints)
                    try:
                        return obj, obj.recv()
                    except (EOFError, OSError):
                        obj.close()  # the worker has exited; its sentinel tells whether that was expected
            dead = [sentinels[s] for s in ready if isinstance(s, int)]
            dead = [i for i in dead if self._readers[i].closed or not self._readers[i].poll()]
            if dead:
                self._worker_died(dead)

    def _worker_died(self, worker_ids):
        lines = []
        for i in worker_ids:
            w = self._workers[i]
            w.join(timeout=_SHUTDOWN_GRACE)
            code = w.exitcode
            if code is not None and code < 0:
                import signal

                try:
                    name = signal.strsignal(-code) or f"signal {-code}"
                except ValueError:
                    name = f"signal {-code}"
                lines.append(f"DataLoader worker {i} (pid {w.pid}) is killed by signal: {name}.")
            else:
                lines.append(f"DataLoader worker {i} (pid {w.pid}) exited unexpectedly with exit code {code}. "
                             "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better "
                             "error trace.")
        self._shutdown_workers()
        raise RuntimeError(" ".join(lines))

    def _get_message(self):
        msg = self._wait_message(self._timeout if self._timeout > 0 else None)
        if msg is None:
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        return msg

    def _get_data(self):
        conn, (idx, message) = self._get_message()
        try:
            return idx, self._pool.receiver.unpack(conn, message)
        except (EOFError, OSError):
            worker_id = self._readers.index(conn)
            self._workers[worker_id].join(timeout=1.0)
            if self._workers[worker_id].exitcode is None:
                raise  # e.g. out of file descriptors: not a dead worker
            self._worker_died([worker_id])  # it died between a message and the descriptor after it

    def _next_data(self):
        while True:
            # skip tasks whose worker finished its stream (IterableDataset) before answering
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            if self._shutdown or self._tasks_outstanding <= 0:
                raise RuntimeError("DataLoader iterator is shut down (a worker failed earlier); create a new one")
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        if self._pin_memory:
            data = _pin_memory(data)
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False) -> None:
        # the worker ends its loop on the None task
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop every worker, reap it, and release the shared memory of
        batches sent but never read. Safe to call more than once."""
        self._shutdown = True
        self._finalizer()

    def __del__(self) -> None:
        # collected outside a reference cycle: stop the workers now (cycles are handled by the finalizer)
        if getattr(self, "_finalizer", None) is not None:
            self._shutdown_workers()


class _WorkerPool:
    """The worker processes of one iterator with their index queues and
    result pipes, and the receiving end of their shared memory."""

    def __init__(self, ctx, num_workers: int, max_slots: int):
        self.ctx = ctx
        self.owner_pid = os.getpid()
        self.max_slots = max_slots
        self.receiver = _shm.Receiver(num_workers, max_slots)
        self.done_event = ctx.Event()
        self.workers, self.readers, self.index_queues = [], [], []

    def start(self, target, kwargs) -> None:
        """Start one worker running ``target(**kwargs)`` plus its own index
        queue, its end of a result pipe and the done event, then hand it the
        shared-memory control block."""
        index_queue = self.ctx.Queue()
        index_queue.cancel_join_thread()
        reader, writer = self.ctx.Pipe()  # a Unix socket pair: shared-memory descriptors can travel
        w = self.ctx.Process(target=target, daemon=True, kwargs=dict(
            kwargs, index_queue=index_queue, data_conn=writer, done_event=self.done_event,
            max_slots=self.max_slots))
        self.index_queues.append(index_queue)
        self.readers.append(reader)
        try:
            w.start()
        finally:
            writer.close()  # the worker holds the only other end: EOF when it exits
        self.workers.append(w)
        self.receiver.send_control(reader, w.pid)

    def shutdown(self) -> None:
        if os.getpid() != self.owner_pid:
            return  # a forked copy (inside a worker) owns none of this
        try:
            self.done_event.set()
            for q in self.index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            self._drain_until_exit(time.monotonic() + _SHUTDOWN_GRACE)
        finally:
            for w in self.workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
                if w.is_alive():
                    w.kill()
                w.join()
            self._drain_until_exit(time.monotonic())
            for r in self.readers:
                r.close()
            for q in self.index_queues:
                q.cancel_join_thread()
                q.close()
            self.receiver.close()

    def _drain_until_exit(self, deadline: float) -> None:
        """Read (and drop) what the workers still send until they have all
        exited or ``deadline`` passes: unread batches release their memory, and a
        worker blocked on a full pipe gets to finish."""
        pending = {w.sentinel: w for w in self.workers if w.exitcode is None}
        while True:
            readers = [r for r in self.readers if not r.closed]
            if not pending and not readers:
                return
            remaining = max(0.0, deadline - time.monotonic())
            ready = _mp_wait(readers + list(pending), timeout=remaining)
            if not ready:
                return
            for obj in ready:
                if not isinstance(obj, int):  # a pipe (process sentinels are ints)
                    try:
                        msg = obj.recv()
                    except (EOFError, OSError):
                        obj.close()
                        continue
                    if not isinstance(msg[0], _worker._ResumeIteration):
                        try:
                            self.receiver.discard(obj, msg[1])
                        except (EOFError, OSError, RuntimeError):  # the worker died before its descriptor
                            obj.close()
                else:
                    pending.pop(obj).join()
