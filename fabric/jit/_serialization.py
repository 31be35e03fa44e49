"""``fabric.jit.save`` / ``fabric.jit.load``: a scripted or traced model as data.

The archive is a zip file::

    fabric_jit/version          "1"
    fabric_jit/model.json       the graph(s) as JSON: nodes, their targets by name, nested
                                control-flow sub-graphs, the module tree, argument types
    fabric_jit/tensors/N.npy    parameters, buffers and tensor constants (NumPy .npy, no pickle)
    fabric_jit/extra/NAME       ``_extra_files``

No Python code and no pickle is stored.  Loading rebuilds the graph and
resolves every target through an allow-list: fabric's op modules
(``fabric.ops.*``, ``fabric.nn.functional``, ``fabric.special``, creation
and random ops), ``operator``, ``math``, a few pure builtins, the
control-flow ops and ``fabric.jit``'s runtime helpers; tensor methods by
public name; ``getattr`` only for tensor facts (``shape``, ``dtype`` ...).
Anything else is refused with an error naming it, so loading runs nothing
but fabric's own ops, and works where the model's Python class does not
exist.  A file of another format version is refused with a clear error.

Example::

    >>> import io, fabric
    >>> m = fabric.jit.script(fabric.nn.Linear(2, 2))
    >>> buf = io.BytesIO(); fabric.jit.save(m, buf); _ = buf.seek(0)
    >>> m2 = fabric.jit.load(buf)
    >>> x = fabric.ones(1, 2)
    >>> bool((m2(x) == m(x)).all())
    True
"""
from __future__ import annotations

import builtins
import importlib
import inspect
import io
import json
import math
import os
import zipfile

import numpy as np

from .. import fx
from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from . import frontend

__all__ = ["save", "load"]

FORMAT_VERSION = 1
_PREFIX = "fabric_jit/"

_OP_MODULE_PREFIXES = ("fabric.ops.", "fabric.nn.functional", "fabric.special", "fabric.linalg", "fabric._creation",
                       "fabric._random_ops", "fabric._dtype", "fabric.fx.control_flow",
                       "fabric.jit._ops")
_NAMESPACES = ("fabric", "fabric.nn.functional", "fabric.linalg", "fabric.special", "fabric.fx.control_flow",
               "fabric.jit._ops", "operator", "math", "builtins")
_DENIED = {"set_default_device", "set_default_dtype", "set_float32_matmul_precision", "use_deterministic_algorithms",
           "compile", "from_dlpack", "to_dlpack", "frombuffer", "from_numpy", "from_file", "save", "load",
           "set_printoptions", "manual_seed", "seed", "set_rng_state", "install_torch_alias"}
_BUILTINS = {"len", "int", "float", "bool", "str", "abs", "min", "max", "round", "getattr", "print", "list", "tuple",
             "dict", "range", "slice", "sum", "any", "all", "isinstance"}
_GETATTR_NAMES = {"shape", "dtype", "device", "ndim", "T", "mT", "H", "mH", "data", "requires_grad", "is_cuda", "grad",
                  "real", "imag", "layout", "is_leaf", "values", "indices"}
_LIST_METHODS = {"append", "extend", "insert", "pop", "index", "count", "keys", "values", "items", "get", "copy",
                 "reverse"}


class _FormatError(RuntimeError):
    pass


# ---------------------------------------------------------------------------- targets

def _qualify(fn) -> list:
    """``[namespace, name]`` under which ``fn`` is reachable, or raise naming it."""
    name = getattr(fn, "__name__", None)
    if name is not None:
        for ns in _NAMESPACES:
            mod = importlib.import_module(ns)
            if getattr(mod, name, None) is fn and _allowed(ns, name, fn):
                return [ns, name]
        mod_name = getattr(fn, "__module__", None) or ""
        if mod_name.startswith(_OP_MODULE_PREFIXES) and not name.startswith("_"):
            try:
                mod = importlib.import_module(mod_name)
            except ImportError:
                mod = None
            if mod is not None and getattr(mod, name, None) is fn:
                return [mod_name, name]
    label = getattr(fn, "__qualname__", None) or repr(fn)
    raise RuntimeError(f"Could not export Python function call '{label}'. Remove calls to Python functions before "
                       "export (functions marked @fabric.jit.ignore cannot be saved; only fabric's ops can).")


def _allowed(ns: str, name: str, obj) -> bool:
    if name.startswith("_") or name in _DENIED or not callable(obj) or isinstance(obj, type) and ns != "builtins":
        return False
    if ns == "builtins":
        return name in _BUILTINS and getattr(builtins, name) is obj
    if ns in ("operator", "math"):
        return True
    if ns in ("fabric.fx.control_flow", "fabric.jit._ops"):
        return True
    mod = getattr(obj, "__module__", None) or ""
    return mod.startswith(_OP_MODULE_PREFIXES) or mod == "fabric"


def _resolve(spec) -> object:
    if not (isinstance(spec, list) and len(spec) == 2 and all(isinstance(s, str) for s in spec)):
        raise _FormatError(f"bad call target {spec!r}")
    ns, name = spec
    known = ns in _NAMESPACES or (ns.startswith(_OP_MODULE_PREFIXES) and all(p.isidentifier() for p in ns.split(".")))
    if not known:
        raise _FormatError(f"the file calls '{ns}.{name}', which is not one of fabric's ops")
    mod = importlib.import_module(ns)
    obj = getattr(mod, name, None)
    if obj is None or not _allowed(ns, name, obj):
        raise _FormatError(f"the file calls '{ns}.{name}', which is not one of fabric's ops")
    return obj


def _check_method(name) -> str:
    if not isinstance(name, str) or name.startswith("_") or not (hasattr(Tensor, name) or name in _LIST_METHODS):
        raise _FormatError(f"the file calls method {name!r}, which is not a public Tensor method")
    if name in ("register_hook", "register_post_accumulate_grad_hook", "apply_", "map_", "map2_", "numpy",
                "__reduce_ex__", "share_memory_"):
        raise _FormatError(f"the file calls method {name!r}, which a saved graph may not use")
    return name


# ---------------------------------------------------------------------------- encoding

class _Encoder:
    def __init__(self):
        self.tensors: list = []
        self.tensor_ids: dict = {}

    def tensor(self, t: Tensor) -> int:
        key = id(t)
        if key not in self.tensor_ids:
            self.tensor_ids[key] = len(self.tensors)
            self.tensors.append(t)
        return self.tensor_ids[key]

    def value(self, v):
        import fabric

        if isinstance(v, fx.Node):
            return {"node": v.name}
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return {"tuple": [self.value(x) for x in v]}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {"dict": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"slice": [self.value(v.start), self.value(v.stop), self.value(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": True}
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, fabric.dtype):
            return {"dtype": str(v).replace("fabric.", "")}
        if isinstance(v, fabric.device):
            return {"device": str(v)}
        if isinstance(v, Tensor):
            return {"tensor": self.tensor(v)}
        name = getattr(v, "__name__", None) or repr(v)
        raise RuntimeError(f"Could not save a graph argument of type {type(v).__name__} ({name}); only numbers, "
                           "strings, tensors, dtypes, devices and containers of those can be saved")

    def graph(self, gm) -> dict:
        nodes = []
        subgraphs = {}
        for node in gm.graph.nodes:
            entry = {"name": node.name, "op": node.op}
            if node.op == "call_function":
                entry["target"] = _qualify(node.target)
            elif node.op == "call_module":
                raise RuntimeError(f"Could not save node {node.name}: calls to submodules (call_module "
                                   f"'{node.target}') are not supported in saved graphs; script or trace through it")
            else:
                entry["target"] = node.target
            if node.op == "get_attr":
                obj = _fetch(gm, node.target)
                if isinstance(obj, fx.GraphModule) and node.target not in subgraphs:
                    subgraphs[node.target] = self.graph(obj)
                elif isinstance(obj, Tensor) and not _in_tree(gm, node.target):
                    entry["constant"] = self.tensor(obj)
            entry["args"] = self.value(tuple(node.args))
            entry["kwargs"] = self.value(dict(node.kwargs))
            nodes.append(entry)
        return {"nodes": nodes, "subgraphs": subgraphs}

    def tree(self, m: Module) -> dict:
        from ..nn import ModuleDict, ModuleList, Sequential

        out = {"training": bool(m.training), "params": {}, "buffers": {}, "children": {}}
        if type(m) in (ModuleList, Sequential, ModuleDict):
            out["container"] = type(m).__name__
        for name, p in m._parameters.items():
            out["params"][name] = None if p is None else [self.tensor(p), bool(p.requires_grad)]
        non_persistent = getattr(m, "_non_persistent_buffers_set", set())
        for name, b in m._buffers.items():
            out["buffers"][name] = None if b is None else [self.tensor(b), name not in non_persistent]
        for name, child in m._modules.items():
            if child is None or isinstance(child, fx.GraphModule):
                continue
            out["children"][name] = self.tree(child)
        return out


def _fetch(root, target: str):
    obj = root
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _in_tree(gm, target: str) -> bool:
    *path, field = target.split(".")
    m = gm
    for atom in path:
        m = m._modules.get(atom) if isinstance(m, Module) else None
        if m is None:
            return False
    return field in m._parameters or field in m._buffers


def _signature_json(sig) -> list | None:
    if sig is None:
        return None
    out = []
    enc = _Encoder()
    for name, jt, default in sig.items:
        d = None if default is inspect.Parameter.empty else {"default": enc.value(default)}
        out.append([name, str(jt), d])
    return out


def save(m, f, _extra_files=None) -> None:
    """Write a ScriptModule / ScriptFunction (from ``script`` or ``trace``) to ``f`` (a path or a
    binary file object).

    Example::

        >>> import io, fabric
        >>> buf = io.BytesIO()
        >>> fabric.jit.save(fabric.jit.trace(fabric.nn.ReLU(), fabric.ones(2)), buf)
    """
    from ._script import ScriptFunction, ScriptModule

    enc = _Encoder()
    if isinstance(m, ScriptModule):
        doc = {"kind": "module", "name": m.original_name, "graph": enc.graph(m), "tree": enc.tree(m),
               "signature": _signature_json(m.__dict__.get("_signature")),
               "methods": {name: {"graph": enc.graph(meth._gm), "signature": _signature_json(meth._signature)}
                           for name, meth in m.__dict__.get("_methods", {}).items()}}
    elif isinstance(m, ScriptFunction):
        doc = {"kind": "function", "name": m.__name__, "graph": enc.graph(m._gm), "tree": enc.tree(m._gm),
               "signature": _signature_json(m._signature), "methods": {}}
    else:
        raise TypeError(f"fabric.jit.save expects a ScriptModule or ScriptFunction (from fabric.jit.script or "
                        f"fabric.jit.trace), got {type(m).__name__}")
    doc["format"] = "fabric.jit"
    doc["version"] = FORMAT_VERSION
    doc["tensors"] = []
    arrays = []
    for t in enc.tensors:
        arr = t.detach().cpu().numpy()
        if arr.dtype == object:
            raise RuntimeError("cannot save a tensor of dtype object")
        doc["tensors"].append({"dtype": str(t.dtype).replace("fabric.", ""), "shape": list(t.shape)})
        arrays.append(arr)
    payload = json.dumps(doc, allow_nan=False).encode()

    def write(fh):
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(_PREFIX + "version", str(FORMAT_VERSION))
            z.writestr(_PREFIX + "model.json", payload)
            for i, arr in enumerate(arrays):
                buf = io.BytesIO()
                np.save(buf, arr if arr.flags.c_contiguous else arr.copy(order="C"), allow_pickle=False)
                z.writestr(f"{_PREFIX}tensors/{i}.npy", buf.getvalue())
            for name, data in (_extra_files or {}).items():
                z.writestr(_PREFIX + "extra/" + name, data if isinstance(data, bytes) else str(data).encode())

    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    else:
        write(f)


# ---------------------------------------------------------------------------- decoding

class _Decoder:
    def __init__(self, tensors: list):
        self.tensors = tensors

    def value(self, v, nodes: dict):
        import fabric

        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.value(x, nodes) for x in v]
        if not isinstance(v, dict) or len(v) != 1:
            raise _FormatError(f"bad graph argument {v!r}")
        (key, x), = v.items()
        if key == "node":
            if x not in nodes:
                raise _FormatError(f"argument refers to unknown node {x!r}")
            return nodes[x]
        if key == "tuple":
            return tuple(self.value(e, nodes) for e in _list(x))
        if key == "dict":
            return {self.value(k, nodes): self.value(e, nodes) for k, e in (_pair(p) for p in _list(x))}
        if key == "slice":
            parts = _list(x)
            if len(parts) != 3:
                raise _FormatError("bad slice")
            return slice(*(self.value(e, nodes) for e in parts))
        if key == "ellipsis":
            return Ellipsis
        if key == "float":
            if x not in ("inf", "-inf", "nan"):
                raise _FormatError(f"bad float {x!r}")
            return float(x)
        if key == "complex":
            re_, im = _list(x)
            return complex(float(re_), float(im))
        if key == "dtype":
            dt = getattr(fabric, str(x), None)
            if not isinstance(dt, fabric.dtype):
                raise _FormatError(f"unknown dtype {x!r}")
            return dt
        if key == "device":
            return fabric.device(str(x))
        if key == "tensor":
            return self.tensor(x)
        raise _FormatError(f"bad graph argument {v!r}")

    def tensor(self, i):
        if not isinstance(i, int) or not 0 <= i < len(self.tensors):
            raise _FormatError(f"tensor index {i!r} out of range")
        return self.tensors[i]

    def graph(self, doc: dict, root: Module):
        """Rebuild a graph; control-flow sub-graphs become GraphModules registered on ``root``."""
        if not isinstance(doc, dict):
            raise _FormatError("bad graph")
        graph = fx.Graph()
        nodes: dict = {}
        subgraphs = doc.get("subgraphs", {})
        if not isinstance(subgraphs, dict):
            raise _FormatError("bad subgraphs")
        for name, sub in subgraphs.items():
            if not isinstance(name, str) or not all(a.isidentifier() or a.isdigit() for a in name.split(".")) \
                    or "__" in name:
                raise _FormatError(f"bad sub-graph name {name!r}")
            holder = Module()
            sub_graph = self.graph(sub, holder)
            *path, field = name.split(".")
            owner = root
            for atom in path:           # a graph of an inlined scripted child lives under its path
                nxt = owner._modules.get(atom)
                if nxt is None:
                    nxt = owner._modules[atom] = Module()
                owner = nxt
            owner._modules[field] = _graph_module(holder, sub_graph, field)
        for entry in _list(doc.get("nodes")):
            if not isinstance(entry, dict):
                raise _FormatError("bad node")
            op, name = entry.get("op"), entry.get("name")
            if not isinstance(name, str):
                raise _FormatError("bad node name")
            args = self.value(entry.get("args", {"tuple": []}), nodes)
            kwargs = self.value(entry.get("kwargs", {"dict": []}), nodes)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict) \
                    or not all(isinstance(k, str) for k in kwargs):
                raise _FormatError(f"bad arguments of node {name}")
            target = entry.get("target")
            if op == "call_function":
                target = _resolve(target)
                if target is getattr and (len(args) != 2 or args[1] not in _GETATTR_NAMES):
                    raise _FormatError(f"node {name} reads attribute {args[1:]!r}, which a saved graph may not read")
            elif op == "call_method":
                target = _check_method(target)
            elif op in ("placeholder", "output"):
                if not isinstance(target, str):
                    raise _FormatError("bad target")
            elif op == "get_attr":
                if not isinstance(target, str) or not all((a.isidentifier() or a.isdigit()) and not a.startswith("__")
                                                          for a in target.split(".")):
                    raise _FormatError(f"bad attribute path {target!r}")
                if "constant" in entry:
                    _set_constant(root, target, self.tensor(entry["constant"]))
            else:
                raise _FormatError(f"node kind {op!r} cannot be loaded")
            nodes[name] = graph.create_node(op, target, args, kwargs, name=name)
        return graph


def _graph_module(holder: Module, graph, name: str):
    return fx.GraphModule(holder, graph, class_name=name)


def _set_constant(root: Module, target: str, t: Tensor):
    *path, field = target.split(".")
    m = root
    for atom in path:
        nxt = m._modules.get(atom)
        if nxt is None:
            nxt = Module()
            m._modules[atom] = nxt
        m = nxt
    m.register_buffer(field, t, persistent=False)


def _list(x) -> list:
    if not isinstance(x, list):
        raise _FormatError("expected a list")
    return x


def _pair(p):
    if not isinstance(p, list) or len(p) != 2:
        raise _FormatError("expected a pair")
    return p


def _build_tree(doc: dict, dec: _Decoder) -> Module:
    if not isinstance(doc, dict):
        raise _FormatError("bad module tree")
    from ..nn import ModuleDict, ModuleList, Sequential

    kinds = {"ModuleList": ModuleList, "Sequential": Sequential, "ModuleDict": ModuleDict}
    container = doc.get("container")
    if container is not None and container not in kinds:
        raise _FormatError(f"unknown container {container!r}")
    m = kinds[container]() if container is not None else Module()
    m.training = bool(doc.get("training", True))
    for name, spec in doc.get("params", {}).items():
        _check_name(name)
        if spec is None:
            m._parameters[name] = None
            continue
        idx, requires_grad = spec
        t = dec.tensor(idx)
        if not isinstance(t, Parameter):
            p = Parameter(t, requires_grad=bool(requires_grad))
            dec.tensors[idx] = p       # a tied weight loads as one Parameter
            t = p
        m._parameters[name] = t
    for name, spec in doc.get("buffers", {}).items():
        _check_name(name)
        if spec is None:
            m._buffers[name] = None
            continue
        idx, persistent = spec
        m.register_buffer(name, dec.tensor(idx), persistent=bool(persistent))
    for name, child in doc.get("children", {}).items():
        _check_name(name)
        m._modules[name] = _build_tree(child, dec)
    return m


def _check_name(name):
    if not isinstance(name, str) or not name.isidentifier() and not name.isdigit() or name.startswith("__"):
        raise _FormatError(f"bad attribute name {name!r}")


def _signature(doc, name):
    from ._script import _Signature

    if doc is None:
        return None
    items = []
    for entry in _list(doc):
        pname, type_text, default = entry
        jt = _parse_type(type_text)
        d = inspect.Parameter.empty if default is None else _Decoder([]).value(default["default"], {})
        items.append((pname, jt, d))
    return _Signature(name, items)


def _parse_type(text: str):
    """Parse ``Optional[List[int]]``-style type text without evaluating it."""
    if not isinstance(text, str) or len(text) > 500:
        raise _FormatError("bad type")
    pos = 0

    def parse():
        nonlocal pos
        start = pos
        while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
            pos += 1
        kind = text[start:pos]
        params = []
        if pos < len(text) and text[pos] == "[":
            pos += 1
            while True:
                if text[pos] == "]":
                    break
                params.append(parse())
                if text[pos] == ",":
                    pos += 2 if text[pos + 1:pos + 2] == " " else 1
                    continue
                break
            if text[pos] != "]":
                raise _FormatError(f"bad type {text!r}")
            pos += 1
        if kind not in ("Tensor", "int", "float", "bool", "str", "NoneType", "Any", "Optional", "List", "Tuple",
                        "Dict"):
            raise _FormatError(f"unknown type {kind!r}")
        return frontend.JitType(kind, tuple(params))

    try:
        jt = parse()
    except IndexError:
        raise _FormatError(f"bad type {text!r}") from None
    if pos != len(text):
        raise _FormatError(f"bad type {text!r}")
    return jt


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Load a module or function written by :func:`save`; runs without the model's Python class.

    ``map_location`` moves the tensors to a device; ``_extra_files`` (a dict of names) is
    filled with the stored extra files.

    Example::

        >>> import io, fabric
        >>> buf = io.BytesIO()
        >>> fabric.jit.save(fabric.jit.script(fabric.nn.Tanh()), buf); _ = buf.seek(0)
        >>> fabric.jit.load(buf)(fabric.zeros(1))
        tensor([0.])
    """
    import fabric

    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {os.fspath(f)} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {os.fspath(f)} is a directory")
        size = os.path.getsize(f)
        fh = open(f, "rb")  # noqa: SIM115  (closed in the finally below)
    else:
        fh = f
        pos = fh.tell()
        fh.seek(0, os.SEEK_END)
        size = fh.tell() - pos
        fh.seek(pos)
    try:
        try:
            z = zipfile.ZipFile(fh)
        except zipfile.BadZipFile:
            raise RuntimeError("fabric.jit.load: the file is not a fabric.jit archive (not a zip file); files "
                               "written by fabric.save are read with fabric.load") from None
        with z:
            infos = {i.filename: i for i in z.infolist()}
            if sum(i.file_size for i in infos.values()) > 64 * max(size, 1) + (1 << 20):
                raise RuntimeError("fabric.jit.load: the archive expands to far more than its size; refusing it")
            if _PREFIX + "version" not in infos:
                raise RuntimeError("fabric.jit.load: the file is not a fabric.jit archive (no fabric_jit/version "
                                   "record); TorchScript files written by PyTorch cannot be loaded by fabric")
            version = z.read(_PREFIX + "version").decode("ascii", "replace").strip()
            if version != str(FORMAT_VERSION):
                raise RuntimeError(f"fabric.jit.load: the file has fabric.jit format version {version!r}, but this "
                                   f"fabric reads version {FORMAT_VERSION}; re-save the model with a matching "
                                   "fabric version")
            try:
                doc = json.loads(z.read(_PREFIX + "model.json"))
            except (ValueError, RecursionError) as e:
                raise RuntimeError(f"fabric.jit.load: model.json is corrupt ({e})") from None
            if not isinstance(doc, dict) or doc.get("format") != "fabric.jit" or doc.get("version") != FORMAT_VERSION:
                raise RuntimeError("fabric.jit.load: model.json does not describe a fabric.jit model of format "
                                   f"version {FORMAT_VERSION}")
            tensors = []
            device = fabric.device(map_location) if isinstance(map_location, str) else map_location
            for i, meta in enumerate(_list(doc.get("tensors", []))):
                name = f"{_PREFIX}tensors/{i}.npy"
                if name not in infos:
                    raise RuntimeError(f"fabric.jit.load: missing tensor record {name}")
                try:
                    arr = np.load(io.BytesIO(z.read(name)), allow_pickle=False)
                except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
                    raise RuntimeError(f"fabric.jit.load: tensor record {name} is corrupt ({e})") from None
                if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
                    raise RuntimeError(f"fabric.jit.load: tensor record {name} is not a plain array")
                if list(arr.shape) != list(meta.get("shape", [])):
                    raise RuntimeError(f"fabric.jit.load: tensor {i} has shape {arr.shape}, the index says "
                                       f"{meta.get('shape')}")
                t = fabric.from_numpy(arr.copy())
                if device is not None:
                    t = t.to(device)
                tensors.append(t)
            if _extra_files is not None:
                for key in list(_extra_files):
                    member = _PREFIX + "extra/" + key
                    if member in infos:
                        _extra_files[key] = z.read(member)
            try:
                return _rebuild(doc, tensors)
            except _FormatError as e:
                raise RuntimeError(f"fabric.jit.load: {e}") from None
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
                raise RuntimeError(f"fabric.jit.load: the model description is corrupt ({type(e).__name__}: "
                                   f"{e})") from None
    finally:
        if isinstance(f, (str, os.PathLike)):
            fh.close()


def _rebuild(doc: dict, tensors: list):
    from ._script import ScriptFunction, ScriptModule, _ScriptMethod

    dec = _Decoder(tensors)
    tree = _build_tree(doc["tree"], dec)
    name = doc.get("name", "loaded")
    if not isinstance(name, str) or not name.isidentifier():
        name = "loaded"
    graph = dec.graph(doc["graph"], tree)
    if doc["kind"] == "function":
        gm = fx.GraphModule(tree, graph, class_name=name)
        return ScriptFunction(gm, _signature(doc.get("signature"), name), original=None, name=name)
    if doc["kind"] != "module":
        raise _FormatError(f"unknown kind {doc['kind']!r}")
    sm = ScriptModule(tree, graph, name, _signature(doc.get("signature"), "forward"))
    methods = {}
    for mname, mdoc in doc.get("methods", {}).items():
        _check_name(mname)
        holder = Module()
        holder._modules.update(sm._modules)
        holder._parameters.update(sm._parameters)
        holder._buffers.update(sm._buffers)
        mgraph = dec.graph(mdoc["graph"], holder)
        mgm = fx.GraphModule(holder, mgraph, class_name=f"{name}_{mname}")
        methods[mname] = _ScriptMethod(sm, mgm, _signature(mdoc.get("signature"), mname), mname)
    object.__setattr__(sm, "_methods", methods)
    return sm
