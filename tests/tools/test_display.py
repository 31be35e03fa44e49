"""Notebook display: the HTML of Tensor._repr_html_ and Module._repr_html_ is
well formed (every tag closed in order), escapes what it prints, and shows
the tensor's facts and the module tree."""
from __future__ import annotations

from html.parser import HTMLParser

import fabric
from fabric import nn

_VOID = {"br", "hr", "img", "meta", "input"}


class _Tree(HTMLParser):
    """Checks nesting and records (tag, depth in <details>, text) as it goes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.text, self.details_depths = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            self.stack.append(tag)
        if tag == "details":
            self.details_depths.append(self.stack.count("details"))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(markup):
    p = _Tree()
    p.feed(markup)
    p.close()
    assert p.stack == [], f"unclosed: {p.stack}"
    return p


def test_tensor_html_facts_and_escaping():
    x = fabric.ones(2, 3, requires_grad=True)
    y = x * 2.0
    p = _parse(y._repr_html_())
    text = "".join(p.text)
    assert "shape=(2, 3)" in text and "dtype=float32" in text and "device=cpu" in text
    assert "grad_fn=MulBackward0" in text and "requires_grad=True" in text
    assert repr(y) in text  # the values, exactly as printed
    assert "&lt;MulBackward0&gt;" in y._repr_html_()  # the repr's angle brackets are escaped


def test_tensor_html_edge_cases():
    for t in (fabric.tensor(3.5), fabric.zeros(0, 4), fabric.arange(10000.0), fabric.ones(4, 4).t()):
        text = "".join(_parse(t._repr_html_()).text)
        assert f"shape=({', '.join(map(str, t.shape))}{',' if t.dim() == 1 else ''})" in text
        assert repr(t) in text
    big = "".join(_parse(fabric.arange(10000.0)._repr_html_()).text)
    assert "..." in big and len(big) < 1000  # summarized as print does


def test_module_html_is_a_collapsible_tree():
    net = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.ReLU(), nn.Linear(8, 2)), nn.Dropout(0.5))
    markup = net._repr_html_()
    p = _parse(markup)
    assert p.details_depths == [1, 2]  # one <details> per container, nested as the modules are
    text = "".join(p.text)
    assert "(0): Linear(in_features=4, out_features=8, bias=True)" in text
    assert "(1): Sequential" in text and "(1): Linear(in_features=8, out_features=2, bias=True)" in text
    assert "58 params" in text and "40 params" in text and "18 params" in text and "0 params" in text
    assert markup.startswith('<details class="fabric-module" open>')
    assert markup.count(" open>") == 1  # only the top level starts unfolded
    leaf = nn.Linear(1, 1)._repr_html_()
    assert "<details" not in leaf and "2 params" in "".join(_parse(leaf).text)
