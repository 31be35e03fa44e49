"""``fabric.export``: capture a module as an :class:`ExportedProgram` (graph + state + signature).

Built on the graph IR of :mod:`fabric.fx` (symbolic tracing; modules of
``fabric.nn`` stay ``call_module`` nodes), with shapes propagated from the
example inputs into ``node.meta["tensor_meta"]``.  ``Dim`` marks dynamic
dimensions; every other dimension is static and is checked when the program's
``module()`` is called, as in PyTorch.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> from fabric.export import export, Dim
    >>> m = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
    >>> ep = export(m, (fabric.ones(3, 4),), dynamic_shapes={"input": {0: Dim("batch")}})
    >>> ep.module()(fabric.ones(5, 4)).shape
    fabric.Size([5, 2])
    >>> [s.target for s in ep.graph_signature.input_specs]
    ['0.weight', '0.bias', None]
"""
from __future__ import annotations

import copy
import enum
import inspect
from dataclasses import dataclass, field
from typing import Any

from .._tensor import Tensor
from ..fx import GraphModule, Tracer
from ..fx.passes.shape_prop import ShapeProp
from ..nn.modules.module import Module
from ..nn.parameter import Parameter

__all__ = ["export", "ExportedProgram", "Dim", "ExportGraphSignature", "InputSpec", "OutputSpec", "InputKind",
           "OutputKind", "TensorArgument", "ExportBackwardSignature", "dims"]


class Dim:
    """A dynamic dimension: ``Dim("batch", min=1, max=1024)``.

    ``Dim.AUTO`` / ``Dim.DYNAMIC`` mark a dimension dynamic without a name, ``Dim.STATIC`` keeps it static.
    """

    AUTO: Dim
    DYNAMIC: Dim
    STATIC: Dim

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        if min is not None and max is not None and min > max:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min = 0 if min is None else int(min)
        self.max = int(max) if max is not None else None

    def __repr__(self) -> str:
        if self.min == 0 and self.max is None:
            return f"Dim('{self.__name__}')"
        return f"Dim('{self.__name__}', min={self.min}, max={self.max})"


Dim.AUTO = Dim("AUTO")
Dim.DYNAMIC = Dim("DYNAMIC")
Dim.STATIC = Dim("STATIC")


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple:
    """Several :class:`Dim` at once: ``batch, seq = dims("batch", "seq")``."""
    return tuple(Dim(n, min=min, max=max) for n in names)


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()


@dataclass
class TensorArgument:
    name: str


@dataclass
class InputSpec:
    kind: InputKind
    arg: TensorArgument
    target: str | None
    persistent: bool | None = None


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: TensorArgument
    target: str | None


@dataclass
class ExportBackwardSignature:
    gradients_to_parameters: dict = field(default_factory=dict)
    gradients_to_user_inputs: dict = field(default_factory=dict)
    loss_output: str = ""


@dataclass
class ExportGraphSignature:
    """What each graph input and output is: parameters and buffers (read by ``get_attr`` nodes), user inputs,
    user outputs."""
    input_specs: list
    output_specs: list

    @property
    def parameters(self) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind is InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind is InputKind.BUFFER)

    @property
    def user_inputs(self) -> tuple:
        return tuple(s.arg.name for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        return tuple(s.arg.name for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)


class ExportedProgram:
    """A captured program: ``graph_module``, ``graph``, ``graph_signature``, ``state_dict``, ``module()``."""

    def __init__(self, graph_module: GraphModule, graph_signature: ExportGraphSignature, state_dict: dict,
                 range_constraints: dict, input_shapes: list, example_inputs: tuple):
        self.graph_module = graph_module
        self.graph_signature = graph_signature
        self.state_dict = state_dict
        self.range_constraints = range_constraints
        self._input_shapes = input_shapes      # per user input: [(size or Dim), ...] or None for non-tensors
        self.example_inputs = example_inputs
        self.constants: dict = {}
        self.verifiers = ()

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def call_spec(self):
        return None

    def module(self) -> GraphModule:
        """A runnable module (a copy) that checks its inputs' static dimensions and dynamic ranges."""
        gm = copy.deepcopy(self.graph_module)
        shapes = self._input_shapes

        def check(mod, args):
            for i, (a, spec) in enumerate(zip(args, shapes)):
                if spec is None or not isinstance(a, Tensor):
                    continue
                if a.dim() != len(spec):
                    raise RuntimeError(f"Unexpected number of dimensions in input at *args[{i}].shape "
                                       f"(expected {len(spec)}, got {a.dim()})")
                for d, want in enumerate(spec):
                    got = a.shape[d]
                    if isinstance(want, Dim):
                        if got < want.min or (want.max is not None and got > want.max):
                            raise RuntimeError(f"Expected input at *args[{i}].shape[{d}] to be in range "
                                               f"[{want.min}, {want.max if want.max is not None else 'inf'}], "
                                               f"but got {got}")
                    elif got != want:
                        raise RuntimeError(f"Expected input at *args[{i}].shape[{d}] to be equal to {want}, "
                                           f"but got {got}")
            return None
        gm.register_forward_pre_hook(check)
        return gm

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops: bool = False) -> ExportedProgram:
        """The graph is already at fabric's op level; returns the program unchanged."""
        return self

    def parameters(self):
        return iter(v for k, v in self.state_dict.items() if isinstance(v, Parameter))

    def named_parameters(self):
        return iter((k, v) for k, v in self.state_dict.items() if isinstance(v, Parameter))

    def buffers(self):
        return iter(v for v in self.state_dict.values() if not isinstance(v, Parameter))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def __str__(self) -> str:
        code = self.graph_module.print_readable(print_output=False)
        return f"ExportedProgram:\n{_indent(code)}\nGraph signature: {self.graph_signature}\n" \
               f"Range constraints: {self.range_constraints}\n"

    __repr__ = __str__


def _indent(s: str) -> str:
    return "\n".join("    " + line for line in s.splitlines())


class _ExampleProp(ShapeProp):
    """ShapeProp that also keeps the example value of Python numbers (sizes) in ``meta["example_value"]``."""

    def run_node(self, n):
        result = super().run_node(n)
        if isinstance(result, (int, float, bool)):
            n.meta["example_value"] = result
        return result


def _normalize_dynamic_shapes(names: list, inputs: list, dynamic_shapes) -> list:
    """One ``{dim: Dim}`` dict (or None) per input, in forward's parameter order."""
    specs: list = [None] * len(inputs)
    if dynamic_shapes is None:
        return specs
    if isinstance(dynamic_shapes, dict):
        for k, v in dynamic_shapes.items():
            if k not in names:
                raise ValueError(f"dynamic_shapes names '{k}', which is not a (positional) input of forward; "
                                 f"inputs are {names}")
            specs[names.index(k)] = v
    else:
        if len(dynamic_shapes) > len(inputs):
            raise ValueError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(inputs)} inputs")
        specs[:len(dynamic_shapes)] = list(dynamic_shapes)
    args = inputs
    out = []
    for i, s in enumerate(specs):
        if s is None:
            out.append(None)
            continue
        if isinstance(s, (list, tuple)):
            s = {d: v for d, v in enumerate(s) if v is not None}
        for d, v in s.items():
            if not isinstance(v, Dim):
                raise TypeError(f"dynamic_shapes for input {i}, dimension {d}: expected a Dim, got {v!r}")
            if d >= args[i].dim():
                raise ValueError(f"dynamic_shapes for input {i} names dimension {d}, but it has {args[i].dim()}")
        out.append(s)
    return out


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = ()) -> ExportedProgram:
    """Capture ``mod`` called on ``args`` as an :class:`ExportedProgram`.

    ``dynamic_shapes`` maps an input name (or position, as a list) to ``{dim: Dim(...)}``.
    """
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = dict(kwargs or {})
    sig = inspect.signature(type(mod).forward)
    try:
        bound = sig.bind(mod, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"fabric.export.export: the example inputs do not match forward{sig}: {e}") from None
    inputs: list = []        # one value per placeholder, in forward's parameter order
    concrete: dict = {}
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise NotImplementedError(f"fabric.export.export: forward's *{p.name} / **{p.name} parameters are "
                                      "not supported")
        if p.name in bound.arguments:
            inputs.append(bound.arguments[p.name])
        else:                # not given: specialised to its default (a placeholder name_1 keeps the signature)
            concrete[p.name] = p.default
            inputs.append(p.default)
    names = [p for p in sig.parameters][1:]
    specs = _normalize_dynamic_shapes(names, inputs, dynamic_shapes)
    tracer = Tracer()
    graph = tracer.trace(mod, concrete_args=concrete or None)
    gm = GraphModule(tracer.root, graph, type(mod).__name__)
    _ExampleProp(gm).propagate(*inputs)
    for node in gm.graph.nodes:
        if "tensor_meta" in node.meta:
            node.meta["val"] = node.meta["tensor_meta"]
    state: dict = {}
    input_specs = []
    persist = set(gm.state_dict(keep_vars=True))
    for name, p in gm.named_parameters():
        state[name] = p
        input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument("p_" + name.replace(".", "_")), name))
    for name, b in gm.named_buffers():
        state[name] = b
        kind = InputKind.BUFFER if _is_buffer(mod, name) else InputKind.CONSTANT_TENSOR
        input_specs.append(InputSpec(kind, TensorArgument("b_" + name.replace(".", "_")), name,
                                     (name in persist) if kind is InputKind.BUFFER else None))
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.target), None))
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out_node.args[0] if isinstance(out_node.args[0], (tuple, list)) else (out_node.args[0],)
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(getattr(o, "name", repr(o))), None)
                    for o in outs]
    input_shapes, ranges = [], {}
    for a, s in zip(inputs, specs):
        if not isinstance(a, Tensor):
            input_shapes.append(None)
            continue
        shape: list[Any] = list(a.shape)
        for d, dim in (s or {}).items():
            if dim is Dim.STATIC:
                continue
            if a.shape[d] < dim.min or (dim.max is not None and a.shape[d] > dim.max):
                raise ValueError(f"Received user-specified {dim.min} <= {dim.__name__} <= {dim.max}, conflicting "
                                 f"with the example input's size {a.shape[d]}")
            shape[d] = dim
            ranges[dim.__name__] = (max(dim.min, 0), dim.max)
        input_shapes.append(shape)
    signature = ExportGraphSignature(input_specs, output_specs)
    return ExportedProgram(gm, signature, state, ranges, input_shapes, tuple(inputs))


def _is_buffer(mod: Module, target: str) -> bool:
    *path, name = target.split(".")
    owner = mod
    for p in path:
        owner = getattr(owner, p, None)
        if owner is None:
            return False
    return name in getattr(owner, "_buffers", {})
