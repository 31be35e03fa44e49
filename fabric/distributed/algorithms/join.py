"""Training with uneven inputs: the ``Join`` context manager (``torch.distributed.algorithms.join``).

A rank that runs out of inputs leaves the ``with Join(...)`` block early; on
exit it keeps *shadowing* the collectives that the ranks still training issue
(each :class:`Joinable`'s :meth:`JoinHook.main_hook`), until every rank has
joined; then every hook's :meth:`JoinHook.post_hook` runs.  Each iteration of
a rank still training starts with :meth:`Join.notify_join_context`, an
all-reduce of ones that the joined ranks match with zeros: its sum is the
number of ranks not yet joined.

Example (every rank runs it; rank ``r`` has ``3 + r`` batches)::

    from fabric.distributed.algorithms import Join
    with Join([ddp_model]):
        for x in batches:
            ddp_model(x).sum().backward()
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """What a joined rank does for one :class:`Joinable`: ``main_hook()`` once per iteration
    of the ranks still training, ``post_hook(is_last_joiner)`` once all have joined."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the ranks still training."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined (``is_last_joiner``: this rank was among the last)."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> _JoinConfig:
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """An object that takes part in :class:`Join`: it gives a :class:`JoinHook`, the device and
    the process group of its collectives, and calls :meth:`Join.notify_join_context` at the start
    of each iteration."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook that shadows this object's collectives (``kwargs`` come from ``Join(...)``)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context's own collectives."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join context's own collectives."""


_WARN_THRESHOLD = 1000


class Join:
    """Context manager for uneven inputs over ``joinables`` (see the module docstring).

    ``enable=False`` turns it into a plain block; ``throw_on_early_termination=True`` makes
    every rank raise as soon as one rank has run out of inputs, instead of shadowing.
    Remaining ``kwargs`` go to each joinable's ``join_hook`` (for DDP:
    ``divide_by_initial_world_size``).
    """

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self) -> None:
        first = True
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig(enable=self._enable,
                                                throw_on_early_termination=self._throw_on_early_termination,
                                                is_first_joinable=first)
            first = False

    def _extract_dist_info(self) -> None:
        from ... import distributed as dist

        process_group, device = None, None
        for joinable in self._joinables:
            if process_group is None:
                process_group = joinable.join_process_group
            elif process_group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group = process_group
        self._rank = dist.get_rank(self._process_group)
        self._device = device

    def __enter__(self):
        return None

    def __exit__(self, exc_type, value, traceback):
        if not self._enable or exc_type:
            return None       # an exception propagates as it is
        all_joined = False
        is_last_joiner = True
        i = 0
        while not all_joined:
            if i > _WARN_THRESHOLD:
                warnings.warn(f"Detected uneven input skew of greater than {_WARN_THRESHOLD}. This means that rank "
                              f"{self._rank} has at least {_WARN_THRESHOLD} fewer inputs than other "
                              "currently-active ranks. This level of skew could lead to performance degradation "
                              "during training.", stacklevel=2)
            if self._get_num_nonjoined_procs() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                i += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        return None

    def _get_num_nonjoined_procs(self) -> int:
        from ... import distributed as dist
        from ..._creation import zeros

        count = zeros(1, device=self._device)
        dist.all_reduce(count, group=self._process_group)
        return int(count.item())

    def _notify_procs_to_terminate(self):
        from ... import distributed as dist
        from ..._creation import ones

        dist.all_reduce(ones(1, device=self._device), group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by ``joinable`` at the start of each iteration: tells the joined ranks that this one
        is still training.  Returns the async all-reduce's ``Work`` (its tensor ends as the number of
        ranks not joined) for the first joinable of an enabled context, else None."""
        from ... import distributed as dist
        from ..._creation import ones, zeros

        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device, group = joinable.join_device, joinable.join_process_group
        work = dist.all_reduce(ones(1, device=device), group=group, async_op=True)
        if config.throw_on_early_termination:
            flag = zeros(1, device=device)
            dist.all_reduce(flag, group=group)
            if flag.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
