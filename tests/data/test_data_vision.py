"""MNIST / FashionMNIST from IDX files built here, downloads without the network, Digits, transforms."""
import hashlib
import os
import sys
from urllib.error import URLError

import numpy as np
import pytest

import fabric
from fabric.data import DataLoader
from fabric.data import transforms as T
from fabric.data.datasets import MNIST, Digits, FashionMNIST, _utils


def _make_split(folder, split, n, seed, gz=True):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    ext = ".gz" if gz else ""
    _utils.write_idx(os.path.join(folder, f"{split}-images-idx3-ubyte{ext}"), images)
    _utils.write_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte{ext}"), labels)
    return images, labels


def test_idx_round_trip_and_format_errors(tmp_path):
    for dt in (np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64):
        arr = np.arange(24, dtype=dt).reshape(2, 3, 4)
        for name in ("a.idx", "a.idx.gz"):
            _utils.write_idx(str(tmp_path / name), arr)
            back = _utils.read_idx(str(tmp_path / name))
            assert back.dtype == arr.dtype and np.array_equal(back, arr)
    # the standard header: magic 0x00000803 and big-endian dims
    _utils.write_idx(str(tmp_path / "m"), np.zeros((5, 28, 28), np.uint8))
    raw = (tmp_path / "m").read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x03" and raw[4:8] == (5).to_bytes(4, "big")
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(RuntimeError, match="not an IDX file"):
        _utils.read_idx(str(tmp_path / "bad"))
    (tmp_path / "short").write_bytes(raw[:100])
    with pytest.raises(RuntimeError, match="truncated"):
        _utils.read_idx(str(tmp_path / "short"))


@pytest.mark.parametrize("layout", ["torchvision", "flat", "flat-uncompressed"])
def test_mnist_reads_idx_files(tmp_path, layout):
    folder = tmp_path / "MNIST" / "raw" if layout == "torchvision" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    train_x, train_y = _make_split(str(folder), "train", 12, 0, gz=layout != "flat-uncompressed")
    test_x, test_y = _make_split(str(folder), "t10k", 5, 1, gz=layout != "flat-uncompressed")
    ds = MNIST(str(tmp_path), train=True)
    assert len(ds) == 12 and ds.data.dtype == fabric.uint8 and ds.targets.dtype == fabric.int64
    assert np.array_equal(ds.data.numpy(), train_x) and ds.targets.tolist() == train_y.tolist()
    img, target = ds[3]
    assert isinstance(img, np.ndarray) and img.shape == (28, 28) and target == int(train_y[3])
    img[...] = 0  # a copy: the dataset is untouched
    assert np.array_equal(ds[3][0], train_x[3])
    test = MNIST(str(tmp_path), train=False, transform=T.ToTensor(), target_transform=lambda t: t + 100)
    x, y = test[0]
    assert x.shape == (1, 28, 28) and x.dtype == fabric.float32 and y == int(test_y[0]) + 100
    assert np.allclose(x.numpy()[0], test_x[0] / 255.0)
    assert test.class_to_idx["3 - three"] == 3 and "Split: Test" in repr(test)
    xb, yb = next(iter(DataLoader(test, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and yb.tolist() == [v + 100 for v in test_y[:4].tolist()]


def test_fashion_mnist_uses_its_own_folder(tmp_path):
    folder = tmp_path / "FashionMNIST" / "raw"
    folder.mkdir(parents=True)
    _make_split(str(folder), "t10k", 3, 2)
    ds = FashionMNIST(str(tmp_path), train=False)
    assert len(ds) == 3 and ds.classes[9] == "Ankle boot"
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        MNIST(str(tmp_path), train=False)


def _serve(tmp_path, cls):
    """A local 'mirror' (file:// URLs, no network) holding the four files, and their MD5s."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _make_split(str(mirror), "train", 6, 3)
    _make_split(str(mirror), "t10k", 4, 4)
    resources = [(f, hashlib.md5((mirror / f).read_bytes()).hexdigest()) for f, _ in cls.resources]
    return f"file://{mirror}/", resources


def test_download_from_a_mirror_with_checksums(tmp_path, monkeypatch):
    url, resources = _serve(tmp_path, MNIST)
    monkeypatch.setattr(MNIST, "mirrors", ["file:///nonexistent/mirror/", url])
    monkeypatch.setattr(MNIST, "resources", resources)
    root = tmp_path / "data"
    ds = MNIST(str(root), train=True, download=True)
    assert len(ds) == 6
    assert sorted(os.listdir(root / "MNIST" / "raw")) == sorted(f for f, _ in resources)
    assert len(MNIST(str(root), train=False, download=True)) == 4  # already there: nothing fetched


def test_download_rejects_a_bad_checksum(tmp_path, monkeypatch):
    url, resources = _serve(tmp_path, MNIST)
    monkeypatch.setattr(MNIST, "mirrors", [url])
    monkeypatch.setattr(MNIST, "resources", [(f, "0" * 32) for f, _ in resources])
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        MNIST(str(tmp_path / "data"), download=True)
    assert not any(f.endswith(".gz") for f in os.listdir(tmp_path / "data" / "MNIST" / "raw"))


def test_download_offline_gives_a_clear_error(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(_utils, "urlopen", offline)
    with pytest.raises(RuntimeError) as e:
        FashionMNIST(str(tmp_path), download=True)
    msg = str(e.value)
    assert "Error downloading train-images-idx3-ubyte.gz" in msg and "offline" in msg
    assert "fashion-mnist" in msg and "Temporary failure in name resolution" in msg
    assert "by hand" in msg


def test_digits():
    pytest.importorskip("sklearn")
    train, test = Digits(train=True), Digits(train=False)
    assert len(train) + len(test) == 1797 and abs(len(test) - 0.2 * 1797) < 10
    assert train.data.dtype == fabric.uint8 and train.data.shape[1:] == (8, 8) and int(train.data.max()) == 255
    # stratified: every class in both parts; deterministic
    assert set(test.targets.tolist()) == set(range(10))
    assert Digits(train=False).targets.tolist() == test.targets.tolist()
    assert Digits(train=False, split_seed=1).targets.tolist() != test.targets.tolist()
    img, y = Digits(train=True, transform=T.ToTensor())[0]
    assert img.shape == (1, 8, 8) and float(img.min()) >= 0.0 and float(img.max()) <= 1.0 and isinstance(y, int)
    with pytest.raises(ValueError, match="test_fraction"):
        Digits(test_fraction=1.5)


def test_digits_without_sklearn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"fabric-dl\[examples\]"):
        Digits()


# --- transforms ----------------------------------------------------------------------------------
def test_to_tensor():
    hw = np.arange(6, dtype=np.uint8).reshape(2, 3)
    t = T.ToTensor()(hw)
    assert t.shape == (1, 2, 3) and t.dtype == fabric.float32
    assert np.array_equal(t.numpy()[0], (hw.astype(np.float32) / np.float32(255)))
    hwc = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    assert np.array_equal(T.ToTensor()(hwc).numpy(), hwc.transpose(2, 0, 1).astype(np.float32) / np.float32(255))
    f = np.ones((2, 2, 1), np.float64)
    assert T.ToTensor()(f).dtype == fabric.float64  # non-uint8 images keep their dtype
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional"):
        T.ToTensor()(np.zeros((1, 1, 1, 1)))


def test_normalize():
    x = fabric.rand(2, 3, 3)
    out = T.Normalize((0.5, 0.25), (2.0, 4.0))(x)
    ref = (x.numpy() - np.array([0.5, 0.25], np.float32)[:, None, None]) / np.array([2.0, 4.0], np.float32)[:, None,
                                                                                                            None]
    assert np.array_equal(out.numpy(), ref) and out.dtype == fabric.float32
    y = x.clone()
    assert T.Normalize(0.5, 0.5, inplace=True)(y) is y and np.array_equal(y.numpy(), (x.numpy() - 0.5) / 0.5)
    w = x.clone().requires_grad_(True)  # recorded by autograd
    T.Normalize((0.5, 0.25), (2.0, 4.0))(w).sum().backward()
    assert np.allclose(w.grad.numpy()[0], 0.5) and np.allclose(w.grad.numpy()[1], 0.25)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        T.Normalize(0, 1)(fabric.zeros(1, 2, 2, dtype=fabric.uint8))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize(0, (1.0, 0.0))(fabric.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="Expected tensor to be a tensor image"):
        T.Normalize(0, 1)(fabric.zeros(2, 2))


@pytest.mark.torch
def test_random_transforms_draw_like_torchvision():
    """torchvision's RandomCrop draws randint(0, h - th + 1, (1,)) then the same for w; the flip draws
    rand(1) < p. With the same seed fabric makes the same choices."""
    import torch

    img = np.arange(2 * 6 * 7, dtype=np.float32).reshape(2, 6, 7)
    crop, flip = T.RandomCrop((4, 3), padding=1), T.RandomHorizontalFlip(0.5)
    fabric.manual_seed(4)
    torch.manual_seed(4)
    for _ in range(20):
        out = flip(crop(fabric.from_numpy(img)))
        padded = np.pad(img, ((0, 0), (1, 1), (1, 1)))
        i = torch.randint(0, 8 - 4 + 1, size=(1,)).item()
        j = torch.randint(0, 9 - 3 + 1, size=(1,)).item()
        ref = padded[:, i:i + 4, j:j + 3]
        if torch.rand(1) < 0.5:
            ref = ref[:, :, ::-1]
        assert np.array_equal(out.numpy(), ref)


def test_random_crop_and_flip_on_numpy_images():
    img = np.arange(5 * 5 * 3, dtype=np.uint8).reshape(5, 5, 3)
    out = T.RandomCrop(5, padding=(1, 2), padding_mode="edge")(img)
    assert out.shape == (5, 5, 3)
    assert T.RandomCrop(5)(img).tolist() == img.tolist()
    assert T.RandomCrop(7, pad_if_needed=True, fill=9)(img).shape == (7, 7, 3)
    assert np.array_equal(T.RandomHorizontalFlip(1.0)(img), img[:, ::-1])
    assert T.RandomHorizontalFlip(0.0)(img) is img
    with pytest.raises(ValueError, match="Required crop size"):
        T.RandomCrop(6)(img)
    with pytest.raises(ValueError, match="Padding mode should be either"):
        T.RandomCrop(5, padding=1, padding_mode="wrap")(img)
    for mode in ("constant", "edge", "reflect"):  # padding a tensor that requires grad is recorded
        w = fabric.arange(1.0, 10.0).reshape(1, 3, 3).requires_grad_(True)
        out = T.RandomCrop(5, padding=1, padding_mode=mode, fill=0)(w)
        ref = np.pad(w.detach().numpy(), ((0, 0), (1, 1), (1, 1)), mode=mode)
        assert np.array_equal(out.detach().numpy(), ref)
        out.sum().backward()
        assert w.grad is not None and float(w.grad.sum()) == (9.0 if mode == "constant" else 25.0)
    w = fabric.arange(1.0, 5.0).reshape(1, 2, 2).requires_grad_(True)  # symmetric padding is recorded too
    out = T.RandomCrop(4, padding=1, padding_mode="symmetric")(w)
    assert np.array_equal(out.detach().numpy(), np.pad(w.detach().numpy(), ((0, 0), (1, 1), (1, 1)), "symmetric"))
    out.sum().backward()
    assert w.grad.tolist() == [[[4.0, 4.0], [4.0, 4.0]]]


def test_compose_and_lambda():
    t = T.Compose([T.ToTensor(), T.Lambda(lambda x: x * 2), T.Normalize((1.0,), (1.0,))])
    out = t(np.full((2, 2), 255, np.uint8))
    assert out.tolist() == [[[1.0, 1.0], [1.0, 1.0]]]
    assert "ToTensor()" in repr(t) and "Normalize" in repr(t)
    with pytest.raises(TypeError, match="Argument lambd should be callable"):
        T.Lambda(3)
