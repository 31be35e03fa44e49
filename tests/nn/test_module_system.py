"""nn.Module: registration, iteration, state_dict, conversion, hooks, repr,
copying; Parameter / Buffer; containers; lazy modules."""
from __future__ import annotations

import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import fabric
from fabric import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.block = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.1), nn.Linear(3, 2))
        self.scale = nn.Parameter(fabric.ones(2))
        self.register_buffer("steps", fabric.zeros(()))
        self.register_buffer("cache", fabric.zeros(2), persistent=False)

    def forward(self, x):
        return self.block(self.bn(self.fc1(x))) * self.scale


def _torch_net():
    import torch
    from torch import nn as tnn

    class TNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = tnn.Linear(4, 3)
            self.bn = tnn.BatchNorm1d(3)
            self.block = tnn.Sequential(tnn.Linear(3, 3), tnn.Dropout(0.1), tnn.Linear(3, 2))
            self.scale = tnn.Parameter(torch.ones(2))
            self.register_buffer("steps", torch.zeros(()))
            self.register_buffer("cache", torch.zeros(2), persistent=False)

        def forward(self, x):
            return self.block(self.bn(self.fc1(x))) * self.scale

    TNet.__name__ = TNet.__qualname__ = "Net"
    return TNet()


# --- registration ---------------------------------------------------------------------

def test_registration_by_assignment():
    m = Net()
    assert list(m._parameters) == ["scale"]
    assert list(m._modules) == ["fc1", "bn", "block"]
    assert list(m._buffers) == ["steps", "cache"]
    assert m._non_persistent_buffers_set == {"cache"}
    assert m.fc1 is m._modules["fc1"] and m.scale is m._parameters["scale"] and m.steps is m._buffers["steps"]
    m.extra = nn.Buffer(fabric.ones(1), persistent=False)
    assert "extra" in m._buffers and "extra" in m._non_persistent_buffers_set
    m.plain = 3
    assert m.__dict__["plain"] == 3 and "plain" not in m._parameters


def test_reassignment_moves_between_kinds():
    m = nn.Module()
    m.a = nn.Parameter(fabric.ones(1))
    m.a = None  # a None parameter stays registered
    assert "a" in m._parameters and m.a is None
    with pytest.raises(TypeError, match="cannot assign 'fabric.Tensor' as parameter 'a'"):
        m.a = fabric.ones(1)
    m.b = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="as child module 'b'"):
        m.b = fabric.ones(1)
    m.b = nn.Parameter(fabric.ones(1))  # a parameter replaces the module
    assert "b" not in m._modules and "b" in m._parameters
    m.register_buffer("c", fabric.zeros(1))
    m.c = fabric.ones(1)  # a Tensor assigned to a buffer name stays a buffer
    assert float(m._buffers["c"]) == 1.0
    with pytest.raises(TypeError, match="as buffer 'c'"):
        m.c = 5


def test_registration_errors():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(fabric.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    m = nn.Module()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", fabric.ones(1))
    with pytest.raises(KeyError, match="empty string"):
        m.register_parameter("", None)
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="torch.nn.Parameter or None required"):
        m.register_parameter("w", fabric.ones(1))
    with pytest.raises(TypeError, match="torch Tensor or None required"):
        m.register_buffer("w", 3)
    m.x = 1
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.register_buffer("x", fabric.ones(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("y", 3)
    with pytest.raises(KeyError, match="module name can"):
        m.add_module("y.z", nn.Identity())
    m.register_module("y", nn.Identity())
    assert isinstance(m.y, nn.Identity)


def test_getattr_delattr_dir():
    m = Net()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        _ = m.nope
    d = dir(m)
    assert {"fc1", "scale", "steps", "forward", "training"} <= set(d)
    assert d == sorted(d)
    assert not any(k[0].isdigit() for k in dir(m.block))
    del m.scale, m.steps, m.fc1
    assert "scale" not in m._parameters and "steps" not in m._buffers and "fc1" not in m._modules
    del m.cache
    assert "cache" not in m._non_persistent_buffers_set
    m.tmp = 1
    del m.tmp
    assert not hasattr(m, "tmp")


# --- iteration -----------------------------------------------------------------------------

def test_named_parameters_buffers_modules():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "block.0.weight", "block.0.bias",
                     "block.2.weight", "block.2.bias"]
    assert [n for n, _ in m.named_parameters(prefix="net", recurse=False)] == ["net.scale"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache", "bn.running_mean", "bn.running_var",
                                                 "bn.num_batches_tracked"]
    assert len(list(m.buffers(recurse=False))) == 2
    assert [n for n, _ in m.named_children()] == ["fc1", "bn", "block"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "bn", "block", "block.0", "block.1", "block.2"]
    assert [n for n, _ in m.named_modules(prefix="root")][:2] == ["root", "root.fc1"]
    assert list(m.modules())[0] is m and len(list(m.children())) == 3


def test_shared_parameters_and_modules():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU() if hasattr(nn, "ReLU") else nn.Identity(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters(remove_duplicate=False)] == ["0.weight", "0.bias", "2.weight",
                                                                           "2.bias"]
    assert len(list(seq.modules())) == 3
    assert len(list(seq.named_modules(remove_duplicate=False))) == 4
    tied = nn.Module()
    tied.a = nn.Linear(3, 3)
    tied.b = nn.Linear(3, 3)
    tied.b.weight = tied.a.weight
    assert len(list(tied.parameters())) == 3
    assert list(tied.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


def test_get_submodule_parameter_buffer():
    m = Net()
    assert m.get_submodule("") is m
    assert m.get_submodule("block.2") is m.block[2]
    assert m.get_parameter("block.0.bias") is m.block[0].bias
    assert m.get_buffer("bn.running_var") is m.bn.running_var
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        m.get_submodule("block.9")
    with pytest.raises(AttributeError, match="`scale` is not an nn.Module"):
        m.get_submodule("scale.x")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        m.get_parameter("bn.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("fc1.weight")
    new = nn.Linear(3, 3)
    m.set_submodule("block.0", new)
    assert m.block[0] is new
    with pytest.raises(AttributeError, match="has no attribute `zz`"):
        m.set_submodule("block.zz", new, strict=True)


# --- state dict ------------------------------------------------------------------------------

def test_state_dict_keys_order_and_metadata():
    m = Net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var", "bn.num_batches_tracked", "block.0.weight", "block.0.bias",
                        "block.2.weight", "block.2.bias"]
    assert sd._metadata[""] == {"version": 1} and sd._metadata["bn"] == {"version": 2}
    assert not sd["fc1.weight"].requires_grad and type(sd["fc1.weight"]) is fabric.Tensor
    assert sd["fc1.weight"].data_ptr() == m.fc1.weight.data_ptr()
    kv = m.state_dict(keep_vars=True)
    assert kv["fc1.weight"] is m.fc1.weight
    assert list(m.state_dict(prefix="p."))[0] == "p.scale"


@pytest.mark.torch
def test_state_dict_keys_match_torch_and_load_torch_tensors():
    tm = _torch_net()
    m = Net()
    assert list(m.state_dict()) == list(tm.state_dict())
    assert m.load_state_dict(tm.state_dict()).missing_keys == []  # PyTorch tensors load directly
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())
    assert repr(m) == repr(tm)


def test_load_state_dict_keeps_identity_and_reports():
    a, b = Net(), Net()
    w = b.fc1.weight
    res = b.load_state_dict(a.state_dict())
    assert repr(res) == "<All keys matched successfully>"
    assert b.fc1.weight is w
    np.testing.assert_array_equal(w.detach().numpy(), a.fc1.weight.detach().numpy())
    assert w._version > 0 and w.requires_grad
    sd = a.state_dict()
    del sd["fc1.bias"]
    sd["extra.key"] = fabric.ones(1)
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra.key"]
    assert res == (["fc1.bias"], ["extra.key"])


def test_load_state_dict_error_messages():
    m = nn.Linear(3, 2)
    sd = nn.Linear(3, 2).state_dict()
    sd["foo"] = fabric.ones(1)
    del sd["bias"]
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". '
                            '\n\tUnexpected key(s) in state_dict: "foo". ')
    bad = {"weight": fabric.ones(4, 3), "bias": fabric.ones(2)}
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape "
                                           r"fabric.Size\(\[4, 3\]\) from checkpoint, the shape in current model is "
                                           r"fabric.Size\(\[2, 3\]\)."):
        m.load_state_dict(bad)
    with pytest.raises(RuntimeError, match='expected torch.Tensor or Tensor-like object from checkpoint'):
        m.load_state_dict({"weight": "x", "bias": fabric.ones(2)})
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    before = m.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError):
        m.load_state_dict({"weight": fabric.zeros(2, 3)})  # strict: bias missing - but weight was copied
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.zeros((2, 3)))
    assert before.shape == (2, 3)


@pytest.mark.torch
def test_load_state_dict_messages_equal_torch():
    import torch

    sd_t = torch.nn.Linear(3, 2).state_dict()
    sd_t["foo"] = torch.ones(1)
    del sd_t["bias"]
    with pytest.raises(RuntimeError) as et:
        torch.nn.Linear(3, 2).load_state_dict(sd_t)
    sd = {"weight": fabric.ones(2, 3), "foo": fabric.ones(1)}
    with pytest.raises(RuntimeError) as ef:
        nn.Linear(3, 2).load_state_dict(sd)
    assert str(ef.value) == str(et.value)


def test_load_state_dict_assign_and_scalars():
    m = nn.Linear(2, 2)
    w = fabric.full((2, 2), 3.0)
    m.load_state_dict({"weight": w, "bias": fabric.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == w.data_ptr()
    b = nn.Module()
    b.register_buffer("s", fabric.zeros(()))
    b.load_state_dict({"s": fabric.tensor([5.0])})  # a 1-element checkpoint value loads into a 0-d buffer
    assert float(b.s) == 5.0
    m2 = nn.Linear(2, 2)
    m2.load_state_dict({"weight": np.ones((2, 2), np.float32), "bias": np.zeros(2, np.float32)})
    assert float(m2.weight.sum()) == 4.0


def test_state_dict_and_load_hooks():
    m = nn.Linear(2, 2)
    seen = []
    h1 = m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(("pre", prefix)))
    h2 = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__setitem__("extra", 1))
    sd = m.state_dict()
    assert seen == [("pre", "")] and sd["extra"] == 1
    h1.remove(), h2.remove()
    assert "extra" not in m.state_dict()
    calls = []
    m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: calls.append(("pre", type(mod).__name__)))

    def post(mod, keys):
        calls.append(("post", list(keys.unexpected_keys)))
        keys.unexpected_keys.clear()

    m.register_load_state_dict_post_hook(post)
    sd = m.state_dict()
    sd["junk"] = fabric.ones(1)
    m.load_state_dict(sd)  # the post hook clears the unexpected key, so strict loading passes
    assert calls == [("pre", "Linear"), ("post", ["junk"])]


def test_extra_state():
    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    a, b = WithState(), WithState()
    a.count = 7
    sd = a.state_dict()
    assert sd["_extra_state"] == {"count": 7}
    b.load_state_dict(sd)
    assert b.count == 7
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "_extra_state"'):
        nn.Linear(1, 1).load_state_dict({**nn.Linear(1, 1).state_dict(), "_extra_state": 1})


# --- modes, grads, conversion -------------------------------------------------------------------

def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.eval() is m and not m.block[1].training
    assert m.train() is m and m.block[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m.train()
    m(fabric.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    g = m.fc1.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad is g and float(g.abs().sum()) == 0.0
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_to_keeps_parameter_identity():
    m = Net()
    m(fabric.randn(3, 4)).sum().backward()
    w, g = m.fc1.weight, m.fc1.weight.grad
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype == fabric.float64 and type(w) is nn.Parameter
    assert m.fc1.weight.grad is g and g.dtype == fabric.float64
    assert m.bn.running_mean.dtype == fabric.float64 and m.bn.num_batches_tracked.dtype == fabric.int64
    m.to(fabric.float32)
    assert w.dtype == fabric.float32 and w.requires_grad
    m.half()
    assert w.dtype == fabric.float16
    m.float().to("cpu")
    assert w.dtype == fabric.float32 and w.device.type == "cpu"
    m.type(fabric.float64)
    assert w.dtype == fabric.float64 and m.bn.num_batches_tracked.dtype == fabric.float64  # type() casts all
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        nn.Linear(1, 1).to(fabric.int64)
    lin = nn.Linear(2, 2).to(fabric.zeros(1, dtype=fabric.float64))
    assert lin.weight.dtype == fabric.float64
    assert nn.Linear(2, 2).cpu().weight.device.type == "cpu"


def test_apply_and_no_grad_updates():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    seen = []

    @fabric.no_grad()
    def init(mod):
        seen.append(type(mod).__name__)
        if isinstance(mod, nn.Linear):
            mod.weight.fill_(1.0)

    assert m.apply(init) is m
    assert seen == ["Linear", "Linear", "Sequential"]
    w = m[0].weight
    v = w._version
    with fabric.no_grad():
        w.add_(1.0)
    assert w._version == v + 1 and w.is_leaf and w.requires_grad and float(w[0, 0]) == 2.0


def test_call_and_missing_forward():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match='Module \\[NoForward\\] is missing the required "forward"'):
        NoForward()(fabric.ones(1))

    class KW(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    assert float(KW()(fabric.ones(()), scale=3.0)) == 3.0


# --- repr ---------------------------------------------------------------------------------------

def test_repr_format():
    m = Net()
    assert repr(m) == (
        "Net(\n"
        "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (bn): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "  (block): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Dropout(p=0.1, inplace=False)\n"
        "    (2): Linear(in_features=3, out_features=2, bias=True)\n"
        "  )\n"
        ")")

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Identity()

        def extra_repr(self):
            return "line1\nline2"

    assert repr(Multi()) == "Multi(\n  line1\n  line2\n  (inner): Identity()\n)"
    assert repr(nn.Module()) == "Module()"


@pytest.mark.torch
def test_container_reprs_match_torch():
    import torch
    from torch import nn as tnn

    def build(nn_, lib):
        return [
            nn_.ModuleList([nn_.Linear(2, 2), nn_.Linear(2, 2), nn_.Linear(2, 3), nn_.Identity(), nn_.Identity()]),
            nn_.ModuleList(),
            nn_.ModuleDict({"a": nn_.Linear(1, 1), "b": nn_.Sequential(nn_.Identity())}),
            nn_.ParameterList([nn_.Parameter(lib.ones(2, 3)), lib.zeros(4)]),
            nn_.ParameterDict({"x": nn_.Parameter(lib.ones(2)), "y": lib.zeros(1, 2)}),
            nn_.Sequential(OrderedDict([("first", nn_.Flatten()), ("second", nn_.Unflatten(1, (2, 2)))])),
        ]

    for f, t in zip(build(nn, fabric), build(tnn, torch)):
        assert repr(f) == repr(t).replace("torch.float", "fabric.float")


# --- hooks ----------------------------------------------------------------------------------------

def test_forward_pre_and_post_hooks():
    lin = nn.Linear(2, 2)
    order = []
    h1 = lin.register_forward_pre_hook(lambda m, args: order.append("pre1"))
    h2 = lin.register_forward_pre_hook(lambda m, args: order.append("pre0"), prepend=True)
    h3 = lin.register_forward_pre_hook(lambda m, args: args[0] * 0)  # a single value replaces the args
    h4 = lin.register_forward_hook(lambda m, args, out: order.append(("post", tuple(out.shape))))
    out = lin(fabric.ones(1, 2))
    assert order == ["pre0", "pre1", ("post", (1, 2))]
    np.testing.assert_allclose(out.detach().numpy()[0], lin.bias.detach().numpy())
    for h in (h1, h2, h3, h4):
        h.remove()
    assert not lin._forward_pre_hooks and not lin._forward_hooks
    lin.register_forward_hook(lambda m, args, out: out + 1)
    np.testing.assert_allclose(lin(fabric.zeros(1, 2)).detach().numpy()[0], lin.bias.detach().numpy() + 1)


def test_hooks_with_kwargs_and_always_call():
    class M(nn.Module):
        def forward(self, x, *, k=1.0):
            if k < 0:
                raise ValueError("negative")
            return x * k

    m = M()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"k": kwargs["k"] * 2}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["k"]) or out, with_kwargs=True)
    assert float(m(fabric.ones(()), k=1.5)) == 3.0 and seen == [3.0]
    m2 = M()
    always = []
    m2.register_forward_hook(lambda mod, args, out: always.append(out), always_call=True)
    with pytest.raises(ValueError, match="negative"):
        m2(fabric.ones(()), k=-1.0)
    assert always == [None]
    bad = M()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad(fabric.ones(()))


def test_global_forward_hooks():
    from fabric.nn.modules import module as module_mod

    seen = []
    h = module_mod.register_module_forward_hook(lambda m, args, out: seen.append(type(m).__name__))
    try:
        nn.Sequential(nn.Identity())(fabric.ones(1))
    finally:
        h.remove()
    assert seen == ["Identity", "Sequential"]
    nn.Identity()(fabric.ones(1))
    assert len(seen) == 2


def test_full_backward_hooks():
    lin = nn.Linear(3, 2)
    x = fabric.randn(4, 3, requires_grad=True)
    seen = {}

    def hook(m, grad_input, grad_output):
        seen["gi"], seen["go"] = grad_input, grad_output
        return (grad_input[0] * 2,)

    def pre(m, grad_output):
        seen["pre"] = grad_output
        return (grad_output[0] * 3,)

    h = lin.register_full_backward_hook(hook)
    lin.register_full_backward_pre_hook(pre)
    y = lin(x)
    g = fabric.randn(4, 2)
    y.backward(g)
    np.testing.assert_allclose(seen["pre"][0].numpy(), g.numpy())
    np.testing.assert_allclose(seen["go"][0].numpy(), 3 * g.numpy(), rtol=1e-6)
    expected = 3 * g.numpy() @ lin.weight.detach().numpy()
    np.testing.assert_allclose(seen["gi"][0].numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin.weight.grad.numpy(), 3 * g.numpy().T @ x.detach().numpy(), rtol=1e-5, atol=1e-6)
    h.remove()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin.register_backward_hook(lambda *a: None)


def test_full_backward_hook_without_input_grad_and_multiple_inputs():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin(fabric.ones(1, 2)).sum().backward()
    assert seen == [((None,), fabric.Size([1, 2]))]

    bil = nn.Bilinear(2, 3, 1)
    got = []
    bil.register_full_backward_hook(lambda m, gi, go: got.append([None if g is None else tuple(g.shape) for g in gi]))
    a = fabric.randn(4, 2, requires_grad=True)
    b = fabric.randn(4, 3)
    bil(a, b).sum().backward()
    assert got == [[(4, 2), None]]


@pytest.mark.torch
def test_full_backward_hook_matches_torch():
    import torch

    t_lin = torch.nn.Linear(3, 2)
    f_lin = nn.Linear(3, 2)
    f_lin.load_state_dict(t_lin.state_dict())
    out = {}
    for name, lin, lib in (("t", t_lin, torch), ("f", f_lin, fabric)):
        x = lib.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)).requires_grad_(True)
        lin.register_full_backward_hook(lambda m, gi, go, name=name: out.__setitem__(name, (gi, go)))
        (lin(x) ** 2).sum().backward()
    for a, b in zip(out["f"][0] + out["f"][1], out["t"][0] + out["t"][1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_non_full_backward_hook():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_backward_hook(lambda m, gi, go: seen.append(len(go)))
    x = fabric.randn(3, 2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin(x).sum().backward()
    assert seen == [1]


# --- copies -------------------------------------------------------------------------------------------

def test_deepcopy_and_pickle_module():
    m = Net()
    m.tied = nn.Linear(2, 2)
    m.tied2 = m.tied
    m(fabric.randn(4, 4)).sum().backward()
    c = copy.deepcopy(m)
    assert c.tied is c.tied2 and c.tied is not m.tied
    assert c.fc1.weight is not m.fc1.weight and type(c.fc1.weight) is nn.Parameter
    assert c.fc1.weight.grad is None  # Parameter.__deepcopy__ does not copy .grad (as in PyTorch)
    np.testing.assert_array_equal(c.fc1.weight.detach().numpy(), m.fc1.weight.detach().numpy())
    p = pickle.loads(pickle.dumps(m))
    assert p.tied is p.tied2 and "cache" in p._non_persistent_buffers_set
    m.eval(), c.eval(), p.eval()
    x = fabric.randn(2, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), c(x).detach().numpy())
    np.testing.assert_array_equal(m(x).detach().numpy(), p(x).detach().numpy())


# --- Parameter / Buffer ----------------------------------------------------------------------------------

def test_parameter():
    t = fabric.ones(2, 3)
    p = nn.Parameter(t)
    assert p.requires_grad and p.is_leaf and isinstance(p, fabric.Tensor)
    assert p.data_ptr() == t.data_ptr()
    assert repr(p) == "Parameter containing:\ntensor([[1., 1., 1.],\n        [1., 1., 1.]], requires_grad=True)"
    assert type(p * 2) is fabric.Tensor and type(p.detach()) is fabric.Tensor and type(p.data) is fabric.Tensor
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(fabric.ones(2, dtype=fabric.int64))
    assert nn.Parameter(fabric.ones(2, dtype=fabric.int64), requires_grad=False).dtype == fabric.int64
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.data_ptr() != p.data_ptr() and q.requires_grad
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad and r.tolist() == p.tolist()


@pytest.mark.parametrize("flag", ["yes", 1, None, 0.5])
def test_parameter_requires_grad_must_be_bool(flag):
    with pytest.raises(TypeError, match=rf"_make_subclass\(\): argument 'require_grad' \(position 3\) must be bool, "
                                        rf"not {type(flag).__name__}"):
        nn.Parameter(fabric.ones(2), flag)
    with pytest.raises(TypeError, match="argument 'data' must be a Tensor, not list"):
        nn.Parameter([1.0])


def test_buffer():
    b = nn.Buffer(fabric.ones(2), persistent=False)
    assert isinstance(b, nn.Buffer) and type(b) is fabric.Tensor and not b.persistent
    assert not isinstance(fabric.ones(1), nn.Buffer)
    m = nn.Module()
    m.b = b
    assert "b" in m._buffers and list(m.state_dict()) == []


# --- containers -------------------------------------------------------------------------------------------

def test_sequential_api():
    a, b, c = nn.Linear(2, 2), nn.Identity(), nn.Linear(2, 3)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    assert isinstance(s[1:], nn.Sequential) and list(s[1:]) == [b, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    s.append(nn.Identity())
    s.insert(0, nn.Flatten())
    assert isinstance(s[0], nn.Flatten) and list(s._modules) == ["0", "1", "2", "3", "4"]
    s.extend([nn.Identity()])
    del s[0]
    assert s[0] is a and list(s._modules) == [str(i) for i in range(5)]
    assert s.pop(-1) is not None and len(s) == 4
    s[1] = nn.Identity()
    assert s[1] is not b
    assert len(s + nn.Sequential(nn.Identity())) == 5 and len(s * 2) == 8
    s2 = nn.Sequential(nn.Identity())
    s2 += nn.Sequential(nn.Identity())
    s2 *= 2
    assert len(s2) == 4
    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("dec", nn.Linear(2, 2))]))
    assert named.enc is named[0] and [n for n, _ in named.named_children()] == ["enc", "dec"]
    assert s(fabric.ones(1, 2)).shape == (1, 3)
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        s + 1


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.Identity()])
    ml.append(nn.Identity())
    ml.insert(1, nn.Flatten())
    ml += [nn.Identity()]
    assert len(ml) == 5 and isinstance(ml[1], nn.Flatten) and isinstance(ml[-5], nn.Linear)
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(nn.Identity())
    md = nn.ModuleDict({"b": nn.Identity(), "a": nn.Linear(1, 1)})
    assert list(md.keys()) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Identity()
    md.update([("d", nn.Identity())])
    assert list(md) == ["b", "a", "c", "d"]
    assert isinstance(md.pop("a"), nn.Linear) and "a" not in md
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([fabric.ones(2), nn.Parameter(fabric.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    pl.append(fabric.ones(1))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert len(pl[1:]) == 2
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl(1)
    pd = nn.ParameterDict({"b": fabric.ones(1), "a": fabric.zeros(1)})
    assert list(pd) == ["a", "b"]  # plain dicts are added in sorted key order, as in PyTorch
    pd["c"] = fabric.ones(2)
    assert isinstance(pd["c"], nn.Parameter) and pd.get("zz") is None and "c" in pd
    assert [k for k, _ in pd.items()] == ["a", "b", "c"]
    k, v = pd.popitem()
    assert k == "c" and len(pd) == 2
    merged = pd | nn.ParameterDict({"z": fabric.ones(1)})
    assert list(merged) == ["a", "b", "z"]
    with pytest.raises(TypeError, match="not a string"):
        pd[1]


# --- lazy modules -----------------------------------------------------------------------------------------

def test_lazy_linear():
    m = nn.LazyLinear(4)
    assert isinstance(m.weight, nn.UninitializedParameter) and repr(m.weight) == "<UninitializedParameter>"
    y = m(fabric.ones(2, 3))
    assert y.shape == (2, 4) and type(m) is nn.Linear and m.in_features == 3
    assert type(m.weight) is nn.Parameter and m.weight.shape == (4, 3)
    lazy = nn.LazyLinear(4)
    lazy.load_state_dict(m.state_dict())
    assert type(lazy.weight) is nn.Parameter and lazy.weight.shape == (4, 3)


@pytest.mark.torch
def test_lazy_linear_init_matches_torch():
    import torch

    fabric.manual_seed(3)
    torch.manual_seed(3)
    f, t = nn.LazyLinear(5), torch.nn.LazyLinear(5)
    f(fabric.ones(1, 4)), t(torch.ones(1, 4))
    np.testing.assert_array_equal(f.weight.detach().numpy(), t.weight.detach().numpy())
    np.testing.assert_array_equal(f.bias.detach().numpy(), t.bias.detach().numpy())


def test_lazy_batchnorm():
    bn = nn.LazyBatchNorm1d()
    bn(fabric.randn(4, 3))
    assert type(bn) is nn.BatchNorm1d and bn.num_features == 3 and bn.running_mean.shape == (3,)
    assert int(bn.num_batches_tracked) == 1


@pytest.mark.torch
def test_default_initialisation_matches_torch_for_a_model():
    import torch

    fabric.manual_seed(0)
    f = Net()
    torch.manual_seed(0)
    t = _torch_net()
    for (k, a), (k2, b) in zip(f.state_dict().items(), t.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    fabric.manual_seed(0)
    torch.manual_seed(0)
    lf, lt = nn.Linear(3, 4), torch.nn.Linear(3, 4)
    np.testing.assert_array_equal(lf.weight.detach().numpy(), lt.weight.detach().numpy())
    np.testing.assert_array_equal(lf.bias.detach().numpy(), lt.bias.detach().numpy())


@pytest.mark.torch
def test_training_trajectory_equals_torch():
    """Same seed: same initial weights, same dropout masks, same updates - the
    whole training trajectory of a small model matches PyTorch."""
    import torch

    def build(nn_):
        return nn_.Sequential(nn_.Linear(5, 8), nn_.BatchNorm1d(8), nn_.Dropout(0.3), nn_.Linear(8, 6),
                              nn_.LayerNorm(6), nn_.Linear(6, 2))

    fabric.manual_seed(42)
    f = build(nn)
    torch.manual_seed(42)
    t = build(torch.nn)
    data = np.random.default_rng(1).standard_normal((6, 16, 5)).astype(np.float32)
    target = np.random.default_rng(2).standard_normal((6, 16, 2)).astype(np.float32)
    for step in range(6):
        for model, lib in ((f, fabric), (t, torch)):
            lib.manual_seed(100 + step)
            model.zero_grad()
            out = model(lib.from_numpy(data[step].copy()))
            loss = ((out - lib.from_numpy(target[step].copy())) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
    for (n, a), (n2, b) in zip(f.state_dict().items(), t.state_dict().items()):
        assert n == n2
        np.testing.assert_allclose(a.numpy().astype(float), b.numpy().astype(float), rtol=1e-4, atol=1e-5,
                                   err_msg=n)
