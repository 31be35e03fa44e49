"""``fabric.onnx``: export a model to ONNX (and load an ONNX file back as a trainable module).

Needs the optional extra: ``pip install fabric-dl[onnx]`` (the ``onnx``
package writes and checks the file; ``onnxruntime`` runs it).  The model is
captured with :func:`fabric.export.export` (the fx graph IR) and lowered node
by node; see docs/graph.md.

Example::

    >>> import fabric, fabric.onnx, io
    >>> from fabric import nn
    >>> m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    >>> f = io.BytesIO()
    >>> fabric.onnx.export(m, (fabric.randn(3, 4),), f, input_names=["x"], output_names=["y"],
    ...                    dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})    # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import enum
import io
import os

import numpy as np

__all__ = ["export", "load_model", "is_in_onnx_export", "UnsupportedOperatorError", "OnnxExporterError",
           "TrainingMode", "OperatorExportTypes", "errors", "select_model_mode_for_export",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic"]

_in_export = False


class OnnxExporterError(RuntimeError):
    """Export failed."""


def __getattr__(name):
    if name == "UnsupportedOperatorError":
        from ._lower import UnsupportedOperatorError
        return UnsupportedOperatorError
    if name == "errors":
        import types

        from ._lower import UnsupportedOperatorError
        return types.SimpleNamespace(UnsupportedOperatorError=UnsupportedOperatorError,
                                     OnnxExporterError=OnnxExporterError)
    raise AttributeError(f"module 'fabric.onnx' has no attribute '{name}'")


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


@contextlib.contextmanager
def select_model_mode_for_export(model, mode: TrainingMode):
    """Put ``model`` in the mode ``export`` would use (eval for ``TrainingMode.EVAL``) for the block."""
    with _eval_mode(model, mode):
        yield


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int):
    """PyTorch's hook for TorchScript-exporter symbolics; fabric's lowering table is not open to them."""
    raise NotImplementedError("fabric.onnx has no custom symbolic registry: export lowers fabric's graph IR "
                              "through fabric.onnx._lower (FUNCTIONS / METHODS / MODULES tables)")


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int):
    raise NotImplementedError("fabric.onnx has no custom symbolic registry")


def is_in_onnx_export() -> bool:
    """True while :func:`export` runs (model code can branch on it, as in PyTorch)."""
    return _in_export


def _require_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("fabric.onnx needs the 'onnx' package: pip install fabric-dl[onnx] "
                          "(or pip install onnx onnxruntime)") from None
    return onnx


DEFAULT_OPSET = 18
_MIN_OPSET, _MAX_OPSET = 17, 21


@contextlib.contextmanager
def _eval_mode(model, training: TrainingMode):
    was = model.training
    if training == TrainingMode.EVAL:
        model.eval()
    elif training == TrainingMode.TRAINING:
        model.train()
    try:
        yield
    finally:
        model.train(was)


def _dynamic_axes_from_shapes(dynamic_shapes, input_names):
    """``torch.export``-style ``{input: {dim: Dim}}`` -> ``dynamic_axes`` ``{input: {dim: name}}``."""
    out = {}
    if dynamic_shapes is None:
        return out
    items = dynamic_shapes.items() if isinstance(dynamic_shapes, dict) else zip(input_names, dynamic_shapes)
    for name, spec in items:
        if spec is None:
            continue
        if isinstance(spec, (list, tuple)):
            spec = {d: v for d, v in enumerate(spec) if v is not None}
        out[name] = {d: getattr(v, "__name__", str(v)) for d, v in spec.items()}
    return out


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version: int | None = None, dynamo: bool = True, external_data: bool = True,
           dynamic_shapes=None, custom_translation_table=None, report: bool = False, optimize: bool = True,
           verify: bool = False, profile: bool = False, dump_exported_program: bool = False,
           artifacts_dir=".", export_params: bool = True, keep_initializers_as_inputs: bool = False,
           dynamic_axes=None, training: TrainingMode = TrainingMode.EVAL, operator_export_type=None,
           do_constant_folding: bool = True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining: bool = True):
    """Export ``model`` (a Module or an ``ExportedProgram``) called on ``args`` to ONNX, written to ``f``
    (a path, a binary file object, or None).

    Returns the ``onnx.ModelProto``.  ``dynamic_axes`` (``{name: {dim: "label"}}`` or ``{name: [dims]}``) or
    ``dynamic_shapes`` (``{forward_arg: {dim: Dim(...)}}``) make dimensions symbolic.  ``dynamo`` is accepted
    and ignored (fabric has one exporter); ``verify=True`` runs the file in onnxruntime and checks that it
    reproduces the model's outputs.  ``optimize`` and ``external_data`` are accepted; the file is written in
    one piece (models under 2 GB).
    """
    onnx = _require_onnx()
    from .._tensor import Tensor
    from ..export import ExportedProgram
    from ..nn.modules.module import Module

    for flag, name in ((custom_translation_table, "custom_translation_table"), (report, "report"),
                       (profile, "profile"), (dump_exported_program, "dump_exported_program"),
                       (custom_opsets, "custom_opsets"), (export_modules_as_functions, "export_modules_as_functions"),
                       (operator_export_type not in (None, 0), "operator_export_type"),
                       (not autograd_inlining, "autograd_inlining=False")):
        if flag:
            raise NotImplementedError(f"fabric.onnx.export does not support {name}")
    if isinstance(model, ExportedProgram):
        args = args or model.example_inputs
        model = model.module()
    if not isinstance(model, Module):
        raise TypeError(f"fabric.onnx.export expects an nn.Module or an ExportedProgram, got {type(model).__name__}")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not _MIN_OPSET <= opset <= _MAX_OPSET:
        raise ValueError(f"fabric.onnx supports opset_version {_MIN_OPSET} to {_MAX_OPSET}, got {opset}")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:   # PyTorch's (args..., {kwargs}) convention
        args, kwargs = args[:-1], args[-1]

    with _eval_mode(model, training):
        proto, tensor_inputs = _export(onnx, model, args, dict(kwargs or {}), f, export_params, input_names,
                                       output_names, opset, dynamic_axes, keep_initializers_as_inputs,
                                       dynamic_shapes, do_constant_folding)
        if verbose:
            print(onnx.printer.to_text(proto.graph))
        if verify:
            _verify(model, args, dict(kwargs or {}), tensor_inputs, proto, export_params)
    return proto


def _verify(model, args, kwargs, tensor_inputs, proto, export_params: bool) -> None:
    """Run the exported file in onnxruntime on ``args`` and compare with the model (rtol/atol 1e-4)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise ImportError("fabric.onnx.export(verify=True) needs onnxruntime: pip install onnxruntime") from None
    from ..autograd.grad_mode import no_grad
    if not export_params:
        raise ValueError("verify=True needs export_params=True")
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.detach().cpu().numpy() for i, a in zip(sess.get_inputs(), tensor_inputs)}
    got = sess.run(None, feeds)
    with no_grad():
        want = model(*args, **kwargs)
    flat: list = []

    def visit(o):
        if isinstance(o, (tuple, list)):
            for e in o:
                visit(e)
        elif isinstance(o, dict):
            for e in o.values():
                visit(e)
        elif o is not None:
            flat.append(o.detach().cpu().numpy())
    visit(want)
    for i, (g, w) in enumerate(zip(got, flat)):
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-4, atol=1e-4):
            raise OnnxExporterError(f"fabric.onnx.export(verify=True): output {i} differs from the model's "
                                    f"(max abs difference {np.max(np.abs(g - w)) if g.shape == w.shape else 'shape'})")


def _export(onnx, model, args, kwargs, f, export_params, input_names, output_names, opset, dynamic_axes,
            keep_initializers_as_inputs, dynamic_shapes, do_constant_folding):
    from .. import export as _export_mod
    from .._tensor import Tensor
    from ..fx import Tracer
    from ..nn.modules.module import Module
    from ._builder import Builder, V
    from ._lower import Lowering, UnsupportedOperatorError

    global _in_export
    prefix = ""
    traced = model
    if Tracer().is_leaf_module(model, ""):
        import inspect
        sig = inspect.signature(type(model).forward)
        given = sig.bind(model, *args, **kwargs).arguments
        params = [p for p in sig.parameters][1:]
        params = params[:max(params.index(n) for n in given if n != "self") + 1]
        src = f"def forward(self, {', '.join(p + '=None' for p in params)}):\n" \
              f"    return self.root({', '.join(params)})\n"
        ns: dict = {}
        exec(src, ns)
        traced = type("Root", (Module,), {"forward": ns["forward"]})()
        traced.root = model
        traced.train(model.training)
        prefix = "root."
    _in_export = True
    try:
        ep = _export_mod.export(traced, args, kwargs)
    finally:
        _in_export = False
    gm = ep.graph_module
    values = list(ep.example_inputs)
    all_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    b_env: dict = {}
    placeholders = []
    for node, value in zip(all_placeholders, values):
        if isinstance(value, Tensor):
            placeholders.append(node)
        else:                       # a Python value (a None mask ...): a constant of the graph, not an input
            b_env[node] = value
    args = [v for v in values if isinstance(v, Tensor)]
    names = list(input_names or [])
    if len(names) > len(placeholders):
        raise ValueError(f"input_names has {len(names)} names for {len(placeholders)} inputs")
    names += [p.target.lstrip("*") for p in placeholders[len(names):]]
    axes = _normalize_axes(dynamic_axes) if dynamic_axes else {}
    axes.update(_dynamic_axes_from_shapes(dynamic_shapes, [p.target for p in placeholders]))

    b = Builder(onnx, opset, strip_prefix=prefix)
    clash = set(names) & set(output_names or [])
    if clash:
        raise ValueError(f"fabric.onnx.export: {sorted(clash)} named both an input and an output")
    # graph inputs and (possible) output names are taken before any intermediate value is named
    for n in [*names, *(output_names or []), "output", *(f"output_{i}" for i in range(64))]:
        b.reserve(n)
    L = Lowering(gm, b)
    L.env.update(b_env)
    graph_inputs = []
    for node, name, value in zip(placeholders, names, args):
        if not isinstance(value, Tensor):
            raise OnnxExporterError(f"fabric.onnx.export: input '{name}' is a {type(value).__name__}; only tensors "
                                    "can be graph inputs")
        arr_dtype = np.dtype(value.dtype.to_numpy())
        L.env[node] = V(name, arr_dtype, value.dim())
        dims = [axes.get(name, {}).get(d, int(s)) for d, s in enumerate(value.shape)]
        graph_inputs.append(onnx.helper.make_tensor_value_info(name, _elem(onnx, arr_dtype), dims))

    out_node = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            out_node = node
            break
        try:
            L.env[node] = L.lower_node(node)
        except UnsupportedOperatorError:
            raise
        except Exception as e:  # say which node failed
            raise OnnxExporterError(f"fabric.onnx.export failed while lowering {node.format_node()}: "
                                    f"{type(e).__name__}: {e}") from e
    outputs = _flatten_outputs(L.env, out_node.args[0])
    out_names = list(output_names or [])
    if len(out_names) > len(outputs):
        raise ValueError(f"output_names has {len(out_names)} names for {len(outputs)} outputs")
    default = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    out_names += default[len(out_names):]
    graph_outputs = []
    any_dynamic = bool(axes)
    for v, name, node in zip(outputs, out_names, _flatten_nodes(out_node.args[0])):
        b.nodes.append(onnx.helper.make_node("Identity", [v.name], [name], name=b.fresh("/output/Identity")))
        tm = node.meta.get("tensor_meta") if node is not None else None
        shape = None
        if tm is not None and hasattr(tm, "shape"):
            spec = axes.get(name, {})
            shape = [spec.get(d, None if any_dynamic else int(s)) for d, s in enumerate(tm.shape)]
        elif v.rank is not None:
            shape = [axes.get(name, {}).get(d, None) for d in range(v.rank)]
        graph_outputs.append(onnx.helper.make_tensor_value_info(name, _elem(onnx, v.dtype), shape))

    nodes, inits = _prune(b.nodes, b.initializers, out_names)
    if do_constant_folding and export_params:
        nodes, inits = _fold_constants(onnx, nodes, inits, opset)
    params = set(inits) & set(b._param_names.values())
    if not export_params:
        init_protos = [onnx.numpy_helper.from_array(a, k) for k, a in inits.items() if k not in params]
        graph_inputs += [onnx.helper.make_tensor_value_info(k, _elem(onnx, inits[k].dtype), list(inits[k].shape))
                         for k in inits if k in params]
    else:
        init_protos = [onnx.numpy_helper.from_array(a, k) for k, a in inits.items()]
        if keep_initializers_as_inputs:
            graph_inputs += [onnx.helper.make_tensor_value_info(k, _elem(onnx, a.dtype), list(a.shape))
                             for k, a in inits.items()]
    graph = onnx.helper.make_graph(nodes, type(model).__name__, graph_inputs, graph_outputs, init_protos)
    proto = onnx.helper.make_model(graph, producer_name="fabric", producer_version=_version(),
                                   opset_imports=[onnx.helper.make_opsetid("", opset)])
    proto.ir_version = min(proto.ir_version, 10)
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        else:
            f.write(data)
    return proto, args


def _version() -> str:
    import fabric
    return fabric.__version__


def _elem(onnx, dtype) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _normalize_axes(dynamic_axes) -> dict:
    out = {}
    for name, spec in dynamic_axes.items():
        if isinstance(spec, dict):
            out[name] = {int(d): str(v) for d, v in spec.items()}
        else:
            out[name] = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(spec)}
    return out


def _flatten_outputs(env, ret) -> list:
    from ..fx.node import Node
    from ._builder import V
    out = []

    def visit(a):
        if isinstance(a, Node):
            visit(env[a])
        elif isinstance(a, V):
            out.append(a)
        elif isinstance(a, (tuple, list)):
            for e in a:
                visit(e)
        elif isinstance(a, dict):
            for e in a.values():
                visit(e)
        elif a is None:
            return
        else:
            raise OnnxExporterError(f"fabric.onnx.export: the model returns a Python {type(a).__name__} "
                                    f"({a!r}); ONNX outputs must be tensors")
    visit(ret)
    return out


def _flatten_nodes(ret) -> list:
    """The fx node behind each flattened output (None where it is a part of a node's tuple)."""
    from ..fx.node import Node
    out = []

    def visit(a):
        if isinstance(a, Node):
            tm = a.meta.get("tensor_meta")
            if isinstance(tm, (tuple, list)) and not hasattr(tm, "shape"):
                out.extend([None] * _count(tm))
            else:
                out.append(a)
        elif isinstance(a, (tuple, list)):
            for e in a:
                visit(e)
        elif isinstance(a, dict):
            for e in a.values():
                visit(e)
    visit(ret)
    return out


def _count(tm) -> int:
    if hasattr(tm, "shape"):
        return 1
    if isinstance(tm, (tuple, list)):
        return sum(_count(t) for t in tm)
    return 0


def _node_inputs(n) -> list[str]:
    """The values a node reads, including those its subgraphs (If / Loop bodies) read from outer scope."""
    names = [i for i in n.input if i]
    for a in n.attribute:
        graphs = [a.g] if a.HasField("g") else list(a.graphs)
        for g in graphs:
            for sub in g.node:
                names.extend(_node_inputs(sub))
    return names


def _prune(nodes, inits, outputs):
    """Drop nodes (and initializers) no output depends on."""
    needed = set(outputs)
    kept = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            kept.append(n)
            needed.update(_node_inputs(n))
    kept.reverse()
    return kept, {k: v for k, v in inits.items() if k in needed}


_FOLDABLE = {"Transpose", "Slice", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Cast", "Mul", "Add", "Sub", "Div",
             "Neg", "Sqrt", "Reciprocal", "Where", "Equal"}


def _fold_constants(onnx, nodes, inits, opset):
    """Evaluate nodes whose inputs are all initializers (weight layout changes) at export time."""
    from onnx.reference import ReferenceEvaluator
    inits = dict(inits)
    out_nodes = []
    for n in nodes:
        if n.op_type in _FOLDABLE and n.input and all(i in inits for i in n.input if i):
            feeds = {i: inits[i] for i in n.input if i}
            g = onnx.helper.make_graph([n], "fold", [onnx.helper.make_tensor_value_info(k, _elem(onnx, v.dtype),
                                                                                      list(v.shape))
                                                     for k, v in feeds.items()],
                                       [onnx.helper.make_tensor_value_info(o, 0, None) for o in n.output])
            m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", opset)])
            try:
                results = ReferenceEvaluator(m).run(None, feeds)
            except Exception:
                out_nodes.append(n)
                continue
            for o, r in zip(n.output, results):
                inits[o] = np.asarray(r)
            continue
        out_nodes.append(n)
    needed = {i for n in out_nodes for i in _node_inputs(n)} | {o for n in out_nodes for o in n.output}
    return out_nodes, {k: v for k, v in inits.items() if k in needed}


def load_model(f):
    """Build a trainable fabric module (a :class:`fabric.fx.GraphModule`) from an ONNX file or ModelProto."""
    from ._import import load_model as _load
    return _load(f)


del io
