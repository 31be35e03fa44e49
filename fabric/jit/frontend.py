"""The script front end: source → checked Python AST, and type annotations.

``get_function_def(fn)`` parses a function's (or method's) source and checks
that it stays inside the subset ``fabric.jit.script`` compiles; anything
outside it raises :class:`UnsupportedNodeError` / :class:`NotSupportedError`
naming the construct and pointing at its line, in TorchScript's format::

    try blocks aren't supported:
      File "model.py", line 9
        try:
        ~~~ <--- HERE

``parse_annotation`` turns ``int``, ``float``, ``bool``, ``str``, ``Tensor``,
``List[T]``, ``Tuple[...]``, ``Optional[T]``, ``Dict[K, V]`` (typing or
builtin generics, or strings of them) into a :class:`JitType`.

Example::

    >>> from typing import List, Optional
    >>> from fabric.jit.frontend import parse_annotation
    >>> str(parse_annotation(Optional[List[int]]))
    'Optional[List[int]]'
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import typing

__all__ = ["FrontendError", "NotSupportedError", "UnsupportedNodeError", "SourceContext", "get_function_def",
           "JitType", "parse_annotation", "TensorType", "IntType", "FloatType", "BoolType", "StrType", "NoneType",
           "AnyType"]


class SourceContext:
    """Where a function's source came from: file, first line, the dedented text."""

    def __init__(self, source: str, filename: str, first_line: int, name: str):
        self.source = source
        self.lines = source.splitlines()
        self.filename = filename
        self.first_line = first_line
        self.name = name

    def highlight(self, node) -> str:
        """TorchScript's ``File "...", line N`` block with ``~~~ <--- HERE`` under ``node``."""
        row = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_row = getattr(node, "end_lineno", row) or row
        end_col = getattr(node, "end_col_offset", None)
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        if end_col is None or end_row != row:
            end_col = len(line.rstrip())
        width = max(1, end_col - col)
        out = [f'  File "{self.filename}", line {self.first_line + row - 1}']
        out += self.lines[max(0, row - 3):row]
        out.append(" " * col + "~" * width + " <--- HERE")
        out += self.lines[row:row + 2]
        return "\n".join(out) + "\n"


class FrontendError(Exception):
    """A script compilation error pointing at a source location."""

    def __init__(self, ctx: SourceContext | None, node, msg: str):
        self.msg = msg
        self.source_range = (ctx, node)
        text = msg + ":\n" + ctx.highlight(node) if ctx is not None and node is not None else msg
        super().__init__(text)


class NotSupportedError(FrontendError):
    """A Python feature the script compiler does not support."""


class UnsupportedNodeError(NotSupportedError):
    """A Python statement or expression kind outside the scripted subset."""

    def __init__(self, ctx: SourceContext, node, what: str | None = None):
        if what is None:
            what = _NODE_NAMES.get(type(node), type(node).__name__)
        super().__init__(ctx, _trim(node), f"{what} aren't supported")


_NODE_NAMES = {
    ast.Try: "try blocks", ast.With: "with statements", ast.AsyncWith: "async with statements",
    ast.Global: "global variables", ast.Nonlocal: "nonlocal variables", ast.Import: "import statements",
    ast.ImportFrom: "import statements", ast.FunctionDef: "function definitions",
    ast.AsyncFunctionDef: "async function definitions", ast.ClassDef: "class definitions",
    ast.Lambda: "Lambda", ast.Yield: "Yield", ast.YieldFrom: "YieldFrom", ast.Await: "Await",
    ast.Set: "Set", ast.SetComp: "SetComp", ast.Delete: "del statements",
    ast.AsyncFor: "async for loops", ast.NamedExpr: "assignment expressions", ast.Starred: "Starred",
    ast.Match: "match statements",
}
if hasattr(ast, "TryStar"):
    _NODE_NAMES[ast.TryStar] = "try blocks"


class _Keyword:
    """A zero-width-ish stand-in so the caret spans just the keyword (``try``, ``def``...)."""

    def __init__(self, node, length):
        self.lineno = node.lineno
        self.col_offset = node.col_offset
        self.end_lineno = node.lineno
        self.end_col_offset = node.col_offset + length


_KEYWORD_LEN = {ast.Try: 3, ast.With: 4, ast.Global: 6, ast.Nonlocal: 8, ast.Import: 6, ast.ImportFrom: 4,
                ast.FunctionDef: 3, ast.AsyncFunctionDef: 9, ast.ClassDef: 5, ast.Lambda: 1, ast.Yield: 1,
                ast.YieldFrom: 1, ast.Await: 1, ast.Set: 1, ast.Delete: 3, ast.AsyncFor: 9, ast.AsyncWith: 10,
                ast.Match: 5}


def _trim(node):
    n = _KEYWORD_LEN.get(type(node))
    return _Keyword(node, n) if n is not None else node


_STMTS = (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.For, ast.While, ast.Expr, ast.Pass,
          ast.Assert, ast.Raise, ast.Break, ast.Continue)
_EXPRS = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
          ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Dict, ast.IfExp, ast.ListComp, ast.comprehension,
          ast.keyword, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context, ast.arguments,
          ast.arg, ast.Starred, ast.JoinedStr, ast.FormattedValue, ast.GeneratorExp)


def _check_subset(ctx: SourceContext, fdef: ast.FunctionDef) -> None:
    args = fdef.args
    bad = args.vararg or args.kwarg or (args.kwonlyargs and any(d is not None for d in args.kw_defaults))
    if bad:
        where = args.vararg or args.kwarg or args.kwonlyargs[0]
        raise NotSupportedError(ctx, where, "Compiled functions can't take variable number of arguments or use "
                                "keyword-only arguments with defaults")
    for stmt in fdef.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.stmt,)) and not isinstance(node, _STMTS):
                raise UnsupportedNodeError(ctx, node)
            if isinstance(node, ast.expr) and not isinstance(node, _EXPRS):
                raise UnsupportedNodeError(ctx, node)


def get_function_def(fn) -> tuple[ast.FunctionDef, SourceContext]:
    """Parse ``fn``'s source into its ``FunctionDef`` and check the scripted subset.

    Raises OSError (as ``inspect.getsource``) when the source is unavailable."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise OSError(f"Can't get source for {fn}. TorchScript requires source access in order to carry out "
                      "compilation, make sure original .py files are available.") from e
    source = textwrap.dedent("".join(lines))
    filename = inspect.getsourcefile(fn) or "<unknown>"
    ctx = SourceContext(source, filename, first, fn.__name__)
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef,)):
        raise UnsupportedNodeError(ctx, fdef)
    _check_subset(ctx, fdef)
    return fdef, ctx


# ---------------------------------------------------------------------------- types

class JitType:
    """A TorchScript type: a kind (``Tensor``, ``int``, ``List`` ...) and its parameters."""

    __slots__ = ("kind", "params")

    def __init__(self, kind: str, params: tuple = ()):
        self.kind = kind
        self.params = params

    def __eq__(self, other):
        return isinstance(other, JitType) and (self.kind, self.params) == (other.kind, other.params)

    def __hash__(self):
        return hash((self.kind, self.params))

    def __str__(self):
        if not self.params:
            return self.kind
        return f"{self.kind}[{', '.join(str(p) for p in self.params)}]"

    __repr__ = __str__

    def accepts(self, value) -> bool:
        """Whether a runtime ``value`` has this type (bool is not an int, int is a float, as in TorchScript)."""
        from fabric import Tensor

        k = self.kind
        if k == "Any":
            return True
        if k == "Tensor":
            return isinstance(value, Tensor)
        if k == "int":
            return isinstance(value, int) and not isinstance(value, bool)
        if k == "float":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if k == "bool":
            return isinstance(value, bool)
        if k == "str":
            return isinstance(value, str)
        if k == "NoneType":
            return value is None
        if k == "Optional":
            return value is None or self.params[0].accepts(value)
        if k == "List":
            return isinstance(value, list) and all(self.params[0].accepts(v) for v in value)
        if k == "Tuple":
            return (isinstance(value, tuple) and len(value) == len(self.params)
                    and all(t.accepts(v) for t, v in zip(self.params, value)))
        if k == "Dict":
            return isinstance(value, dict) and all(self.params[0].accepts(a) and self.params[1].accepts(b)
                                                   for a, b in value.items())
        return False


TensorType = JitType("Tensor")
IntType = JitType("int")
FloatType = JitType("float")
BoolType = JitType("bool")
StrType = JitType("str")
NoneType = JitType("NoneType")
AnyType = JitType("Any")

_SIMPLE = {int: IntType, float: FloatType, bool: BoolType, str: StrType, type(None): NoneType, None: NoneType,
           typing.Any: AnyType}


def parse_annotation(ann, globals_: dict | None = None) -> JitType:
    """The :class:`JitType` of a Python annotation (object or string).

    Raises ValueError naming the annotation when it is not a supported type."""
    from fabric import Tensor
    from fabric.nn import Parameter

    if isinstance(ann, str):
        import fabric

        env = {"Tensor": Tensor, "List": list, "Tuple": tuple, "Optional": typing.Optional,
               "Dict": dict, "Union": typing.Union, "Any": typing.Any, "torch": fabric, "fabric": fabric}
        env.update(globals_ or {})
        try:
            ann = eval(compile(ast.Expression(ast.parse(ann, mode="eval").body), "<annotation>", "eval"),
                       {"__builtins__": {"int": int, "float": float, "bool": bool, "str": str, "None": None,
                                         "list": list, "tuple": tuple, "dict": dict}}, env)
        except Exception as e:
            raise ValueError(f"Unknown type annotation: '{ann}'") from e
    if ann in _SIMPLE:
        return _SIMPLE[ann]
    if ann is Tensor or ann is Parameter:
        return TensorType
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Final:
        return parse_annotation(args[0], globals_) if args else AnyType
    if origin in (list, list) and len(args) == 1:
        return JitType("List", (parse_annotation(args[0], globals_),))
    if origin in (dict, dict) and len(args) == 2:
        return JitType("Dict", (parse_annotation(args[0], globals_), parse_annotation(args[1], globals_)))
    if origin in (tuple, tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            raise ValueError(f"Unknown type annotation: '{ann}' (variadic tuples are not supported)")
        if args == ((),):
            return JitType("Tuple", ())
        return JitType("Tuple", tuple(parse_annotation(a, globals_) for a in args))
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        members = [a for a in args if a is not type(None)]
        if len(members) == 1 and len(args) == 2:
            return JitType("Optional", (parse_annotation(members[0], globals_),))
    raise ValueError(f"Unknown type annotation: '{ann}'")


def signature_types(fn, fdef: ast.FunctionDef, skip_self: bool) -> list[tuple[str, JitType, object]]:
    """``(name, type, default)`` for each argument; unannotated arguments are Tensors, as in TorchScript.
    ``default`` is ``inspect.Parameter.empty`` when there is none."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    sig = inspect.signature(fn)
    hints = {}
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = dict(getattr(fn, "__annotations__", {}))
    out = []
    params = list(sig.parameters.values())
    if skip_self:
        params = params[1:]
    for p in params:
        ann = hints.get(p.name, p.annotation)
        jt = TensorType if ann is inspect.Parameter.empty else parse_annotation(ann, fn.__globals__)
        out.append((p.name, jt, p.default))
    return out
