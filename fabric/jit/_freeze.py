"""``fabric.jit.freeze`` and ``optimize_for_inference``.

Freezing a ScriptModule in eval mode turns its parameters and buffers into
constants of the graph (the frozen module has an empty ``state_dict``),
replaces ``self.training`` by ``False``, folds what becomes constant
(``not False``, ``x is None`` on a constant ...) and inlines the taken
branch of every ``cond`` whose predicate became constant, recursively.
``optimize_for_inference`` freezes, then folds eval-mode batch norm into
the convolution before it and drops inference-mode dropout.

Example::

    >>> import fabric
    >>> m = fabric.nn.Sequential(fabric.nn.Linear(2, 2), fabric.nn.Dropout(0.1)).eval()
    >>> frozen = fabric.jit.freeze(fabric.jit.script(m))
    >>> list(frozen.state_dict())
    []
"""
from __future__ import annotations

import copy
import operator

from .. import fx
from .._tensor import Tensor
from ..nn.modules.module import Module
from . import _ops
from ._script import ScriptModule

__all__ = ["freeze", "optimize_for_inference", "run_frozen_optimizations"]

_FOLDABLE = {getattr(operator, n) for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos",
                                            "not_", "and_", "or_", "xor", "eq", "ne", "lt", "le", "gt", "ge",
                                            "is_", "is_not", "getitem", "truth", "invert")}
_FOLDABLE |= {_ops.is_none, _ops.is_not_none, bool, int, float, len, abs, min, max}
_IMPURE_FUNCTIONS = {operator.setitem, operator.delitem, operator.iadd, operator.isub, operator.imul,
                     operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                     operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
                     _ops.raise_exception, _ops.assert_, _ops.unused_called, print}
_IMPURE_METHODS = {"append", "extend", "insert", "pop", "clear", "remove", "update", "reverse", "sort"}


def _is_impure(node) -> bool:
    if node.op in ("placeholder", "output"):
        return True
    if node.op == "call_function":
        t = node.target
        if t in _IMPURE_FUNCTIONS or getattr(t, "_fx_impure", False):
            return True
        # control-flow bodies may mutate or raise
        return t in (fx.control_flow.cond, fx.control_flow.while_loop, fx.control_flow.range_loop)
    if node.op == "call_method":
        return node.target in _IMPURE_METHODS or (node.target.endswith("_") and not node.target.endswith("__"))
    return node.op == "call_module"


def _dce(graph) -> None:
    for node in reversed(list(graph.nodes)):
        if not node.users and not _is_impure(node):
            graph.erase_node(node)


def _has_node(v) -> bool:
    found = []
    fx.node.map_arg(v, lambda n: found.append(n))
    return bool(found)


def _replace_with_value(node, value) -> None:
    """Make every user of ``node`` read ``value`` (a Node or a Python constant) instead."""
    if isinstance(value, fx.Node):
        node.replace_all_uses_with(value)
        return
    for user in list(node.users):
        user.args = fx.node.map_arg(user.args, lambda n: value if n is node else n)
        user.kwargs = fx.node.map_arg(user.kwargs, lambda n: value if n is node else n)


def _fetch(obj, target: str):
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


class _Freezer:
    def __init__(self, preserved: set):
        self.preserved = preserved
        self.constants: dict = {}       # name -> tensor (root graph only)
        self.by_id: dict = {}

    def constant_name(self, t: Tensor) -> str:
        key = id(t)
        if key not in self.by_id:
            name = f"_frozen_param{len(self.by_id)}"
            self.by_id[key] = name
            self.constants[name] = t.detach()
        return self.by_id[key]

    def run(self, graph, source, owner: dict, is_root: bool) -> None:
        """Freeze ``graph`` (a copy we own); ``source`` resolves its get_attr targets; sub-GraphModules the
        result uses are put in ``owner``."""
        for node in list(graph.nodes):
            if node.op != "get_attr":
                continue
            obj = _fetch(source, node.target)
            if isinstance(obj, bool):
                _replace_with_value(node, obj)
                graph.erase_node(node)
            elif isinstance(obj, Tensor) and is_root and node.target not in self.preserved:
                node.target = self.constant_name(obj)
            elif isinstance(obj, fx.GraphModule):
                node.target = self._own(owner, obj, node.target)
            elif isinstance(obj, Tensor):
                owner[node.target] = obj
        changed = True
        while changed:
            changed = self._fold(graph) | self._inline_conds(graph, owner) | self._specialize(graph, owner)
        _dce(graph)
        used = {n.target for n in graph.nodes if n.op == "get_attr"}
        for name in [k for k in owner if k not in used and isinstance(owner[k], fx.GraphModule)]:
            del owner[name]

    @staticmethod
    def _own(owner: dict, gm, hint: str) -> str:
        base = hint.split(".")[-1].rstrip("0123456789").rstrip("_") or "graph"
        i = 0
        while f"{base}_{i}" in owner:
            i += 1
        owner[f"{base}_{i}"] = gm
        return f"{base}_{i}"

    def _fold(self, graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op == "call_function" and node.target in (_ops.is_none, _ops.is_not_none) \
                    and isinstance(node.args[0], fx.Node) and node.args[0].op == "get_attr":
                _replace_with_value(node, node.target is _ops.is_not_none)   # a frozen constant is never None
                graph.erase_node(node)
                changed = True
                continue
            if node.op == "call_function" and node.target in _FOLDABLE and not _has_node((node.args, node.kwargs)):
                try:
                    value = node.target(*node.args, **node.kwargs)
                except Exception:
                    continue  # leave it: the error is raised at run time, as before
                _replace_with_value(node, value)
                graph.erase_node(node)
                changed = True
        return changed

    def _inline_conds(self, graph, owner: dict) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target is not fx.control_flow.cond:
                continue
            pred, t_attr, f_attr, operands = node.args
            if isinstance(pred, fx.Node):
                continue
            if hasattr(pred, "numel"):
                continue  # a tensor constant predicate is still decided at run time
            chosen = owner[(t_attr if pred else f_attr).target]
            placeholders = [n for n in chosen.graph.nodes if n.op == "placeholder"]
            val_map = dict(zip(placeholders, operands))
            with graph.inserting_before(node):
                rv = graph.graph_copy(chosen.graph, val_map)
            for new in val_map.values():
                if isinstance(new, fx.Node) and new.op == "get_attr" and new.graph is graph \
                        and new.target in dict(chosen.named_children()):
                    new.target = self._own(owner, getattr(chosen, new.target), new.target)
            for user in list(node.users):
                if user.op == "call_function" and user.target is operator.getitem:
                    _replace_with_value(user, rv[user.args[1]])
                    graph.erase_node(user)
            if not node.users:
                graph.erase_node(node)
                for attr in (t_attr, f_attr):
                    if not attr.users:
                        graph.erase_node(attr)
            changed = True
        return changed

    def _specialize(self, graph, owner: dict) -> bool:
        """Push constant operands of a ``cond`` into both branches (and fold them there)."""
        changed = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target is not fx.control_flow.cond:
                continue
            pred, t_attr, f_attr, operands = node.args
            const = [i for i, v in enumerate(operands) if not isinstance(v, fx.Node)]
            if not const:
                continue
            new_attrs = []
            for attr in (t_attr, f_attr):
                gm = owner[attr.target]
                g = copy.deepcopy(gm.graph)
                phs = [n for n in g.nodes if n.op == "placeholder"]
                for i in const:
                    _replace_with_value(phs[i], operands[i])
                    g.erase_node(phs[i])
                sub_owner: dict = {}
                self.run(g, gm, sub_owner, is_root=False)
                new_gm = fx.GraphModule(sub_owner, g, class_name=type(gm).__name__)
                with graph.inserting_before(node):
                    new_attrs.append(graph.get_attr(self._own(owner, new_gm, attr.target)))
            keep = tuple(v for i, v in enumerate(operands) if i not in const)
            node.args = (pred, new_attrs[0], new_attrs[1], keep)
            for attr in (t_attr, f_attr):
                if not attr.users:
                    graph.erase_node(attr)
            changed = True
        return changed


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Inline an eval-mode ScriptModule's parameters and attributes as constants and fold the
    control flow that depends on them.

    Example::

        >>> import fabric
        >>> m = fabric.jit.script(fabric.nn.BatchNorm1d(3).eval())
        >>> f = fabric.jit.freeze(m)
        >>> x = fabric.randn(4, 3)
        >>> bool(fabric.allclose(f(x), m(x)))
        True
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    preserved = set(preserved_attrs or ())
    fr = _Freezer(preserved)
    graph = copy.deepcopy(mod.graph)
    owner: dict = {}
    fr.run(graph, mod, owner, is_root=True)
    tree = Module()
    used = {n.target for n in graph.nodes if n.op == "get_attr"}
    for name, t in fr.constants.items():
        if name in used:
            tree.register_buffer(name, t, persistent=False)
    for name, obj in owner.items():
        if isinstance(obj, fx.GraphModule):
            tree._modules[name] = obj
    for target in preserved:
        try:
            obj = _fetch(mod, target)
        except AttributeError:
            continue
        if isinstance(obj, Tensor):
            _put(tree, target, obj)
    frozen = ScriptModule(tree, graph, mod.original_name, mod.__dict__.get("_signature"))
    frozen.eval()
    methods = {k: v for k, v in mod.__dict__.get("_methods", {}).items() if k in preserved}
    object.__setattr__(frozen, "_methods", methods)
    object.__setattr__(frozen, "_frozen", True)
    if optimize_numerics:
        run_frozen_optimizations(frozen)
    return frozen


def _put(tree: Module, target: str, obj) -> None:
    *path, field = target.split(".")
    m = tree
    for atom in path:
        if atom not in m._modules:
            m._modules[atom] = Module()
        m = m._modules[atom]
    if isinstance(obj, Tensor) and type(obj).__name__ == "Parameter":
        m._parameters[field] = obj
    else:
        m.register_buffer(field, obj)


def _name(node) -> str:
    return getattr(node.target, "__name__", "") if node.op == "call_function" else ""


def _const(frozen, v):
    if isinstance(v, fx.Node) and v.op == "get_attr":
        obj = _fetch(frozen, v.target)
        return obj if isinstance(obj, Tensor) else None
    return v if v is None else None


_META_METHODS = {"dim", "size", "ndimension", "numel", "nelement"}
_META_ATTRS = {"shape", "ndim", "dtype", "device"}


def _reads_metadata_only(owner, user, value) -> bool:
    """Whether ``user`` reads only ``value``'s shape/dtype (so a value of equal shape may replace it)."""
    if user.op == "call_method" and user.target in _META_METHODS and user.args[0] is value:
        return True
    if user.op == "call_function" and user.target is getattr and user.args[1] in _META_ATTRS:
        return True
    if user.op == "call_function" and user.target is fx.control_flow.cond:
        _, t_attr, f_attr, operands = user.args
        if value not in operands:
            return False
        i = list(operands).index(value)
        for attr in (t_attr, f_attr):
            gm = _fetch(owner, attr.target)
            ph = [n for n in gm.graph.nodes if n.op == "placeholder"][i]
            if not all(_reads_metadata_only(gm, u, ph) for u in ph.users):
                return False
        return True
    return False


def run_frozen_optimizations(mod, optimize_numerics: bool = True, preserved_methods=None) -> None:
    """Drop eval-mode dropout and fold batch norm into a preceding convolution, in place."""
    import fabric

    graph = mod.graph
    changed = False
    for node in list(graph.nodes):
        name = _name(node)
        if name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
            training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
            if training is False:
                node.replace_all_uses_with(node.args[0])
                graph.erase_node(node)
                changed = True
    for node in list(graph.nodes):
        if _name(node) != "batch_norm" or len(node.args) < 8 and "eps" not in node.kwargs:
            continue
        args = list(node.args) + [None] * (8 - len(node.args))
        x, mean, var, weight, bias, training, _momentum, eps = args[:8]
        training = node.kwargs.get("training", training)
        eps = node.kwargs.get("eps", eps)
        if training is not False or not isinstance(x, fx.Node):
            continue
        if any(u is not node and not _reads_metadata_only(mod, u, x) for u in x.users):
            continue
        if _name(x) not in ("conv1d", "conv2d", "conv3d"):
            continue
        cargs = list(x.args) + [None] * (3 - len(x.args))
        cw, cb = _const(mod, cargs[1]), cargs[2] if len(cargs) > 2 else None
        cb = x.kwargs.get("bias", cb)
        cbt = _const(mod, cb) if isinstance(cb, fx.Node) else None
        if cb is not None and cbt is None:
            continue
        mean_t, var_t = _const(mod, mean), _const(mod, var)
        w_t = _const(mod, weight) if weight is not None else None
        b_t = _const(mod, bias) if bias is not None else None
        if cw is None or mean_t is None or var_t is None or (weight is not None and w_t is None) \
                or (bias is not None and b_t is None):
            continue
        with fabric.no_grad():
            scale = (var_t + eps).rsqrt()
            if w_t is not None:
                scale = scale * w_t
            shape = [-1] + [1] * (cw.dim() - 1)
            new_w = cw * scale.reshape(shape)
            base = cbt if cbt is not None else fabric.zeros_like(mean_t)
            new_b = (base - mean_t) * scale + (b_t if b_t is not None else 0)
        w_name = f"_folded_weight{len(mod._buffers)}"
        mod.register_buffer(w_name, new_w, persistent=False)
        b_name = f"_folded_bias{len(mod._buffers)}"
        mod.register_buffer(b_name, new_b, persistent=False)
        with graph.inserting_before(x):
            w_node = graph.get_attr(w_name)
            b_node = graph.get_attr(b_name)
        new_args = list(x.args)
        new_args[1] = w_node
        kwargs = dict(x.kwargs)
        if len(new_args) > 2:
            new_args[2] = b_node
            kwargs.pop("bias", None)
        else:
            kwargs["bias"] = b_node
        x.args = tuple(new_args)
        x.kwargs = kwargs
        node.replace_all_uses_with(x)
        graph.erase_node(node)
        changed = True
    if changed:
        _dce(graph)
        mod.recompile()


def optimize_for_inference(mod, other_methods=None):
    """Freeze ``mod`` (if it is not frozen yet) and run the inference optimizations.

    Example::

        >>> import fabric
        >>> net = fabric.nn.Sequential(fabric.nn.Conv2d(1, 2, 3), fabric.nn.BatchNorm2d(2)).eval()
        >>> opt = fabric.jit.optimize_for_inference(fabric.jit.script(net))
        >>> x = fabric.randn(1, 1, 5, 5)
        >>> bool(fabric.allclose(opt(x), net(x), atol=1e-5))
        True
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use torch.jit.script "
                           "or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        mod.eval()
    if not mod.__dict__.get("_frozen", False):
        mod = freeze(mod, preserved_attrs=other_methods or [])
    else:
        run_frozen_optimizations(mod)
    return mod
