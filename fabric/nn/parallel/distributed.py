"""``DistributedDataParallel``: every process holds a replica of the module,
runs forward/backward on its own shard of the data, and after ``backward()``
every replica's ``.grad`` holds the mean over processes (PyTorch's DDP).

How: at construction rank 0's parameters and buffers are broadcast to all
ranks.  Parameters are grouped into buckets (reverse registration order, about
the order backward produces their gradients; split by dtype and
``bucket_cap_mb``).  A post-accumulate-grad hook on each parameter marks it
ready; when every parameter of a bucket is ready, the bucket's gradients are
flattened, divided by the world size and all-reduced (SUM, in a fixed rank
order), and copied back into ``.grad``.  Buckets are reduced strictly in
order on every rank, so all ranks issue the same collectives.

Example (a world of one process)::

    >>> import fabric, fabric.distributed as dist
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> model = DistributedDataParallel(fabric.nn.Linear(2, 1))
    >>> with model.no_sync():
    ...     model(fabric.ones(1, 2)).sum().backward()   # gradients stay local
    >>> dist.destroy_process_group()
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from ... import distributed as dist
from ..._tensor import Tensor
from ...autograd.function import AccumulateGrad
from ...distributed.algorithms.join import Join, Joinable, JoinHook, _JoinConfig
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024

_UNFINISHED_MSG = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate "
    "in calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` function. Please include "
    "the loss function and the structure of the return value of `forward` of your module when reporting this "
    "issue (e.g. list, dict, iterable).\nParameter indices which did not receive grad for rank {rank}: {idx}")


class _Bucket:
    __slots__ = ("buffer", "dtype", "index", "numel", "offsets", "params", "pending")

    def __init__(self, index, params):
        self.index = index
        self.params = params          # list of (position in DDP's parameter list, Parameter)
        sizes = [p._data.size for _, p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()
        self.numel = self.offsets[-1]
        self.dtype = params[0][1]._data.dtype
        self.pending = len(params)
        self.buffer = None


def _tensors_in(obj, out):
    """Every Tensor inside nested lists/tuples/dicts (DDP's output traversal)."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reachable_leaves(outputs) -> set:
    """ids of the leaf tensors whose gradients backward from ``outputs`` can reach."""
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    leaves = {id(t) for t in outputs if t.grad_fn is None and t.requires_grad}
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            var = node.variable
            if var is not None:
                leaves.add(id(var))
            continue
        for e in node._edges:
            if e is not None and e[0] not in seen:
                stack.append(e[0])
    return leaves


class _DDPJoinHook(JoinHook):
    """What a rank that has run out of inputs does for DDP while others still train (PyTorch's):
    match their buffer broadcast, their agreement on gradient sync, the used-parameter all-reduce
    and one all-reduce of zeros per bucket; at the end, broadcast the model of a last joiner."""

    def __init__(self, ddp, divide_by_initial_world_size: bool):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp.will_sync_module_buffers() and ddp._world > 1:
            ddp._sync_buffers(ddp._find_common_rank(ddp._group_rank, False))
        should_sync = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync
        if not should_sync:
            return
        if ddp.find_unused_parameters:   # this rank used no parameter
            dist.all_reduce(ddp._small([0] * len(ddp._params)), group=ddp.process_group)
        ddp._match_all_reduce_for_bwd_pass()

    def post_hook(self, is_last_joiner: bool) -> None:
        ddp = self.ddp
        src = ddp._find_common_rank(ddp._group_rank, is_last_joiner)
        state = list(ddp.module.parameters()) + (list(ddp._modules_buffers) if ddp.broadcast_buffers else [])
        ddp._broadcast_coalesced(list({id(t): t for t in state}.values()), src)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across processes (PyTorch's ``DistributedDataParallel``).

    Every process wraps its own replica; ``forward`` runs the module
    unchanged; after ``loss.backward()`` each parameter's ``.grad`` is the
    mean of the replicas' gradients.  Inside :meth:`no_sync` gradients
    accumulate locally and are averaged by the first backward after it.
    ``broadcast_buffers`` copies rank 0's buffers (e.g. BatchNorm running
    stats) to every rank before each forward.  With
    ``find_unused_parameters=True`` parameters that the output does not
    depend on are treated as ready (their gradient contributes zeros).
    ``device_ids``/``output_device`` must be None (CPU modules and CuPy
    modules are reduced through host memory).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool = True,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False):
        Module.__init__(self)
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self._divide_by_initial_world_size = True
        self._join_work = None
        if device_mesh is not None or mixed_precision is not None or delay_all_reduce_named_params is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh, mixed_precision and "
                                      "delay_all_reduce_named_params are not supported by fabric")
        self.process_group = dist.GroupMember.WORLD if process_group is None else process_group
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        params = []
        seen = set()
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if device_ids is not None or output_device is not None:
            devices = {str(p.device) for p in module.parameters()}
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._comm_hook = None
        self._comm_state = None
        self._inflight = []      # (future, bucket, flat): bucket all-reduces started during this backward
        # [bytes all-reduced, bytes whose all-reduce had completed when backward ended]: a measure of the
        # overlap that does not depend on the machine's load (benchmarks/distributed.py reports it)
        self._comm_stats = [0, 0]
        self._progress_thread = os.environ.get("FABRIC_MPI_PROGRESS_THREAD", "0") == "1"
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        # as PyTorch: a small first bucket (its all-reduce starts early) unless the user set the cap
        self._first_bucket_bytes = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._params = params
        self._params_index = {id(p): i for i, p in enumerate(params)}
        # the array module of the buckets: the parameters' device where the engine works there (NCCL),
        # host memory otherwise (MPI and the TCP transport copy CuPy gradients through it)
        self._xp = np
        if dist.distributed_c10d._on_device() and not isinstance(params[0]._data, np.ndarray):
            from ...backends import backend_of

            self._xp = backend_of(params[0]._data).xp
        self._modules_buffers = [b for _, b in module.named_buffers()]
        self._world = dist.get_world_size(self.process_group)
        self._root = dist.get_global_rank(self.process_group, 0)
        self._group_rank = dist.get_rank(self.process_group)

        self._verify_param_shape_across_processes()
        if init_sync:
            self._sync_module_states()
        self._buckets = self._build_buckets()
        self._where = {}    # id(param) -> (bucket, slot)
        for b in self._buckets:
            for slot, (_, p) in enumerate(b.params):
                self._where[id(p)] = (b, slot)
        self._handles = [p.register_post_accumulate_grad_hook(self._make_hook(p)) for p in params]
        self._reset_iteration()
        self._expect_hooks = False
        self._require_finalize = False

    # --- construction helpers ------------------------------------------------------------------------
    def _verify_param_shape_across_processes(self):
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for r, theirs in enumerate(everyone):
            if theirs != mine:
                raise RuntimeError(f"DDP expects same model across all ranks, but rank {dist.get_rank()} has "
                                   f"{len(mine)} params, while rank {dist.get_global_rank(self.process_group, r)} "
                                   f"has inconsistent {len(theirs)} params (or shapes/dtypes differ).")

    def _broadcast_coalesced(self, tensors, group_src: int = 0):
        """Broadcast ``tensors`` from group rank ``group_src``, one flat message per dtype."""
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t._data.dtype, []).append(t)
        for group in by_dtype.values():
            flat = self._xp.concatenate([dist.distributed_c10d._host(t).reshape(-1) for t in group])
            holder = Tensor._make(flat)
            dist.broadcast(holder, group=self.process_group, group_src=group_src)
            off = 0
            for t in group:
                n = t._data.size
                dist.distributed_c10d._store_back(t, flat[off:off + n])
                off += n

    def _sync_module_states(self):
        if self._world > 1:
            state = list(self.module.parameters()) + list(self._modules_buffers)
            self._broadcast_coalesced(list({id(t): t for t in state}.values()))

    def _build_buckets(self):
        buckets, cap = [], self._first_bucket_bytes
        order = list(enumerate(self._params))[::-1]
        by_dtype = {}
        for pos, p in order:
            by_dtype.setdefault(p._data.dtype, []).append((pos, p))
        for items in by_dtype.values():
            current, size = [], 0
            for pos, p in items:
                current.append((pos, p))
                size += p._data.nbytes
                if size >= cap:
                    buckets.append(current)
                    current, size, cap = [], 0, self.bucket_bytes_cap
            if current:
                buckets.append(current)
        return [_Bucket(i, b) for i, b in enumerate(buckets)]

    # --- per-iteration state -------------------------------------------------------------------------
    def _reset_iteration(self):
        self._ready = [False] * len(self._params)
        for b in self._buckets:
            b.pending = len(b.params)
        self._next_bucket = 0
        self._unused = []
        self._marked_unused = False
        self._globally_used = None

    def _make_hook(self, param):
        def hook(_):
            self._autograd_hook(param)
        return hook

    def _autograd_hook(self, param):
        if not self._expect_hooks:
            return
        if not self._marked_unused:
            self._marked_unused = True
            self._require_finalize = True
            if self.find_unused_parameters:
                used = [1] * len(self._params)
                for p in self._unused:
                    used[self._params_index[id(p)]] = 0
                holder = self._small(used)
                dist.all_reduce(holder, group=self.process_group)
                self._globally_used = np.array(holder.tolist()) > 0
                for p in self._unused:
                    self._mark_ready(p)
        self._mark_ready(param)

    def _mark_ready(self, param):
        bucket, slot = self._where[id(param)]
        pos = bucket.params[slot][0]
        if self._ready[pos]:
            raise RuntimeError(f"Expected to mark a variable ready only once. This error is caused by one of the "
                               f"following reasons: 1) Use of a module parameter outside the `forward` function. "
                               f"2) Reused parameters in multiple reentrant backward passes. Parameter at index "
                               f"{pos} has been marked as ready twice.")
        self._ready[pos] = True
        bucket.pending -= 1
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._launch_bucket(self._buckets[self._next_bucket])
            self._next_bucket += 1
        for fut, _, _ in self._inflight:
            fut.done()   # drives the engine's progress while backward goes on
        if self._next_bucket == len(self._buckets):
            self._finish_buckets()
            self._expect_hooks = False
            self._require_finalize = False

    def register_comm_hook(self, state, hook) -> None:
        """Replace the bucket all-reduce: ``hook(state, bucket)`` gets a
        :class:`GradBucket` and returns a ``Future`` of the bucket's reduced
        flat tensor (PyTorch's protocol; see ``fabric.distributed.algorithms.
        ddp_comm_hooks.default_hooks``).  Register once, before the first backward."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._comm_hook, self._comm_state = hook, state

    def _launch_bucket(self, bucket):
        """Flatten the bucket's gradients and start its all-reduce (non-blocking where the engine allows: the
        MPI engine overlaps it with the rest of backward); :meth:`_finish_buckets` waits and copies back."""
        flat = bucket.buffer if self.gradient_as_bucket_view and bucket.buffer is not None else \
            self._xp.empty(bucket.numel, dtype=bucket.dtype)
        offs = bucket.offsets
        for slot, (_, p) in enumerate(bucket.params):
            g = p._grad
            dst = flat[offs[slot]:offs[slot + 1]]
            if g is None:
                dst[...] = 0
            elif g._data is not getattr(p, "_ddp_grad_view", None):
                dst[...] = dist.distributed_c10d._host(g).reshape(-1)

        self._inflight.append((self._run_comm_hook(bucket, flat), bucket, flat))
        if len(self._inflight) == 1 and self._progress_thread:
            engine = getattr(self.process_group, "_engine", None)
            if engine is not None and hasattr(engine, "progress_while"):
                engine.progress_while(lambda: bool(self._inflight))

    def _run_comm_hook(self, bucket, flat):
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks

        grad_bucket = default_hooks.GradBucket(bucket.index, Tensor._make(flat), bucket.index == len(self._buckets) - 1,
                                               [p for _, p in bucket.params], bucket.offsets)
        if self._comm_hook is not None:
            return self._comm_hook(self._comm_state, grad_bucket)
        # PyTorch's default: divide by the world size (under Join without divide_by_initial_world_size:
        # by the number of ranks still training), then all-reduce SUM
        tensor = grad_bucket.buffer()
        tensor.div_(self._div_factor())
        work = dist.all_reduce(tensor, group=self.process_group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    def _div_factor(self):
        active = self._wait_join_work()
        return self._world if active is None or self._divide_by_initial_world_size else active

    def _wait_join_work(self):
        """The number of ranks still training, from this iteration's Join notification (None outside Join)."""
        if self._join_work is not None:
            work, self._join_work = self._join_work, None
            work.wait()
            self._active_ranks = int(work.result()[0].item())
            return self._active_ranks
        return getattr(self, "_active_ranks", None) if self._join_config.enable else None

    # --- uneven inputs (Join) --------------------------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """A :class:`~fabric.distributed.algorithms.Join` context for this model alone: ranks with
        fewer batches shadow the others' collectives until all are done.  Joined ranks contribute
        zero gradients, divided by the initial world size (default) or, with
        ``divide_by_initial_world_size=False``, the gradient is the mean over the ranks still
        training.  At the end the model of a last joiner is broadcast to every rank."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        return _DDPJoinHook(self, divide_by_initial_world_size=kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self._params[0].device

    @property
    def join_process_group(self):
        return self.process_group

    def _find_common_rank(self, group_rank: int, candidate: bool) -> int:
        """The largest group rank among the candidates (PyTorch's choice of an authoritative rank)."""
        holder = self._small([group_rank if candidate else -1])
        dist.all_reduce(holder, op=dist.ReduceOp.MAX, group=self.process_group)
        rank = int(holder.item())
        if rank == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. This indicates a bug "
                             "in PyTorch, please report an issue.")
        return rank

    def _check_global_requires_backward_grad_sync(self, is_joined_rank: bool) -> bool:
        flag = self._small([0 if is_joined_rank or not self.require_backward_grad_sync else 1])
        dist.all_reduce(flag, group=self.process_group)
        return bool(flag.item())

    def _match_all_reduce_for_bwd_pass(self) -> None:
        """One all-reduce of zeros per bucket, in the buckets' order, through the communication hook."""
        futures = [self._run_comm_hook(b, self._xp.zeros(b.numel, dtype=b.dtype)) for b in self._buckets]
        for fut in futures:
            fut.wait()

    def _finish_buckets(self):
        inflight, self._inflight = self._inflight, []
        stats = self._comm_stats
        for fut, bucket, flat in inflight:
            stats[0] += flat.nbytes
            if fut.done():        # completed while backward was still running: hidden under it
                stats[1] += flat.nbytes
            result = fut.wait()
            result = result[0] if isinstance(result, (list, tuple)) else result
            data = dist.distributed_c10d._host(result).reshape(-1)
            if data is not flat:
                flat[...] = data
            self._copy_back(bucket, flat)

    def _copy_back(self, bucket, flat):
        offs = bucket.offsets
        for slot, (pos, p) in enumerate(bucket.params):
            view = flat[offs[slot]:offs[slot + 1]].reshape(p._data.shape)
            if p._grad is None:
                if self._globally_used is not None and not self._globally_used[pos]:
                    continue   # unused on every rank: the gradient stays None, as PyTorch
                if self.gradient_as_bucket_view:
                    p._grad = Tensor._make(view)
                    p._ddp_grad_view = view
                else:
                    p._grad = Tensor._make(self._like_param(p, view.copy()))
            elif self.gradient_as_bucket_view and isinstance(p._grad._data, type(view)):
                if p._grad._data is not view:
                    p._grad = Tensor._make(view)
                    p._ddp_grad_view = view
            else:
                dist.distributed_c10d._store_back(p._grad, view)
        if self.gradient_as_bucket_view:
            bucket.buffer = flat

    @staticmethod
    def _like_param(p, host):
        if isinstance(p._data, type(host)):
            return host
        from ...backends import backend_of

        return backend_of(p._data).xp.asarray(host)

    def _small(self, values) -> Tensor:
        """An int64 tensor of ``values`` where the engine communicates (the device on NCCL)."""
        return Tensor._make(self._xp.asarray(np.array(values, dtype=np.int64)))

    # --- forward ---------------------------------------------------------------------------------------
    def _sync_buffers(self, group_src: int = 0):
        if self._modules_buffers:
            self._broadcast_coalesced(self._modules_buffers, group_src)

    def forward(self, *inputs, **kwargs):
        from ...autograd.grad_mode import is_grad_enabled

        grad_sync = is_grad_enabled() and self.require_backward_grad_sync
        if grad_sync and self._require_finalize:
            missing = [i for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(_UNFINISHED_MSG.format(rank=dist.get_rank(), idx=missing))
        self._wait_join_work()      # a previous iteration's notification that no backward consumed
        self._join_work = Join.notify_join_context(self)
        if self.require_forward_param_sync and self.broadcast_buffers and self._modules_buffers and self._world > 1:
            # under Join rank 0 may have joined with stale buffers: the largest rank still training sends
            self._sync_buffers(self._find_common_rank(self._group_rank, True) if self._join_config.enable else 0)
        if self._join_config.enable:   # tells the joined ranks whether this backward synchronises
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        output = self.module(*inputs, **kwargs)
        if grad_sync:
            self.require_forward_param_sync = True
            self._reset_iteration()
            self._expect_hooks = True
            if self.find_unused_parameters:
                reachable = _reachable_leaves(_tensors_in(output, []))
                self._unused = [p for p in self._params if id(p) not in reachable]
        else:
            self.require_forward_param_sync = False
            self._expect_hooks = False
        return output

    @contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communication;
        the first synchronised backward after it averages the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def will_sync_module_buffers(self) -> bool:
        return self.require_forward_param_sync and self.broadcast_buffers and len(self._modules_buffers) > 0

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel is not picklable in fabric (pickle .module instead)")
