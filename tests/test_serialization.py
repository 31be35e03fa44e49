"""fabric.save / fabric.load: round trips, safety, atomicity, PyTorch interop."""
from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import fabric

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    fabric.save(obj, buf)
    buf.seek(0)
    return fabric.load(buf, **kw)


def test_roundtrip_nested_containers():
    obj = {"w": fabric.randn(3, 2) if False else fabric.arange(6.0).reshape(3, 2), "n": 3, "f": 2.5, "s": "text",
           "none": None, "l": [fabric.ones(2, dtype=fabric.int64), (fabric.zeros(1, dtype=fabric.float16), "x")],
           "od": collections.OrderedDict(a=fabric.tensor([True, False])), "dt": fabric.float64,
           "dev": fabric.device("cpu"), "empty": fabric.zeros(0, 3), "scalar": fabric.tensor(7)}
    out = _roundtrip(obj)
    assert out["w"].tolist() == obj["w"].tolist() and out["w"].dtype == fabric.float32
    assert out["n"] == 3 and out["f"] == 2.5 and out["s"] == "text" and out["none"] is None
    assert out["l"][0].dtype == fabric.int64 and out["l"][1][0].dtype == fabric.float16 and out["l"][1][1] == "x"
    assert isinstance(out["od"], collections.OrderedDict) and out["od"]["a"].tolist() == [True, False]
    assert out["dt"] is fabric.float64 and out["dev"] == fabric.device("cpu")
    assert out["empty"].shape == (0, 3) and out["scalar"].item() == 7 and out["scalar"].ndim == 0


def test_views_are_stored_once_and_stay_views():
    base = fabric.arange(12.0).reshape(3, 4)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t()}
    buf = io.BytesIO()
    fabric.save(obj, buf)
    assert len([n for n in zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist() if "/data/" in n]) == 1
    buf.seek(0)
    out = fabric.load(buf)
    out["base"][1, 2] = -1
    assert out["row"][2].item() == -1 and out["col"][1].item() == -1 and out["t"][2, 1].item() == -1


def test_requires_grad_and_parameters_survive():
    from fabric import nn

    p = nn.Parameter(fabric.ones(2))
    out = _roundtrip({"p": p, "g": fabric.ones(1, requires_grad=True)})
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert out["g"].requires_grad


def test_save_to_path_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    fabric.save({"v": fabric.tensor([1.0])}, path)
    from fabric import serialization

    def boom(*a, **k):
        raise KeyboardInterrupt("crash mid-save")

    monkeypatch.setattr(serialization, "_write_zip", boom)
    with pytest.raises(KeyboardInterrupt):
        fabric.save({"v": fabric.tensor([2.0])}, path)
    monkeypatch.undo()
    assert fabric.load(path)["v"].tolist() == [1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]  # no temp files left behind


def _zip_with_pickle(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/version", b"3\n")
    return buf.getvalue()


def test_malicious_pickle_is_rejected_before_running():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > /tmp/fabric_pwned",))

    data = _zip_with_pickle(pickle.dumps(Evil(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system whose module posix is blocked"):
        fabric.load(io.BytesIO(data))
    assert not os.path.exists("/tmp/fabric_pwned")
    data = _zip_with_pickle(pickle.dumps({"x": collections.defaultdict(list)}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL collections.defaultdict was not an allowed global"):
        fabric.load(io.BytesIO(data))


def test_truncated_and_tampered_files_raise_clear_errors(tmp_path):
    path = tmp_path / "ck.pt"
    fabric.save({"w": fabric.arange(100.0)}, path)
    raw = path.read_bytes()
    with pytest.raises(RuntimeError, match="truncated|corrupted|checkpoint"):
        fabric.load(io.BytesIO(raw[: len(raw) // 2]))
    i = raw.index(np.arange(100.0, dtype=np.float32).tobytes()[:8])
    tampered = raw[:i] + b"\xff" + raw[i + 1:]
    with pytest.raises(RuntimeError, match="corrupted"):
        fabric.load(io.BytesIO(tampered))
    with pytest.raises(RuntimeError, match="empty"):
        fabric.load(io.BytesIO(b""))
    with pytest.raises(RuntimeError, match="not a fabric/PyTorch checkpoint"):
        fabric.load(io.BytesIO(b"hello world"))


def test_unpicklable_objects_fail_at_save_before_writing(tmp_path):
    path = tmp_path / "ck.pt"
    fabric.save({"v": fabric.ones(1)}, path)
    with pytest.raises(pickle.PicklingError):
        fabric.save({"f": lambda: 1}, path)
    assert fabric.load(path)["v"].tolist() == [1.0]  # the old file is untouched


def test_map_location():
    out = _roundtrip({"w": fabric.ones(2)}, map_location="cpu")
    assert out["w"].device == fabric.device("cpu")
    out = _roundtrip({"w": fabric.ones(2)}, map_location=lambda t, loc: t * 2)
    assert out["w"].tolist() == [2.0, 2.0]


def test_reads_committed_torch_checkpoint_without_torch():
    ck = fabric.load(os.path.join(FIXTURES, "torch_checkpoint.pt"))
    exp = np.load(os.path.join(FIXTURES, "torch_checkpoint_expected.npz"))
    np.testing.assert_array_equal(ck["model"]["weight"].numpy(), exp["weight"])
    np.testing.assert_array_equal(ck["model"]["bias"].numpy(), exp["bias"])
    assert isinstance(ck["model"], collections.OrderedDict)
    np.testing.assert_array_equal(ck["optim"]["state"][0]["momentum_buffer"].numpy(), exp["momentum_w"])
    assert ck["optim"]["param_groups"][0]["lr"] == 0.1 and ck["epoch"] == 3
    assert ck["ints"].dtype == fabric.int32 and ck["ints"].tolist() == [0, 1, 2, 3, 4]
    assert ck["half"].dtype == fabric.float16 and ck["half"].tolist() == [1.5, -2.0]
    assert ck["view"].tolist() == [1.0, 4.0]


@pytest.mark.torch
def test_torch_loads_fabric_files_with_weights_only(tmp_path):
    import torch

    base = fabric.arange(6.0).reshape(2, 3)
    obj = {"a": base, "b": base[1], "i": fabric.tensor([1, 2], dtype=fabric.int16), "dt": fabric.float16,
           "nested": [1, (2.5, "s")], "od": collections.OrderedDict(x=fabric.ones(1))}
    path = tmp_path / "f.pt"
    fabric.save(obj, path)
    t = torch.load(path, weights_only=True)
    assert t["a"].tolist() == base.tolist() and t["b"].tolist() == [3.0, 4.0, 5.0]
    assert t["i"].dtype == torch.int16 and t["dt"] is torch.float16
    assert t["nested"] == [1, (2.5, "s")] and isinstance(t["od"], collections.OrderedDict)
    t["a"][1, 0] = 100  # views were stored once
    assert t["b"][0].item() == 100
    mm = torch.load(path, weights_only=True, mmap=True)  # needs 64-byte aligned records
    assert mm["a"].tolist() == base.tolist()


@pytest.mark.torch
def test_fabric_loads_torch_files(tmp_path):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    path = tmp_path / "t.pt"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "p": torch.nn.Parameter(torch.ones(2))}, path)
    ck = fabric.load(path)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(ck["model"][k].numpy(), v.numpy())
    st = opt.state_dict()["state"][0]
    np.testing.assert_array_equal(ck["opt"]["state"][0]["exp_avg"].numpy(), st["exp_avg"].numpy())
    assert float(ck["opt"]["state"][0]["step"]) == float(st["step"])
    assert ck["p"].requires_grad


@pytest.mark.parametrize("module", ["fabric.serialization", "fabric.serialization._allowlist",
                                    "fabric.serialization._archive", "fabric.serialization._files",
                                    "fabric.serialization._pickler", "fabric.serialization._rebuild",
                                    "fabric.serialization._unpickler"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_training_doc_save_load_example_runs():
    import re

    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "training.md")) as fh:
        text = fh.read()
    section = text[text.index("## Save and load"):]
    section = section[: section.index("\n## ", 5)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/training.md", "exec"), {})
