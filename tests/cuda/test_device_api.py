"""``fabric.cuda`` and the CUDA side of creation, ``.to``, RNG, pinned memory
and DLPack.

Three settings:

* no usable CUDA (this machine: CuPy without a device, or CuPy missing):
  everything answers False/0 or raises a RuntimeError that says why;
* the fake CUDA devices of ``fake_cupy`` (two of them): the API and the
  device-handling code paths run for real;
* a real GPU (marker ``cuda``): a few end-to-end checks.

The CUDA random stream (``PhiloxGenerator``) is also tested on NumPy, where it
must give the same numbers as on a device.
"""
from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np
import pytest

import fabric
from fabric import nn
from fabric._rng import philox
from fabric.backends import cupy_backend as cb
from fabric.backends import fused

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def same(a, b) -> bool:
    """Equal values, compared on the host (tensors may sit on any device)."""
    return np.array_equal(a.cpu().numpy(), b.cpu().numpy())


# ==========================================================================
# without a usable device
# ==========================================================================
@pytest.fixture
def no_cuda():
    """The machine as it is, skipped where a real device exists."""
    if fabric.cuda.is_available():
        pytest.skip("a CUDA device is present")
    yield
    fabric.cuda._reset_state()


@pytest.fixture
def no_cupy(monkeypatch):
    """CuPy made unimportable (``import cupy`` raises ImportError)."""
    for name in ("cupy", "cupyx"):
        monkeypatch.setitem(sys.modules, name, None)
    from fabric import backends

    monkeypatch.setattr(backends, "_cupy_instance", None)
    fabric.cuda._reset_state()
    yield
    fabric.cuda._reset_state()


@pytest.mark.parametrize("setting", ["no_cuda", "no_cupy"])
def test_queries_answer_cleanly_without_cuda(setting, request):
    request.getfixturevalue(setting)
    c = fabric.cuda
    assert c.is_available() is False and c.device_count() == 0 and c.unavailable_reason()
    assert c.memory_allocated() == c.max_memory_allocated() == c.memory_reserved() == c.max_memory_reserved() == 0
    assert c.memory_stats() == {} and not c.is_initialized() and c.is_bf16_supported() is False
    c.empty_cache()
    c.reset_peak_memory_stats()
    c.manual_seed(1)
    c.manual_seed_all(1)
    c.seed()
    c.seed_all()
    fabric.manual_seed(3)            # seeds CPU and (lazily) CUDA: fine without CUDA
    with fabric.random.fork_rng():
        fabric.rand(2)
    with c.stream(None), c.device(None):
        pass


@pytest.mark.parametrize("setting", ["no_cuda", "no_cupy"])
@pytest.mark.parametrize("call", [
    lambda: fabric.cuda.current_device(), lambda: fabric.cuda.get_device_name(),
    lambda: fabric.cuda.get_device_properties(0), lambda: fabric.cuda.get_device_capability(),
    lambda: fabric.cuda.synchronize(), lambda: fabric.cuda.Stream(), lambda: fabric.cuda.Event(),
    lambda: fabric.cuda.current_stream(), lambda: fabric.cuda.default_stream(), lambda: fabric.cuda.initial_seed(),
    lambda: fabric.cuda.get_rng_state(), lambda: fabric.cuda.mem_get_info(), lambda: fabric.cuda.init(),
    lambda: fabric.cuda.set_device(0), lambda: fabric.Generator("cuda"),
], ids=["current_device", "get_device_name", "get_device_properties", "get_device_capability", "synchronize",
        "Stream", "Event", "current_stream", "default_stream", "initial_seed", "get_rng_state", "mem_get_info",
        "init", "set_device", "Generator"])
def test_device_calls_raise_clearly_without_cuda(setting, call, request):
    request.getfixturevalue(setting)
    with pytest.raises(RuntimeError, match="CUDA is not available: .*(CuPy|device)"):
        call()


@pytest.mark.parametrize("setting", ["no_cuda", "no_cupy"])
@pytest.mark.parametrize("call", [
    lambda: fabric.ones(2).to("cuda"), lambda: fabric.ones(2).cuda(), lambda: fabric.ones(2).to("cuda:0"),
    lambda: fabric.zeros(2, device="cuda"), lambda: fabric.zeros(2, device="cuda:0"),
    lambda: fabric.randn(2, device="cuda:0"), lambda: fabric.tensor([1.0], device="cuda:0"),
    lambda: nn.Linear(2, 2).cuda(), lambda: nn.Linear(2, 2).to("cuda:0"),
], ids=["to_cuda", "cuda()", "to_cuda0", "zeros_cuda", "zeros_cuda0", "randn_cuda0", "tensor_cuda0",
        "module_cuda", "module_to_cuda0"])
def test_moving_to_cuda_raises_naming_why(setting, call, request):
    request.getfixturevalue(setting)
    with pytest.raises(RuntimeError, match="CuPy|CUDA device|CUDA is not available"):
        call()


def test_nothing_imports_cupy_until_used():
    code = ("import sys, fabric, fabric.cuda, fabric.backends.cupy_backend; from fabric.cuda import Stream, Event; "
            "fabric.manual_seed(0); fabric.randn(3); fabric.random.fork_rng; print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fabric_cuda_doctests():
    res = doctest.testmod(fabric.cuda, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted >= 3
    res = doctest.testmod(cb, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
    res = doctest.testmod(philox, optionflags=doctest.NORMALIZE_WHITESPACE)  # PhiloxGenerator, philox4x32
    assert res.failed == 0 and res.attempted >= 4


def test_device_argument_errors():
    with pytest.raises(ValueError, match="Expected a cuda device"):
        fabric.cuda.memory_stats("cpu") if fabric.cuda.is_available() else fabric.cuda._index("cpu")


# ==========================================================================
# on the fake CUDA devices
# ==========================================================================
@pytest.fixture
def fake():
    """Two fake CUDA devices; fused kernels unavailable (RawModule cannot compile)."""
    import fake_cupy

    with fake_cupy.installed(n_devices=2) as be:
        yield be


@pytest.fixture
def fake_kernels():
    """Two fake CUDA devices with the fused kernels run by the g++ CPU harness."""
    import harness

    if not harness.have_compiler():
        pytest.skip("the CUDA CPU harness needs g++ and nm")
    import fake_cupy

    with fake_cupy.installed(n_devices=2, kernels="harness") as be:
        yield be


def test_device_queries(fake):
    c = fabric.cuda
    assert c.is_available() and c.device_count() == 2 and c.current_device() == 0 and c.unavailable_reason() == ""
    assert c.is_initialized()
    assert c.get_device_name(1) == "Fake CUDA device 1 (NumPy)"
    props = c.get_device_properties("cuda:1")
    assert props.total_memory == 16 * 2 ** 30 and props.multi_processor_count == 4
    assert "Fake CUDA device 1" in repr(props)
    assert c.get_device_capability() == (9, 0)
    with pytest.raises(AssertionError, match="Invalid device id"):
        c.get_device_properties(2)
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        c.get_device_name("cpu")
    assert c.mem_get_info()[1] == 16 * 2 ** 30
    c.synchronize()
    c.synchronize("cuda:1")


def test_current_device_and_contexts(fake):
    c = fabric.cuda
    with c.device(1):
        assert c.current_device() == 1
        assert fabric.zeros(2, device="cuda").device == fabric.device("cuda:1")
        with c.device(None):
            assert c.current_device() == 1
    assert c.current_device() == 0
    t = fabric.ones(2, device="cuda:1")
    with c.device_of(t):
        assert c.current_device() == 1
    with c.device_of(fabric.ones(2)):
        assert c.current_device() == 0
    c.set_device(1)
    assert c.current_device() == 1 and fabric.ones(1).cuda().device.index == 1
    c.set_device(-1)          # ignored, as in PyTorch
    assert c.current_device() == 1
    c.set_device("cuda:0")
    assert c.current_device() == 0


def test_streams(fake):
    c = fabric.cuda
    s = c.Stream()
    assert s.device == fabric.device("cuda:0") and s.query() and s.cuda_stream != 0 and s.priority == 0
    assert c.current_stream() == c.default_stream() and c.default_stream().cuda_stream == 0
    with c.stream(s) as entered:
        assert entered is s and c.current_stream() == s
        x = fabric.ones(3, device="cuda") * 2
    assert c.current_stream() == c.default_stream()
    other = c.Stream()
    other.wait_stream(s)
    ev = s.record_event()
    other.wait_event(ev)
    s.synchronize()
    assert x.sum().item() == 6.0
    s1 = c.Stream(device=1)
    with c.stream(s1):           # a stream on another device makes that device current
        assert c.current_device() == 1 and c.current_stream() == s1
    assert c.current_device() == 0 and c.current_stream(1) == c.default_stream(1)
    c.set_stream(s)
    assert c.current_stream() == s
    c.set_stream(c.default_stream())
    assert "fabric.cuda.Stream device=cuda:0" in repr(s) and s != s1 and len({s, s, s1}) == 2


def test_events(fake):
    c = fabric.cuda
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    assert start.query()
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        start.elapsed_time(end)
    start.record()
    (fabric.ones(100, device="cuda") * 3).sum()
    end.record(c.current_stream())
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0 and end.query()
    plain = c.Event()
    plain.record()
    plain.wait()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        start.elapsed_time(plain)


def test_memory_statistics(fake):
    c = fabric.cuda
    c.empty_cache()
    base = c.memory_allocated()
    x = fabric.empty(1000, dtype=fabric.float64, device="cuda")
    assert c.memory_allocated() == base + 8000 and c.memory_allocated(0) == base + 8000
    assert c.memory_allocated(1) == 0
    y = fabric.empty(500, dtype=fabric.float32, device="cuda:1")
    assert c.memory_allocated("cuda:1") == 2000
    peak = c.max_memory_allocated()
    assert peak >= base + 8000
    del x
    assert c.memory_allocated() == base and c.max_memory_allocated() == peak
    assert c.memory_reserved() >= base + 8000        # freed blocks stay in the pool
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == c.memory_allocated()
    fabric.empty(10_000, device="cuda")           # a transient allocation still counts in the peak
    assert c.memory_allocated() == base and c.max_memory_allocated() == base + 40_000
    c.empty_cache()
    assert c.memory_reserved() == c.memory_allocated()
    stats = c.memory_stats(1)
    assert stats["allocated_bytes.all.current"] == 2000 and stats["reserved_bytes.all.peak"] >= 2000
    del y


def test_rng_functions(fake):
    c = fabric.cuda
    fabric.manual_seed(5)                     # before any CUDA generator exists
    a = fabric.randn(4, device="cuda")
    fabric.manual_seed(5)
    assert same(fabric.randn(4, device="cuda"), a)
    assert c.initial_seed() == 5
    c.manual_seed(9)
    b = fabric.rand(3, device="cuda")
    c.manual_seed(9)
    assert same(fabric.rand(3, device="cuda"), b)
    state = c.get_rng_state()
    assert state.dtype == fabric.uint8 and state.shape == (16,) and state.device.type == "cpu"
    u = fabric.rand(5, device="cuda")
    c.set_rng_state(state)
    assert same(fabric.rand(5, device="cuda"), u)
    c.manual_seed_all(11)
    r0, r1 = fabric.rand(3, device="cuda:0"), fabric.rand(3, device="cuda:1")
    assert r1.device.index == 1 and same(r0.cpu(), r1.cpu())   # same seed, same stream, any device
    states = c.get_rng_state_all()
    assert len(states) == 2
    v = fabric.rand(2, device="cuda:1")
    c.set_rng_state_all(states)
    assert same(fabric.rand(2, device="cuda:1"), v)
    c.set_rng_state_all(states)
    fabric.rand(7, device="cuda")               # draws on cuda:0 leave cuda:1's stream alone
    assert same(fabric.rand(2, device="cuda:1"), v)
    c.seed()
    c.seed_all()
    assert c.initial_seed() == fabric.cuda._default_generator(1).initial_seed()
    s = fabric.seed()                          # fabric.seed reseeds CUDA generators too
    assert c.initial_seed() == s


def test_fork_rng_restores_cuda_state(fake):
    fabric.manual_seed(0)
    with fabric.random.fork_rng():
        inside = fabric.rand(3, device="cuda")
    assert same(fabric.rand(3, device="cuda"), inside)
    with fabric.random.fork_rng(devices=[1]):
        fabric.rand(3, device="cuda:1")
    fabric.manual_seed(0)
    first = fabric.rand(3, device="cuda:1")
    fabric.manual_seed(0)
    with fabric.random.fork_rng(devices=[1]):
        fabric.rand(3, device="cuda:1")
    assert same(fabric.rand(3, device="cuda:1"), first)


def test_cuda_generator_object(fake):
    g = fabric.Generator("cuda:1")
    assert g.device == fabric.device("cuda:1") and g.initial_seed() == 67280421310721
    g.manual_seed(2)
    a = fabric.randn(3, generator=g, device="cuda:1")
    g.manual_seed(2)
    assert same(fabric.randn(3, generator=g, device="cuda:1"), a) and a.device.index == 1
    st = g.get_state()
    x = fabric.empty(4, device="cuda:1").uniform_(generator=g)
    g.set_state(st)
    assert same(fabric.empty(4, device="cuda:1").uniform_(generator=g), x)
    with pytest.raises(RuntimeError, match="wrong size"):
        g.set_state(fabric.zeros(5, dtype=fabric.uint8))


# --- creation functions and .to on the device ----------------------------------------
CREATION = {
    "tensor": lambda d: fabric.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
    "as_tensor": lambda d: fabric.as_tensor(np.arange(4.0), device=d),
    "asarray": lambda d: fabric.asarray([1, 2, 3], device=d),
    "zeros": lambda d: fabric.zeros(2, 3, device=d),
    "ones": lambda d: fabric.ones((2,), dtype=fabric.int32, device=d),
    "full": lambda d: fabric.full((2, 2), 7, device=d),
    "zeros_like": lambda d: fabric.zeros_like(fabric.ones(3), device=d),
    "ones_like": lambda d: fabric.ones_like(fabric.ones(3), device=d),
    "full_like": lambda d: fabric.full_like(fabric.ones(3), 2.5, device=d),
    "arange": lambda d: fabric.arange(0, 5, 2, device=d),
    "range": lambda d: fabric.range(0, 3, device=d),
    "linspace": lambda d: fabric.linspace(0, 1, 5, device=d),
    "logspace": lambda d: fabric.logspace(0, 2, 3, device=d),
    "eye": lambda d: fabric.eye(3, 2, device=d),
    "scalar_tensor": lambda d: fabric.scalar_tensor(3.5, device=d),
    "tril_indices": lambda d: fabric.tril_indices(3, 3, device=d),
    "triu_indices": lambda d: fabric.triu_indices(3, 4, 1, device=d),
    "empty_strided": lambda d: fabric.empty_strided((2, 3), (1, 2), device=d).fill_(1.0),
    "new_tensor": lambda d: fabric.ones(1, dtype=fabric.float64).new_tensor([1, 2], device=d),
    "new_zeros": lambda d: fabric.ones(1, dtype=fabric.int32).new_zeros(2, 2, device=d),
    "new_full": lambda d: fabric.ones(1).new_full((3,), 4.0, device=d),
    "tensor_of_tensor": lambda d: fabric.tensor(fabric.arange(3), device=d),
}
RANDOM = {
    "rand": lambda d: fabric.rand(2, 3, device=d),
    "randn": lambda d: fabric.randn(20, device=d, dtype=fabric.float64),
    "randint": lambda d: fabric.randint(0, 10, (5,), device=d),
    "randperm": lambda d: fabric.randperm(6, device=d),
    "normal": lambda d: fabric.normal(1.0, 2.0, (4,), device=d),
    "normal_tensors": lambda d: fabric.normal(fabric.zeros(3, device=d), fabric.ones(3, device=d)),
    "bernoulli": lambda d: fabric.bernoulli(fabric.full((4,), 0.5, device=d)),
    "multinomial": lambda d: fabric.multinomial(fabric.tensor([0.2, 0.8], device=d), 3, replacement=True),
    "poisson": lambda d: fabric.poisson(fabric.tensor([1.0, 30.0], device=d)),
    "rand_like": lambda d: fabric.rand_like(fabric.ones(3, device=d)),
    "randn_like": lambda d: fabric.randn_like(fabric.ones(3, device=d)),
    "randint_like": lambda d: fabric.randint_like(fabric.ones(3, device=d), 0, 4),
    "uniform_": lambda d: fabric.empty(3, device=d).uniform_(-1, 1),
    "normal_": lambda d: fabric.empty(3, device=d).normal_(),
    "random_": lambda d: fabric.empty(3, dtype=fabric.int64, device=d).random_(0, 5),
    "bernoulli_": lambda d: fabric.empty(3, device=d).bernoulli_(0.3),
    "exponential_": lambda d: fabric.empty(3, device=d).exponential_(),
    "geometric_": lambda d: fabric.empty(3, device=d).geometric_(0.4),
    "log_normal_": lambda d: fabric.empty(3, device=d).log_normal_(),
    "cauchy_": lambda d: fabric.empty(3, device=d).cauchy_(),
}


@pytest.mark.parametrize("name", list(CREATION))
@pytest.mark.parametrize("dev", ["cuda", "cuda:1"])
def test_creation_on_device(fake, name, dev):
    want = CREATION[name]("cpu")
    with fabric.cuda.device(1 if dev == "cuda:1" else 0):
        got = CREATION[name](dev)
    assert got.device == fabric.device("cuda:1" if dev == "cuda:1" else "cuda:0")
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    if name == "empty_strided":
        assert got.stride() == (1, 2)


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_creation_on_device(fake, name):
    want = RANDOM[name]("cpu")
    fabric.manual_seed(4)
    got = RANDOM[name]("cuda:1")
    fabric.manual_seed(4)
    again = RANDOM[name]("cuda:1")
    assert got.device == fabric.device("cuda:1") and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.cpu().numpy(), again.cpu().numpy())
    assert np.isfinite(got.cpu().numpy().astype(np.float64)).all()


def test_to_between_devices(fake):
    x = fabric.arange(6.0).reshape(2, 3).requires_grad_()
    y = x.to("cuda:1")
    assert y.device == fabric.device("cuda:1") and y.grad_fn is not None
    z = y.to("cuda:0")                          # device to device
    assert z.device == fabric.device("cuda:0")
    w = y.to(fabric.float64)                     # cast on cuda:1 while cuda:0 is current
    assert w.device == fabric.device("cuda:1") and w.dtype == fabric.float64
    c = y.to("cuda:1", copy=True)
    assert c.device == fabric.device("cuda:1") and c._data is not y._data
    back = z.to("cpu")
    np.testing.assert_array_equal(back.detach().numpy(), x.detach().numpy())
    (back * fabric.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 2, 3], [1, 2, 3]])
    assert y.to("cuda:1") is y and y.cuda(1) is y
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        x.to("cuda:2")


def test_non_blocking_transfers_use_pinned_memory(fake):
    be = fake
    host = np.arange(8, dtype=np.float32)
    d = fabric.from_numpy(host).to("cuda:1", non_blocking=True)
    assert d.device.index == 1 and len(be._pending_host_copies) == 1      # staged through a pinned buffer
    pinned = be.pin(host)
    assert be.is_pinned(pinned) and be.pin(pinned) is pinned and not be.is_pinned(host)
    assert be.is_pinned(pinned[2:])
    d2 = fabric.from_numpy(pinned).to("cuda", non_blocking=True)          # straight from the pinned array
    assert be._pending_host_copies[-1][1] is pinned      # held until its copy has run (the pool must not reuse it)
    back = d2.to("cpu", non_blocking=True)
    fabric.cuda.synchronize()
    assert be.is_pinned(back._data)
    np.testing.assert_array_equal(back.numpy(), host)
    np.testing.assert_array_equal(d.cpu().numpy(), host)


def test_dataloader_pin_memory(fake):
    from fabric.data import DataLoader, TensorDataset

    dl = DataLoader(TensorDataset(fabric.arange(6.0), fabric.arange(6)), batch_size=4, pin_memory=True)
    for xb, yb in dl:
        assert fake.is_pinned(xb._data) and fake.is_pinned(yb._data)
        assert xb.to("cuda", non_blocking=True).device.type == "cuda"


def test_dlpack(fake):
    import cupy

    a = cupy.arange(4.0)
    t = fabric.from_dlpack(a)
    assert t.device == fabric.device("cuda:0") and t.__dlpack_device__() == (2, 0)
    t[0] = 9.0
    assert float(a[0]) == 9.0                      # shared memory
    b = cupy.from_dlpack(t)
    b[1] = -1.0
    assert t[1].item() == -1.0
    copied = fabric.tensor(a)
    copied[2] = 5.0
    assert float(a[2]) == 2.0 and copied.device.type == "cuda"
    assert fabric.as_tensor(a)._data is a and fabric.as_tensor(a, dtype=fabric.float32).dtype == fabric.float32
    with pytest.raises(RuntimeError, match="require gradient"):
        fabric.ones(2, device="cuda", requires_grad=True).__dlpack__()


def test_ops_on_another_device_inside_its_context(fake):
    """CuPy runs kernels on the *current* device: ops on cuda:1 tensors run
    inside ``fabric.cuda.device(1)`` (see docs/cuda.md, multi-GPU)."""
    a = fabric.arange(6.0, device="cuda:1").reshape(2, 3).requires_grad_()
    with fabric.cuda.device(1):
        y = (a.exp() @ fabric.ones(3, 2, device="cuda:1")).sum()
        y.backward()
    assert y.device.index == 1 and a.grad.device.index == 1
    np.testing.assert_allclose(a.grad.cpu().numpy(), 2 * np.exp(np.arange(6.0)).reshape(2, 3))


def test_fused_ops_never_fall_back_silently(fake):
    """With no way to run kernels (fake CuPy cannot compile), fused ops fail
    loudly instead of quietly running the reference; other ops work."""
    x = fabric.randn(3, 4, device="cuda")
    assert (x * 2 + 1).device.type == "cuda"
    with pytest.raises(RuntimeError, match="cannot compile"):
        fabric.nn.functional.softmax(x, dim=-1)
    # an integer input has no kernel: the reference twin runs on the device arrays
    assert fabric.nn.functional.embedding(fabric.tensor([0, 1], device="cuda"), x).shape == (2, 4)


def test_training_step_runs_fused_kernels(fake_kernels):
    """Dropout, GELU, layer norm, cross-entropy and the Adam/SGD steps launch
    their kernels on the device (harness kernels on the fake device)."""
    be = fake_kernels
    fabric.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Dropout(0.25), nn.Linear(8, 3)).cuda()
    x, t = fabric.randn(5, 6, device="cuda"), fabric.tensor([0, 2, 1, 1, 0], device="cuda")
    for opt in (fabric.optim.AdamW(model.parameters(), lr=1e-2), fabric.optim.SGD(model.parameters(), lr=0.1,
                                                                                   momentum=0.9)):
        for _ in range(2):
            opt.zero_grad()
            loss = fabric.nn.functional.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
    assert np.isfinite(loss.item())
    launched = {k.split("<")[0] for k in be.kernels.launched}
    assert {"gelu_fwd", "gelu_bwd", "layer_norm_fwd", "layer_norm_bwd", "dropout_fwd", "cross_entropy_fwd",
            "cross_entropy_bwd", "adam_step", "sgd_step"} <= launched, launched


# ==========================================================================
# the CUDA random stream, on NumPy and on a device
# ==========================================================================
def _gen(seed=0):
    g = philox.PhiloxGenerator(np)
    g.manual_seed(seed)
    return g


SAMPLERS = {
    "uniform32": lambda g: g.uniform((1000,), np.float32, -2.0, 3.0),
    "uniform64": lambda g: g.uniform((7,), np.float64),
    "uniform16": lambda g: g.uniform((50,), np.float16),
    "normal": lambda g: g.normal((9,), np.float32, 1.0, 2.0),
    "normal64": lambda g: g.normal((8,), np.float64),
    "normal_arrays": lambda g: g.normal(None, np.float64, np.zeros(3), np.ones((2, 3))),
    "randint": lambda g: g.randint(-3, 9, (20,)),
    "randint_big": lambda g: g.randint(0, 2 ** 40, (6,)),
    "random_": lambda g: g.random_((6,), np.int32),
    "random_float": lambda g: g.random_((6,), np.float32, 0, 100),
    "random_bool": lambda g: g.random_((6,), np.bool_),
    "random_full": lambda g: g.random_((4,), np.int64, -(1 << 63)),
    "randperm": lambda g: g.randperm(10),
    "bernoulli": lambda g: g.bernoulli(0.3, (20,)),
    "bernoulli_array": lambda g: g.bernoulli(np.array([0.0, 1.0, 0.5], np.float32), (2, 3)),
    "exponential": lambda g: g.exponential((5,), np.float64, 2.0),
    "geometric": lambda g: g.geometric((5,), np.int64, 0.3),
    "log_normal": lambda g: g.log_normal((5,), np.float32),
    "cauchy": lambda g: g.cauchy((5,), np.float64),
    "multinomial": lambda g: g.multinomial(np.array([[0.1, 0.0, 0.9], [1.0, 2.0, 3.0]]), 2),
    "multinomial_repl": lambda g: g.multinomial(np.array([0.2, 0.3, 0.5]), 6, True),
    "poisson": lambda g: g.poisson(np.array([0.0, 0.5, 4.0, 12.0, 300.0], np.float32)),
    "u32": lambda g: g.random_u32(5),
    "u64": lambda g: g.random_u64(3),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_philox_reproducible_and_advancing(name):
    a, b = SAMPLERS[name](_gen(3)), SAMPLERS[name](_gen(3))
    np.testing.assert_array_equal(a, b)
    g = _gen(3)
    SAMPLERS[name](g)
    assert g.get_state().view("<u8")[1] >= 1          # the offset moved on


def test_philox_same_numbers_on_device(fake):
    be = fake
    for name, draw in SAMPLERS.items():
        host = draw(_gen(8))
        dev_gen = be.make_generator(1)
        dev_gen.manual_seed(8)
        with fabric.cuda.device(0):
            dev = draw(dev_gen)
        assert dev.__class__ is not np.ndarray and dev.device.id == 1, name
        np.testing.assert_array_equal(be.to_numpy(dev), host, err_msg=name)


def test_philox_stream_is_the_dropout_kernels():
    """Draw k of the stream is ``philox(counter=(i//4, offset k), key=seed)``, the
    numbers ``fused.dropout`` (and so the dropout kernel) uses."""
    g = _gen(12345)
    seed, offset = g.philox_seed_offset(4)
    assert (seed, offset) == (12345, 0) and g.get_state().view("<u8")[1] == 4
    words = g.random_u32(64)                         # offset 4
    _y, mask = fused.dropout(np, np.ones(64), 0.5, seed, 4)
    np.testing.assert_array_equal(mask, words < np.uint32(fused.dropout_threshold(0.5)))


def test_philox_state_layout():
    g = _gen(2 ** 64 - 5)
    g.uniform(3)
    st = g.get_state()
    assert st.dtype == np.uint8 and st.shape == (16,) and st.view("<u8").tolist() == [2 ** 64 - 5, 1]
    g2 = philox.PhiloxGenerator(np)
    g2.set_state(st)
    np.testing.assert_array_equal(g2.normal((5,)), g.normal((5,)))
    g.manual_seed(-1)
    assert g.initial_seed() == 2 ** 64 - 1
    with pytest.raises(RuntimeError, match="Overflow"):
        g.manual_seed(2 ** 64)
    s = g.seed()
    assert g.initial_seed() == s


def test_philox_distributions():
    g = _gen(1)
    u = g.uniform((200000,), np.float32)
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.005
    z = g.normal((200000,), np.float64)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    r = g.randint(0, 7, (70000,))
    assert set(np.unique(r).tolist()) == set(range(7)) and abs(np.bincount(r).std() / 10000) < 0.03
    p = g.randperm(1000)
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert abs(g.bernoulli(0.3, (100000,)).mean() - 0.3) < 0.01
    assert abs(g.exponential((100000,), np.float64, 4.0).mean() - 0.25) < 0.005
    lam = np.array([0.7, 5.0, 40.0, 900.0])
    s = g.poisson(np.repeat(lam, 20000).reshape(4, -1).T.copy())
    np.testing.assert_allclose(s.mean(axis=0), lam, rtol=0.03)
    np.testing.assert_allclose(s.var(axis=0), lam, rtol=0.08)
    m = g.multinomial(np.array([0.1, 0.0, 0.6, 0.3]), 40000, True)
    np.testing.assert_allclose(np.bincount(m, minlength=4) / 40000, [0.1, 0.0, 0.6, 0.3], atol=0.01)
    w = g.multinomial(np.tile([1.0, 1.0, 0.0, 8.0], (5000, 1)), 2)
    assert (w != 2).all() and (w[:, 0] != w[:, 1]).all() and (w[:, 0] == 3).mean() > 0.7
    assert (g.uniform((1000,), np.float16) < 1).all()


ERRORS = [
    lambda g: g.uniform(3, np.float32, 2.0, 1.0), lambda g: g.uniform(3, np.int64),
    lambda g: g.normal(3, np.float32, 0.0, -1.0), lambda g: g.normal(None, np.float32, 0.0, np.array([-1.0])),
    lambda g: g.randint(3, 3, (2,)), lambda g: g.random_((2,), np.uint8, 0, 300),
    lambda g: g.randperm(-1), lambda g: g.randperm(3000, np.float16),
    lambda g: g.bernoulli(1.5, (2,)), lambda g: g.bernoulli(np.array([2.0]), (1,)),
    lambda g: g.exponential(2, np.float32, 0.0), lambda g: g.geometric(2, np.float32, 1.0),
    lambda g: g.log_normal(2, np.float32, 0.0, 0.0), lambda g: g.cauchy(2, np.float32, 0.0, -1.0),
    lambda g: g.multinomial(np.array([0.5, 0.5]), 3), lambda g: g.multinomial(np.array([0.0, 0.0]), 1),
    lambda g: g.multinomial(np.array([-1.0, 1.0]), 1), lambda g: g.multinomial(np.ones((2, 2, 2)), 1),
    lambda g: g.multinomial(np.array([1, 2]), 1), lambda g: g.poisson(np.array([-1.0])),
]


@pytest.mark.parametrize("call", ERRORS)
def test_philox_errors_match_the_cpu_generator(call):
    """Bad arguments raise the CPU generator's (PyTorch's) error type."""
    from fabric._rng import MT19937Generator

    with pytest.raises(Exception) as cpu_err:
        call(MT19937Generator(0))
    with pytest.raises(type(cpu_err.value)):
        call(_gen())


# ==========================================================================
# benchmarks/gpu.py
# ==========================================================================
def _bench_module():
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "gpu.py")
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_benchmark_exits_cleanly_without_device(no_cuda, capsys):
    assert _bench_module().main([]) == 0
    assert "needs a CUDA device" in capsys.readouterr().out


def test_gpu_benchmark_runs_on_the_fake_device(capsys):
    import harness

    if not harness.have_compiler():
        pytest.skip("the CUDA CPU harness needs g++ and nm")
    assert _bench_module().main(["--fake", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "char-GPT training step" in out and "AdamW step" in out and out.count("x\n") == 6


# ==========================================================================
# a real GPU
# ==========================================================================
@pytest.mark.cuda
def test_real_device_end_to_end():
    c = fabric.cuda
    assert c.is_available() and c.device_count() >= 1 and c.get_device_name()
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    s = c.Stream()
    c.reset_peak_memory_stats()
    before = c.memory_allocated()
    with c.stream(s):
        start.record()
        x = fabric.randn(256, 256, device="cuda")
        y = (x @ x).sum()
        end.record()
    s.synchronize()
    assert start.elapsed_time(end) >= 0 and np.isfinite(y.item())
    assert c.max_memory_allocated() >= before + 256 * 256 * 4
    host = fabric.randn(1000).pin_memory() if hasattr(fabric.Tensor, "pin_memory") else fabric.randn(1000)
    dev = host.to("cuda", non_blocking=True)
    c.synchronize()
    np.testing.assert_array_equal(dev.cpu().numpy(), host.numpy())
