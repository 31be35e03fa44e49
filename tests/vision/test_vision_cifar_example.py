"""examples/cifar_resnet.py runs a few steps, on FakeData and on a miniature CIFAR-10 folder."""
import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


@pytest.fixture
def cifar_resnet():
    sys.path.insert(0, EXAMPLES)
    try:
        import cifar_resnet

        yield cifar_resnet
    finally:
        sys.path.remove(EXAMPLES)


def test_runs_on_fakedata(tmp_path, capsys, cifar_resnet):
    acc = cifar_resnet.main(["--root", str(tmp_path), "--epochs", "1", "--max-steps", "2", "--batch-size", "4",
                             "--fake-size", "10", "--no-progress"])
    out = capsys.readouterr().out
    assert "FakeData" in out and "epoch  1" in out and 0.0 <= acc <= 1.0


def test_runs_on_a_cifar_folder(tmp_path, capsys, monkeypatch, cifar_resnet):
    from test_vision_datasets import _cifar_folder, _with_md5s

    from fabric.vision import datasets

    _cifar_folder(tmp_path, datasets.CIFAR10, n_per_batch=2)
    _with_md5s(monkeypatch, tmp_path, datasets.CIFAR10)
    acc = cifar_resnet.main(["--root", str(tmp_path), "--epochs", "1", "--max-steps", "1", "--batch-size", "4",
                             "--no-progress"])
    assert "CIFAR-10: 10 training / 2 test images" in capsys.readouterr().out and 0.0 <= acc <= 1.0
