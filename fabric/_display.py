"""Rich display in notebooks: the HTML behind ``Tensor._repr_html_`` and
``Module._repr_html_``.

A tensor shows a header line (shape, dtype, device, requires_grad, grad_fn)
above its printed values (summarized as ``print`` does for large tensors);
a module shows its tree as nested ``<details>`` elements, each with its
parameter count, so large models fold open one level at a time.

Example::

    >>> import fabric
    >>> html = fabric.ones(2, requires_grad=True)._repr_html_()
    >>> html[:100]
    '<div class="fabric-tensor"><div><b>Tensor</b> shape=(2,) dtype=float32 device=cpu requires_grad=True'
    >>> html[100:]
    '</div><pre>tensor([1., 1.], requires_grad=True)</pre></div>'
"""
from __future__ import annotations

import html

__all__ = ["tensor_html", "module_html"]

_STYLE = "list-style:none;margin:0;padding-left:1.2em"


def tensor_html(t) -> str:
    shape = "(" + ", ".join(str(int(s)) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"
    dtype = str(t.dtype).replace("torch.", "").replace("fabric.", "")
    parts = [f"shape={shape}", f"dtype={dtype}", f"device={t.device}"]
    if t.requires_grad:
        parts.append("requires_grad=True")
    if t.grad_fn is not None:
        parts.append(f"grad_fn={type(t.grad_fn).__name__}")
    head = html.escape(" ".join(parts))
    return (f'<div class="fabric-tensor"><div><b>{html.escape(type(t).__name__)}</b> {head}</div>'
            f"<pre>{html.escape(repr(t))}</pre></div>")


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def _params_text(n: int) -> str:
    return f"{n:,} param" + ("" if n == 1 else "s")


def _line(name, module) -> str:
    extra = module.extra_repr()
    own = f"{type(module).__name__}({extra})" if extra else type(module).__name__
    prefix = f"({name}): " if name is not None else ""
    return html.escape(prefix + own)


def module_html(module, name=None, _depth=0) -> str:
    children = list(module.named_children())
    count = f' <span style="color:gray">{_params_text(_count(module))}</span>'
    if not children:
        return f"<code>{_line(name, module)}</code>{count}"
    items = "".join(f"<li>{module_html(child, child_name, _depth + 1)}</li>" for child_name, child in children)
    opened = " open" if _depth == 0 else ""
    return (f'<details class="fabric-module"{opened}><summary><code>{_line(name, module)}</code>{count}</summary>'
            f'<ul style="{_STYLE}">{items}</ul></details>')
