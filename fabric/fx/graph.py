"""``fabric.fx.Graph``: the one graph IR of fabric (see docs/graph.md).

A graph is a linked list of :class:`Node` in execution order.  It prints as
PyTorch's ``print(graph)`` and generates the Python source of ``forward``.

Example::

    >>> import operator
    >>> from fabric import fx
    >>> g = fx.Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_function(operator.add, (x, 1))
    >>> _ = g.output(y)
    >>> print(g.python_code("self").src.strip())
    def forward(self, x):
        add = x + 1;  x = None
        return add
"""
from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .node import _OPERATOR_FUNCS, Node, _format_target, _qualified_name, map_arg

__all__ = ["Graph", "PythonCode"]

# operator.X -> a format for its Python syntax (``a + b``), as fx prints it.
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
           operator.rshift: ">>", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
           operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}
_SIMPLE_CONSTANTS = (int, float, bool, str, bytes, type(None), complex)
_EMPTY = object()


@dataclass
class PythonCode:
    """Generated source and the globals it needs."""
    src: str
    globals: dict


class _Namespace:
    """Unique, valid Python identifiers for node names (``sum`` -> ``sum_1``)."""

    def __init__(self):
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        name = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate)
        if not name or name[0].isdigit():
            name = f"_{name}"
        m = re.match(r"(.*)_(\d+)$", name)
        base = m.group(1) if m else name
        if name not in self._used and not _is_reserved(name):
            self._used.add(name)
            return name
        count = self._base_count.get(base, 0)
        while True:
            count += 1
            cand = f"{base}_{count}"
            if cand not in self._used:
                break
        self._base_count[base] = count
        self._used.add(cand)
        return cand

    def reserve(self, name: str) -> None:
        self._used.add(name)


def _is_reserved(name: str) -> bool:
    return keyword.iskeyword(name) or hasattr(builtins, name) or name in ("self", "fabric", "inf", "nan", "device")


class _NodeList:
    def __init__(self, graph, direction: str = "_next"):
        self._graph = graph
        self._dir = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self):
        root, d = self._graph._root, self._dir
        cur = getattr(root, d)
        while cur is not root:
            nxt = getattr(cur, d)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, "_prev" if self._dir == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph, fn):
        self.graph, self.orig = graph, graph._insert
        graph._insert = fn

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig


class Graph:
    """A list of :class:`Node` (placeholder / get_attr / call_function / call_method / call_module / output)."""

    def __init__(self, owning_module=None, tracer_cls=None):
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._namespace = _Namespace()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._codegen_globals_cache = None

    # --- iteration --------------------------------------------------------------
    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # --- building ---------------------------------------------------------------
    def create_node(self, op: str, target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr=None) -> Node:
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        candidate = name if name is not None else self._target_to_str(target)
        name = self._namespace.create_name(candidate)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    @staticmethod
    def _target_to_str(target) -> str:
        if isinstance(target, str):
            name = target
        else:
            name = getattr(target, "__name__", None) or type(target).__name__
        name = name.replace(".", "_")
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            name = name[2:-2]  # operator.__add__ -> add
        return _camel_to_snake(name)

    def placeholder(self, name: str, type_expr=None, default_value: Any = _EMPTY) -> Node:
        args = () if default_value is _EMPTY else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n: Node | None = None):
        """``with graph.inserting_before(node):`` new nodes go right before ``node``."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None):
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """Copy ``node`` (from any graph) into this one, mapping its inputs with ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` except its output; returns the value the output returned."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def eliminate_dead_code(self) -> bool:
        """Erase nodes without users that have no side effects; True if any were removed."""
        changed = False
        for node in reversed(self.nodes):
            if not node.is_impure() and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check that nodes belong here, appear after their inputs, and that targets exist on the owner."""
        seen: set[Node] = set()
        names: set[str] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, "
                                       f"but was used as an argument! If you are copying nodes from another "
                                       f"graph, make sure to use ``arg_transform`` on node_copy() to remap "
                                       f"values\n{self}")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       f"Please check that Nodes in the graph are topologically ordered\n{self}")
            seen.add(node)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                obj = mod
                for atom in node.target.split("."):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent "
                                           f"attribute {atom} of {obj}")
                    obj = getattr(obj, atom)

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        val_map: dict = {}
        rv = g.graph_copy(self, val_map)
        old_out = next((n for n in self.nodes if n.op == "output"), None)
        if old_out is not None:
            g.output(rv, old_out.type)
        return g

    # --- printing ---------------------------------------------------------------
    def __str__(self) -> str:
        lines = ["graph():"]
        for n in self.nodes:
            lines.append("    " + n.format_node())
        return "\n".join(lines)

    __repr__ = __str__

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs), as PyTorch does with ``tabulate``."""
        rows = [[n.op, n.name, _format_target(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())

    # --- code generation ----------------------------------------------------------
    def python_code(self, root_module: str = "self") -> PythonCode:
        """The source of ``def forward(self, ...)`` for this graph, and the globals it refers to."""
        return _CodeGen(self, root_module).generate()

    def on_generate_code(self, make_transformer):  # torch.fx hook; fabric has no code transformers yet
        raise NotImplementedError("Graph.on_generate_code is not supported by fabric.fx")


def _camel_to_snake(name: str) -> str:
    if name.islower() or "_" in name or not any(c.isupper() for c in name):
        return name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _CodeGen:
    def __init__(self, graph: Graph, root: str):
        self.graph, self.root = graph, root
        import fabric
        self.globals: dict = {"fabric": fabric, "inf": math.inf, "nan": math.nan, "device": fabric.device,
                              "operator": operator, "builtins": builtins, "math": math}
        self._global_names: dict[int, str] = {}
        self._taken = {n.name for n in graph.nodes} | {n.target.lstrip("*") for n in graph.nodes
                                                       if n.op == "placeholder"}

    def add_global(self, hint: str, obj) -> str:
        key = id(obj)
        if key in self._global_names:
            return self._global_names[key]
        base = re.sub(r"[^0-9a-zA-Z_]", "_", hint) or "_g"
        name, i = base, 0
        while (name in self.globals and self.globals[name] is not obj) or name in self._taken:
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self._global_names[key] = name
        return name

    def fn_name(self, fn) -> str:
        qn = _qualified_name(fn)
        if qn.split(".")[0] in ("fabric", "operator", "builtins", "math") and self._resolves(qn, fn):
            return qn
        return self.add_global(getattr(fn, "__name__", "fn"), fn)

    def _resolves(self, qn: str, fn) -> bool:
        head, *rest = qn.split(".")
        obj = self.globals.get(head)
        try:
            for a in rest:
                obj = getattr(obj, a)
        except AttributeError:
            return False
        return obj is fn or getattr(obj, "__wrapped__", None) is fn or getattr(fn, "__wrapped__", None) is obj

    def fmt(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return self.add_global(type(a).__name__, type(a)) + "(" + ", ".join(self.fmt(e) for e in a) + ")"
            inner = ", ".join(self.fmt(e) for e in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.fmt(e) for e in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.fmt(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.fmt(a.start)}, {self.fmt(a.stop)}, {self.fmt(a.step)})"
        if isinstance(a, float) and (math.isinf(a) or math.isnan(a)):
            return repr(a) if math.isnan(a) else ("inf" if a > 0 else "-inf")
        if isinstance(a, _SIMPLE_CONSTANTS):
            return repr(a)
        if a is Ellipsis:
            return "..."
        import fabric
        if isinstance(a, (fabric.dtype, fabric.device)):
            return repr(a)
        if callable(a) and not isinstance(a, fabric.Tensor):
            return self.fn_name(a)
        return self.add_global(f"_{type(a).__name__.lower()}_constant", a)

    def fmt_call(self, args, kwargs) -> str:
        parts = [self.fmt(a) for a in args] + [f"{k} = {self.fmt(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def generate(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        last_use: dict[Node, Node] = {}
        for node in reversed(nodes):
            for inp in node.all_input_nodes:
                last_use.setdefault(inp, node)
        frees: dict[Node, list[Node]] = {}
        for value, user in last_use.items():
            frees.setdefault(user, []).append(value)
        params, body = [], []
        for node in nodes:
            if node.op == "placeholder":
                if node.target.startswith("*"):
                    params.append(node.target)
                else:
                    params.append(node.target + (f" = {self.fmt(node.args[0])}" if node.args else ""))
                if node.name != node.target.lstrip("*"):
                    body.append(f"{node.name} = {node.target.lstrip('*')}")
                continue
            if node.op == "output":
                body.append(f"return {self.fmt(node.args[0])}")
                continue
            line = f"{node.name} = {self.emit(node)}"
            dead = [v.name for v in frees.get(node, [])]
            if node.op != "output" and not node.users:
                dead.append(node.name)
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not any(n.op == "output" for n in nodes):
            body.append("pass")
        src = "\n\n\ndef forward(" + ", ".join([self.root] + params) + "):\n"
        src += "".join(f"    {line}\n" for line in body) + "    "
        return PythonCode(src, self.globals)

    def emit(self, node: Node) -> str:
        args, kwargs = node.args, node.kwargs
        if node.op == "get_attr":
            return _attr_path(self.root, node.target)
        if node.op == "call_module":
            return f"{_attr_path(self.root, node.target)}({self.fmt_call(args, kwargs)})"
        if node.op == "call_method":
            return f"{self.fmt(args[0])}.{node.target}({self.fmt_call(args[1:], kwargs)})"
        fn = node.target
        if not kwargs and fn in _OPERATOR_FUNCS:
            if fn in _BINARY and len(args) == 2:
                return f"{self.fmt(args[0])} {_BINARY[fn]} {self.fmt(args[1])}"
            if fn in _UNARY and len(args) == 1:
                return f"{_UNARY[fn]}{self.fmt(args[0])}"
            if fn is operator.getitem and len(args) == 2:
                return f"{self.fmt(args[0])}[{self.fmt(args[1])}]"
        if fn is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier():
            return f"{self.fmt(args[0])}.{args[1]}"
        return f"{self.fn_name(fn)}({self.fmt_call(args, kwargs)})"


def _attr_path(root: str, target: str) -> str:
    """``self.layers.0.lin`` -> ``getattr(self.layers, "0").lin`` (as fx writes it)."""
    expr = root
    for atom in target.split("."):
        if atom.isidentifier() and not keyword.iskeyword(atom):
            expr = f"{expr}.{atom}"
        else:
            expr = f'getattr({expr}, "{atom}")'
    return expr
