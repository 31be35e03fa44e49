"""Define-by-run: models whose graph depends on the data.

- A recursive network over random binary trees (each example has its own
  tree; a node combines its children's states with shared weights).
- An RNN over sequences of different lengths written as a Python loop (one
  cell call per step and per sequence), which also equals ``nn.LSTM`` on the
  packed batch.

Both train (the loss goes down) and pass gradcheck in float64.
"""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric import nn
from fabric.nn.utils.rnn import pack_sequence, pad_packed_sequence


def _np(t):
    return t.detach().cpu().numpy()


# --- recursive tree network -----------------------------------------------------------------------

def random_tree(rng, n_leaves, vocab):
    """A random binary tree as nested tuples; leaves are token ids."""
    if n_leaves == 1:
        return int(rng.integers(vocab))
    k = int(rng.integers(1, n_leaves))
    return (random_tree(rng, k, vocab), random_tree(rng, n_leaves - k, vocab))


def leaves(tree):
    return [tree] if isinstance(tree, int) else leaves(tree[0]) + leaves(tree[1])


class TreeNet(nn.Module):
    """h(leaf) = E[token]; h(node) = tanh(W [h(left); h(right)] + b); logits = U h(root)."""

    def __init__(self, vocab, dim, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.combine = nn.Linear(2 * dim, dim)
        self.out = nn.Linear(dim, classes)

    def encode(self, tree):
        if isinstance(tree, int):
            return self.embed(fabric.tensor([tree]))[0]
        left, right = self.encode(tree[0]), self.encode(tree[1])
        return self.combine(fabric.cat([left, right])).tanh()

    def forward(self, tree):
        return self.out(self.encode(tree))


def _tree_data(rng, n, vocab=4):
    trees = [random_tree(rng, int(rng.integers(1, 7)), vocab) for _ in range(n)]
    labels = [int(sum(t == 1 for t in leaves(tr)) % 2) for tr in trees]  # parity of token 1
    return trees, labels


def test_tree_network_trains():
    rng = np.random.default_rng(0)
    fabric.manual_seed(0)
    trees, labels = _tree_data(rng, 24)
    model = TreeNet(4, 8, 2)
    opt = fabric.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    def epoch_loss(train):
        total = 0.0
        for tree, y in zip(trees, labels):
            loss = loss_fn(model(tree).unsqueeze(0), fabric.tensor([y]))
            if train:
                opt.zero_grad()
                loss.backward()
                opt.step()
            total += float(loss)
        return total / len(trees)

    first = epoch_loss(False)
    for _ in range(15):
        epoch_loss(True)
    last = epoch_loss(False)
    assert last < 0.5 * first
    # every tree built its own graph: a deeper tree touches `combine` more often
    model.zero_grad()
    deep = (((0, 1), (2, 3)), ((1, 1), 0))
    model(deep).sum().backward()
    assert model.combine.weight.grad is not None and model.embed.weight.grad[1].abs().sum() > 0


def test_tree_network_gradcheck():
    rng = np.random.default_rng(1)
    fabric.manual_seed(1)
    model = TreeNet(4, 3, 2).double()
    params = [p for p in model.parameters()]
    for _ in range(3):
        tree = random_tree(rng, int(rng.integers(2, 6)), 4)

        def f(*ps, tree=tree):
            return model(tree)

        assert fabric.autograd.gradcheck(f, tuple(params))
    assert fabric.autograd.gradgradcheck(lambda *ps: model(((0, 1), 2)), tuple(params[2:4]))


@pytest.mark.torch
def test_tree_network_matches_torch():
    import torch

    class TorchTreeNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(4, 5)
            self.combine = torch.nn.Linear(10, 5)
            self.out = torch.nn.Linear(5, 2)

        def encode(self, tree):
            if isinstance(tree, int):
                return self.embed(torch.tensor([tree]))[0]
            return self.combine(torch.cat([self.encode(tree[0]), self.encode(tree[1])])).tanh()

        def forward(self, tree):
            return self.out(self.encode(tree))

    fabric.manual_seed(0)
    torch.manual_seed(0)
    fm, tm = TreeNet(4, 5, 2), TorchTreeNet()
    np.testing.assert_array_equal(_np(fm.combine.weight), tm.combine.weight.detach().numpy())
    tree = random_tree(np.random.default_rng(5), 7, 4)
    fo, to = fm(tree), tm(tree)
    np.testing.assert_allclose(_np(fo), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    fo.sum().backward()
    to.sum().backward()
    for (n, p), q in zip(fm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)


# --- an RNN over variable-length sequences, written as a Python loop ----------------------------------

class LoopLSTM(nn.Module):
    """Runs an LSTMCell over each sequence separately and classifies the last state."""

    def __init__(self, inp, hid, classes):
        super().__init__()
        self.cell = nn.LSTMCell(inp, hid)
        self.head = nn.Linear(hid, classes)

    def final_states(self, seqs):
        finals = []
        for seq in seqs:                       # each sequence has its own length: its own graph
            h = c = fabric.zeros(1, self.cell.hidden_size, dtype=seq.dtype)
            for x in seq:
                h, c = self.cell(x.unsqueeze(0), (h, c))
            finals.append(h)
        return fabric.cat(finals)

    def forward(self, seqs):
        return self.head(self.final_states(seqs))


def _sequence_data(rng, n, dtype=np.float32):
    seqs, labels = [], []
    for _ in range(n):
        length = int(rng.integers(1, 8))
        x = rng.standard_normal((length, 2)).astype(dtype)
        seqs.append(fabric.from_numpy(x))
        labels.append(int(x[:, 0].sum() > 0))  # needs the whole sequence
    return seqs, fabric.tensor(labels)


def test_loop_rnn_trains():
    rng = np.random.default_rng(0)
    fabric.manual_seed(0)
    seqs, labels = _sequence_data(rng, 32)
    model = LoopLSTM(2, 8, 2)
    opt = fabric.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    first = float(loss_fn(model(seqs), labels))
    for _ in range(25):
        opt.zero_grad()
        loss = loss_fn(model(seqs), labels)
        loss.backward()
        opt.step()
    assert float(loss_fn(model(seqs), labels)) < 0.5 * first


def test_loop_rnn_gradcheck():
    rng = np.random.default_rng(2)
    fabric.manual_seed(2)
    model = LoopLSTM(2, 3, 2).double()
    seqs, _ = _sequence_data(rng, 3, np.float64)
    seqs = [s.requires_grad_() for s in seqs]
    params = list(model.parameters())
    assert fabric.autograd.gradcheck(lambda *a: model(seqs), tuple(seqs + params))


def test_loop_rnn_equals_packed_lstm():
    """The hand-written loop and nn.LSTM on the packed batch give the same states and gradients."""
    rng = np.random.default_rng(3)
    fabric.manual_seed(3)
    loop = LoopLSTM(2, 4, 2).double()
    lstm = nn.LSTM(2, 4).double()
    lstm.load_state_dict({"weight_ih_l0": loop.cell.weight_ih, "weight_hh_l0": loop.cell.weight_hh,
                          "bias_ih_l0": loop.cell.bias_ih, "bias_hh_l0": loop.cell.bias_hh})
    seqs, _ = _sequence_data(rng, 5, np.float64)
    a = [s.clone().requires_grad_() for s in seqs]
    b = [s.clone().requires_grad_() for s in seqs]
    h_loop = loop.final_states(a)
    out, (h_n, _) = lstm(pack_sequence(b, enforce_sorted=False))
    np.testing.assert_allclose(_np(h_loop), _np(h_n[0]), rtol=1e-12, atol=1e-12)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    for i, n in enumerate(lengths.tolist()):
        np.testing.assert_allclose(_np(padded[i, n - 1]), _np(h_loop[i]), rtol=1e-12, atol=1e-12)
    (h_loop ** 2).sum().backward()
    (h_n ** 2).sum().backward()
    for x, y in zip(a, b):
        np.testing.assert_allclose(_np(x.grad), _np(y.grad), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(loop.cell.weight_hh.grad), _np(lstm.weight_hh_l0.grad), rtol=1e-10, atol=1e-12)
