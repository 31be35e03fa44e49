"""``nn.utils.stateless``: call a module with some of its parameters and
buffers replaced by other tensors (``functional_call``).

Example::

    >>> import warnings, fabric
    >>> from fabric import nn
    >>> m = nn.Linear(2, 1)
    >>> p = {"weight": fabric.ones(1, 2), "bias": fabric.zeros(1)}
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     nn.utils.stateless.functional_call(m, p, fabric.tensor([[1.0, 2.0]]))
    tensor([[3.]])
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any

from ..._tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers: dict) -> dict:
    """Extend ``parameters_and_buffers`` so a value given for one of several
    tied names (one tensor reachable under several names) replaces all of
    them; raises ValueError if tied names were given different values."""
    all_named_tensors = {}
    all_named_tensors.update(module.named_parameters(remove_duplicate=False))
    all_named_tensors.update(module.named_buffers(remove_duplicate=False))
    tied_by_id: dict = {}
    for name, tensor in all_named_tensors.items():
        tied_by_id.setdefault(id(tensor), set()).add(name)
    tied_names_map = {}
    for tied_names in tied_by_id.values():
        if len(tied_names) > 1:
            for tied_name in tied_names:
                tied_names_map[tied_name] = tied_names
    given_names = set(parameters_and_buffers)
    given_tied = {name for name in given_names if name in tied_names_map}
    for given_name in given_tied:
        tied_names = tied_names_map[given_name]
        if (len(tied_names & given_tied) > 1
                and len({id(parameters_and_buffers[n]) for n in tied_names if n in parameters_and_buffers}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied_names)}, which are tied. "
                             "Consider using tie_weights=False")
    untied = parameters_and_buffers.copy()
    for given_name in given_tied:
        for tied_name in tied_names_map[given_name]:
            untied[tied_name] = parameters_and_buffers[given_name]
    return untied


def _swap_tensor(module, name: str, tensor, allow_missing: bool = False):
    """Put ``tensor`` at ``module.<name>`` (``_MISSING``: delete it) and
    return what was there, as torch's NamedMemberAccessor.swap_tensor."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is not _MISSING:
            module._parameters[name] = tensor
        else:
            del module._parameters[name]
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is not _MISSING:
            module._buffers[name] = tensor
        else:
            del module._buffers[name]
    else:
        if hasattr(module, name):
            orig = getattr(module, name)
        else:
            if not allow_missing:
                raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
            orig = _MISSING
        if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _swap_tensors_dict(module, named_tensors: dict, allow_missing: bool = False) -> dict:
    orig = {}
    try:
        for name, tensor in named_tensors.items():
            prefix, _, attr = name.rpartition(".")
            owner = module.get_submodule(prefix) if prefix else module
            orig[name] = _swap_tensor(owner, attr, tensor, allow_missing=allow_missing)
    except Exception:
        for name, tensor in reversed(orig.items()):
            prefix, _, attr = name.rpartition(".")
            owner = module.get_submodule(prefix) if prefix else module
            _swap_tensor(owner, attr, tensor, allow_missing=True)
        raise
    return orig


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, tie_weights: bool = False, strict: bool = False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        keys = set(untied)
        missing_keys, unexpected_keys = sorted(valid - keys), sorted(keys - valid)
        error_msgs = []
        if unexpected_keys:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected_keys))}.")
        if missing_keys:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing_keys))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                  "\n\t".join(error_msgs)))
    orig = {}
    try:
        orig = _swap_tensors_dict(module, untied, allow_missing=True)
        yield
    finally:
        new = _swap_tensors_dict(module, orig, allow_missing=True)
        # In-place updates of swapped-in tensors reach the caller's dict.
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                     tie_weights: bool = True, strict: bool = False):
    from ... import nn
    data_parallel = getattr(nn, "DataParallel", None)  # not every fabric build has it
    if data_parallel is not None and isinstance(module, data_parallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Run ``module(*args, **kwargs)`` with the parameters and buffers named
    in ``parameters_and_buffers`` (dotted names, as ``named_parameters``)
    replaced by the given tensors; the module's own tensors are put back
    afterwards, even if the call raises.  Gradients flow to the given
    tensors.  ``tie_weights``: a value for one of several tied names
    replaces all of them; ``strict``: every parameter and buffer must be
    given, and nothing else.  Deprecated in PyTorch (FutureWarning) in favour
    of :func:`fabric.func.functional_call`.

    Example::

        >>> import warnings, fabric
        >>> m = fabric.nn.Linear(1, 1)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     out = fabric.nn.utils.stateless.functional_call(
        ...         m, {"weight": fabric.full((1, 1), 2.0), "bias": fabric.zeros(1)}, (fabric.ones(1, 1),))
        >>> out.item()
        2.0
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
