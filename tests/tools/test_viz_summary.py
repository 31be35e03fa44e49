"""fabric.viz.make_dot (the DOT text parsed back into the autograd graph) and
fabric.utils.summary (rows, totals, multiply-adds; torchinfo's own output
where torch and torchinfo are installed)."""
from __future__ import annotations

import re
import shutil

import pytest

import fabric
from fabric import nn
from fabric.utils import summary
from fabric.viz import Dot, make_dot

_NODE = re.compile(r'^\t(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\]$')
_EDGE = re.compile(r"^\t(\w+) -> (\w+)(?: \[(.*)\])?$")


def _parse(source):
    """Nodes {id: (label, attrs)} and edges [(tail, head)] of fabric's DOT text."""
    lines = source.splitlines()
    assert lines[0] == "digraph {" and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if line.startswith(("\tgraph [", "\tnode [")):
            continue
        m = _NODE.match(line)
        if m:
            assert m.group(1) not in nodes, "a node is declared twice"
            nodes[m.group(1)] = (m.group(2).replace("\\n", "\n"), m.group(3).strip())
            continue
        m = _EDGE.match(line)
        assert m, f"not a node or an edge: {line!r}"
        edges.append((m.group(1), m.group(2)))
    for a, b in edges:
        assert a in nodes and b in nodes
    return nodes, edges


def test_make_dot_matches_the_autograd_graph():
    lin = nn.Linear(3, 2)
    x = fabric.randn(4, 3)
    y = (lin(x).relu() * 2.0).sum()
    nodes, edges = _parse(make_dot(y, params=dict(lin.named_parameters())).source)
    by_label = {label.split("\n")[0]: nid for nid, (label, _) in nodes.items()}
    assert set(by_label) == {"", "SumBackward0", "MulBackward0", "ReluBackward0", "AddmmBackward0", "weight", "bias"}
    expect = [("SumBackward0", ""), ("MulBackward0", "SumBackward0"), ("ReluBackward0", "MulBackward0"),
              ("AddmmBackward0", "ReluBackward0"), ("bias", "AddmmBackward0"), ("weight", "AddmmBackward0")]
    assert sorted(edges) == sorted((by_label[a], by_label[b]) for a, b in expect)
    assert nodes[by_label["weight"]] == ("weight\n (2, 3)", "fillcolor=lightblue")
    assert nodes[by_label[""]][1] == "fillcolor=darkolivegreen1"


def test_make_dot_shared_nodes_once_and_saved_tensors():
    a = fabric.ones(2, requires_grad=True)
    b = a * a  # a is used twice by one node, then b twice
    c = b + b
    nodes, edges = _parse(make_dot([c], show_saved=True).source)
    labels = sorted(label for label, _ in nodes.values())
    assert labels.count("MulBackward0") == 1 and labels.count("\n (2)") == 2  # the output and the leaf a
    saved = [nid for nid, (label, attrs) in nodes.items() if label.startswith("saved")]
    assert len(saved) == 2 and all("orange" in nodes[s][1] for s in saved)
    assert len(edges) == len(set(edges)) + 2  # the two uses of a and of b are two edges each


def test_make_dot_deep_graph_does_not_recurse():
    x = fabric.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    nodes, edges = _parse(make_dot(y).source)
    assert len(nodes) == 3002 and len(edges) == 3001


def test_rendering_needs_graphviz():
    dot = make_dot(fabric.ones(1, requires_grad=True) * 2.0)
    assert isinstance(dot, Dot) and str(dot) == dot.source
    try:
        import graphviz  # noqa: F401
        have = shutil.which("dot") is not None
    except ImportError:
        have = shutil.which("dot") is not None
    if have:
        assert dot.pipe("svg").lstrip().startswith(b"<")
        assert "image/svg+xml" in dot._repr_mimebundle_()
    else:
        with pytest.raises(RuntimeError, match="needs Graphviz"):
            dot.pipe("svg")
        assert dot._repr_mimebundle_() == {"text/plain": dot.source}


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
        self.norm = nn.BatchNorm1d(10)

    def forward(self, x):
        return self.norm(self.head(self.conv(x).relu()))


def test_summary_rows_and_totals():
    net = _Net()
    net.norm.weight.requires_grad_(False)
    stats = summary(net, input_size=(2, 3, 8, 8), verbose=0,
                    col_names=("input_size", "output_size", "num_params", "kernel_size", "mult_adds", "trainable"))
    rows = [(r.class_name, r.depth, r.output_size) for r in stats.summary_list]
    assert rows == [("_Net", 0, [2, 10]), ("Conv2d", 1, [2, 8, 6, 6]), ("Sequential", 1, [2, 10]),
                    ("Flatten", 2, [2, 288]), ("Linear", 2, [2, 10]), ("BatchNorm1d", 1, [2, 10])]
    assert stats.total_params == 224 + 2890 + 20 and stats.trainable_params == 224 + 2890 + 10
    # torchinfo's rule: (weight + bias) times the output positions (batch x spatial for conv, batch otherwise)
    assert stats.total_mult_adds == 224 * 2 * 36 + 2890 * 2 + 20 * 2
    assert stats.total_param_bytes == 4 * 3134 and stats.total_input == 4 * 2 * 3 * 64
    text = str(stats)
    assert "├─Conv2d: 1-1" in text and "│    └─Linear: 2-2" in text
    conv = next(line for line in text.splitlines() if "Conv2d" in line)
    assert re.search(r"\[3, 3\]\s+16,128\s+True$", conv)
    norm = next(line for line in text.splitlines() if "BatchNorm1d" in line)
    assert norm.split()[-1] == "Partial"
    assert "Total params: 3,134" in text and "Non-trainable params: 10" in text
    shallow = str(summary(net, input_size=(2, 3, 8, 8), verbose=0, depth=1))
    assert "Flatten" not in shallow and re.search(r"├─Sequential: 1-2\s+\[2, 10\]\s+2,890", shallow)


def test_summary_prints_by_default_and_checks_arguments(capsys):
    summary(nn.Linear(2, 3), input_size=(1, 2))
    assert "Linear" in capsys.readouterr().out
    with pytest.raises(ValueError, match="input_data or input_size"):
        summary(nn.Linear(2, 3), verbose=0)
    with pytest.raises(ValueError, match="not a valid column name"):
        summary(nn.Linear(2, 3), input_size=(1, 2), col_names=("bogus",), verbose=0)
    net = nn.Linear(2, 3)
    net.eval()
    summary(net, input_data=fabric.ones(1, 2), mode="train", verbose=0)
    assert net.training is False  # the mode is restored


@pytest.mark.torch
def test_summary_table_matches_torchinfo():
    torch = pytest.importorskip("torch")
    torchinfo = pytest.importorskip("torchinfo")
    cols = ("input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds", "trainable")

    def build(m):
        return m.Sequential(m.Conv2d(3, 8, 3), m.ReLU(), m.Sequential(m.Flatten(), m.Linear(8 * 6 * 6, 10)),
                            m.BatchNorm1d(10))

    for depth in (1, 3):
        ours = str(summary(build(nn), input_size=(2, 3, 8, 8), verbose=0, col_names=cols, depth=depth)).splitlines()
        theirs = str(torchinfo.summary(build(torch.nn), input_size=(2, 3, 8, 8), verbose=0, col_names=cols,
                                       depth=depth)).splitlines()
        # every row and the parameter totals are identical (torchinfo's own mult-adds line names a unit enum,
        # and the memory estimates differ: fabric counts each leaf layer's output once)
        head = ours.index(next(x for x in ours if x.startswith("Total params")))
        assert ours[:head + 3] == theirs[:head + 3]
