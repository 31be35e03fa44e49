r"""Pictures of the autograd graph: ``make_dot(output, params=)`` (as torchviz).

The graph is returned as Graphviz DOT text (always available); rendering
to SVG/PNG/PDF uses the ``graphviz`` Python package or the ``dot`` program
when one is installed.  Boxes: the output (green), graph nodes (grey, their
class names: ``MulBackward0``), leaf tensors (blue, with the parameter name
when ``params`` names it, and the shape), saved tensors with
``show_saved=True`` (orange).

Example::

    >>> import fabric
    >>> from fabric.viz import make_dot
    >>> w = fabric.ones(2, requires_grad=True)
    >>> dot = make_dot((w * 3.0).sum(), params={"w": w})
    >>> for line in dot.source.splitlines():
    ...     if "label" in line:
    ...         print(line.split(" ", 1)[1])
    [label="\n ()" fillcolor=darkolivegreen1]
    [label="SumBackward0"]
    [label="MulBackward0"]
    [label="w\n (2)" fillcolor=lightblue]
"""
from __future__ import annotations

import shutil
import subprocess

__all__ = ["make_dot", "Dot"]

_NODE_ATTR = {"style": "filled", "shape": "box", "align": "left", "fontsize": "10", "ranksep": "0.1",
              "height": "0.2", "fontname": "monospace"}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(d: dict) -> str:
    return " ".join(f"{k}={_quote(v) if not v.isidentifier() else v}" for k, v in d.items())


class Dot:
    """A DOT graph: ``source`` is the text; ``pipe``/``render`` draw it with Graphviz.
    Jupyter shows it as SVG when Graphviz is installed."""

    def __init__(self, graph_attr: dict | None = None, node_attr: dict | None = None):
        self.graph_attr = graph_attr or {}
        self.node_attr = node_attr or {}
        self.body: list = []

    def node(self, name: str, label: str, **attrs) -> None:
        self.body.append(f"\t{name} [label={_quote(label)}" + (" " + _attrs(attrs) if attrs else "") + "]")

    def edge(self, tail: str, head: str, **attrs) -> None:
        self.body.append(f"\t{tail} -> {head}" + (" [" + _attrs(attrs) + "]" if attrs else ""))

    @property
    def source(self) -> str:
        lines = ["digraph {"]
        if self.graph_attr:
            lines.append(f"\tgraph [{_attrs(self.graph_attr)}]")
        if self.node_attr:
            lines.append(f"\tnode [{_attrs(self.node_attr)}]")
        return "\n".join(lines + self.body + ["}"]) + "\n"

    def __str__(self) -> str:
        return self.source

    def pipe(self, format: str = "svg") -> bytes:
        """The drawing as bytes (``format``: svg, png, pdf ...)."""
        try:
            import graphviz  # pyright: ignore[reportMissingImports] (optional)
        except ImportError:
            graphviz = None
        if graphviz is not None:
            return graphviz.Source(self.source).pipe(format=format)
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError("drawing a graph needs Graphviz: install the `dot` program (e.g. apt-get install "
                               "graphviz) or the graphviz Python package with it; Dot.source is the DOT text")
        return subprocess.run([exe, f"-T{format}"], input=self.source.encode(), capture_output=True,
                              check=True).stdout

    def render(self, filename: str = "graph", format: str = "pdf") -> str:
        """Write ``filename.<format>`` (and ``filename``, the DOT text); returns the drawing's path."""
        with open(filename, "w") as f:
            f.write(self.source)
        out = f"{filename}.{format}"
        with open(out, "wb") as f:
            f.write(self.pipe(format))
        return out

    def _repr_mimebundle_(self, include=None, exclude=None):
        try:
            return {"image/svg+xml": self.pipe("svg").decode()}
        except RuntimeError:
            return {"text/plain": self.source}


def _shape(t) -> str:
    return "(" + ", ".join(str(int(v)) for v in t.shape) + ")"


def _node_label(fn, show_attrs: bool, max_attr_chars: int) -> str:
    name = type(fn).__name__
    if not show_attrs:
        return name
    extras = []
    for k, v in sorted(vars(fn).items()):
        if k.startswith("_"):
            continue
        text = str(v)
        extras.append(f"{k}: {text if len(text) <= max_attr_chars else text[:max_attr_chars - 3] + '...'}")
    return "\n".join([name] + extras) if extras else name


def make_dot(var, params: dict | None = None, show_attrs: bool = False, show_saved: bool = False,
             max_attr_chars: int = 50) -> Dot:
    """The autograd graph that produced ``var`` (a Tensor or a sequence of
    them) as a :class:`Dot`.  ``params`` maps names to leaf tensors (e.g.
    ``dict(model.named_parameters())``); ``show_attrs`` adds the plain
    attributes a node stored, ``show_saved`` the tensors it saved."""
    from ._tensor import Tensor
    from .autograd.function import AccumulateGrad

    names = {id(v): k for k, v in (params or {}).items()}
    dot = Dot(graph_attr={"size": "12,12"}, node_attr=dict(_NODE_ATTR))
    seen = set()

    def leaf_label(t, name=None):
        name = names.get(id(t), "") if name is None else name
        return f"{name}\n {_shape(t)}"

    def nid(obj) -> str:
        return f"n{id(obj):x}"

    outputs = list(var) if isinstance(var, (tuple, list)) else [var]
    stack = []
    for out in outputs:
        dot.node(nid(out), leaf_label(out), fillcolor="darkolivegreen1")
        if out.grad_fn is not None:
            stack.append(out.grad_fn)
            dot.edge(nid(out.grad_fn), nid(out))
    while stack:  # iterative: deep graphs do not hit the recursion limit
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            leaf = fn.variable
            if leaf is None:
                dot.node(nid(fn), "AccumulateGrad\n (leaf gone)", fillcolor="lightblue")
            else:
                dot.node(nid(fn), leaf_label(leaf), fillcolor="lightblue")
            continue
        dot.node(nid(fn), _node_label(fn, show_attrs, max_attr_chars))
        if show_saved and fn._saved not in (None,) and isinstance(fn._saved, tuple):
            for i, s in enumerate(fn._saved):
                if s is None:
                    continue
                value = fn._unpack(s)
                if isinstance(value, Tensor):
                    sid = f"{nid(fn)}s{i}"
                    dot.node(sid, f"saved {i}\n {_shape(value)}", fillcolor="orange")
                    dot.edge(sid, nid(fn), dir="none")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                dot.edge(nid(nxt), nid(fn))
                stack.append(nxt)
    return dot
