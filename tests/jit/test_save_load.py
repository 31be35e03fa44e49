"""fabric.jit.save / load: data-only archive, loads without the model's class, refuses anything else."""
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import fabric
from fabric import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL_SOURCE = textwrap.dedent('''
    from typing import Optional
    import fabric
    from fabric import nn


    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 8)
            self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
            self.norm = nn.LayerNorm(8)
            self.head = nn.Linear(8, 11, bias=False)
            self.head.weight = self.emb.weight            # tied
            self.drop = nn.Dropout(0.1)

        def forward(self, idx, steps: int, bias: Optional[fabric.Tensor] = None):
            h = self.emb(idx)
            for block in self.blocks:
                h = h + fabric.nn.functional.gelu(block(h))
            for i in range(steps):
                if h.mean() > 0:
                    h = self.norm(h) * 0.5
                else:
                    h = h + 1
            k = 0
            while k < 2:
                h = self.drop(h)
                k += 1
            if bias is not None:
                h = h + bias
            return self.head(h)
''')


def _write_model(tmp_path):
    (tmp_path / "tiny_model.py").write_text(MODEL_SOURCE)
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib
        mod = importlib.import_module("tiny_model")
        importlib.reload(mod)
    finally:
        sys.path.remove(str(tmp_path))
    sys.modules.pop("tiny_model", None)
    return mod


def _roundtrip(m, **kw):
    buf = io.BytesIO()
    fabric.jit.save(m, buf, **kw)
    buf.seek(0)
    return fabric.jit.load(buf)


@pytest.mark.parametrize("how", ["script", "trace"])
def test_loads_in_fresh_interpreter_without_the_class(tmp_path, how):
    mod = _write_model(tmp_path)
    fabric.manual_seed(0)
    m = mod.TinyLM().eval()
    idx = fabric.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    if how == "script":
        sm = fabric.jit.script(m)
        want = m(idx, 3)
        call = "m(idx, 3)"
    else:
        sm = fabric.jit.trace(lambda i: m(i, 3), idx)
        want = m(idx, 3)
        call = "m(idx)"
    path = tmp_path / "model.fjit"
    fabric.jit.save(sm, str(path))
    fabric.save(want, str(tmp_path / "want.pt"))
    code = textwrap.dedent(f'''
        import sys, fabric
        m = fabric.jit.load(sys.argv[1])
        assert "tiny_model" not in sys.modules
        idx = fabric.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
        got = {call}
        want = fabric.load(sys.argv[2])
        assert fabric.equal(got, want), (got - want).abs().max()
        print("OK", type(m).__name__)
    ''')
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "want.pt")], capture_output=True,
                         text=True, env=env, cwd=str(tmp_path.parent), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK")


def test_roundtrip_same_numbers_state_dict_and_ties(tmp_path):
    mod = _write_model(tmp_path)
    fabric.manual_seed(0)
    m = mod.TinyLM().eval()
    sm = fabric.jit.script(m)
    loaded = _roundtrip(sm)
    idx = fabric.tensor([[3, 1, 4]])
    for steps in (0, 2, 5):
        assert fabric.equal(loaded(idx, steps), m(idx, steps))
    assert fabric.equal(loaded(idx, 1, fabric.ones(8)), m(idx, 1, fabric.ones(8)))
    assert list(loaded.state_dict()) == list(m.state_dict())
    assert loaded.head.weight is loaded.emb.weight
    assert loaded.code == sm.code
    loaded.train()
    assert loaded.training and loaded.drop.training
    loaded.to(fabric.float64)
    assert loaded.norm.weight.dtype == fabric.float64
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'steps'"):
        loaded(idx, 1.5)


def test_loaded_module_trains(tmp_path):
    fabric.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loaded = _roundtrip(fabric.jit.script(m))
    opt = fabric.optim.SGD(loaded.parameters(), lr=0.1)
    x, y = fabric.randn(8, 3), fabric.randn(8, 1)
    first = None
    for _ in range(20):
        opt.zero_grad()
        loss = ((loaded(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < first


def test_function_roundtrip_extra_files_and_map_location():
    @fabric.jit.script
    def f(x, n: int):
        for _ in range(n):
            x = fabric.sin(x) + 1
        return x

    buf = io.BytesIO()
    fabric.jit.save(f, buf, _extra_files={"config.txt": "lr=0.1"})
    buf.seek(0)
    extra = {"config.txt": ""}
    g = fabric.jit.load(buf, map_location="cpu", _extra_files=extra)
    assert extra["config.txt"] == b"lr=0.1"
    x = fabric.randn(4)
    assert fabric.equal(g(x, 3), f(x, 3))
    assert isinstance(g, fabric.jit.ScriptFunction)


def test_exported_methods_and_frozen_modules_roundtrip():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.bn = nn.BatchNorm1d(2)

        @fabric.jit.export
        def features(self, x):
            return self.lin(x) * 2

        def forward(self, x):
            return self.bn(self.features(x))

    m = M().eval()
    x = fabric.randn(3, 2)
    loaded = _roundtrip(fabric.jit.script(m))
    assert fabric.allclose(loaded.features(x), m.features(x)) and fabric.allclose(loaded(x), m(x))
    frozen = _roundtrip(fabric.jit.freeze(fabric.jit.script(m)))
    assert fabric.allclose(frozen(x), m(x), atol=1e-6)
    assert list(frozen.state_dict()) == []


def test_archive_holds_json_and_npy_only():
    buf = io.BytesIO()
    fabric.jit.save(fabric.jit.script(nn.Linear(2, 3)), buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        names = z.namelist()
        doc = json.loads(z.read("fabric_jit/model.json"))
    assert set(names) == {"fabric_jit/version", "fabric_jit/model.json", "fabric_jit/tensors/0.npy",
                          "fabric_jit/tensors/1.npy"}
    assert doc["version"] == 1 and doc["kind"] == "module"
    targets = [n["target"] for n in doc["graph"]["nodes"] if n["op"] == "call_function"]
    assert targets == [["fabric.nn.functional", "linear"]]


def _tamper(data: bytes, edit) -> io.BytesIO:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            content = src.read(name)
            content = edit(name, content)
            if content is not None:
                dst.writestr(name, content)
    out.seek(0)
    return out


def _saved_linear() -> bytes:
    buf = io.BytesIO()
    fabric.jit.save(fabric.jit.script(nn.Linear(2, 3)), buf)
    return buf.getvalue()


def _edit_json(fn):
    def edit(name, content):
        if name.endswith("model.json"):
            doc = json.loads(content)
            fn(doc)
            return json.dumps(doc).encode()
        return content
    return edit


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d["graph"]["nodes"][3].update(target=["os", "system"]), "'os.system', which is not one of fabric"),
    (lambda d: d["graph"]["nodes"][3].update(target=["fabric", "save"]), "'fabric.save', which is not one of"),
    (lambda d: d["graph"]["nodes"][3].update(target=["builtins", "eval"]), "'builtins.eval', which is not one"),
    (lambda d: d["graph"]["nodes"][3].update(target=["fabric.serialization", "load"]), "not one of fabric's ops"),
    (lambda d: d["graph"]["nodes"][3].update(op="call_method", target="__reduce_ex__"), "not a public Tensor"),
    (lambda d: d["graph"]["nodes"][3].update(op="call_module", target="x"), "cannot be loaded"),
    (lambda d: d["graph"]["nodes"][1].update(target="__class__.__init__"), "bad attribute path"),
    (lambda d: d["graph"]["nodes"][3].update(args={"tuple": [{"node": "nope"}]}), "unknown node"),
    (lambda d: d["graph"]["nodes"][3].update(target=["builtins", "getattr"],
                                             args={"tuple": [{"node": d["graph"]["nodes"][0]["name"]},
                                                                     "__class__"]}), "may not read"),
    (lambda d: d["signature"][0].__setitem__(1, "__import__('os')"), "unknown type '__import__'"),
])
def test_load_refuses_what_is_not_fabric_ops(mutate, msg):
    f = _tamper(_saved_linear(), _edit_json(mutate))
    with pytest.raises(RuntimeError, match=msg):
        fabric.jit.load(f)


def test_load_refuses_other_versions_and_other_files(tmp_path):
    f = _tamper(_saved_linear(), lambda n, c: b"2" if n.endswith("version") else c)
    with pytest.raises(RuntimeError, match=r"format version '2', but this fabric reads version 1"):
        fabric.jit.load(f)
    with pytest.raises(RuntimeError, match="not a zip file"):
        fabric.jit.load(io.BytesIO(b"not a zip at all"))
    plain = tmp_path / "weights.pt"
    fabric.save({"w": fabric.ones(2)}, str(plain))
    with pytest.raises(RuntimeError, match="not a fabric.jit archive"):
        fabric.jit.load(str(plain))
    with pytest.raises(ValueError, match="does not exist"):
        fabric.jit.load(str(tmp_path / "missing.fjit"))
    f = _tamper(_saved_linear(), lambda n, c: None if n.endswith("1.npy") else c)
    with pytest.raises(RuntimeError, match="missing tensor record"):
        fabric.jit.load(f)
    f = _tamper(_saved_linear(), lambda n, c: c[:-8] if n.endswith("0.npy") else c)    # truncated data
    with pytest.raises(RuntimeError, match="tensor record fabric_jit/tensors/0.npy is corrupt"):
        fabric.jit.load(f)
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    f = _tamper(_saved_linear(), lambda n, c: pickled.getvalue() if n.endswith("0.npy") else c)
    with pytest.raises(RuntimeError, match="is corrupt"):                              # no unpickling
        fabric.jit.load(f)


@pytest.mark.torch
def test_torchscript_file_gives_clear_error(tmp_path):
    import torch

    path = tmp_path / "ts.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(RuntimeError, match="TorchScript files written by PyTorch cannot be loaded"):
        fabric.jit.load(str(path))


def test_save_refuses_python_calls_and_non_scripts():
    class M(nn.Module):
        @fabric.jit.ignore
        def py(self, x):
            return x

        def forward(self, x):
            return self.py(x) + 1

    s = fabric.jit.script(M())
    with pytest.raises(RuntimeError, match="Could not export Python function call"):
        fabric.jit.save(s, io.BytesIO())
    with pytest.raises(TypeError, match="expects a ScriptModule or ScriptFunction"):
        fabric.jit.save(nn.Linear(1, 1), io.BytesIO())


def test_save_to_path_is_atomic_and_method_form(tmp_path):
    s = fabric.jit.script(nn.Linear(2, 2))
    path = tmp_path / "m.fjit"
    s.save(str(path))
    assert path.exists() and not (tmp_path / "m.fjit.tmp").exists()
    assert fabric.equal(fabric.jit.load(path).weight, s.weight)


def test_scripting_a_module_with_traced_and_scripted_children_roundtrips():
    def loop(x, n: int):
        for _ in range(n):
            if x.sum() > 0:
                x = x * 0.5
        return x

    class Child(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x, n: int):
            return loop(self.lin(x), n)

    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = fabric.jit.trace(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), fabric.randn(2, 3))
            self.child = fabric.jit.script(Child())

        def forward(self, x, n: int):
            h = self.enc(x)
            if h.mean() > 0:
                h = self.child(h, n)
            return h

    fabric.manual_seed(0)
    m = Parent()
    s = fabric.jit.script(m)
    loaded = _roundtrip(s)
    assert list(loaded.state_dict()) == list(m.state_dict())
    for _ in range(3):
        x = fabric.randn(4, 3)
        for n in (0, 3):
            assert fabric.allclose(s(x, n), m(x, n)) and fabric.allclose(loaded(x, n), m(x, n))
