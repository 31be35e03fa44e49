"""fabric.jit.script: control flow stays control flow, results equal eager, errors name the construct."""
import pytest

import fabric
from fabric import fx, nn
from fabric.fx import control_flow
from fabric.jit import frontend


def _targets(graph):
    return [n.target for n in graph.nodes if n.op == "call_function"]


def _all_targets(gm):
    out = _targets(gm.graph)
    for child in gm.modules():
        if isinstance(child, fx.GraphModule) and child is not gm:
            out += _targets(child.graph)
    return out


def halve_while_big(x, n: int):
    for _ in range(n):
        if x.sum() > 1:
            x = x / 2
    return x


def count_up(x, limit: float):
    steps = 0
    while x.sum() < limit:
        x = x * 2
        steps += 1
    return x, steps


def optional_bias(x, bias: fabric.Tensor | None = None, scale: float = 1.0):
    if bias is None:
        return x * scale
    return (x + bias) * scale


def early_return(x, flag: bool):
    if flag:
        if x.mean() > 0:
            return x + 1
        y = x - 1
    else:
        y = x * 3
    return y * 2


def gather_rows(x, k: int):
    rows: list[fabric.Tensor] = []
    for i in range(k):
        rows.append(x[i] * (i + 1))
    return fabric.stack(rows)


def iterate_tensor(x):
    total = fabric.zeros(x.shape[1])
    for row in x:
        total = total + row
    return total


def tuple_args(pair: tuple[fabric.Tensor, int], xs: list[int]):
    t, n = pair
    return t * n + len(xs)


def helper(x, k: int):
    return x * k


def calls_helper(x):
    return helper(x, 3) + helper(x, 2)


def ternary_and_bool(x, lo: float, hi: float):
    y = x if x.max() < hi and x.min() > lo else x.clamp(lo, hi)
    return y, not (lo < hi)


def fstring_raise(x):
    if x.dim() != 2:
        raise ValueError(f"expected 2D input (got {x.dim()}D input)")
    return x.t()


@pytest.mark.parametrize("fn,args", [
    (halve_while_big, (fabric.tensor([4.0, 4.0]), 3)),
    (halve_while_big, (fabric.tensor([0.1, 0.2]), 3)),
    (halve_while_big, (fabric.tensor([4.0, 4.0]), 0)),
    (count_up, (fabric.tensor([0.5, 0.25]), 10.0)),
    (optional_bias, (fabric.arange(3.0),)),
    (optional_bias, (fabric.arange(3.0), fabric.ones(3), 2.0)),
    (early_return, (fabric.ones(2), True)),
    (early_return, (-fabric.ones(2), True)),
    (early_return, (fabric.ones(2), False)),
    (gather_rows, (fabric.randn(4, 3), 3)),
    (iterate_tensor, (fabric.randn(5, 2),)),
    (tuple_args, ((fabric.ones(2), 3), [1, 2])),
    (calls_helper, (fabric.randn(3),)),
    (ternary_and_bool, (fabric.tensor([0.5, 0.7]), 0.0, 1.0)),
    (ternary_and_bool, (fabric.tensor([0.5, 1.7]), 0.0, 1.0)),
    (fstring_raise, (fabric.randn(2, 3),)),
])
def test_script_matches_eager(fn, args):
    scripted = fabric.jit.script(fn)
    got, want = scripted(*args), fn(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert (fabric.equal(g, w) if isinstance(w, fabric.Tensor) else g == w)
    else:
        assert fabric.equal(got, want)


def test_control_flow_is_not_unrolled():
    f = fabric.jit.script(halve_while_big)
    top = _targets(f.graph)
    assert top.count(control_flow.range_loop) == 1
    assert control_flow.cond in _all_targets(f._gm)
    # the same graph runs any trip count
    assert fabric.equal(f(fabric.tensor([64.0]), 7), fabric.tensor([1.0]))  # 64 -> 1, then sum > 1 fails
    w = fabric.jit.script(count_up)
    assert control_flow.while_loop in _targets(w.graph)
    x, steps = w(fabric.tensor([1.0]), 1000.0)
    assert steps == 10 and x.item() == 1024.0


def test_raise_in_branch_and_fstring():
    f = fabric.jit.script(fstring_raise)
    with pytest.raises(ValueError, match=r"expected 2D input \(got 3D input\)"):
        f(fabric.ones(1, 1, 1))


def test_script_is_scripting_folds_to_true():
    @fabric.jit.unused
    def python_only(x):
        return x * 100

    def f(x):
        if fabric.jit.is_scripting():
            return x + 1
        return python_only(x)

    s = fabric.jit.script(f)
    assert fabric.equal(s(fabric.zeros(1)), fabric.ones(1))
    assert f(fabric.ones(1)).item() == 100
    assert control_flow.cond not in _targets(s.graph)


def test_call_time_type_checks():
    f = fabric.jit.script(halve_while_big)
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'n' but instead found "
                                           "type 'float'"):
        f(fabric.ones(1), 2.5)
    with pytest.raises(RuntimeError, match="is missing value for argument 'n'"):
        f(fabric.ones(1))
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'x'"):
        f(3, 2)
    assert f.schema == "halve_while_big(Tensor x, int n)"


def _undefined_in_branch(x):
    if x.sum() > 0:
        y = x
    return y


def _recursive(x, n: int):
    return _recursive(x, n - 1)


def _calls_bad(x):
    return _try_helper(x)


def _try_helper(x):
    try:
        return x
    except Exception:
        return x


@pytest.mark.parametrize("fn,cls,msg", [
    (_undefined_in_branch, frontend.NotSupportedError, "y is not defined in the false branch"),
    (_recursive, frontend.NotSupportedError, "is called recursively"),
    (_calls_bad, frontend.UnsupportedNodeError, "try blocks aren't supported"),
])
def test_script_errors(fn, cls, msg):
    with pytest.raises(cls, match=msg) as info:
        fabric.jit.script(fn)
    assert "<--- HERE" in str(info.value) and __file__ in str(info.value)


def test_script_lambda_and_class_rejected():
    with pytest.raises(frontend.NotSupportedError, match="lambda"):
        fabric.jit.script(lambda x: x)
    with pytest.raises(NotImplementedError, match="script of a class"):
        fabric.jit.script(nn.Linear)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.norm(x + self.drop(fabric.relu(self.fc(x))))


class Net(nn.Module):
    scale: fabric.jit.Final[float]

    def __init__(self, d=4, use_extra=True):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.head = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.use_extra = use_extra
        self.scale = 0.5
        self.register_buffer("offset", fabric.ones(d))

    @fabric.jit.ignore
    def debug(self, x):
        return x

    def helper(self, x, times: int):
        for _ in range(times):
            x = x * self.scale + self.offset
        return x

    @fabric.jit.export
    def embed(self, x):
        return self.head(x)

    def forward(self, x, times: int = 2):
        for block in self.blocks:
            x = block(x)
        if self.use_extra:
            x = self.helper(x, times)
        if self.training:
            x = x * 2
        return self.head(x)


def test_script_module_matches_eager_train_and_eval():
    fabric.manual_seed(0)
    m = Net()
    s = fabric.jit.script(m)
    x = fabric.randn(3, 4)
    m.eval()
    s.eval()
    assert fabric.allclose(s(x), m(x)) and fabric.allclose(s(x, 5), m(x, 5))
    m.train()
    s.train()
    fabric.manual_seed(1)
    want = m(x)
    fabric.manual_seed(1)
    got = s(x)
    assert fabric.allclose(got, want)
    assert fabric.allclose(s.embed(x), m.embed(x))
    assert isinstance(s.embed.graph, fx.Graph)


def test_script_module_state_dict_to_and_shared_parameters():
    m = Net().eval()
    s = fabric.jit.script(m)
    assert list(s.state_dict()) == list(m.state_dict())
    assert s.blocks[0].fc.weight is m.blocks[0].fc.weight
    s.to(fabric.float64)
    x = fabric.randn(2, 4, dtype=fabric.float64)
    assert s(x).dtype == fabric.float64
    assert fabric.allclose(s(x), m(x))
    assert "def forward(self, x, times = 2)" in s.code


def test_script_module_gradients_match_eager():
    fabric.manual_seed(0)
    m = Net().eval().to(fabric.float64)
    s = fabric.jit.script(m)
    x = fabric.randn(3, 4, dtype=fabric.float64, requires_grad=True)
    s(x, 3).sum().backward()
    got = [p.grad.clone() for p in m.parameters()] + [x.grad.clone()]
    for p in m.parameters():
        p.grad = None
    x.grad = None
    m(x, 3).sum().backward()
    want = [p.grad for p in m.parameters()] + [x.grad]
    for g, w in zip(got, want):
        assert fabric.allclose(g, w)
    f = fabric.jit.script(halve_while_big)
    inp = fabric.tensor([4.0, 4.0], dtype=fabric.float64, requires_grad=True)
    assert fabric.autograd.gradcheck(lambda t: f(t, 2), (inp,))


def test_script_fabric_layers():
    fabric.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(12, 5), nn.LogSoftmax(dim=1))
    s = fabric.jit.script(net)
    x = fabric.randn(2, 2, 4, 4)
    net.train()
    s.train()
    want = net(x)
    rm = net[1].running_mean.clone()
    got = s(x)            # train mode updates the (shared) running stats again
    assert fabric.allclose(got, want, atol=1e-6)
    assert not fabric.equal(net[1].running_mean, rm)
    net.eval()
    s.eval()
    assert fabric.allclose(s(x), net(x), atol=1e-6)


def test_script_ignored_and_unused_methods():
    class M(nn.Module):
        @fabric.jit.ignore
        def py(self, x):
            return x + 10

        @fabric.jit.unused
        def never(self, x):
            import pdb  # noqa: F401  (would not compile)
            return x

        def forward(self, x, use: bool):
            if use:
                return self.never(x)
            return self.py(x)

    s = fabric.jit.script(M())
    assert fabric.equal(s(fabric.zeros(1), False), fabric.full((1,), 10.0))
    with pytest.raises(fabric.jit.Error, match="marked @torch.jit.unused"):
        s(fabric.zeros(1), True)


def test_script_function_calls_scripted_function():
    inner = fabric.jit.script(helper)

    def outer(x):
        return inner(x, 4) - 1

    s = fabric.jit.script(outer)
    assert fabric.equal(s(fabric.ones(2)), fabric.full((2,), 3.0))
    assert fabric.jit.script(s) is s


def test_nested_loops_and_branches():
    def f(x, n: int, m: int):
        acc = fabric.zeros_like(x)
        i = 0
        while i < n:
            for j in range(m):
                if (i + j) % 2 == 0:
                    acc = acc + x * j
                else:
                    acc = acc - x
            i += 1
        return acc

    s = fabric.jit.script(f)
    for n, m in ((0, 3), (3, 4), (2, 1)):
        x = fabric.randn(3)
        assert fabric.allclose(s(x, n, m), f(x, n, m))


def test_isinstance_refinement_and_jit_attribute():
    def f(x: fabric.Tensor | None, n: int):
        if isinstance(x, fabric.Tensor):
            return x * n
        return fabric.zeros(1)

    s = fabric.jit.script(f)
    assert fabric.equal(s(fabric.ones(2), 3), fabric.full((2,), 3.0))
    assert fabric.equal(s(None, 3), fabric.zeros(1))
    assert fabric.jit.isinstance([1, 2], list[int]) and not fabric.jit.isinstance([1.5], list[int])
    assert fabric.jit.isinstance({"a": fabric.ones(1)}, dict[str, fabric.Tensor])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = fabric.jit.Attribute(4, int)

        def forward(self, x):
            return x * self.k

    assert fabric.equal(fabric.jit.script(M())(fabric.ones(1)), fabric.full((1,), 4.0))


def _star_call(x, y):
    opts = {"dim": 1, "keepdim": True}
    a, b = (t.relu() for t in (x, y))
    return fabric.sum(a * b, **opts) + fabric.stack(*((a, b),)).mean()


def test_generator_over_constant_tuples_and_star_arguments():
    s = fabric.jit.script(_star_call)
    x, y = fabric.randn(2, 3), fabric.randn(2, 3)
    assert fabric.allclose(s(x, y), _star_call(x, y))


@pytest.mark.parametrize("layer,args", [
    (lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0), (fabric.randn(2, 5, 8),)),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), (fabric.randn(2, 4, 8),) * 3),
    (lambda: nn.GroupNorm(2, 4), (fabric.randn(3, 4, 5),)),
    (lambda: nn.Embedding(7, 3, padding_idx=0), (fabric.tensor([[0, 3, 6]]),)),
])
def test_script_fabric_attention_and_norm_layers(layer, args):
    fabric.manual_seed(0)
    m = layer().eval()
    s = fabric.jit.script(m)
    got, want = s(*args), m(*args)
    got = got[0] if isinstance(got, tuple) else got
    want = want[0] if isinstance(want, tuple) else want
    assert fabric.allclose(got, want, atol=1e-6)


class _Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class _Derived(_Base):
    def forward(self, x):
        return super().forward(x).tanh() * 2


class _Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) + 1


def test_super_calls_and_nested_modules_of_one_class():
    fabric.manual_seed(0)
    for m in (_Derived(), _Wrap(_Wrap(_Derived()))):
        x = fabric.randn(2, 3)
        assert fabric.allclose(fabric.jit.script(m)(x), m(x))


def _first_above(x, limit: float):
    i = 0
    found = -1
    while i < x.shape[0]:
        if x[i] > limit:
            found = i
            break
        i += 1
    return found


def _skip_and_stop(x, n: int):
    total = fabric.zeros(())
    for i in range(n):
        if i % 2 == 1:
            continue
        if total > 10:
            break
        total = total + x[i]
        for j in range(3):          # the inner loop's break is its own
            if j == 1:
                break
            total = total + 0.5
    return total


def _module_list_break(x, stop: int):
    k = 0
    for v in (1.0, 2.0, 3.0, 4.0):
        if k == stop:
            break
        x = x * v
        k += 1
    return x, k


@pytest.mark.parametrize("fn,cases", [
    (_first_above, [(fabric.tensor([0.1, 0.5, 2.0, 3.0]), 1.0), (fabric.tensor([0.1, 0.2]), 1.0),
                    (fabric.tensor([5.0]), 1.0)]),
    (_skip_and_stop, [(fabric.arange(10.0), 10), (fabric.arange(10.0), 3), (fabric.arange(10.0), 0)]),
    (_module_list_break, [(fabric.ones(2), 0), (fabric.ones(2), 2), (fabric.ones(2), 9)]),
])
def test_break_and_continue(fn, cases):
    s = fabric.jit.script(fn)
    for args in cases:
        got, want = s(*args), fn(*args)
        if isinstance(want, tuple):
            assert fabric.equal(got[0], want[0]) and got[1] == want[1]
        elif isinstance(want, fabric.Tensor):
            assert fabric.equal(got, want), (got, want)
        else:
            assert got == want
    loops = [t for t in _all_targets(s._gm) if t in (control_flow.while_loop, control_flow.range_loop)]
    assert loops or fn is _module_list_break


def _find(x, target: float):
    for i in range(x.shape[0]):
        if x[i] == target:
            return i
    return -1


def _find_while(x, limit: float):
    i = 0
    while i < 100:
        if x.sum() > limit:
            return x, i
        x = x * 2
        i += 1
    return x, -1


def test_return_inside_loops():
    f = fabric.jit.script(_find)
    x = fabric.tensor([3.0, 1.0, 4.0, 1.0])
    assert f(x, 4.0) == 2 and f(x, 1.0) == 1 and f(x, 9.0) == -1
    g = fabric.jit.script(_find_while)
    for start, limit in ((1.0, 10.0), (1.0, 0.5), (0.0, 1.0)):
        got, want = g(fabric.tensor([start]), limit), _find_while(fabric.tensor([start]), limit)
        assert fabric.equal(got[0], want[0]) and got[1] == want[1]
