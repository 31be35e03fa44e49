"""Tensors cross process boundaries as handles to shared memory
(``torch.multiprocessing`` semantics): Process arguments under spawn and
forkserver, Queue, SimpleQueue and Pipe; writes on one side are seen on the other."""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import sys

import numpy as np
import pytest

import fabric
import fabric.multiprocessing as fmp
from fabric import _shared_memory as shared_memory

pytestmark = pytest.mark.skipif(not shared_memory.available, reason="no POSIX shared memory")


def _add_one_to_received(q, done):
    t = q.get()
    t += 1
    done.put(t.is_shared())


def _write_arg(t, k):
    t[k] = 7.0


def test_pipe_moves_a_plain_tensor_into_shared_memory_and_shares_it():
    a, b = multiprocessing.Pipe()
    t = fabric.arange(4.0)
    assert not t.is_shared()
    a.send(t)
    u = b.recv()
    assert t.is_shared() and u.is_shared()
    u[1] = 10.0
    t[2] = 20.0
    assert t.tolist() == u.tolist() == [0.0, 10.0, 20.0, 3.0]


def test_views_are_sent_as_copies_in_shared_memory_with_their_values():
    a, b = multiprocessing.Pipe()
    base = fabric.arange(12.0).reshape(3, 4)
    for v in (base.t(), base[:, 1::2], base[1]):
        a.send(v)
        got = b.recv()
        assert got.shape == v.shape and got.tolist() == v.tolist()
    a.send(base.t())
    assert b.recv().stride() == (1, 4)  # the order of strides survives
    assert not base.is_shared()


@pytest.mark.parametrize("make", [lambda: fabric.tensor(3.5), lambda: fabric.zeros(0, 3),
                                  lambda: fabric.arange(6, dtype=fabric.int64).reshape(2, 3),
                                  lambda: fabric.tensor([True, False])])
def test_zero_dim_empty_and_integer_tensors_round_trip(make):
    a, b = multiprocessing.Pipe()
    t = make()
    a.send(t)
    got = b.recv()
    assert got.dtype == t.dtype and got.shape == t.shape and got.tolist() == t.tolist()


def test_parameters_keep_their_class_and_requires_grad_but_not_grad():
    a, b = multiprocessing.Pipe()
    p = fabric.nn.Parameter(fabric.ones(2, 2))
    p.grad = fabric.ones(2, 2)
    a.send(p)
    q = b.recv()
    assert type(q) is fabric.nn.Parameter and q.requires_grad and q.grad is None
    leaf = fabric.ones(2, requires_grad=True)
    a.send(leaf)
    assert b.recv().requires_grad


def test_non_leaf_tensor_that_requires_grad_is_refused():
    x = fabric.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        fmp.reductions.ForkingPickler.dumps(x)
    assert not x.is_shared()  # refused before anything moved


def test_ordinary_pickle_still_copies():
    t = fabric.arange(3.0).share_memory_()
    u = pickle.loads(pickle.dumps(t))
    u += 1
    assert t.tolist() == [0.0, 1.0, 2.0] and not u.is_shared()


def test_no_descriptor_is_left_open():
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    a, b = multiprocessing.Pipe()

    def round_trip():
        t = fabric.randn(5, 5)
        a.send(t)
        u = b.recv()
        del t, u
        gc.collect()

    round_trip()  # the first send starts multiprocessing's descriptor sharer (one socket, kept)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        round_trip()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_child_writes_reach_the_parent(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    ctx = multiprocessing.get_context(method)
    shared = fabric.zeros(3).share_memory_()
    p = ctx.Process(target=_write_arg, args=(shared, 1))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and shared.tolist() == [0.0, 7.0, 0.0]
    q, done = ctx.Queue(), ctx.SimpleQueue()
    p = ctx.Process(target=_add_one_to_received, args=(q, done))
    p.start()
    t = fabric.ones(4)
    q.put(t)
    assert done.get() is True
    p.join(60)
    assert p.exitcode == 0 and t.tolist() == [2.0, 2.0, 2.0, 2.0]


def _report_sum(t, q):
    q.put(t.sum().item())


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_views_as_process_arguments_stay_open_until_the_launch(method):
    # a view travels as a copy whose only owner is the pickled message: it must outlive the pickling
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    ctx = multiprocessing.get_context(method)
    q = ctx.SimpleQueue()
    p = ctx.Process(target=_report_sum, args=(fabric.arange(12.0).reshape(6, 2)[1:], q))
    gc.collect()
    p.start()
    assert q.get() == 65.0
    p.join(60)
    assert p.exitcode == 0


def test_sharing_strategy_api():
    assert fmp.get_all_sharing_strategies() == {"file_descriptor"}
    assert fmp.get_sharing_strategy() == "file_descriptor"
    fmp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError):
        fmp.set_sharing_strategy("file_system")


def test_share_memory_keeps_values_and_module_share_memory_covers_buffers():
    m = fabric.nn.BatchNorm1d(3)
    m.running_mean += 1.5
    m.share_memory()
    assert all(t.is_shared() for t in list(m.parameters()) + list(m.buffers()))
    assert np.allclose(m.running_mean.numpy(), 1.5)
    assert shared_memory.segment_of(m.weight._data) is not None


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="POSIX only")
