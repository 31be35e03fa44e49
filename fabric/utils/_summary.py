"""``fabric.utils.summary(model, input_size)``: a model summary like torchinfo's.

The model runs once on random inputs (under ``no_grad``) with forward hooks
on every submodule; each call becomes a row: the layer and its place in the
tree, input and output shapes, parameters, kernel shape, multiply-adds
(torchinfo's rule: parameters times output positions) and whether its
parameters train, then totals and the memory the pass needs.

Example::

    >>> import fabric
    >>> from fabric.utils import summary
    >>> net = fabric.nn.Sequential(fabric.nn.Linear(4, 8), fabric.nn.ReLU(), fabric.nn.Linear(8, 2))
    >>> stats = summary(net, input_size=(3, 4), verbose=0)
    >>> stats.total_params, stats.total_mult_adds
    (58, 174)
    >>> print(stats)  # doctest: +NORMALIZE_WHITESPACE
    ==========================================================================================
    Layer (type:depth-idx)                   Output Shape              Param #
    ==========================================================================================
    Sequential                               [3, 2]                    --
    ├─Linear: 1-1                            [3, 8]                    40
    ├─ReLU: 1-2                              [3, 8]                    --
    ├─Linear: 1-3                            [3, 2]                    18
    ==========================================================================================
    Total params: 58
    Trainable params: 58
    Non-trainable params: 0
    Total mult-adds (M): 0.00
    ==========================================================================================
    Input size (MB): 0.00
    Forward/backward pass size (MB): 0.00
    Params size (MB): 0.00
    Estimated Total Size (MB): 0.00
    ==========================================================================================
"""
from __future__ import annotations

import math

__all__ = ["summary", "ModelStatistics"]

_HEADERS = {"input_size": "Input Shape", "output_size": "Output Shape", "num_params": "Param #",
            "params_percent": "Param %", "kernel_size": "Kernel Shape", "mult_adds": "Mult-Adds",
            "trainable": "Trainable"}


class _Row:
    def __init__(self, module, name, depth, index, class_name):
        self.module = module
        self.name = name
        self.depth = depth
        self.index = index
        self.class_name = class_name
        self.input_size = None
        self.output_size = None
        self.leaf = not any(True for _ in module.children())
        self.macs = 0         # of this call's own parameters
        self.subtree = []     # rows of calls made inside this one


def _first_shape(x):
    from .._tensor import Tensor

    if isinstance(x, Tensor):
        return list(x.shape)
    if isinstance(x, (list, tuple)):
        for v in x:
            s = _first_shape(v)
            if s is not None:
                return s
    if isinstance(x, dict):
        return _first_shape(list(x.values()))
    return None


def _output_bytes(x) -> int:
    from .._tensor import Tensor

    if isinstance(x, Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_output_bytes(v) for v in x)
    if isinstance(x, dict):
        return sum(_output_bytes(v) for v in x.values())
    return 0


def _own_macs(row) -> int:
    """torchinfo's count: a weight or bias times the output positions it is used at."""
    out = row.output_size
    if not out:
        return 0
    total = 0
    for name, p in row.module.named_parameters(recurse=False):
        n = p.numel()
        if name in ("weight", "bias"):
            if "Conv" in row.class_name:
                total += n * math.prod(out[:1] + out[2:])
            else:
                total += out[0] * n
        elif "weight" in name or "bias" in name:
            total += math.prod(out[:2]) * n
    return total


def _fmt_int(n) -> str:
    return f"{n:,}"


class ModelStatistics:
    """The rows and totals of a summary; ``str()`` is the printed table."""

    def __init__(self, rows, model, inputs, col_names, col_width, depth, output_bytes):
        self.summary_list = rows
        self.col_names = col_names
        self.col_width = col_width
        self.depth = depth
        params = list(model.parameters())
        self.total_params = sum(p.numel() for p in params)
        self.trainable_params = sum(p.numel() for p in params if p.requires_grad)
        self.total_mult_adds = sum(r.macs for r in rows)
        self.total_input = sum(t.numel() * t.element_size() for t in inputs)
        self.total_output_bytes = 2 * output_bytes  # outputs kept for backward, and their gradients
        self.total_param_bytes = sum(p.numel() * p.element_size() for p in params)

    def _cells(self, row):
        whole = row.depth == self.depth or row.leaf  # the row stands for its whole subtree
        params = list(row.module.parameters()) if whole else list(row.module.parameters(recurse=False))
        n = sum(p.numel() for p in params)
        trainable = sum(p.numel() for p in params if p.requires_grad)
        macs = row.macs if row.leaf else (sum(r.macs for r in row.subtree if r.leaf) if row.depth == self.depth
                                          else 0)
        w = getattr(row.module, "weight", None)
        flags = {p.requires_grad for p in row.module.parameters()}
        return {
            "input_size": str(row.input_size) if row.input_size is not None else "--",
            "output_size": str(row.output_size) if row.output_size is not None else "--",
            "num_params": "--" if not n else (f"{n:,}" if trainable or not whole else f"({n:,})"),
            "params_percent": f"{n / self.total_params:>7.2%}" if n and self.total_params else "     --",
            "kernel_size": str(list(w.shape[2:])) if "Conv" in row.class_name and w is not None else "--",
            "mult_adds": f"{macs:,}" if macs > 0 else "--",
            "trainable": "--" if not flags else ("Partial" if len(flags) == 2 else str(flags.pop())),
        }

    def __str__(self) -> str:
        shown = [r for r in self.summary_list if r.depth <= self.depth]
        labels = []
        name_w = 40
        for row in shown:
            if row.depth == 0:
                label = row.class_name
            else:
                prefix = "├─" if row.depth == 1 else "│    " * (row.depth - 1) + "└─"
                label = f"{prefix}{row.class_name}: {row.depth}-{row.index}"
            labels.append(label)
            longest = len(f"{row.class_name}: {row.depth}-{row.index}") + row.depth * 5 + 1
            if longest >= name_w:
                name_w = math.ceil(longest / 5) * 5
        rule = "=" * (name_w + self.col_width * len(self.col_names))

        def line(first, cells):
            text = f"{first:<{name_w}} " + "".join(f"{c:<{self.col_width}} " for c in cells)
            return text.rstrip()

        lines = [rule, line("Layer (type:depth-idx)", [_HEADERS[c] for c in self.col_names]), rule]
        for row, label in zip(shown, labels, strict=True):
            cells = self._cells(row)
            lines.append(line(label, [cells[c] for c in self.col_names]))
        unit, scale = ("G", 1e9) if self.total_mult_adds >= 1e9 else ("M", 1e6)
        mb = 1e6
        lines += [rule, f"Total params: {_fmt_int(self.total_params)}",
                  f"Trainable params: {_fmt_int(self.trainable_params)}",
                  f"Non-trainable params: {_fmt_int(self.total_params - self.trainable_params)}",
                  f"Total mult-adds ({unit}): {self.total_mult_adds / scale:.2f}", rule,
                  f"Input size (MB): {self.total_input / mb:.2f}",
                  f"Forward/backward pass size (MB): {self.total_output_bytes / mb:.2f}",
                  f"Params size (MB): {self.total_param_bytes / mb:.2f}",
                  "Estimated Total Size (MB): "
                  f"{(self.total_input + self.total_output_bytes + self.total_param_bytes) / mb:.2f}", rule]
        return "\n".join(lines)

    __repr__ = __str__


def summary(model, input_size=None, input_data=None, batch_dim=None, col_names=None, col_width: int = 25,
            depth: int = 3, device=None, dtypes=None, mode: str = "same", verbose: int | None = None,
            **kwargs) -> ModelStatistics:
    """Run ``model`` once and tabulate its layers (see the module docstring).

    ``input_size``: one shape (batch included) or a list of shapes;
    ``input_data``: the inputs themselves instead; ``col_names`` from
    input_size, output_size, num_params, params_percent, kernel_size,
    mult_adds, trainable; ``depth``: how deep the tree is shown;
    ``mode``: "train", "eval" or "same"; ``verbose``: 0 returns quietly,
    1 (the default) also prints.
    """
    from .. import _creation, _random_ops
    from .._tensor import Tensor
    from ..autograd.grad_mode import no_grad

    col_names = tuple(col_names) if col_names is not None else ("output_size", "num_params")
    for c in col_names:
        if c not in _HEADERS:
            raise ValueError(f"Column {c} is not a valid column name. Valid columns: {list(_HEADERS)}")
    if input_data is not None:
        inputs = [input_data] if isinstance(input_data, Tensor) else list(input_data)
    elif input_size is not None:
        sizes = [input_size] if all(isinstance(s, int) for s in input_size) else list(input_size)
        if batch_dim is not None:
            sizes = [tuple(s[:batch_dim]) + (1,) + tuple(s[batch_dim:]) for s in sizes]
        dts = list(dtypes) if dtypes is not None else [None] * len(sizes)
        inputs = [_random_ops.rand(*s, dtype=dt, device=device) if dt is None or dt.is_floating_point
                  else _creation.zeros(*s, dtype=dt, device=device) for s, dt in zip(sizes, dts, strict=True)]
    else:
        raise ValueError("You must pass input_data or input_size.")

    names = {id(m): n for n, m in model.named_modules()}
    rows, stack, handles = [], [], []
    counters: dict = {}
    out_bytes = [0]

    def pre(module, args):
        name = names.get(id(module), "")
        d = 0 if module is model else name.count(".") + 1
        counters[d] = counters.get(d, 0) + 1
        row = _Row(module, name, d, counters[d], type(module).__name__)
        row.input_size = _first_shape(args)
        if stack:
            for outer in stack:
                outer.subtree.append(row)
        rows.append(row)
        stack.append(row)

    def post(module, args, output):
        row = stack.pop()
        row.output_size = _first_shape(output)
        row.macs = _own_macs(row)
        if row.leaf:
            out_bytes[0] += _output_bytes(output)

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    was_training = model.training
    if mode == "train":
        model.train()
    elif mode == "eval":
        model.eval()
    try:
        with no_grad():
            model(*inputs, **kwargs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    stats = ModelStatistics(rows, model, [t for t in inputs if isinstance(t, Tensor)], col_names, col_width, depth,
                            out_bytes[0])
    if verbose is None or verbose >= 1:
        print(stats)
    return stats
