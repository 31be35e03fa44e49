"""``fabric.jit.script``'s compiler: checked Python AST → one ``fabric.fx.Graph``.

The compiler walks a function's AST with an environment mapping each local
name to either a *graph value* (an ``fx.Node``: a tensor or a scalar known
only at run time) or a *compile-time value* (a Python constant, a module, a
function, a tuple of values).  Operations on compile-time values are folded;
operations on graph values emit nodes.

Control flow on graph values stays control flow: ``if`` becomes
``fx.control_flow.cond``, ``for ... in range(...)`` becomes ``range_loop``
and ``while`` becomes ``while_loop``, each taking sub-``GraphModule``s built
here (values from outside are passed in explicitly).  Conditions on
compile-time values (``if self.use_bias:``, ``is_scripting()``, ``x is None``
for a non-Optional ``x``) pick a branch at compile time, as TorchScript's
constant propagation does.  Loops over a ``ModuleList`` or a constant tuple
are unrolled (their elements differ in kind); ``range`` loops never are.

Calls to other Python functions, methods and submodules (fabric's own
layers included) are compiled recursively and inlined, so the graph holds
only fabric ops, ``operator`` functions and these control-flow ops: that is
what makes a scripted module savable without its Python class.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import operator
import types

from .. import fx
from .._tensor import Tensor
from ..nn.modules.module import Module
from . import _ops, frontend
from ._modifiers import Attribute, FunctionModifiers, is_scripting, jit_isinstance, modifier_of
from ._modifiers import annotate as _annotate
from ._state import is_tracing
from .frontend import (
    AnyType,
    BoolType,
    FloatType,
    IntType,
    JitType,
    NoneType,
    NotSupportedError,
    StrType,
    TensorType,
    UnsupportedNodeError,
)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.MatMult: operator.matmul, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_IBINOPS = {ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul, ast.Div: operator.itruediv,
            ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod, ast.Pow: operator.ipow,
            ast.MatMult: operator.imatmul, ast.BitAnd: operator.iand, ast.BitOr: operator.ior,
            ast.BitXor: operator.ixor, ast.LShift: operator.ilshift, ast.RShift: operator.irshift}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
# Python builtins that run as graph calls when an argument is a graph value
_GRAPH_BUILTINS = {len: IntType, int: IntType, float: FloatType, bool: BoolType, abs: None, min: None, max: None,
                   round: None, print: NoneType, str: StrType}
# tensor attributes readable in scripted code, and their types
_TENSOR_ATTRS = {"shape": JitType("List", (IntType,)), "dtype": AnyType, "device": AnyType, "ndim": IntType,
                 "T": TensorType, "mT": TensorType, "H": TensorType, "mH": TensorType, "data": TensorType,
                 "requires_grad": BoolType, "is_cuda": BoolType, "grad": JitType("Optional", (TensorType,)),
                 "real": TensorType, "imag": TensorType, "layout": AnyType, "is_leaf": BoolType}
# tensor methods whose result is not a Tensor
_METHOD_TYPES = {"dim": IntType, "size": AnyType, "numel": IntType, "item": AnyType, "tolist": AnyType,
                 "element_size": IntType, "is_contiguous": BoolType, "is_floating_point": BoolType,
                 "is_complex": BoolType, "nelement": IntType, "stride": AnyType, "data_ptr": IntType,
                 "ndimension": IntType, "get_device": IntType, "chunk": JitType("List", (TensorType,)),
                 "split": JitType("List", (TensorType,)), "unbind": JitType("List", (TensorType,)),
                 "tensor_split": JitType("List", (TensorType,))}

_CONSTANT_TYPES = (int, float, bool, str, type(None), complex, type(Ellipsis))


class _Undefined:
    """A name assigned on one side of an ``if`` only: using it later is an error."""

    def __init__(self, name, branch, node):
        self.name, self.branch, self.node = name, branch, node


class _ModuleRef:
    """A (sub)module seen from scripted code, with its dotted path from the scripted root."""

    def __init__(self, module: Module, prefix: str):
        self.module, self.prefix = module, prefix


class _SuperRef:
    """``super()`` in a method of the module ``ref`` defined in class ``cls``."""

    def __init__(self, ref, cls):
        self.ref, self.cls = ref, cls


class _BoundMethod:
    def __init__(self, ref: _ModuleRef, fn, name: str):
        self.ref, self.fn, self.name = ref, fn, name


class _Return(Exception):
    """Internal: a block ended in ``return`` / ``raise`` (value is None for raise)."""


_RETURNS = (ast.Return, ast.Raise)


def _always_exits(stmts, kinds=_RETURNS) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kinds + (ast.Raise,)):
        return True
    if isinstance(last, ast.If):
        return _always_exits(last.body, kinds) and _always_exits(last.orelse, kinds)
    return False


def _has_return(stmts, kinds=(ast.Return,)) -> bool:
    """Whether ``stmts`` hold a statement of ``kinds`` outside nested loops."""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, ast.If) and (_has_return(s.body, kinds) or _has_return(s.orelse, kinds)):
            return True
    return False


def _normalize_returns(stmts: list, kinds=(ast.Return,)) -> list:
    """Move the statements after an ``if`` that exits (returns, or ``continue``s in a loop body) on
    one path into the paths that fall through, so every ``if`` either exits on all paths or on none
    (TorchScript's early-return rewrite)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _has_return([s], kinds):
            rest = stmts[i + 1:]
            body = s.body if _always_exits(s.body, kinds) else s.body + rest
            orelse = s.orelse if _always_exits(s.orelse, kinds) else s.orelse + rest
            new = ast.If(test=s.test, body=_normalize_returns(body, kinds), orelse=_normalize_returns(orelse, kinds))
            ast.copy_location(new, s)
            out.append(new)
            return out
        out.append(s)
        if isinstance(s, kinds):
            return out          # the rest of the block is unreachable
    return out


def _replace_breaks(stmts: list, flag: str) -> list:
    """``break`` → ``flag = True; continue`` (outside nested loops)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            set_flag = ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())], value=ast.Constant(value=True))
            out += [ast.copy_location(set_flag, s), ast.copy_location(ast.Continue(), s)]
        elif isinstance(s, ast.If):
            new = ast.If(test=s.test, body=_replace_breaks(s.body, flag), orelse=_replace_breaks(s.orelse, flag))
            out.append(ast.copy_location(new, s))
        else:
            out.append(s)
    return out


def _drop_continues(stmts: list) -> list:
    out = []
    for s in stmts:
        if isinstance(s, ast.Continue):
            continue
        if isinstance(s, ast.If):
            new = ast.If(test=s.test, body=_drop_continues(s.body) or [ast.Pass()],
                         orelse=_drop_continues(s.orelse))
            out.append(ast.copy_location(new, s))
        else:
            out.append(s)
    return out


def _replace_returns(stmts: list, flag: str, value: str) -> list:
    """``return v`` → ``value = v; flag = True; break`` (outside nested loops)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.Return):
            ret = s.value if s.value is not None else ast.Constant(value=None)
            out += [ast.copy_location(ast.Assign(targets=[ast.Name(id=value, ctx=ast.Store())], value=ret), s),
                    ast.copy_location(ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())],
                                                 value=ast.Constant(value=True)), s),
                    ast.copy_location(ast.Break(), s)]
        elif isinstance(s, ast.If):
            new = ast.If(test=s.test, body=_replace_returns(s.body, flag, value),
                         orelse=_replace_returns(s.orelse, flag, value))
            out.append(ast.copy_location(new, s))
        else:
            out.append(s)
    return out


def _lower_loop_returns(loop, rest: list) -> list:
    """A loop that returns: it records the value and breaks; after it, ``if returned: return value``
    and otherwise the statements that followed it."""
    flag, value = f"__returned{id(loop)}", f"__retval{id(loop)}"
    body = _replace_returns(loop.body, flag, value)
    if isinstance(loop, ast.While):
        new = ast.While(test=loop.test, body=body, orelse=loop.orelse)
    else:
        new = ast.For(target=loop.target, iter=loop.iter, body=body, orelse=loop.orelse)
    ast.copy_location(new, loop)

    def assign(name, v):
        return ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(v)),
                                 loop)

    after = ast.If(test=ast.Name(id=flag, ctx=ast.Load()),
                   body=[ast.copy_location(ast.Return(value=ast.Name(id=value, ctx=ast.Load())), loop)],
                   orelse=rest)
    out = [assign(flag, False), assign(value, None), new, ast.copy_location(after, loop)]
    for node in out:
        ast.fix_missing_locations(node)
    return out


def _lower_loop_exits(loop, flag: str):
    """Rewrite ``break`` / ``continue`` of a loop body into straight control flow.

    ``continue`` ends the iteration: what follows it moves into the other paths.  ``break`` also
    sets ``flag``; the body then runs only while ``flag`` is False (and a ``while`` condition
    checks it), so later iterations do nothing.  Returns (new loop, uses_flag)."""
    body = loop.body
    uses_flag = _has_return(body, (ast.Break,))
    if not uses_flag and not _has_return(body, (ast.Continue,)):
        return loop, False
    if uses_flag:
        body = _replace_breaks(body, flag)
    body = _drop_continues(_normalize_returns(body, (ast.Continue,)))
    if uses_flag:
        guard = ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load()))
        body = [ast.copy_location(ast.If(test=guard, body=body or [ast.Pass()], orelse=[]), loop)]
    if isinstance(loop, ast.While):
        test = loop.test
        if uses_flag:
            not_flag = ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=flag, ctx=ast.Load()))
            test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[not_flag, loop.test]), loop.test)
        new = ast.While(test=test, body=body, orelse=loop.orelse)
    else:
        new = ast.For(target=loop.target, iter=loop.iter, body=body, orelse=loop.orelse)
    ast.fix_missing_locations(ast.copy_location(new, loop))
    return new, uses_flag


def _assigned_names(stmts) -> list:
    names = []
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
                names.append(node.id)
    return names


class _Builder:
    """One graph under construction (the function's, or a branch/loop body's)."""

    def __init__(self, parent: _Builder | None = None):
        self.graph = fx.Graph()
        self.parent = parent
        self.lifted: dict = {}          # outer node -> placeholder here
        self.lifted_order: list = []
        self.last_placeholder = None
        self.submodules: dict = {}      # control-flow GraphModules owned by this graph
        self.attr_nodes: dict = {}      # get_attr target -> node (root builder only)
        self.names: set = set()         # placeholder names used so far

    def placeholder(self, name: str):
        base, k = name, 1
        while name in self.names:
            name = f"{base}_{k}"
            k += 1
        self.names.add(name)
        if self.last_placeholder is None:
            ctx = self.graph.inserting_before(None)
        else:
            ctx = self.graph.inserting_after(self.last_placeholder)
        with ctx:
            node = self.graph.placeholder(name)
        self.last_placeholder = node
        return node

    def use(self, node):
        """``node`` as a value of this graph (an outer node is passed in as an extra input)."""
        if node.graph is self.graph:
            return node
        if node in self.lifted:
            return self.lifted[node]
        if self.parent is None:
            raise RuntimeError(f"internal error: node {node} belongs to no enclosing graph")
        self.parent.use(node)
        ph = self.placeholder(node.name)
        self.lifted[node] = ph
        self.lifted_order.append(node)
        return ph

    def root(self) -> _Builder:
        b = self
        while b.parent is not None:
            b = b.parent
        return b

    def add_submodule(self, kind: str, gm) -> str:
        i = 0
        while f"{kind}_{i}" in self.submodules:
            i += 1
        name = f"{kind}_{i}"
        self.submodules[name] = gm
        return name


class Compiler:
    """Compiles one entry point (a function or a module's method) into a graph."""

    def __init__(self, root_module: Module | None = None):
        self.root_module = root_module
        self.types: dict = {}
        self.attr_objects: dict = {}    # get_attr target -> the tensor/bool it reads
        self._stack: list = []          # functions being compiled (recursion check)
        self._scopes: list = []         # their name scopes (for super())

    # ------------------------------------------------------------------ entry points
    def compile_function(self, fn, self_ref: _ModuleRef | None = None):
        """Graph of ``fn`` with one placeholder per argument; returns (graph, submodules, signature)."""
        fdef, ctx = frontend.get_function_def(fn)
        sig = frontend.signature_types(fn, fdef, skip_self=self_ref is not None)
        b = _Builder()
        env = {}
        for name, jt, default in sig:
            node = b.placeholder(name) if default is inspect.Parameter.empty else \
                b.graph.placeholder(name, default_value=default)
            if default is not inspect.Parameter.empty:
                b.last_placeholder = node
            self.types[node] = jt
            env[name] = node
        if self_ref is not None:
            env[fdef.args.args[0].arg] = self_ref
        result = self._inline_body(fn, fdef, ctx, env, b)
        b.graph.output(self._as_arg(b, result, ctx, fdef))
        return b, sig

    # ------------------------------------------------------------------ bodies
    def _inline_body(self, fn, fdef, ctx, env, b):
        raw = inspect.unwrap(getattr(fn, "__func__", fn))
        owner = env.get(fdef.args.args[0].arg) if fdef.args.args else None
        key = (raw, id(owner.module) if isinstance(owner, _ModuleRef) else None)
        if key in self._stack:
            raise NotSupportedError(ctx, fdef, f"function '{fdef.name}' is called recursively; recursion is not "
                                    "supported")
        self._stack.append(key)
        try:
            scope = _Scope(raw, ctx)
            scope.self_ref = env.get(fdef.args.args[0].arg) if fdef.args.args else None
            if not isinstance(scope.self_ref, _ModuleRef):
                scope.self_ref = None
            self._scopes.append(scope)
            body = list(fdef.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            if not _always_exits(body):
                body = body + [ast.copy_location(ast.Return(value=None), fdef)]
            body = _normalize_returns(body)
            try:
                self._block(body, env, b, scope)
            except _Return as r:
                return r.args[0]
            return None  # unreachable: the body always ends in return
        finally:
            self._stack.pop()
            if self._scopes and self._scopes[-1].ctx is ctx:
                self._scopes.pop()

    def _block(self, stmts, env, b, scope):
        for i, s in enumerate(stmts):
            if isinstance(s, (ast.For, ast.While)) and _has_return(s.body):
                rest = list(stmts[i + 1:])
                if not _always_exits(rest):
                    raise NotSupportedError(scope.ctx, s, "return inside a loop is only supported when the loop "
                                            "is not itself inside another loop")
                self._block(_lower_loop_returns(s, rest), env, b, scope)
                return
            self._stmt(s, env, b, scope)

    # ------------------------------------------------------------------ statements
    def _stmt(self, s, env, b, scope):
        ctx = scope.ctx
        if isinstance(s, ast.Return):
            raise _Return(None if s.value is None else self._expr(s.value, env, b, scope), False)
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # docstring or bare constant
            self._expr(s.value, env, b, scope)
            return
        if isinstance(s, ast.Assign):
            value = self._expr(s.value, env, b, scope)
            for target in s.targets:
                self._assign(target, value, env, b, scope)
            return
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return
            value = self._expr(s.value, env, b, scope)
            if isinstance(value, fx.Node):
                self.types[value] = frontend.parse_annotation(_annotation_value(s.annotation, scope),
                                                              scope.globals)
            self._assign(s.target, value, env, b, scope)
            return
        if isinstance(s, ast.AugAssign):
            self._augassign(s, env, b, scope)
            return
        if isinstance(s, ast.If):
            self._if(s, env, b, scope)
            return
        if isinstance(s, (ast.For, ast.While)):
            flag = f"__break{id(s)}"
            loop, uses_flag = _lower_loop_exits(s, flag)
            if uses_flag:
                env[flag] = False
            if isinstance(loop, ast.For):
                self._for(loop, env, b, scope)
            else:
                self._while(loop, env, b, scope)
            env.pop(flag, None)
            return
        if isinstance(s, ast.Assert):
            test = self._expr(s.test, env, b, scope)
            msg = "" if s.msg is None else self._expr(s.msg, env, b, scope)
            if not isinstance(test, fx.Node):
                if not test:
                    b.graph.call_function(_ops.assert_, (False, self._as_arg(b, msg, ctx, s)))
                return
            b.graph.call_function(_ops.assert_, (b.use(test), self._as_arg(b, msg, ctx, s)))
            return
        if isinstance(s, ast.Raise):
            self._raise(s, env, b, scope)
            raise _Return(None, True)
        if isinstance(s, (ast.Break, ast.Continue)):   # loops rewrite theirs; this one is in no loop
            raise NotSupportedError(ctx, s, f"'{type(s).__name__.lower()}' outside a loop")
        raise UnsupportedNodeError(ctx, s)

    def _raise(self, s, env, b, scope):
        kind, msg = "Exception", ""
        exc = s.exc
        if isinstance(exc, ast.Call):
            cls = self._expr(exc.func, env, b, scope)
            kind = getattr(cls, "__name__", "Exception")
            if exc.args:
                m = self._expr(exc.args[0], env, b, scope)
                msg = m if isinstance(m, (str, fx.Node)) else str(m)
        elif exc is not None:
            cls = self._expr(exc, env, b, scope)
            kind = getattr(cls, "__name__", "Exception")
        b.graph.call_function(_ops.raise_exception, (kind, b.use(msg) if isinstance(msg, fx.Node) else msg))

    def _assign(self, target, value, env, b, scope):
        ctx = scope.ctx
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            if isinstance(value, tuple):
                if len(value) != n:
                    raise NotSupportedError(ctx, target, f"too many values to unpack: need {n} values but found "
                                            f"{len(value)}" if len(value) > n else
                                            f"not enough values to unpack (expected {n}, got {len(value)})")
                parts = value
            elif isinstance(value, fx.Node):
                node = b.use(value)
                parts = tuple(self._emit(b, operator.getitem, (node, i), jt=self._elem_type(node, i))
                              for i in range(n))
            else:
                raise NotSupportedError(ctx, target, f"cannot unpack a value of type {type(value).__name__}")
            for t, v in zip(target.elts, parts):
                self._assign(t, v, env, b, scope)
            return
        if isinstance(target, ast.Subscript):
            base = self._expr(target.value, env, b, scope)
            idx = self._index(target.slice, env, b, scope)
            if not isinstance(base, fx.Node):
                raise NotSupportedError(ctx, target, "item assignment to a compile-time value is not supported")
            b.graph.call_function(operator.setitem, (b.use(base), self._as_arg(b, idx, ctx, target),
                                                     self._as_arg(b, value, ctx, target)))
            return
        if isinstance(target, ast.Attribute):
            raise NotSupportedError(ctx, target, "assigning to attributes (module state) in scripted code is not "
                                    "supported")
        raise UnsupportedNodeError(ctx, target)

    def _augassign(self, s, env, b, scope):
        ctx = scope.ctx
        fn = _IBINOPS.get(type(s.op))
        if fn is None:
            raise UnsupportedNodeError(ctx, s)
        rhs = self._expr(s.value, env, b, scope)
        if isinstance(s.target, ast.Name):
            cur = self._lookup(s.target.id, s.target, env, b, scope)
            env[s.target.id] = self._binary(fn, cur, rhs, b, ctx, s)
            return
        if isinstance(s.target, ast.Subscript):
            base = self._expr(s.target.value, env, b, scope)
            idx = self._index(s.target.slice, env, b, scope)
            if not isinstance(base, fx.Node):
                raise NotSupportedError(ctx, s, "item assignment to a compile-time value is not supported")
            base = b.use(base)
            idx = self._as_arg(b, idx, ctx, s)
            cur = self._emit(b, operator.getitem, (base, idx), jt=self._elem_type(base, None))
            new = self._binary(fn, cur, rhs, b, ctx, s)
            b.graph.call_function(operator.setitem, (base, idx, self._as_arg(b, new, ctx, s)))
            return
        raise NotSupportedError(ctx, s.target, "augmented assignment to attributes is not supported")

    # ------------------------------------------------------------------ control flow
    def _truth(self, value, b, ctx, node):
        """(is_static, python bool or graph node) for a condition."""
        if isinstance(value, fx.Node):
            return False, b.use(value)
        if isinstance(value, (tuple, list, _ModuleRef)) or callable(value):
            return True, bool(value)
        if isinstance(value, _CONSTANT_TYPES) or value is None:
            return True, bool(value)
        raise NotSupportedError(ctx, node, f"cannot use a value of type {type(value).__name__} as a condition")

    def _branch(self, b, stmts, env, scope, names, seed=None):
        """Lower ``stmts`` into a new sub-builder; returns (builder, env after, returned value or marker)."""
        sub = _Builder(b)
        if seed is not None:
            for outer in seed:
                sub.use(outer)
        benv = dict(env)
        ret = _NO_RETURN
        try:
            self._block(stmts, benv, sub, scope)
        except _Return as r:
            ret = _RAISED if r.args[1] else r.args[0]
        return sub, benv, ret

    def _close(self, b, subs, outs_list, kinds, ctx, node, passthrough: bool, single=()):
        """Finish sub-graphs that run as one control-flow op: every sub-graph takes its own leading inputs
        (loop index, carried values) then the same extra inputs (values from outside, in one order), and
        loop bodies return the extras unchanged.  Returns (get_attr nodes, extra operands)."""
        out_args = [[self._as_arg(sub, o, ctx, node) for o in outs] for sub, outs in zip(subs, outs_list)]
        extras = []
        for sub in subs:
            for outer in sub.lifted_order:
                if outer not in extras:
                    extras.append(outer)
        attrs = []
        for k, (sub, outs, kind) in enumerate(zip(subs, out_args, kinds)):
            for outer in extras:
                sub.use(outer)
            lifted = [sub.lifted[o] for o in extras]
            if k in single:
                out = sub.graph.output(outs[0])
            else:
                out = sub.graph.output(tuple(outs) + (tuple(lifted) if passthrough else ()))
            lifted_set = set(lifted)
            fixed = [n for n in sub.graph.nodes if n.op == "placeholder" and n not in lifted_set]
            first = next(n for n in sub.graph.nodes if n.op != "placeholder")
            for ph in fixed + lifted:
                first.prepend(ph)
            del out
            gm = fx.GraphModule(sub.submodules, sub.graph, class_name=kind)
            attrs.append(b.graph.get_attr(b.add_submodule(kind, gm)))
        return attrs, tuple(b.use(o) for o in extras)

    def _if(self, s, env, b, scope):
        ctx = scope.ctx
        test = self._expr(s.test, env, b, scope)
        static, pred = self._truth(test, b, ctx, s.test)
        if static:
            self._block(s.body if pred else s.orelse, env, b, scope)
            return
        returns = _always_exits(s.body) and _always_exits(s.orelse) and _has_return([s])
        t_sub, t_env, t_ret = self._branch(b, s.body, env, scope, None)
        f_sub, f_env, f_ret = self._branch(b, s.orelse, env, scope, None, seed=t_sub.lifted_order)
        if returns:
            t_vals, f_vals, n = _match_returns(t_ret, f_ret)
            out = self._cond_node(b, pred, (t_sub, f_sub), (t_vals, f_vals), ctx, s)
            results = [self._emit(b, operator.getitem, (out, i), jt=self._merge_type(t_vals[i], f_vals[i]))
                       for i in range(len(t_vals))]
            value = results[0] if n is None else tuple(results)
            raise _Return(value, False)
        # names visible after the if: assigned in a branch and defined on both paths
        names = []
        for name in _assigned_names(s.body) + _assigned_names(s.orelse):
            if name in names:
                continue
            names.append(name)
        outs = []
        t_vals, f_vals = [], []
        for name in names:
            t_ok = name in t_env and not isinstance(t_env[name], _Undefined)
            f_ok = name in f_env and not isinstance(f_env[name], _Undefined)
            t_ok = t_ok or t_ret is _RAISED
            f_ok = f_ok or f_ret is _RAISED
            if not (t_ok and f_ok):
                branch = "false" if t_ok else "true"
                env[name] = _Undefined(name, branch, s)
                continue
            tv = t_env.get(name) if t_ret is not _RAISED else env.get(name)
            fv = f_env.get(name) if f_ret is not _RAISED else env.get(name)
            if tv is fv:
                continue
            if not (_is_data(tv) and _is_data(fv)):
                raise NotSupportedError(ctx, s, f"'{name}' is assigned values of kinds {_kind(tv)} and {_kind(fv)} "
                                        "in the branches of a data-dependent if")
            outs.append(name)
            t_vals.append(tv)
            f_vals.append(fv)
        out = self._cond_node(b, pred, (t_sub, f_sub), (t_vals, f_vals), ctx, s)
        for i, name in enumerate(outs):
            env[name] = self._emit(b, operator.getitem, (out, i), jt=self._merge_type(t_vals[i], f_vals[i]))

    def _cond_node(self, b, pred, subs, vals, ctx, s):
        (t_sub, f_sub), (t_vals, f_vals) = subs, vals
        t_vals = [_none_if_raised(v) for v in t_vals]
        f_vals = [_none_if_raised(v) for v in f_vals]
        (t_attr, f_attr), operands = self._close(b, [t_sub, f_sub], [t_vals, f_vals], ["true_graph", "false_graph"],
                                                 ctx, s, passthrough=False)
        return b.graph.call_function(fx.control_flow.cond, (pred, t_attr, f_attr, operands))

    def _cond_expr(self, b, pred, true_thunk, false_thunk, ctx, node):
        """A data-dependent ``a if pred else b`` (also used for ``and`` / ``or``)."""
        t_sub = _Builder(b)
        tv = true_thunk(t_sub)
        f_sub = _Builder(b)
        for outer in t_sub.lifted_order:
            f_sub.use(outer)
        fv = false_thunk(f_sub)
        out = self._cond_node(b, pred, (t_sub, f_sub), ([tv], [fv]), ctx, node)
        return self._emit(b, operator.getitem, (out, 0), jt=self._merge_type(tv, fv))

    def _carried(self, stmts, env, ctx, node):
        names = []
        for name in _assigned_names(stmts):
            if name in env and not isinstance(env[name], _Undefined):
                v = env[name]
                if not _is_data(v):
                    raise NotSupportedError(ctx, node, f"'{name}' holds a {_kind(v)} and is reassigned in a loop; "
                                            "only tensors, numbers, strings, None and lists can be loop-carried")
                names.append(name)
        return names

    def _loop_body(self, b, s, env, scope, names, index_name=None, item_of=None, seed=()):
        """Build a loop body sub-builder over the carried ``names`` (+ an index first, for range loops)."""
        sub = _Builder(b)
        benv = dict(env)
        if index_name is not None:
            i_node = sub.placeholder("i")
            self.types[i_node] = IntType
            if item_of is not None:
                seq = sub.use(item_of)
                benv_item = self._emit(sub, operator.getitem, (seq, i_node), jt=self._elem_type(seq, None))
                self._assign(index_name, benv_item, benv, sub, scope)
            else:
                self._assign(index_name, i_node, benv, sub, scope)
        for name in names:
            ph = sub.placeholder(name)
            v = env[name]
            self.types[ph] = self._type_of(v)
            benv[name] = ph
        for outer in seed:
            sub.use(outer)
        try:
            self._block(s.body, benv, sub, scope)
        except _Return:
            raise NotSupportedError(scope.ctx, s, "return or raise inside a loop is not supported by "
                                    "fabric.jit.script yet") from None
        for name in names:
            if isinstance(benv.get(name), _Undefined):
                raise NotSupportedError(scope.ctx, s, f"'{name}' is not defined on every path of the loop body")
        return sub, benv

    def _for(self, s, env, b, scope):
        ctx = scope.ctx
        if s.orelse:
            raise NotSupportedError(ctx, s, "for...else is not supported")
        it = s.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and scope.lookup_global("range") is range and "range" not in env:
            if it.keywords or not 1 <= len(it.args) <= 3:
                raise NotSupportedError(ctx, it, "range() takes 1 to 3 positional arguments")
            bounds = [self._expr(a, env, b, scope) for a in it.args]
            start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else \
                (bounds[0], bounds[1], 1) if len(bounds) == 2 else tuple(bounds)
            self._range_loop(s, env, b, scope, start, stop, step, None)
            return
        seq = self._expr(it, env, b, scope)
        if isinstance(seq, fx.Node):
            seq = b.use(seq)
            if self._type_of(seq) == TensorType:
                n = self._emit(b, operator.getitem, (self._emit(b, getattr, (seq, "shape")), 0), jt=IntType)
            else:
                n = self._emit(b, len, (seq,), jt=IntType)
            self._range_loop(s, env, b, scope, 0, n, 1, seq)
            return
        items = self._static_items(seq, ctx, it)
        for item in items:   # unrolled: a ModuleList, a constant tuple, enumerate/zip of those
            self._assign(s.target, item, env, b, scope)
            try:
                self._block(s.body, env, b, scope)
            except _Return:
                raise NotSupportedError(ctx, s, "return or raise inside a loop is not supported by "
                                        "fabric.jit.script yet") from None

    def _static_items(self, seq, ctx, node):
        if isinstance(seq, _ModuleRef):
            m = seq.module
            from ..nn import ModuleDict, ModuleList, Sequential
            if isinstance(m, (ModuleList, Sequential)):
                return [_ModuleRef(c, f"{seq.prefix}{k}.") for k, c in m._modules.items()]
            if isinstance(m, ModuleDict):
                return list(m._modules.keys())
            raise NotSupportedError(ctx, node, f"'{type(m).__name__}' object is not iterable")
        if isinstance(seq, (tuple, list)):
            return list(seq)
        if isinstance(seq, range):
            return list(seq)
        raise NotSupportedError(ctx, node, f"cannot iterate over a value of type {type(seq).__name__}")

    def _range_loop(self, s, env, b, scope, start, stop, step, seq):
        ctx = scope.ctx
        names = self._carried(s.body, env, ctx, s)
        sub, benv = self._loop_body(b, s, env, scope, names, index_name=s.target, item_of=seq)
        (body_attr,), extras = self._close(b, [sub], [[benv[n] for n in names]], ["body_graph"], ctx, s,
                                           passthrough=True)
        carried = tuple(self._as_arg(b, env[n], ctx, s) for n in names) + extras
        bounds = tuple(self._as_arg(b, v, ctx, s) for v in (start, stop, step))
        out = b.graph.call_function(fx.control_flow.range_loop, bounds + (body_attr, carried))
        for i, name in enumerate(names):
            env[name] = self._emit(b, operator.getitem, (out, i), jt=self._type_of(benv[name]))

    def _while(self, s, env, b, scope):
        ctx = scope.ctx
        if s.orelse:
            raise NotSupportedError(ctx, s, "while...else is not supported")
        names = self._carried(s.body, env, ctx, s)
        cond_sub = _Builder(b)
        cenv = dict(env)
        for name in names:
            ph = cond_sub.placeholder(name)
            self.types[ph] = self._type_of(env[name])
            cenv[name] = ph
        test = self._expr(s.test, cenv, cond_sub, scope)
        static, pred = self._truth(test, cond_sub, ctx, s.test)
        if static and not pred:
            return
        if static:
            raise NotSupportedError(ctx, s.test, "a while loop whose condition is always true needs 'break', "
                                    "which fabric.jit.script does not support yet")
        # both graphs take (carried..., extras...) in one order: the body starts from the condition's extras
        body_sub, benv = self._loop_body(b, s, env, scope, names, seed=list(cond_sub.lifted_order))
        (cond_attr, body_attr), extras = self._close(b, [cond_sub, body_sub], [[pred], [benv[n] for n in names]],
                                                     ["cond_graph", "body_graph"], ctx, s, passthrough=True,
                                                     single=(0,))
        carried = tuple(self._as_arg(b, env[n], ctx, s) for n in names) + extras
        out = b.graph.call_function(fx.control_flow.while_loop, (cond_attr, body_attr, carried))
        for i, name in enumerate(names):
            env[name] = self._emit(b, operator.getitem, (out, i), jt=self._type_of(benv[name]))

    # ------------------------------------------------------------------ expressions
    def _expr(self, e, env, b, scope):
        ctx = scope.ctx
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            return self._lookup(e.id, e, env, b, scope)
        if isinstance(e, ast.Attribute):
            return self._attribute(self._expr(e.value, env, b, scope), e.attr, b, ctx, e)
        if isinstance(e, ast.Call):
            return self._call(e, env, b, scope)
        if isinstance(e, ast.BinOp):
            fn = _BINOPS.get(type(e.op))
            if fn is None:
                raise UnsupportedNodeError(ctx, e)
            return self._binary(fn, self._expr(e.left, env, b, scope), self._expr(e.right, env, b, scope),
                                b, ctx, e)
        if isinstance(e, ast.UnaryOp):
            v = self._expr(e.operand, env, b, scope)
            fn = _UNOPS[type(e.op)]
            if not isinstance(v, fx.Node):
                return fn(v)
            jt = BoolType if fn is operator.not_ else self._type_of(v)
            return self._emit(b, fn, (b.use(v),), jt=jt)
        if isinstance(e, ast.BoolOp):
            return self._boolop(e, env, b, scope)
        if isinstance(e, ast.Compare):
            return self._compare(e, env, b, scope)
        if isinstance(e, ast.IfExp):
            test = self._expr(e.test, env, b, scope)
            static, pred = self._truth(test, b, ctx, e.test)
            if static:
                return self._expr(e.body if pred else e.orelse, env, b, scope)
            return self._cond_expr(b, pred, lambda sb: self._expr(e.body, env, sb, scope),
                                   lambda sb: self._expr(e.orelse, env, sb, scope), ctx, e)
        if isinstance(e, ast.Subscript):
            base = self._expr(e.value, env, b, scope)
            idx = self._index(e.slice, env, b, scope)
            return self._subscript(base, idx, b, ctx, e)
        if isinstance(e, ast.Tuple):
            return tuple(self._expr(x, env, b, scope) for x in e.elts)
        if isinstance(e, ast.List):
            items = [self._expr(x, env, b, scope) for x in e.elts]
            elem = self._type_of(items[0]) if items else TensorType
            return self._emit(b, _ops.list_construct, tuple(self._as_arg(b, v, ctx, e) for v in items),
                              jt=JitType("List", (elem,)))
        if isinstance(e, ast.Dict):
            if any(k is None for k in e.keys):
                raise NotSupportedError(ctx, e, "dict unpacking (**) is not supported")
            key_values = [self._expr(k, env, b, scope) for k in e.keys]
            if all(isinstance(k, str) for k in key_values):
                # constant keys: a compile-time dict (passed on as a literal, so each run gets a fresh one)
                return {k: self._expr(v, env, b, scope) for k, v in zip(key_values, e.values)}
            keys = tuple(self._as_arg(b, self._expr(k, env, b, scope), ctx, e) for k in e.keys)
            vals = tuple(self._as_arg(b, self._expr(v, env, b, scope), ctx, e) for v in e.values)
            return self._emit(b, _ops.dict_construct, (keys, vals), jt=JitType("Dict", (AnyType, AnyType)))
        if isinstance(e, ast.ListComp):
            return self._listcomp(e, env, b, scope)
        if isinstance(e, ast.GeneratorExp):   # over a compile-time sequence: a tuple of its values
            return tuple(self._comprehension_items(e, env, b, scope))
        if isinstance(e, ast.Slice):
            return self._index(e, env, b, scope)
        if isinstance(e, ast.Starred):
            raise NotSupportedError(ctx, e, "starred expressions (*x) are not supported")
        if isinstance(e, ast.JoinedStr):
            return self._fstring(e, env, b, scope)
        raise UnsupportedNodeError(ctx, e)

    def _fstring(self, e, env, b, scope):
        template, values = [], []
        for part in e.values:
            if isinstance(part, ast.Constant):
                template.append(str(part.value).replace("{", "{{").replace("}", "}}"))
                continue
            conv = "" if part.conversion == -1 else "!" + chr(part.conversion)
            spec = ""
            if part.format_spec is not None:
                spec_v = self._expr(part.format_spec, env, b, scope)
                if not isinstance(spec_v, str):
                    raise NotSupportedError(scope.ctx, part, "f-string format specs must be constants")
                spec = ":" + spec_v
            template.append("{" + conv + spec + "}")
            values.append(self._expr(part.value, env, b, scope))
        text = "".join(template)
        if not any(isinstance(v, fx.Node) or _contains_node(v) for v in values):
            return text.format(*values)
        return self._emit(b, _ops.format_string, (text,) + tuple(self._as_arg(b, v, scope.ctx, e) for v in values),
                          jt=StrType)

    def _listcomp(self, e, env, b, scope):
        items = self._comprehension_items(e, env, b, scope)
        elem = self._type_of(items[0]) if items else TensorType
        return self._emit(b, _ops.list_construct, tuple(self._as_arg(b, v, scope.ctx, e) for v in items),
                          jt=JitType("List", (elem,)))

    def _comprehension_items(self, e, env, b, scope):
        ctx = scope.ctx
        if len(e.generators) != 1 or e.generators[0].ifs:
            raise NotSupportedError(ctx, e, "only list comprehensions with one 'for' and no 'if' are supported")
        gen = e.generators[0]
        seq = self._expr(gen.iter, env, b, scope)
        if isinstance(seq, fx.Node):
            raise NotSupportedError(ctx, gen.iter, "list comprehensions over a value known only at run time are "
                                    "not supported (write a for loop with append)")
        items = []
        for item in self._static_items(seq, ctx, gen.iter):
            cenv = dict(env)
            self._assign(gen.target, item, cenv, b, scope)
            items.append(self._expr(e.elt, cenv, b, scope))
        return items

    def _boolop(self, e, env, b, scope):
        ctx = scope.ctx
        is_and = isinstance(e.op, ast.And)

        def rest(values, bb, env_):
            v = self._expr(values[0], env_, bb, scope)
            if len(values) == 1:
                return v
            static, pred = self._truth(v, bb, ctx, values[0])
            if static:
                if pred == is_and:
                    return rest(values[1:], bb, env_)
                return v
            if is_and:
                return self._cond_expr(bb, pred, lambda sb: rest(values[1:], sb, env_), lambda sb: pred, ctx, e)
            return self._cond_expr(bb, pred, lambda sb: pred, lambda sb: rest(values[1:], sb, env_), ctx, e)

        return rest(e.values, b, env)

    def _compare(self, e, env, b, scope):
        ctx = scope.ctx
        left = self._expr(e.left, env, b, scope)
        result = None
        for op, right_e in zip(e.ops, e.comparators):
            right = self._expr(right_e, env, b, scope)
            if isinstance(op, (ast.Is, ast.IsNot)):
                v = self._identity(left, right, isinstance(op, ast.IsNot), b)
            elif isinstance(op, (ast.In, ast.NotIn)):
                v = self._binary(operator.contains, right, left, b, ctx, e)
                if isinstance(op, ast.NotIn):
                    v = (not v) if not isinstance(v, fx.Node) else self._emit(b, operator.not_, (v,), jt=BoolType)
            else:
                v = self._binary(_CMPOPS[type(op)], left, right, b, ctx, e)
            if result is None:
                result = v
            elif not isinstance(result, fx.Node) and not isinstance(v, fx.Node):
                result = result and v
            else:
                result = self._emit(b, operator.and_, (self._as_arg(b, result, ctx, e), self._as_arg(b, v, ctx, e)),
                                    jt=BoolType)
            left = right
        return result

    def _identity(self, left, right, negate, b):
        # `x is None` folds when x cannot be None (a Tensor argument) or is a constant
        for a, other in ((left, right), (right, left)):
            if other is None and isinstance(a, fx.Node):
                jt = self._type_of(a)
                if jt.kind not in ("Optional", "Any", "NoneType"):
                    return negate
                return self._emit(b, _ops.is_not_none if negate else _ops.is_none, (b.use(a),), jt=BoolType)
        if isinstance(left, fx.Node) or isinstance(right, fx.Node):
            fn = operator.is_not if negate else operator.is_
            return self._emit(b, fn, (_arg(b, left), _arg(b, right)), jt=BoolType)
        return (left is not right) if negate else (left is right)

    def _index(self, e, env, b, scope):
        if isinstance(e, ast.Slice):
            parts = [None if p is None else self._expr(p, env, b, scope) for p in (e.lower, e.upper, e.step)]
            return slice(*parts)
        if isinstance(e, ast.Tuple):
            return tuple(self._index(x, env, b, scope) for x in e.elts)
        return self._expr(e, env, b, scope)

    def _subscript(self, base, idx, b, ctx, node):
        if isinstance(base, _ModuleRef):
            if isinstance(idx, fx.Node):
                raise NotSupportedError(ctx, node, "modules of a ModuleList can only be indexed by constants")
            m = base.module
            key = str(idx) if not isinstance(idx, int) else str(idx if idx >= 0 else len(m) + idx)
            if isinstance(idx, slice):
                raise NotSupportedError(ctx, node, "slicing a ModuleList is not supported")
            return _ModuleRef(m[idx], f"{base.prefix}{key}.")
        if isinstance(base, fx.Node) or _contains_node(idx):
            base_arg = self._as_arg(b, base, ctx, node)
            jt = self._elem_type(base, idx)
            return self._emit(b, operator.getitem, (base_arg, self._as_arg(b, idx, ctx, node)), jt=jt)
        try:
            return base[idx]
        except Exception as err:
            raise NotSupportedError(ctx, node, f"indexing failed at compile time: {err}") from None

    def _binary(self, fn, lhs, rhs, b, ctx, node):
        if not isinstance(lhs, fx.Node) and not isinstance(rhs, fx.Node) and not _contains_node(lhs) \
                and not _contains_node(rhs):
            try:
                return fn(lhs, rhs)
            except Exception as err:
                raise NotSupportedError(ctx, node, f"{fn.__name__} failed at compile time: {err}") from None
        lt, rt = self._type_of(lhs), self._type_of(rhs)
        if fn in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge, operator.contains):
            jt = TensorType if TensorType in (lt, rt) else BoolType
        elif TensorType in (lt, rt):
            jt = TensorType
        elif lt.kind == "List" or rt.kind == "List":
            jt = lt if lt.kind == "List" else rt
        elif fn in (operator.truediv, operator.itruediv) or FloatType in (lt, rt):
            jt = FloatType
        elif lt == IntType and rt == IntType or (lt in (IntType, BoolType) and rt in (IntType, BoolType)):
            jt = IntType if fn not in (operator.and_, operator.or_, operator.xor) or lt != BoolType else BoolType
        else:
            jt = AnyType
        return self._emit(b, fn, (self._as_arg(b, lhs, ctx, node), self._as_arg(b, rhs, ctx, node)), jt=jt)

    def _lookup(self, name, node, env, b, scope):
        if name in env:
            v = env[name]
            if isinstance(v, _Undefined):
                raise NotSupportedError(scope.ctx, v.node, f"{name} is not defined in the {v.branch} branch "
                                        f"(and was used at line {scope.ctx.first_line + node.lineno - 1})")
            return v
        found, v = scope.lookup(name)
        if not found:
            raise NotSupportedError(scope.ctx, node, f"undefined value {name}")
        return _compile_time(v)

    def _attribute(self, base, attr, b, ctx, node):
        if isinstance(base, fx.Node):
            jt = self._type_of(base)
            if jt in (TensorType, AnyType):
                if attr in _TENSOR_ATTRS:
                    return self._emit(b, getattr, (b.use(base), attr), jt=_TENSOR_ATTRS[attr])
                return _Method(base, attr)
            return _Method(base, attr)
        if isinstance(base, _SuperRef):
            mro = type(base.ref.module).__mro__
            for klass in mro[mro.index(base.cls) + 1:]:
                if attr in vars(klass):
                    fn = vars(klass)[attr]
                    if isinstance(fn, types.FunctionType):
                        return _BoundMethod(base.ref, fn, attr)
                    break
            raise NotSupportedError(ctx, node, f"super() has no method '{attr}' usable in scripted code")
        if isinstance(base, _ModuleRef):
            return self._module_attr(base, attr, b, ctx, node)
        if isinstance(base, tuple) and hasattr(base, "_fields"):
            return getattr(base, attr)
        try:
            value = getattr(base, attr)
        except AttributeError:
            raise NotSupportedError(ctx, node, f"object of type {type(base).__name__} has no attribute "
                                    f"'{attr}'") from None
        return _compile_time(value)

    def _module_attr(self, ref, attr, b, ctx, node):
        m = ref.module
        target = ref.prefix + attr
        if attr == "training":
            return self._get_attr(b, target, m.training, BoolType)
        if attr in m._parameters or attr in m._buffers:
            value = m._parameters.get(attr, m._buffers.get(attr))
            if value is None:
                return None
            return self._get_attr(b, target, value, TensorType)
        if attr in m._modules:
            sub = m._modules[attr]
            return None if sub is None else _ModuleRef(sub, target + ".")
        try:
            value = getattr(m, attr)
        except AttributeError:
            raise NotSupportedError(ctx, node, f"Module '{type(m).__name__}' has no attribute '{attr}'") from None
        if isinstance(value, Attribute):      # self.x = fabric.jit.Attribute(value, type)
            value = value.value
        if isinstance(value, Tensor):
            return self._get_attr(b, target, value, TensorType)
        if isinstance(value, types.MethodType) and value.__self__ is m:
            return _BoundMethod(ref, value.__func__, attr)
        if isinstance(value, property):  # pragma: no cover (getattr already evaluated it)
            return value
        return _compile_time(value)

    def _get_attr(self, b, target, value, jt):
        root = b.root()
        node = root.attr_nodes.get(target)
        if node is None:   # appended to the root graph: before the control-flow node being built
            node = root.graph.get_attr(target)
            root.attr_nodes[target] = node
            self.attr_objects[target] = value
            self.types[node] = jt
        return b.use(node)

    # ------------------------------------------------------------------ calls
    def _call(self, e, env, b, scope):
        ctx = scope.ctx
        fn = self._expr(e.func, env, b, scope)
        if fn is _annotate:
            jt = frontend.parse_annotation(_annotation_value(e.args[0], scope), scope.globals)
            v = self._expr(e.args[1], env, b, scope)
            if isinstance(v, fx.Node):
                self.types[v] = jt
            return v
        args = []
        for a in e.args:
            if isinstance(a, ast.Starred):   # *xs of a tuple known at compile time
                v = self._expr(a.value, env, b, scope)
                if not isinstance(v, (tuple, list)):
                    raise NotSupportedError(ctx, a, "*args must be a tuple whose length is known at compile time")
                args.extend(v)
            else:
                args.append(self._expr(a, env, b, scope))
        kwargs = {}
        for k in e.keywords:
            v = self._expr(k.value, env, b, scope)
            if k.arg is None:                # **kw of a dict literal with constant keys
                if not isinstance(v, dict):
                    raise NotSupportedError(ctx, k.value, "**kwargs must be a dict whose keys are known at "
                                            "compile time")
                kwargs.update(v)
            else:
                kwargs[k.arg] = v
        return self._apply(fn, args, kwargs, b, ctx, e)

    def _apply(self, fn, args, kwargs, b, ctx, e):
        from ._script import ScriptFunction, ScriptModule

        if fn is is_scripting:
            return True
        if fn is is_tracing:
            return False
        if isinstance(fn, _Method):
            jt = _METHOD_TYPES.get(fn.name, TensorType)
            if self._type_of(fn.obj).kind == "List" and fn.name in ("append", "extend", "insert", "pop"):
                jt = NoneType if fn.name != "pop" else self._type_of(fn.obj).params[0]
            if fn.name == "size" and not args and not kwargs:
                jt = JitType("List", (IntType,))
            elif fn.name == "size":
                jt = IntType
            return self._emit_method(b, fn.name, (b.use(fn.obj),) + tuple(self._as_arg(b, a, ctx, e) for a in args),
                                     {k: self._as_arg(b, v, ctx, e) for k, v in kwargs.items()}, jt)
        if isinstance(fn, _ModuleRef):
            m = fn.module
            if isinstance(m, ScriptModule):     # a traced/scripted child: its graph is inlined
                return self._inline_graph(m, fn.prefix, args, kwargs, b, ctx, e)
            from ..nn import Sequential
            if isinstance(m, Sequential) and type(m).forward is Sequential.forward:
                if len(args) != 1 or kwargs:
                    raise NotSupportedError(ctx, e, "Sequential takes exactly one argument")
                x = args[0]
                for child in self._static_items(fn, ctx, e):
                    x = self._apply(child, [x], {}, b, ctx, e)
                return x
            return self._inline_call(type(m).forward, fn, args, kwargs, b, ctx, e, f"{type(m).__name__}.forward")
        if isinstance(fn, _BoundMethod):
            return self._inline_call(fn.fn, fn.ref, args, kwargs, b, ctx, e, fn.name)
        if isinstance(fn, ScriptFunction):
            return self._inline_call(fn._original, None, args, kwargs, b, ctx, e, fn.__name__)
        if isinstance(fn, types.BuiltinFunctionType) and fn in _GRAPH_BUILTINS or fn in (int, float, bool, str):
            return self._builtin(fn, args, kwargs, b, ctx, e)
        if fn is range:
            if any(isinstance(a, fx.Node) for a in args):
                raise NotSupportedError(ctx, e, "range() of run-time values is only supported as a for-loop "
                                        "iterable")
            return range(*args)
        if fn in (enumerate, zip):
            if any(isinstance(a, fx.Node) for a in args):
                raise NotSupportedError(ctx, e, f"{fn.__name__}() over run-time values is not supported")
            seqs = [self._static_items(a, ctx, e) if not isinstance(a, int) else a for a in args]
            return list(fn(*seqs, **kwargs))
        if fn is isinstance or fn is jit_isinstance:
            return self._isinstance(args, ctx, e, b)
        if fn is super and not args:
            return self._super(e, ctx)
        if fn is type and len(args) == 1 and not isinstance(args[0], fx.Node):
            return type(args[0].module) if isinstance(args[0], _ModuleRef) else type(args[0])
        if fn is getattr:
            if len(args) < 2 or not isinstance(args[1], str):
                raise NotSupportedError(ctx, e, "getattr() needs a constant attribute name")
            return self._attribute(args[0], args[1], b, ctx, e)
        if fn is hasattr:
            obj = args[0].module if isinstance(args[0], _ModuleRef) else args[0]
            if isinstance(obj, fx.Node):
                raise NotSupportedError(ctx, e, "hasattr() on a run-time value is not supported")
            return hasattr(obj, args[1])
        if isinstance(fn, type) and issubclass(fn, BaseException):
            raise NotSupportedError(ctx, e, "exceptions can only be created in a raise statement")
        if _is_fabric_callable(fn):
            return self._emit(b, fn, tuple(self._as_arg(b, a, ctx, e) for a in args),
                              {k: self._as_arg(b, v, ctx, e) for k, v in kwargs.items()}, jt=_result_type(fn))
        if isinstance(fn, types.BuiltinFunctionType) and getattr(math, fn.__name__, None) is fn:
            if any(isinstance(a, fx.Node) for a in args):
                return self._emit(b, fn, tuple(self._as_arg(b, a, ctx, e) for a in args), jt=FloatType)
            return fn(*args, **kwargs)
        if isinstance(fn, types.FunctionType):
            return self._inline_call(fn, None, args, kwargs, b, ctx, e, fn.__name__)
        raise NotSupportedError(ctx, e, f"Python builtin {fn!r} is currently not supported in scripted code"
                                if isinstance(fn, types.BuiltinFunctionType) else
                                f"calling a value of type {type(fn).__name__} is not supported in scripted code")

    def _super(self, e, ctx):
        """``super()`` inside a method: the same module, looked up past the defining class."""
        scope = self._scopes[-1]
        cls = scope.closure.get("__class__")
        self_ref = scope.self_ref
        if cls is None or self_ref is None:
            raise NotSupportedError(ctx, e, "super() is only supported inside methods of the scripted modules")
        return _SuperRef(self_ref, cls)

    def _inline_graph(self, sm, prefix, args, kwargs, b, ctx, e):
        placeholders = [n for n in sm.graph.nodes if n.op == "placeholder"]
        if len(args) > len(placeholders):
            raise NotSupportedError(ctx, e, f"{sm.original_name}.forward() expected at most {len(placeholders)} "
                                    f"argument(s) but received {len(args)} argument(s)")
        values: dict = {}
        for i, ph in enumerate(placeholders):
            if i < len(args):
                values[ph] = args[i]
            elif ph.target in kwargs:
                values[ph] = kwargs[ph.target]
            elif ph.args:
                values[ph] = ph.args[0]
            else:
                raise NotSupportedError(ctx, e, f"{sm.original_name}.forward() is missing value for argument "
                                        f"'{ph.target}'")

        def value(n):
            v = values[n]
            return b.use(v) if isinstance(v, fx.Node) else v

        for node in sm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return fx.node.map_arg(node.args[0], value)
            if node.op == "get_attr":
                obj = sm
                for atom in node.target.split("."):
                    obj = getattr(obj, atom)
                jt = TensorType if isinstance(obj, Tensor) else BoolType if isinstance(obj, bool) else AnyType
                values[node] = self._get_attr(b, prefix + node.target, obj, jt)
                continue
            if node.op == "call_module":
                raise NotSupportedError(ctx, e, f"the graph of {sm.original_name} calls a submodule "
                                        f"({node.target}); it cannot be inlined")
            new = b.graph.create_node(node.op, node.target, fx.node.map_arg(node.args, value),
                                      fx.node.map_arg(node.kwargs, value))
            self.types[new] = AnyType
            values[node] = new
        return None

    def _isinstance(self, args, ctx, e, b=None):
        obj, cls = args
        classes = cls if isinstance(cls, tuple) else (cls,)
        if isinstance(obj, fx.Node):
            jt = self._type_of(obj)
            try:
                wants = [frontend.parse_annotation(c) if c is not type(None) else NoneType for c in classes]
            except ValueError as err:
                raise NotSupportedError(ctx, e, str(err)) from None
            for want in wants:
                if want == jt or (want.kind == jt.kind and not want.params):
                    return True
            if jt.kind == "Optional" and b is not None:
                # Optional[T] refines at run time: isinstance(x, T) is `x is not None`, isinstance(x, NoneType)
                # is `x is None`
                if any(w == jt.params[0] or (w.kind == jt.params[0].kind and not w.params) for w in wants):
                    return self._emit(b, _ops.is_not_none, (b.use(obj),), jt=BoolType)
                if NoneType in wants:
                    return self._emit(b, _ops.is_none, (b.use(obj),), jt=BoolType)
                return False
            if jt == AnyType:
                raise NotSupportedError(ctx, e, "isinstance() of a value whose type is unknown at compile time")
            return False
        if isinstance(obj, _ModuleRef):
            return isinstance(obj.module, cls)
        if all(isinstance(c, type) for c in classes):
            return isinstance(obj, cls)
        return any(jit_isinstance(obj, c) for c in classes)

    def _builtin(self, fn, args, kwargs, b, ctx, e):
        if not any(isinstance(a, fx.Node) or _contains_node(a) for a in list(args) + list(kwargs.values())):
            if fn is print:
                return self._emit(b, print, tuple(args), kwargs, jt=NoneType)
            return fn(*args, **kwargs)
        jt = _GRAPH_BUILTINS[fn]
        if jt is None:
            types_ = {self._type_of(a) for a in args}
            jt = TensorType if TensorType in types_ else FloatType if FloatType in types_ else IntType
        return self._emit(b, fn, tuple(self._as_arg(b, a, ctx, e) for a in args),
                          {k: self._as_arg(b, v, ctx, e) for k, v in kwargs.items()}, jt=jt)

    def _inline_call(self, fn, self_ref, args, kwargs, b, ctx, e, name):
        mod = modifier_of(fn)
        if mod == FunctionModifiers.UNUSED:
            return self._emit(b, _ops.unused_called, (name,), jt=AnyType)
        if mod == FunctionModifiers.IGNORE:
            call_args = ((self_ref.module,) if self_ref is not None else ()) + tuple(
                self._as_arg(b, a, ctx, e) for a in args)
            return self._emit(b, fn, call_args, {k: self._as_arg(b, v, ctx, e) for k, v in kwargs.items()},
                              jt=AnyType)
        fdef, fctx = frontend.get_function_def(fn)
        sig = frontend.signature_types(fn, fdef, skip_self=self_ref is not None)
        names = [n for n, _, _ in sig]
        if len(args) > len(names):
            raise NotSupportedError(ctx, e, f"{name}() expected at most {len(names)} argument(s) but received "
                                    f"{len(args)} argument(s)")
        env = {}
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise NotSupportedError(ctx, e, f"{name}() got an unexpected keyword argument '{k}'")
            bound[k] = v
        for pname, jt, default in sig:
            if pname in bound:
                v = bound[pname]
            elif default is not inspect.Parameter.empty:
                v = default
            else:
                raise NotSupportedError(ctx, e, f"{name}() is missing value for argument '{pname}'")
            if not isinstance(v, fx.Node) and not _contains_node(v) and not isinstance(v, _ModuleRef) \
                    and jt != TensorType and not jt.accepts(v) and not (jt.kind == "Tensor"):
                raise NotSupportedError(ctx, e, f"{name}() Expected a value of type '{jt}' for argument '{pname}' "
                                        f"but instead found type '{type(v).__name__}'")
            if isinstance(v, fx.Node) and self._type_of(v) == AnyType:
                self.types[v] = jt
            env[pname] = v
        if self_ref is not None:
            env[fdef.args.args[0].arg] = self_ref
        return self._inline_body(fn, fdef, fctx, env, b)

    # ------------------------------------------------------------------ emission helpers
    def _emit(self, b, fn, args, kwargs=None, jt=AnyType):
        args = tuple(_arg(b, a) for a in args)
        kwargs = {k: _arg(b, v) for k, v in (kwargs or {}).items()}
        node = b.graph.call_function(fn, args, kwargs)
        self.types[node] = jt if jt is not None else AnyType
        return node

    def _emit_method(self, b, name, args, kwargs, jt):
        node = b.graph.call_method(name, args, kwargs)
        self.types[node] = jt
        return node

    def _as_arg(self, b, v, ctx, node):
        """``v`` as an argument of a node in ``b``'s graph (raises for modules and functions)."""
        if isinstance(v, fx.Node):
            return b.use(v)
        if isinstance(v, (tuple, list)) and not hasattr(v, "_fields"):
            return type(v)(self._as_arg(b, x, ctx, node) for x in v)
        if isinstance(v, dict):
            return {k: self._as_arg(b, x, ctx, node) for k, x in v.items()}
        if isinstance(v, slice):
            return slice(*(self._as_arg(b, x, ctx, node) for x in (v.start, v.stop, v.step)))
        if isinstance(v, (_ModuleRef, _BoundMethod, _Method, types.FunctionType)):
            raise NotSupportedError(ctx, node, f"a {_kind(v)} cannot be used as a value in scripted code")
        if isinstance(v, _Undefined):
            raise NotSupportedError(ctx, v.node, f"{v.name} is not defined in the {v.branch} branch")
        return v

    def _type_of(self, v) -> JitType:
        if isinstance(v, fx.Node):
            return self.types.get(v, AnyType)
        if isinstance(v, bool):
            return BoolType
        if isinstance(v, int):
            return IntType
        if isinstance(v, float):
            return FloatType
        if isinstance(v, str):
            return StrType
        if v is None:
            return NoneType
        if isinstance(v, Tensor):
            return TensorType
        if isinstance(v, tuple):
            return JitType("Tuple", tuple(self._type_of(x) for x in v))
        return AnyType

    def _elem_type(self, v, idx) -> JitType:
        jt = self._type_of(v)
        if jt == TensorType:
            return TensorType
        if jt.kind == "List":
            return jt if isinstance(idx, slice) else jt.params[0]
        if jt.kind == "Tuple" and isinstance(idx, int) and idx < len(jt.params):
            return jt.params[idx]
        return AnyType

    def _merge_type(self, a, b) -> JitType:
        ta, tb = self._type_of(a), self._type_of(b)
        if a is _RAISED or a is None:
            return tb if a is _RAISED else JitType("Optional", (tb,))
        if b is _RAISED or b is None:
            return ta if b is _RAISED else JitType("Optional", (ta,))
        return ta if ta == tb else AnyType


class _Method:
    """``value.name`` before it is called: a method of a graph value."""

    def __init__(self, obj, name):
        self.obj, self.name = obj, name


class _Scope:
    """How names not bound locally resolve: closure cells, then globals, then builtins."""

    def __init__(self, fn, ctx):
        self.ctx = ctx
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup(self, name):
        for table in (self.closure, self.globals):
            if name in table:
                return True, table[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None

    def lookup_global(self, name):
        return self.lookup(name)[1]


_NO_RETURN = object()
_RAISED = object()


def _none_if_raised(v):
    return None if v is _RAISED or v is _NO_RETURN else v


def _match_returns(t, f):
    """Flatten the two branches' returned values into equally long lists."""
    if t is _RAISED and f is _RAISED:
        return [None], [None], None
    if isinstance(t, tuple) and (f is _RAISED or (isinstance(f, tuple) and len(f) == len(t))):
        return list(t), (list(f) if f is not _RAISED else [None] * len(t)), len(t)
    if isinstance(f, tuple) and t is _RAISED:
        return [None] * len(f), list(f), len(f)
    return [t], [f], None


def _arg(b, v):
    if isinstance(v, fx.Node):
        return b.use(v)
    return fx.node.map_arg(v, b.use) if isinstance(v, (tuple, list, dict, slice)) else v


def _contains_node(v) -> bool:
    if isinstance(v, (tuple, list)):
        return any(isinstance(x, fx.Node) or _contains_node(x) for x in v)
    if isinstance(v, slice):
        return any(isinstance(x, fx.Node) for x in (v.start, v.stop, v.step))
    return False


def _is_data(v) -> bool:
    return isinstance(v, fx.Node) or v is None or v is _RAISED or isinstance(v, _CONSTANT_TYPES) or (
        isinstance(v, tuple) and all(_is_data(x) for x in v))


def _kind(v) -> str:
    if isinstance(v, fx.Node):
        return "run-time value"
    if isinstance(v, _ModuleRef):
        return f"module ({type(v.module).__name__})"
    if isinstance(v, (_BoundMethod, _Method)) or callable(v):
        return "function"
    return type(v).__name__


def _is_fabric_callable(fn) -> bool:
    mod = getattr(fn, "__module__", None) or ""
    if isinstance(fn, type):
        return False
    return callable(fn) and (mod == "fabric" or mod.startswith("fabric.")) and not mod.startswith("fabric.jit")


def _result_type(fn) -> JitType:
    name = getattr(fn, "__name__", "")
    if name in ("is_tensor", "is_floating_point", "is_complex", "equal", "allclose", "is_nonzero"):
        return BoolType
    if name in ("numel",):
        return IntType
    if name in ("split", "chunk", "unbind", "tensor_split", "meshgrid", "broadcast_tensors"):
        return JitType("List", (TensorType,))
    return TensorType if name not in ("max", "min", "sort", "topk", "std_mean", "var_mean", "lstsq",
                                      "kthvalue", "mode", "median", "aminmax", "slogdet") else AnyType


def _annotation_value(node, scope):
    """The annotation object an annotation expression names (evaluated in the function's scope)."""
    src = ast.unparse(node)
    return src if not isinstance(node, ast.Constant) else node.value


def _compile_time(v):
    return _ModuleRef(v, "") if isinstance(v, Module) else v
