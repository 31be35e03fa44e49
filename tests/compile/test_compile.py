"""fabric.compile: torch.compile's API, guards, graph breaks, passes and the executor; numbers equal eager."""
import copy
import doctest
import importlib
import operator
import warnings

import numpy as np
import pytest

import fabric
from fabric import fx, nn
from fabric._dynamo import OptimizedModule, config, exc
from fabric._dynamo.passes import eliminate_common_subexpressions, eliminate_dead_code


def _entries(compiled):
    cf = compiled._compiled if isinstance(compiled, OptimizedModule) else compiled._fabric_compiled
    return list(cf.cache.values())


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 5, padding=2)
        self.c2 = nn.Conv2d(4, 8, 5)
        self.f1 = nn.Linear(8 * 5 * 5, 32)
        self.f2 = nn.Linear(32, 10)

    def forward(self, x):
        x = fabric.max_pool2d(fabric.relu(self.c1(x)), 2)
        x = nn.functional.max_pool2d(nn.functional.relu(self.c2(x)), 2)
        return self.f2(fabric.relu(self.f1(x.flatten(1))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=11, d=16, T=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(fabric.randn(T, d) * 0.02)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.1, batch_first=True, norm_first=True)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        x = self.block(x, src_mask=self.mask, is_causal=True)
        return self.head(self.ln(x))


def _train(model, step_model, batches, make_opt, loss_fn):
    opt = make_opt(model.parameters())
    losses = []
    for i, (x, y) in enumerate(batches):
        fabric.manual_seed(100 + i)
        opt.zero_grad()
        loss = loss_fn(step_model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("case", ["lenet", "gpt"])
def test_training_steps_equal_eager(case):
    fabric.manual_seed(0)
    if case == "lenet":
        model = LeNet()
        batches = [(fabric.randn(4, 1, 28, 28), fabric.randint(0, 10, (4,))) for _ in range(3)]
        make_opt = lambda p: fabric.optim.SGD(p, lr=0.05, momentum=0.9)

        def loss_fn(out, y):
            return nn.functional.cross_entropy(out, y)
    else:
        model = TinyGPT()
        batches = [(fabric.randint(0, 11, (3, 8)), fabric.randint(0, 11, (3, 8))) for _ in range(3)]
        make_opt = lambda p: fabric.optim.AdamW(p, lr=1e-2)

        def loss_fn(out, y):
            return nn.functional.cross_entropy(out.reshape(-1, 11), y.reshape(-1))
    twin = copy.deepcopy(model)
    eager = _train(twin, twin, batches, make_opt, loss_fn)
    compiled = fabric.compile(model)
    got = _train(model, compiled, batches, make_opt, loss_fn)
    np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-6)
    for (n, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
    (entry,) = _entries(compiled)
    assert entry.fn is not None and entry.reason is None     # one captured graph, replayed on steps 2 and 3


def test_optimized_module_surface():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    cm = fabric.compile(m)
    assert isinstance(cm, OptimizedModule) and cm._orig_mod is m
    assert list(cm.state_dict()) == ["_orig_mod." + k for k in m.state_dict()]
    assert [n for n, _ in cm.named_parameters()] == ["_orig_mod." + n for n, _ in m.named_parameters()]
    assert getattr(cm, "1") is m[1]            # attributes reach the original module (not subscript, as torch)
    cm.eval()
    assert not m.training and not m[1].training
    sd = {k: v.clone() + 1 for k, v in cm.state_dict().items()}
    cm.load_state_dict(sd)
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), sd["_orig_mod.0.weight"].numpy())


def test_batchnorm_running_stats_and_train_eval_guard():
    fabric.manual_seed(1)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.3))
    twin = copy.deepcopy(m)
    cm = fabric.compile(m)
    x = fabric.randn(6, 3)
    for mode in (True, True, False, False, True):
        cm.train(mode)
        twin.train(mode)
        fabric.manual_seed(7)
        a = cm(x)
        fabric.manual_seed(7)
        b = twin(x)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(m[1].running_mean.numpy(), twin[1].running_mean.numpy(), rtol=1e-6)
    assert int(m[1].num_batches_tracked) == int(twin[1].num_batches_tracked) == 3
    assert len(_entries(cm)) == 2          # train and eval


def test_guards_recompile_on_shape_dtype_requires_grad_and_grad_mode():
    @fabric.compile
    def f(x, scale):
        return (x * scale).sin().sum(0)

    x = fabric.randn(4, 3)
    np.testing.assert_allclose(f(x, 2.0).numpy(), (x * 2.0).sin().sum(0).numpy())
    f(x, 2.0)
    assert len(_entries(f._fabric_compiled and f)) == 1
    f(fabric.randn(5, 3), 2.0)                                  # shape
    f(x.double(), 2.0)                                          # dtype
    xg = x.clone().requires_grad_()
    y = f(xg, 2.0)                                              # requires_grad
    y.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), (2.0 * (x * 2.0).cos()).numpy(), rtol=1e-6)
    with fabric.no_grad():
        assert not f(xg, 2.0).requires_grad                     # grad mode
    out = f(x, 3.0)                                             # a Python argument's value
    np.testing.assert_allclose(out.numpy(), (x * 3.0).sin().sum(0).numpy())
    assert len(_entries(f)) == 6


def test_recompile_limit_falls_back_to_eager_with_warning(monkeypatch):
    monkeypatch.setattr(config, "recompile_limit", 2)
    f = fabric.compile(lambda x: x + 1)
    f(fabric.zeros(1))
    f(fabric.zeros(2))
    with pytest.warns(UserWarning, match=r"hit config.recompile_limit \(2\)"):
        out = f(fabric.zeros(3))
    np.testing.assert_array_equal(out.numpy(), np.ones(3, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(fabric.zeros(4))                                      # warned once
    assert len(_entries(f)) == 2


def test_graph_break_on_data_dependent_branch_runs_eagerly():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    cf = fabric.compile(f)
    pos, neg = fabric.ones(3), -fabric.ones(3)
    np.testing.assert_array_equal(cf(pos).numpy(), [2, 2, 2])
    np.testing.assert_array_equal(cf(neg).numpy(), [-2, -2, -2])     # same guards, other branch: not frozen
    (entry,) = _entries(cf)
    assert entry.fn is None and "data-dependent" in entry.reason[0]
    with pytest.raises(exc.Unsupported, match="graph break"):
        fabric.compile(f, fullgraph=True)(pos)
    assert issubclass(exc.Unsupported, RuntimeError)


@pytest.mark.parametrize("body", ["item", "nonzero", "mask", "randn", "setattr", "no_grad", "backward"])
def test_graph_breaks_keep_eager_semantics(body):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.calls = 0

        def forward(self, x):
            y = self.lin(x)
            if body == "item":
                return y * y.max().item()
            if body == "nonzero":
                return y[fabric.nonzero(y > 0, as_tuple=True)].sum()
            if body == "mask":
                return y[y > 0].sum()
            if body == "randn":
                return y + fabric.randn(3)
            if body == "setattr":
                self.calls = self.calls + 1
                return y
            if body == "no_grad":
                with fabric.no_grad():
                    z = y * 2
                return z
            y.sum().backward()
            return y

    fabric.manual_seed(3)
    m = M()
    cm = fabric.compile(m)
    for i in range(3):
        x = fabric.randn(2, 3)
        fabric.manual_seed(i)
        a = cm(x)
        m.calls -= body == "setattr"
        fabric.manual_seed(i)
        b = m(x)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
        assert a.requires_grad == b.requires_grad
    assert all(e.fn is None for e in _entries(cm))
    if body == "setattr":
        assert m.calls == 3


def test_decorator_forms_disable_is_compiling_reset():
    seen = []

    @fabric.compiler.disable
    def helper(t):
        seen.append(fabric.compiler.is_compiling())
        return t * 3

    @fabric.compile(fullgraph=False, mode="reduce-overhead")
    def g(x):
        seen.append(fabric.compiler.is_compiling())
        return helper(x + 1)

    x = fabric.ones(2)
    np.testing.assert_array_equal(g(x).numpy(), [6, 6])
    assert seen == [True, False]        # captured with is_compiling() True; helper ran eagerly
    assert _entries(g)[0].fn is None    # disable is a graph break
    fabric.compiler.reset()
    assert _entries(g) == []
    assert g.__name__ == "g"

    @fabric.compile
    def h(x):
        return x.exp()
    h(x)
    h(x)
    assert _entries(h)[0].fn is not None
    assert fabric.compiler.disable(h) is h
    h(fabric.ones(5))
    assert len(_entries(h)) == 1        # disabled: runs eagerly, nothing new captured
    assert not fabric.compiler.is_compiling()


def test_custom_backend_gets_graph_module_and_examples():
    calls = []

    def backend(gm, example_inputs):
        calls.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    cm = fabric.compile(nn.Linear(2, 2), backend=backend)
    x = fabric.randn(3, 2)
    np.testing.assert_allclose(cm(x).detach().numpy(), cm._orig_mod(x).detach().numpy())
    cm(x)
    (gm, shapes), = calls
    assert isinstance(gm, fx.GraphModule) and shapes == [(3, 2)]
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "get_attr", "get_attr", "call_function", "output"]

    def broken(gm, example_inputs):
        raise ValueError("nope")
    with pytest.raises(exc.BackendCompilerFailed, match="nope"):
        fabric.compile(lambda t: t + 1, backend=broken)(x)


def test_bad_arguments_like_torch():
    with pytest.raises(RuntimeError, match="Either mode or options can be specified, but both can't be specified"):
        fabric.compile(nn.Linear(1, 1), mode="default", options={})
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast, should be one of: default, reduce-overhead"):
        fabric.compile(nn.Linear(1, 1), mode="fast")
    with pytest.raises(exc.InvalidBackend, match="Invalid backend: 'nope'"):
        fabric.compile(nn.Linear(1, 1), backend="nope")
    assert "inductor" in fabric.compiler.list_backends()
    m = nn.Linear(1, 1)
    assert fabric.compile(m, disable=True) is m


def test_empty_zero_dim_and_non_contiguous_inputs():
    f = fabric.compile(lambda a, b: (a * b + a).relu())
    for a, b in [(fabric.randn(0, 3), fabric.randn(0, 3)), (fabric.tensor(2.0), fabric.tensor(-3.0)),
                 (fabric.randn(3, 4).t(), fabric.randn(4, 3))]:
        for _ in range(2):
            np.testing.assert_allclose(f(a, b).numpy(), (a * b + a).relu().numpy())


def test_cse_and_dce_passes():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.mul, (x, 2))
    b = g.call_function(operator.mul, (x, 2))
    g.call_function(fabric.exp, (x,))                            # dead
    g.call_function(nn.functional.dropout, (x, 0.5, True))        # dead but random: kept
    g.call_method("add_", (x, 1))                                 # mutates x: later x*2 is not the earlier one
    c = g.call_function(operator.mul, (x, 2))
    g.output((g.call_function(operator.add, (a, b)), c))
    assert eliminate_common_subexpressions(g) == 1
    assert eliminate_dead_code(g) == 1
    targets = [n.target for n in g.nodes if n.op != "placeholder"]
    assert targets.count(operator.mul) == 2 and nn.functional.dropout in targets and "add_" in targets
    from fabric._dynamo.executor import build
    t = fabric.ones(2)
    s, c = build(g, {})(t)
    np.testing.assert_array_equal(s.numpy(), [4, 4])
    np.testing.assert_array_equal(c.numpy(), [4, 4])


@pytest.mark.torch
def test_state_dict_keys_and_errors_like_torch():
    import torch
    tm = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    fm = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert list(fabric.compile(fm).state_dict()) == list(torch.compile(tm).state_dict())
    assert type(torch.compile(tm)).__name__ == type(fabric.compile(fm)).__name__ == "OptimizedModule"
    with pytest.raises(RuntimeError) as te:
        torch.compile(tm, mode="default", options={})
    with pytest.raises(RuntimeError) as fe:
        fabric.compile(fm, mode="default", options={})
    assert str(te.value) == str(fe.value)


@pytest.mark.parametrize("module", ["fabric._dynamo", "fabric._dynamo.passes", "fabric._dynamo.executor", "fabric._dynamo.fusion",
                                    "fabric._dynamo.config", "fabric.compiler"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


@pytest.mark.parametrize("where", ["root", "child"])
def test_module_hooks_run_on_every_call(where):
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    cm = fabric.compile(m)
    x = fabric.randn(1, 2)
    cm(x)
    cm(x)                                   # captured and replayed before the hook exists
    calls = []
    (m if where == "root" else m[0]).register_forward_hook(lambda mod, i, o: calls.append(tuple(o.shape)))
    cm(x)
    cm(x)
    assert calls == [(1, 2), (1, 2)]


def test_torch_compile_under_the_alias(tmp_path):
    import os
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text(
        "import torch\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    return torch.sin(x) * 2\n"
        "x = torch.ones(3)\n"
        "assert bool((f(x) == f(x)).all()) and not torch.compiler.is_compiling()\n"
        "m = torch.compile(torch.nn.Linear(2, 2))\n"
        "import inspect, fabric\n"
        "assert inspect.isfunction(fabric.compile)  # the function (its machinery is fabric._dynamo)\n"
        "print(list(m.state_dict()))\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-m", "fabric.run", str(script)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['_orig_mod.weight', '_orig_mod.bias']"


def test_replaced_parameter_or_buffer_is_seen():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).eval()
    cm = fabric.compile(m)
    x = fabric.randn(3, 2)
    cm(x)
    cm(x)
    m[0].weight = nn.Parameter(fabric.zeros(2, 2))
    m[1].running_mean = fabric.ones(2)
    np.testing.assert_allclose(cm(x).detach().numpy(), m(x).detach().numpy())
    m.double()                                   # in place: the same Parameter objects
    np.testing.assert_allclose(cm(x.double()).detach().numpy(), m(x.double()).detach().numpy())


def test_executor_names_do_not_clash_with_arguments():
    def f(v1, v2, _k0):
        return (v1 + v2) * _k0

    cf = fabric.compile(f)
    a, b, c = fabric.ones(2), fabric.full((2,), 2.0), fabric.full((2,), 3.0)
    for _ in range(2):
        np.testing.assert_array_equal(cf(a, b, c).numpy(), [9, 9])
        np.testing.assert_array_equal(cf(a, v2=b, _k0=c).numpy(), [9, 9])


def test_untraceable_signature_runs_eagerly_once():
    calls = []

    class M(nn.Module):
        def forward(self, x, *, scale=2.0):
            calls.append(1)
            return x * scale

    cm = fabric.compile(M())
    x = fabric.ones(2)
    np.testing.assert_array_equal(cm(x, scale=3.0).numpy(), [3, 3])
    np.testing.assert_array_equal(cm(x, scale=3.0).numpy(), [3, 3])
    assert len(calls) == 2                       # each call ran forward exactly once
    assert "cannot trace" in _entries(cm)[0].reason[0]
    with pytest.raises(exc.Unsupported):
        fabric.compile(M(), fullgraph=True)(x, scale=3.0)


def test_module_compile_in_place():
    """nn.Module.compile() compiles forward in place (PyTorch's Module.compile): same numbers, keys unchanged,
    parameter updates seen, picklable."""
    import pickle

    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = fabric.randn(5, 3)
    ref = m(x)
    m.compile()
    assert bool((m(x) == ref).all()) and list(m.state_dict())[0] == "0.weight"
    m(x).sum().backward()
    fabric.optim.SGD(m.parameters(), lr=0.1).step()
    twin = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    twin.load_state_dict(m.state_dict())
    assert bool((m(x) == twin(x)).all())
    back = pickle.loads(pickle.dumps(m))
    assert bool((back(x) == twin(x)).all())
