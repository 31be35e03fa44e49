"""The ``weights_only`` unpickler: a small pickle machine that cannot run code.

It implements only the opcodes PyTorch's weights-only unpickler implements,
with the same rules, so a file is accepted or refused exactly as
``torch.load(..., weights_only=True)`` would (the torch-marked suite fuzzes
both opcode by opcode):

* ``GLOBAL`` resolves only allow-listed names (:mod:`._allowlist`); anything
  else raises ``UnpicklingError`` with PyTorch's message.
* ``REDUCE`` / ``NEWOBJ`` call only allow-listed callables / classes.
* ``BUILD`` sets state only on objects the load itself created: tensors,
  parameters, ``OrderedDict`` and instances of allow-listed classes, never on
  a class, a dtype, a storage type or another shared object.
* ``APPEND*`` only on lists, ``SETITEM*`` only on dicts.
* every other opcode (``EXT1`` ... ``INST``, ``OBJ``, ``STACK_GLOBAL``,
  protocol 4/5 framing) is refused with ``UnpicklingError``.

Example::

    >>> import io, pickle
    >>> from fabric.serialization._unpickler import WeightsUnpickler
    >>> WeightsUnpickler(io.BytesIO(pickle.dumps({"a": [1, 2.5]}, protocol=2))).load()
    {'a': [1, 2.5]}
"""
from __future__ import annotations

import collections
import pickle
import warnings
from struct import unpack
from sys import maxsize

from .._device import device as _device_cls
from .._tensor import Tensor
from . import _allowlist as A
from . import _rebuild as R

UnpicklingError = pickle.UnpicklingError

_LOADER_SPECIFIC = {
    "torch.nested._internal.nested_tensor.NestedTensor": "nested", "torch._dynamo.decorators._DimRange": "nested",
    "torch.nested._internal.nested_tensor._rebuild_njt": "nested",
}
_DTENSOR = ("torch.distributed.device_mesh.DeviceMesh", "torch.distributed.tensor._dtensor_spec.DTensorSpec",
            "torch.distributed.tensor._dtensor_spec.TensorMeta", "torch.distributed.tensor.DTensor",
            "torch.distributed.tensor.placement_types.Partial", "torch.distributed.tensor.placement_types.Replicate",
            "torch.distributed.tensor.placement_types.Shard")


def read_global_name(readline):
    """``(module, name)`` of a GLOBAL opcode, with Python 2 names renamed."""
    module = readline()[:-1].decode("utf-8")
    name = readline()[:-1].decode("utf-8")
    if (module, name) in A.NAME_MAPPING:
        module, name = A.NAME_MAPPING[(module, name)]
    elif module in A.IMPORT_MAPPING:
        module = A.IMPORT_MAPPING[module]
    return module, name


def _tensor_set_state(t, state):
    """``Tensor.__setstate__``: a legacy 4-tuple ``(storage, offset, size, stride)`` or Variable state."""
    if t.grad_fn is not None:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:
        _tensor_set(t, *state)
        return
    if len(state) == 5:
        if not isinstance(state[0], Tensor):
            raise TypeError(f"data must be a Tensor, not {type(state[0]).__name__}")
        t._data = state[0]._data
        state = (state[3], state[4], state[2])
    requires_grad, _, _hooks = state
    t.requires_grad = requires_grad


def _tensor_set(t, storage=None, offset=0, size=None, stride=None):
    """``Tensor.set_(storage, offset, size, stride)`` on a tensor the load created."""
    if not isinstance(storage, R.LoadedStorage) or size is None:
        raise TypeError("set_() received an invalid combination of arguments")
    if stride is None:
        stride, acc = [], 1
        for s in reversed(tuple(size)):
            stride.insert(0, acc)
            acc *= max(int(s), 1)
    t._data = R._view(storage, offset, size, stride)


class WeightsUnpickler:
    """Unpickle with PyTorch's ``weights_only`` rules.

    ``persistent_load(pid)`` resolves storage references (the checkpoint's
    ``data/<key>`` records); without it any persistent id is refused.
    """

    def __init__(self, file, *, encoding: str = "bytes", persistent_load=None, max_alloc: int | None = None):
        self.encoding = encoding
        # the most bytes one call from the file may ask to allocate (the checkpoint's size; None: no limit)
        self.max_alloc = max_alloc
        self.read = file.read
        self.readline = file.readline
        self.memo: dict = {}
        self.proto = -1
        if persistent_load is not None:
            self.persistent_load = persistent_load
        self._allowed = A.default_globals()
        self._user = A.user_globals()
        # identities of everything REDUCE / NEWOBJ / BUILD may use (the dicts keep the objects alive)
        self._allowed_ids = {id(v) for v in self._allowed.values()} | {id(v) for v in self._user.values()}

    def persistent_load(self, pid):
        raise UnpicklingError("unsupported persistent id encountered")

    def load(self):
        self.metastack: list = []
        self.stack: list = []
        read = self.read
        dispatch = self._dispatch
        while True:
            key = read(1)
            if not key:
                raise EOFError
            op = dispatch.get(key[0])
            if op is None:
                raise UnpicklingError(f"Unsupported operand {key[0]}")
            if op is WeightsUnpickler._stop:
                return self.stack.pop()
            op(self)

    # --- stack helpers --------------------------------------------------------
    def _pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _is_allowed(self, obj):
        return id(obj) in self._allowed_ids

    # --- risky opcodes ----------------------------------------------------------
    def _global(self):
        module, name = read_global_name(self.readline)
        full_path = f"{module}.{name}"
        if module in A.BLOCKED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
        if full_path in self._allowed:
            self.stack.append(self._allowed[full_path])
            return
        if full_path in self._user:
            self.stack.append(self._user[full_path])
            return
        if full_path in _LOADER_SPECIFIC:
            raise UnpicklingError("``torch.nested`` and ``torch._dynamo`` must be imported to load nested jagged "
                                  "tensors (NJTs)")
        if full_path in _DTENSOR:
            raise UnpicklingError("``torch.distributed.tensor`` must be imported to load DTensors")
        if full_path.startswith("builtins"):
            rest = full_path[len("builtins"):]
            full_path = rest[1:] if rest.startswith(".") else "builtins" + rest
        raise UnpicklingError(
            f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
            f"Please use `torch.serialization.add_safe_globals([{full_path}])` or the "
            f"`torch.serialization.safe_globals([{full_path}])` context manager to allowlist this global "
            "if you trust this class/function.")

    def _newobj(self):
        from ..nn.parameter import Parameter

        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is Parameter:
            self.stack.append(Parameter(*args))
        elif cls is Tensor:  # PyTorch's Tensor.__new__ validates its arguments like the constructor
            self._check_alloc(cls, args)
            self.stack.append(Tensor(*args))
        elif self._is_allowed(cls):
            self.stack.append(cls.__new__(cls, *args))
        else:
            raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                  f"via `add_safe_globals` but got {cls}")

    def _reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._is_allowed(func):
            msg = f"Trying to call reduce for unrecognized function {func}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__}"
            raise UnpicklingError(msg)
        self._check_alloc(func, args)
        self.stack[-1] = func(*args)

    def _check_alloc(self, func, args):
        """``bytearray(n)`` / ``Tensor(n, m)`` from a few bytes of pickle: the size must fit in the file."""
        if self.max_alloc is None or (func is not bytearray and func is not Tensor):
            return
        if not isinstance(args, tuple) or not args or not all(type(a) is int for a in args):
            return
        n = 1
        for a in args:
            n *= max(a, 0)
        itemsize = 1 if func is bytearray else 8
        if n * itemsize > self.max_alloc:
            raise UnpicklingError(f"the pickle asks {func.__name__}{args} to allocate {n * itemsize} bytes, more than "
                                  f"the {self.max_alloc}-byte checkpoint holds")

    def _build(self):
        from ..nn.parameter import Parameter

        state = self.stack.pop()
        inst = self.stack[-1]
        t = type(inst)
        if t is Tensor:
            _tensor_set(inst, *state)
        elif t is Parameter:
            _tensor_set_state(inst, state)
        elif t is collections.OrderedDict:
            inst.__dict__.update(state)
        elif self._is_allowed(t):
            if t is _device_cls:  # a shared, immutable object (PyTorch's is a C type)
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                    if slots:
                        k = next(iter(slots))
                        raise AttributeError(f"attribute '{k}' of 'torch.device' objects is not writable")
                if state:
                    raise AttributeError("'torch.device' object has no attribute '__dict__'")
            elif hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
            else:
                slots = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state:
                    inst.__dict__.update(state)
                if slots:
                    for k, v in slots.items():
                        setattr(inst, k, v)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                  f"via `add_safe_globals`, but got {t}")

    def _binpersid(self):
        pid = self.stack.pop()
        if type(pid) is not tuple and type(pid) is not int:
            raise UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if type(pid) is tuple and len(pid) > 0:
            tag = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
            if tag != "storage":
                raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
        self.stack.append(self.persistent_load(pid))

    # --- containers ----------------------------------------------------------------
    def _append(self):
        item = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.append(item)

    def _appends(self):
        items = self._pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def _check_setitem_target(self, opcode):
        if type(self.stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                  f"collections.Counter, but got {type(self.stack[-1])}")

    def _setitem(self):
        value, key = self.stack.pop(), self.stack.pop()
        self._check_setitem_target("SETITEM")
        self.stack[-1][key] = value

    def _setitems(self):
        items = self._pop_mark()
        self._check_setitem_target("SETITEMS")
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def _tuple(self):
        items = self._pop_mark()
        self.stack.append(tuple(items))

    def _tuple1(self):
        self.stack[-1] = (self.stack[-1],)

    def _tuple2(self):
        self.stack[-2:] = [(self.stack[-2], self.stack[-1])]

    def _tuple3(self):
        self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]

    # --- constants ----------------------------------------------------------------------
    def _none(self):
        self.stack.append(None)

    def _false(self):
        self.stack.append(False)

    def _true(self):
        self.stack.append(True)

    def _empty_tuple(self):
        self.stack.append(())

    def _empty_list(self):
        self.stack.append([])

    def _empty_dict(self):
        self.stack.append({})

    def _empty_set(self):
        self.stack.append(set())

    def _binint(self):
        self.stack.append(unpack("<i", self.read(4))[0])

    def _binint1(self):
        self.stack.append(self.read(1)[0])

    def _binint2(self):
        self.stack.append(unpack("<H", self.read(2))[0])

    def _binfloat(self):
        self.stack.append(unpack(">d", self.read(8))[0])

    def _binunicode(self):
        n = unpack("<I", self.read(4))[0]
        if n > maxsize:
            raise UnpicklingError("String is too long")
        self.stack.append(str(self.read(n), "utf-8", "surrogatepass"))

    def _short_binstring(self):
        n = self.read(1)[0]
        data = self.read(n)
        if self.encoding != "bytes":
            data = data.decode(self.encoding, "strict")
        self.stack.append(data)

    def _long1(self):
        n = self.read(1)[0]
        self.stack.append(pickle.decode_long(self.read(n)))

    # --- memo -------------------------------------------------------------------------------
    def _binget(self):
        self.stack.append(self.memo[self.read(1)[0]])

    def _long_binget(self):
        self.stack.append(self.memo[unpack("<I", self.read(4))[0]])

    def _binput(self):
        index = self.read(1)[0]  # read before touching the stack: the error order is PyTorch's
        self.memo[index] = self.stack[-1]

    def _long_binput(self):
        index = unpack("<I", self.read(4))[0]
        self.memo[index] = self.stack[-1]

    # --- first and last ----------------------------------------------------------------------
    def _proto(self):
        self.proto = self.read(1)[0]
        if self.proto != 2:
            warnings.warn(f"Detected pickle protocol {self.proto} in the checkpoint, which was not the default "
                          "pickle protocol used by `torch.load` (2). The weights_only Unpickler might not support "
                          "all instructions implemented by this protocol.", stacklevel=3)

    def _stop(self):  # handled in load(); listed so that STOP is a known opcode
        raise AssertionError("unreachable")

    _dispatch = {
        pickle.GLOBAL[0]: _global, pickle.NEWOBJ[0]: _newobj, pickle.REDUCE[0]: _reduce, pickle.BUILD[0]: _build,
        pickle.BINPERSID[0]: _binpersid, pickle.APPEND[0]: _append, pickle.APPENDS[0]: _appends,
        pickle.SETITEM[0]: _setitem, pickle.SETITEMS[0]: _setitems, pickle.MARK[0]: _mark,
        pickle.TUPLE[0]: _tuple, pickle.TUPLE1[0]: _tuple1, pickle.TUPLE2[0]: _tuple2, pickle.TUPLE3[0]: _tuple3,
        pickle.NONE[0]: _none, pickle.NEWFALSE[0]: _false, pickle.NEWTRUE[0]: _true,
        pickle.EMPTY_TUPLE[0]: _empty_tuple, pickle.EMPTY_LIST[0]: _empty_list, pickle.EMPTY_DICT[0]: _empty_dict,
        pickle.EMPTY_SET[0]: _empty_set, pickle.BININT[0]: _binint, pickle.BININT1[0]: _binint1,
        pickle.BININT2[0]: _binint2, pickle.BINFLOAT[0]: _binfloat, pickle.BINUNICODE[0]: _binunicode,
        pickle.SHORT_BINSTRING[0]: _short_binstring, pickle.LONG1[0]: _long1, pickle.BINGET[0]: _binget,
        pickle.LONG_BINGET[0]: _long_binget, pickle.BINPUT[0]: _binput, pickle.LONG_BINPUT[0]: _long_binput,
        pickle.PROTO[0]: _proto, pickle.STOP[0]: _stop,
    }


def weights_only_message(message: str) -> str:
    """The text ``torch.load`` wraps a weights-only refusal in."""
    docs = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
            "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
    import re

    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
                + message + docs)
    if re.search(r"(\S+) must be (\S+) to load", message):
        return f"Weights only load failed. {message}\n {UNSAFE_MESSAGE}\n"
    out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        out += ("Please file an issue with the following so that we can make `weights_only=True` compatible with "
                "your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + docs


UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source.")
