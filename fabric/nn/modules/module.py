"""``nn.Module``: the base class of every layer and model.

Attribute assignment registers Parameters, buffers and submodules (in
insertion order); ``state_dict`` / ``load_state_dict`` use PyTorch's key
names, so weights move between fabric and PyTorch; hooks, ``repr``,
``train``/``eval`` and device/dtype conversion follow PyTorch.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> net = Net()
    >>> [name for name, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    >>> net
    Net(
      (fc): Linear(in_features=4, out_features=2, bias=True)
    )
"""
from __future__ import annotations

import functools
import inspect
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from ..._display import module_html as _module_html
from ..._tensor import Tensor, _parse_to
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...autograd.grad_mode import state as _grad_state
from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: ``(missing_keys, unexpected_keys)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters
    the hook (also from the ``extra_dict`` flag dictionaries)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2]) if len(state) > 2 and state[2] else ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _WrappedHook:
    """A hook that is called with its (weakly held) module as first argument."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


# --- global hooks (for every module; debugging / profiling) -------------------
_global_buffer_registration_hooks: dict = OrderedDict()
_global_module_registration_hooks: dict = OrderedDict()
_global_parameter_registration_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()
_global_forward_hooks_always_called: dict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = OrderedDict()


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer)`` runs on every ``register_buffer``; it
    may return a replacement buffer."""
    handle = RemovableHandle(_global_buffer_registration_hooks)
    _global_buffer_registration_hooks[handle.id] = hook
    return handle


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule)`` runs on every submodule registration."""
    handle = RemovableHandle(_global_module_registration_hooks)
    _global_module_registration_hooks[handle.id] = hook
    return handle


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param)`` runs on every ``register_parameter``."""
    handle = RemovableHandle(_global_parameter_registration_hooks)
    _global_parameter_registration_hooks[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook):
    """A forward pre-hook for all modules (runs before the modules' own)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """A forward hook for all modules (runs before the modules' own)."""
    handle = RemovableHandle(_global_forward_hooks,
                             extra_dict=[_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook):
    """A (deprecated, non-full) backward hook for all modules."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook for all modules."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook):
    """A full backward hook for all modules."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def _has_global_hooks():
    return bool(_global_backward_pre_hooks or _global_backward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks)


# --- full backward hooks --------------------------------------------------------
class BackwardHookFunction(Function):
    """Identity on a module's input / output tensors; its graph node is where
    full backward hooks see ``grad_input`` / ``grad_output``."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class _BackwardHook:
    """Wires a module's full backward (pre-)hooks into the graph: an identity
    node on the outputs captures ``grad_output`` (and runs the pre-hooks), an
    identity node on the inputs captures ``grad_input`` and runs the hooks."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing the outputs (double backward)
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and _grad_state.enabled):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        grad_fns = [t.grad_fn for t in new if t.grad_fn is not None
                    and type(t.grad_fn).__name__ == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks.")
        fn(grad_fns[0])
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        res, idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, args):
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                for pre in self.user_pre_hooks:
                    new = pre(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != len(self.grad_outputs):
                        raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                           f"got {len(new)}, but expected {len(self.grad_outputs)}")
                    self.grad_outputs = new
                local = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks fire now, with grad_input all None
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients.", stacklevel=5)
                    grad_inputs = (None,) * self.n_inputs
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                return tuple(local[i] for i in self.output_tensors_index)

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line if line.strip() else "" for line in s]
    return first + "\n" + "\n".join(s)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return "fabric." + type(obj).__name__ if type(obj) is Tensor else type(obj).__module__ + "." + \
            type(obj).__name__
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__") else f"{module}.{name}"


def _as_checkpoint_tensor(v):
    """A fabric Tensor from a checkpoint value; NumPy arrays and PyTorch
    tensors are accepted too (copied), so PyTorch state_dicts load directly."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, np.ndarray):
        from ..._creation import from_numpy

        return from_numpy(v)
    if type(v).__module__.startswith("torch") and hasattr(v, "detach") and hasattr(v, "numpy"):
        from ..._creation import from_numpy

        return from_numpy(v.detach().cpu().numpy().copy())
    return None


def _forward_unimplemented(self, *input):
    """Define the computation performed at every call; subclasses override it."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules.

    Subclasses call ``super().__init__()`` first, then assign Parameters,
    buffers and submodules as attributes, and define ``forward``.  Calling
    the module runs the forward pre-hooks, ``forward`` and the forward hooks.

    Example::

        >>> import fabric
        >>> m = fabric.nn.Sequential(fabric.nn.Linear(3, 2), fabric.nn.ReLU())
        >>> m(fabric.ones(5, 3)).shape
        fabric.Size([5, 2])
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        d["_modules"] = {}
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # --- registration ---------------------------------------------------------
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. running
        statistics); ``persistent=False`` keeps it out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        for hook in _global_buffer_registration_hooks.values():
            out = hook(self, name, tensor)
            if out is not None:
                tensor = out
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (a :class:`Parameter` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            out = hook(self, name, param)
            if out is not None:
                param = out
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            out = hook(self, name, module)
            if out is not None:
                module = out
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The Parameter at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        buf = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buf

    def get_extra_state(self):
        """Extra (non-tensor) state for ``state_dict``; override together with
        :meth:`set_extra_state`."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state) -> None:
        """Restore what :meth:`get_extra_state` returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # --- conversion -----------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter (in place: the Parameter objects,
        and their ``.grad``, keep their identity) and buffer."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                applied = fn(param)
            if not isinstance(applied, Tensor):
                raise TypeError(f"_apply(): fn returned {type(applied).__name__} for {self._get_name()}.{key}")
            param._data = applied._data
            grad = param._grad
            if grad is not None:
                with no_grad():
                    g = fn(grad)
                grad._data = g._data
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self, device=None):
        """Move parameters and buffers to the GPU (in place)."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        """Move parameters and buffers to the CPU (in place)."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        """Cast parameters and buffers to ``dst_type`` (in place)."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast floating point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse: bool = True):
        """Move parameters and buffers to ``device`` without copying values."""
        from ..._creation import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``:
        move and/or cast (floating point only) parameters and buffers in place.

        Example::

            >>> import fabric
            >>> fabric.nn.Linear(2, 2).to(fabric.float64).weight.dtype
            fabric.float64
        """
        kwargs = dict(kwargs)
        fmt = kwargs.pop("memory_format", None)
        device, dtype, _, non_blocking = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            import warnings

            warnings.warn("Complex modules are a new feature under active development whose design may change, and "
                          "some modules might not work as expected when using complex tensors as parameters or "
                          "buffers. Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
                          "bug-report.yml if a complex module does not work as expected.", stacklevel=2)

        def convert(t):
            dt = dtype if t.is_floating_point() or t.is_complex() else None
            if fmt is not None and t.dim() in (4, 5):  # as PyTorch: only 4-D/5-D weights take the format
                return t.to(device, dt, non_blocking=non_blocking, memory_format=fmt)
            return t.to(device, dt, non_blocking=non_blocking)

        return self._apply(convert)

    def share_memory(self):
        """Move parameters and buffers to shared memory (needs Tensor.share_memory_)."""
        if not hasattr(Tensor, "share_memory_"):
            raise NotImplementedError("Module.share_memory(): fabric Tensors have no share_memory_() yet")
        return self._apply(lambda t: t.share_memory_())

    # --- hooks ------------------------------------------------------------------
    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` runs before the module's gradients
        are computed; it may return a replacement ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated (hooks the last op of forward); use
        :meth:`register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients
        with respect to the module's positional inputs are computed; it may
        return a replacement ``grad_input``.

        Example::

            >>> import fabric
            >>> lin = fabric.nn.Linear(2, 1)
            >>> seen = []
            >>> _ = lin.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].shape))
            >>> x = fabric.ones(3, 2, requires_grad=True)
            >>> lin(x).sum().backward()
            >>> seen
            [fabric.Size([3, 1])]
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self):
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self):
        return list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn) -> None:
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                              "tuple of Tensors is deprecated and will be removed in future versions. This hook will "
                              "be missing some of the grad_output. Please use register_full_backward_hook to get the "
                              "documented behavior.", FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a single Tensor "
                              "or a tuple of Tensors is deprecated and will be removed in future versions. This hook "
                              "will be missing some of the grad_input. Please use register_full_backward_hook to get "
                              "the documented behavior.", FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output.", FutureWarning, stacklevel=2)
        elif len(out_fns) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
        else:
            in_fns = {i.grad_fn for i in inputs if i.grad_fn is not None}
            nxt = {n[0] for n in grad_fn.next_functions if n[0] is not None and type(n[0]).__name__ !=
                   "AccumulateGrad"}
            if in_fns != nxt:
                warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                              "deprecated and will be removed in future versions. This hook will be missing some "
                              "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs``) runs before ``forward`` and may return new inputs."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs,
        output)``) runs after ``forward`` and may return a new output;
        ``always_call`` runs it even when ``forward`` raises."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # --- call -------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        d = self.__dict__
        if not (d["_forward_hooks"] or d["_forward_pre_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"] or _has_global_hooks()):
            return self.forward(*args, **kwargs)
        result = None
        called_always = set()

        def inner():
            nonlocal result, args, kwargs
            full_bw, non_full_bw, bw_pre = [], [], []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                bw_pre = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_bw, non_full_bw = self._get_backward_hooks()
            for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if isinstance(res, tuple) and len(res) == 2:
                            args, kwargs = res
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {res}.")
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if full_bw or bw_pre:
                bw_hook = _BackwardHook(self, full_bw, bw_pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_bw:
                var = result
                while not isinstance(var, Tensor):
                    var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_bw:
                        grad_fn.register_hook(_WrappedHook(hook, self))
                    self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
            return result

        try:
            return inner()
        except Exception:
            for hook_id, hook in _global_forward_hooks.items():
                if hook_id in _global_forward_hooks_always_called and hook_id not in called_always:
                    try:
                        res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` raised an exception that "
                                      f"was silenced as another error was raised in forward: {e}", stacklevel=2)
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=2)
            raise

    __call__ = _call_impl

    # --- pickling / attributes ------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        if state.pop("_compiled_call_impl", None) is not None:
            state.pop("forward", None)  # Module.compile's in-place forward is not pickled (as PyTorch)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        defaults = (("_forward_pre_hooks", OrderedDict), ("_forward_pre_hooks_with_kwargs", OrderedDict),
                    ("_forward_hooks_with_kwargs", OrderedDict), ("_forward_hooks_always_called", OrderedDict),
                    ("_state_dict_hooks", OrderedDict), ("_state_dict_pre_hooks", OrderedDict),
                    ("_load_state_dict_pre_hooks", OrderedDict), ("_load_state_dict_post_hooks", OrderedDict),
                    ("_non_persistent_buffers_set", set), ("_backward_pre_hooks", OrderedDict))
        for name, factory in defaults:
            if name not in self.__dict__:
                self.__dict__[name] = factory()
        if "_is_full_backward_hook" not in self.__dict__:
            self.__dict__["_is_full_backward_hook"] = None

    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*containers):
            for c in containers:
                if name in c:
                    if isinstance(c, dict):
                        del c[name]
                    else:
                        c.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, d["_buffers"], d["_modules"], d["_non_persistent_buffers_set"])
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, d["_parameters"], d["_buffers"], d["_non_persistent_buffers_set"])
            for hook in _global_module_registration_hooks.values():
                out = hook(self, name, value)
                if out is not None:
                    value = out
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            for hook in _global_module_registration_hooks.values():
                out = hook(self, name, value)
                if out is not None:
                    value = out
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in d["_non_persistent_buffers_set"]
            if getattr(self.register_buffer, "__func__", None) is Module.register_buffer or \
                    "persistent" in inspect.signature(self.register_buffer).parameters:
                self.register_buffer(name, value, persistent)
            else:
                if not persistent:
                    raise RuntimeError("Registering a non-persistent buffer on a Module subclass that implements "
                                       "register_buffer() without the persistent argument is not allowed.")
                self.register_buffer(name, value)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # --- state dict -------------------------------------------------------------------
    def _register_state_dict_hook(self, hook):
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after
        ``state_dict`` and may modify it in place."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict``."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of parameters and persistent buffers, keyed by
        dotted name (PyTorch's key names), detached unless ``keep_vars``.

        Example::

            >>> import fabric
            >>> list(fabric.nn.BatchNorm1d(3).state_dict())
            ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
        """
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if res is not None:
                    destination = res
            elif res is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`` runs before loading."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after loading; it may
        edit the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Copy this module's own parameters and persistent buffers (not its
        children's) from ``state_dict``; errors are collected in ``error_msgs``."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            raw = state_dict[key]
            input_param = _as_checkpoint_tensor(raw)
            if input_param is None:
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(raw)}")
                continue
            lazy = is_lazy(param)
            if not lazy and param.ndim == 0 and input_param.ndim == 1 and input_param._data.shape[0] == 1:
                input_param = input_param[0]
            if not lazy and input_param._data.shape != param._data.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    elif not lazy:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, "
                                  f"an exception occurred : {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    parts = key[len(prefix):].split(".", 1)
                    if len(parts) > 1:
                        if parts[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif parts[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` (in place, keeping
        the Parameter objects unless ``assign``).  Returns
        ``_IncompatibleKeys(missing_keys, unexpected_keys)``; with ``strict``
        any mismatch raises RuntimeError listing every problem.  Values may
        also be NumPy arrays or PyTorch tensors.

        Example::

            >>> import fabric
            >>> a, b = fabric.nn.Linear(2, 2), fabric.nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_sd = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_sd, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # --- iteration ------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True):
        """Iterator over the parameters (of submodules too, unless ``recurse=False``)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterator over ``(dotted_name, parameter)``; shared parameters appear
        once unless ``remove_duplicate=False``."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Iterator over the buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterator over ``(dotted_name, buffer)``."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        """Iterator over the immediate submodules."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """Iterator over ``(name, submodule)`` of the immediate submodules."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate: bool = True):
        """Iterator over all modules in the tree, self first."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Iterator over ``(dotted_name, module)`` for the whole tree, self
        (named ``prefix``) first, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # --- modes / grads -----------------------------------------------------------------
    def train(self, mode: bool = True):
        """Set training mode (Dropout active, BatchNorm uses batch statistics)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Set evaluation mode; same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Set ``requires_grad`` of every parameter (freeze / unfreeze)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's ``forward`` in place with :func:`fabric.compile`
        (the same arguments); later calls run the captured graph and give the
        same numbers.  Hooks run around the compiled forward.

        Example::

            >>> m = fabric.nn.Linear(2, 2)
            >>> m.compile()
            >>> m(fabric.ones(1, 2)).shape
            fabric.Size([1, 2])
        """
        from ..._dynamo import compile as _compile

        self._compiled_call_impl = _compile(type(self).forward.__get__(self), *args, **kwargs)
        self.__dict__["forward"] = self._compiled_call_impl

    # --- repr -------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """Module-specific text inside the parentheses of ``repr``."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def _repr_html_(self) -> str:
        """Notebook display: the module tree, folded below the top level, with parameter counts."""
        return _module_html(self)
