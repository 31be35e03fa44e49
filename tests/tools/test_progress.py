"""Progress bars on fabric's long loops: drawn by tqdm when asked
(FABRIC_PROGRESS=1), quiet by default off a terminal, and absent without tqdm."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import fabric
from fabric._progress import _NoBar, progress

pytest.importorskip("tqdm")


def _bn_model():
    return fabric.nn.Sequential(fabric.nn.Linear(2, 2), fabric.nn.BatchNorm1d(2))


def test_update_bn_quiet_by_default(capsys, monkeypatch):
    monkeypatch.delenv("FABRIC_PROGRESS", raising=False)
    fabric.optim.swa_utils.update_bn([fabric.ones(4, 2)] * 3, _bn_model())
    assert capsys.readouterr().err == ""


def test_update_bn_bar_when_asked(capsys, monkeypatch):
    monkeypatch.setenv("FABRIC_PROGRESS", "1")
    model = _bn_model()
    fabric.optim.swa_utils.update_bn([fabric.ones(4, 2) * i for i in range(3)], model)
    err = capsys.readouterr().err
    assert "update_bn" in err and "/3 " in err
    assert int(model[1].num_batches_tracked) == 3  # the loop itself is unchanged


def test_download_shows_bytes(capsys, monkeypatch, tmp_path):
    from fabric.data.datasets._utils import download_url, md5sum

    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    monkeypatch.setenv("FABRIC_PROGRESS", "1")
    dst = tmp_path / "out" / "data.bin"
    download_url([src.as_uri()], str(dst), md5=md5sum(str(src)))
    assert dst.read_bytes() == src.read_bytes()
    err = capsys.readouterr().err
    assert "data.bin" in err and "256k" in err


def test_large_save_shows_bytes(capsys, monkeypatch, tmp_path):
    import fabric.serialization as ser
    from fabric.serialization import _pickler

    monkeypatch.setenv("FABRIC_PROGRESS", "1")
    x = fabric.arange(1000.0)
    ser.save(x, tmp_path / "small.pt")
    assert "fabric.save" not in capsys.readouterr().err  # below the size that shows a bar
    monkeypatch.setattr(_pickler, "PROGRESS_BYTES", 1)
    ser.save({"a": x, "b": x * 2}, tmp_path / "big.pt")
    assert "fabric.save" in capsys.readouterr().err
    back = fabric.load(tmp_path / "big.pt")
    np.testing.assert_array_equal(back["b"].numpy(), (x * 2).numpy())


def test_off_and_without_tqdm(capsys, monkeypatch):
    monkeypatch.setenv("FABRIC_PROGRESS", "0")
    assert isinstance(progress([1, 2]), _NoBar) and list(progress([1, 2])) == [1, 2]
    monkeypatch.setenv("FABRIC_PROGRESS", "1")
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails as if tqdm were missing
    with progress(total=5) as bar:
        bar.update(5)
    assert isinstance(bar, _NoBar) and bar.n == 5
    assert capsys.readouterr().err == ""
