"""``ZeroRedundancyOptimizer``: each rank keeps the optimizer state of its shard of the
parameters only (ZeRO stage 1, PyTorch's ``torch.distributed.optim.ZeroRedundancyOptimizer``).

The parameters are partitioned as PyTorch does: within each parameter group, largest
first, each parameter goes to the rank whose shard is smallest so far (counted in
elements, over all groups).  ``step()`` runs the wrapped optimizer on this rank's shard,
then every rank broadcasts its updated parameters to the others (one message per rank and
dtype), so all replicas stay equal and follow the unsharded optimizer's trajectory.

Example (every rank runs it)::

    from fabric.distributed.optim import ZeroRedundancyOptimizer
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=fabric.optim.Adam, lr=1e-3)
    loss.backward(); opt.step()
    opt.consolidate_state_dict(to=0)
    if dist.get_rank() == 0:
        fabric.save(opt.state_dict(), "opt.pt")
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from ... import distributed as dist
from ..._tensor import Tensor
from ...optim.optimizer import Optimizer
from ..algorithms.join import Join, Joinable, JoinHook, _JoinConfig

__all__ = ["ZeroRedundancyOptimizer"]


class _ZeROJoinHook(JoinHook):
    """A joined rank keeps stepping (its gradients are whatever it last had) so that its shard is
    updated and broadcast with the others' (PyTorch's hook)."""

    def __init__(self, zero):
        self.zero = zero

    def main_hook(self) -> None:
        self.zero.step()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """Wrap ``optimizer_class`` so that each rank holds the state of its shard of ``params``.

    ``params``: tensors or parameter groups (dicts), as for any optimizer; ``**defaults`` go to
    ``optimizer_class``.  ``parameters_as_bucket_view`` is accepted (the broadcast is one flat
    message per rank and dtype either way); ``overlap_with_ddp=True`` is not supported.
    """

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults):
        params = self._verify_and_init_params(params)
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported by fabric "
                                      "(it needs DDP's communication hook to run the optimizer step per bucket)")
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._overlap_with_ddp = overlap_with_ddp
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._all_state_dicts: list = []
        self._clear_cache()
        self._default_device = self._all_params[0].device
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self.initialized = True

    # --- parameters and their partition ---------------------------------------------------------------
    def _verify_and_init_params(self, params) -> list:
        if isinstance(params, Tensor):
            raise TypeError(f"params argument should be an iterable of Tensors, but got {type(params).__name__}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError("params argument should be an iterable of Tensors or dicts, but got "
                            f"{type(params).__name__}") from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        all_tensors = all(isinstance(p, Tensor) for p in all_params)
        all_dicts = all(isinstance(p, dict) for p in all_params)
        if not all_tensors and not all_dicts:
            raise TypeError("params argument should be an iterable of Tensors or dicts")
        if all_tensors:
            self._all_params = all_params
        else:
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a 'params' key mapping "
                                     "to the parameters in the group")
                self._all_params.extend(group["params"])
        return all_params

    def _clear_cache(self) -> None:
        self._partition_parameters_cache: list = []
        self._param_to_rank_cache: dict = {}
        self._index_to_param_cache: list = []
        self._param_to_index_cache: dict = {}

    def _partition_parameters(self) -> list:
        """``[rank][group] -> param group dict`` holding that rank's share of the group's parameters."""
        if not self._partition_parameters_cache:
            per_rank: list = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                shares: list = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):   # stable: ties in order
                    rank = sizes.index(min(sizes))
                    shares[rank].append(p)
                    sizes[rank] += p.numel()
                for rank, share in enumerate(shares):
                    part = copy.copy(group)
                    part["params"] = share
                    per_rank[rank].append(part)
            self._partition_parameters_cache = per_rank
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self) -> dict:
        if not self._param_to_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    for p in group["params"]:
                        self._param_to_rank_cache[p] = rank
        return self._param_to_rank_cache

    @property
    def _index_to_param(self) -> list:
        if not self._index_to_param_cache:
            self._index_to_param_cache = list(itertools.chain.from_iterable(g["params"] for g in self.param_groups))
        return self._index_to_param_cache

    @property
    def _param_to_index(self) -> dict:
        if not self._param_to_index_cache:
            self._param_to_index_cache = {p: i for i, p in enumerate(self._index_to_param)}
        return self._param_to_index_cache

    def add_param_group(self, param_group: dict) -> None:
        """Add a group; its parameters are partitioned like the others (earlier groups keep their ranks)."""
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            mine = self._partition_parameters()[self.rank]
            if len(mine) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(mine[-1])

    @staticmethod
    def _sync_param_groups(src_groups, dst_groups) -> None:
        """Copy every hyperparameter (all keys but ``params``) from ``src_groups`` to ``dst_groups``."""
        for src, dst in zip(src_groups, dst_groups):
            for key, value in src.items():
                if key != "params":
                    dst[key] = value

    # --- stepping --------------------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Step the local optimizer on this rank's shard, then broadcast every shard."""
        Join.notify_join_context(self)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure=closure, **kwargs) if closure is not None else self.optim.step(**kwargs)
        self._sync_params()
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _sync_params(self) -> None:
        """Each rank broadcasts its updated parameters: one flat message per rank and dtype."""
        if self.world_size == 1:
            return
        c10d = dist.distributed_c10d
        for rank, groups in enumerate(self._partition_parameters()):
            by_dtype: dict = {}
            for group in groups:
                for p in group["params"]:
                    by_dtype.setdefault(str(p.dtype), []).append(p)
            for params in by_dtype.values():
                flat = np.concatenate([c10d._host(p).reshape(-1) for p in params])
                holder = Tensor._make(flat)
                dist.broadcast(holder, group=self.process_group, group_src=rank)
                if rank != self.rank:
                    off = 0
                    for p in params:
                        n = p.numel()
                        c10d._store_back(p, flat[off:off + n])
                        off += n

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optim.zero_grad(set_to_none)

    # --- state dicts -----------------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's local optimizer state on rank ``to`` (a global rank), for
        :meth:`state_dict`; every rank of the group must call it."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        local = self.optim.state_dict()
        to_group = dist.get_group_rank(self.process_group, to)
        gathered = [None] * self.world_size if self.rank == to_group else None
        dist.gather_object(local, gathered, group=self.process_group, group_dst=to_group)
        self._all_state_dicts = list(gathered) if gathered is not None else []

    def state_dict(self) -> dict:
        """The full optimizer state, with global parameter indices (only on the rank that consolidated)."""
        if len(self._all_state_dicts) == 0:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save its state.")
        state_dict = Optimizer.state_dict(self)
        for rank, local in enumerate(self._all_state_dicts):
            global_groups = self._partition_parameters()[rank]
            if len(local["param_groups"]) != len(global_groups):
                raise AssertionError("Mismatch between number of local and global parameter groups")
            for local_group, global_group in zip(local["param_groups"], global_groups):
                if len(local_group["params"]) != len(global_group["params"]):
                    raise AssertionError("Mismatch between number of local and global parameters in parameter group")
                for local_index, p in zip(local_group["params"], global_group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][self._param_to_index[p]] = local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a full state (from :meth:`state_dict`): each rank keeps its shard's state."""
        owned = {}
        for index, value in state_dict["state"].items():
            p = self._index_to_param[index]
            if self._param_to_rank[p] == self.rank:
                owned[index] = value
                self.optim.state[p] = {k: Optimizer._cast_state(p, k, v) for k, v in value.items()}
        Optimizer.load_state_dict(self, {"state": {}, "param_groups": state_dict["param_groups"]})
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)

    # --- Join ------------------------------------------------------------------------------------------
    def join_hook(self, **kwargs) -> JoinHook:
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self._default_device

    @property
    def join_process_group(self):
        return self.process_group

