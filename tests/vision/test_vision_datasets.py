"""fabric.vision.datasets from small files built here (never the network):
CIFAR tarballs through the restricted unpickler, EMNIST/KMNIST IDX files,
SVHN .mat files, image folders, FakeData against torch's generator."""
import hashlib
import io
import os
import pickle
import tarfile
import zipfile

import numpy as np
import pytest

import fabric
from fabric.vision import datasets, transforms
from fabric.vision.datasets import utils


def _md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


# --- FakeData ------------------------------------------------------------------------------------
@pytest.mark.torch
def test_fakedata_matches_torchvision_draws():
    import torch

    ds = datasets.FakeData(size=5, image_size=(3, 6, 7), num_classes=4, random_offset=3)
    fabric.manual_seed(11)
    torch.manual_seed(11)
    for index in range(5):
        img, label = ds[index]
        torch.manual_seed(index + 3)
        ref = torch.randn(3, 6, 7)
        ref_label = torch.randint(0, 4, size=(1,), dtype=torch.long)[0].item()
        assert label == ref_label
        assert np.array_equal(img, ref.mul(255).byte().permute(1, 2, 0).numpy())
    torch.manual_seed(11)
    assert fabric.rand(3).tolist() == torch.rand(3).tolist()  # the global generator is restored
    gray, _ = datasets.FakeData(size=1, image_size=(1, 4, 4))[0]
    assert gray.shape == (4, 4)
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[5]


def test_fakedata_with_transforms_and_loader():
    ds = datasets.FakeData(size=8, image_size=(3, 8, 8), transform=transforms.ToTensor(),
                           target_transform=lambda t: t + 100)
    x, y = next(iter(fabric.data.DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 3, 8, 8) and x.dtype == fabric.float32 and bool((y >= 100).all())
    assert "Number of datapoints: 8" in repr(ds)


# --- CIFAR ---------------------------------------------------------------------------------------
def _cifar_folder(root, cls, n_per_batch=4, seed=0):
    """A miniature of the official layout; returns the images and labels written."""
    rng = np.random.default_rng(seed)
    folder = root / cls.base_folder
    folder.mkdir(parents=True, exist_ok=True)
    label_key = "labels" if cls is datasets.CIFAR10 else "fine_labels"
    written = {}
    for name, _ in cls.train_list + cls.test_list:
        data = rng.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, n_per_batch).tolist()
        (folder / name).write_bytes(pickle.dumps({"batch_label": "x", "data": data, label_key: labels}, protocol=2))
        written[name] = (data, labels)
    names = [f"class{i}" for i in range(10 if cls is datasets.CIFAR10 else 100)]
    (folder / cls.meta["filename"]).write_bytes(pickle.dumps({cls.meta["key"]: names}, protocol=2))
    return written


def _with_md5s(monkeypatch, root, cls):
    folder = root / cls.base_folder
    monkeypatch.setattr(cls, "train_list", [[n, _md5(folder / n)] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, _md5(folder / n)] for n, _ in cls.test_list])
    monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=_md5(folder / cls.meta["filename"])))


@pytest.mark.parametrize("cls", [datasets.CIFAR10, datasets.CIFAR100])
def test_cifar_reads_the_batches(tmp_path, monkeypatch, cls):
    written = _cifar_folder(tmp_path, cls)
    _with_md5s(monkeypatch, tmp_path, cls)
    train = cls(str(tmp_path), train=True)
    assert len(train) == 4 * len(cls.train_list)
    data, labels = written[cls.train_list[0][0]]
    img, target = train[1]
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8 and target == labels[1]
    assert np.array_equal(img, data[1].reshape(3, 32, 32).transpose(1, 2, 0))
    assert train.classes[3] == "class3" and train.class_to_idx["class3"] == 3
    test = cls(str(tmp_path), train=False, transform=transforms.ToTensor())
    x, _ = test[0]
    assert x.shape == (3, 32, 32) and np.allclose(x.numpy(), written[cls.test_list[0][0]][0][0].reshape(3, 32, 32) / 255)
    assert "Split: Test" in repr(test)


def test_cifar_refuses_pickled_code_and_corrupt_files(tmp_path, monkeypatch):
    _cifar_folder(tmp_path, datasets.CIFAR10)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    bad = tmp_path / datasets.CIFAR10.base_folder / "test_batch"
    bad.write_bytes(pickle.dumps({"data": Evil(), "labels": []}, protocol=2))
    _with_md5s(monkeypatch, tmp_path, datasets.CIFAR10)
    with pytest.raises(pickle.UnpicklingError, match=r"global 'io.open' is not allowed"):
        datasets.CIFAR10(str(tmp_path), train=False)
    assert not marker.exists()
    bad.write_bytes(pickle.dumps({"data": np.array([object()], dtype=object), "labels": [0]}, protocol=2))
    _with_md5s(monkeypatch, tmp_path, datasets.CIFAR10)
    with pytest.raises(pickle.UnpicklingError, match="restricted unpickler"):
        datasets.CIFAR10(str(tmp_path), train=False)
    monkeypatch.setattr(datasets.CIFAR10, "test_list", [["test_batch", "0" * 32]])
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        datasets.CIFAR10(str(tmp_path), train=False)


def test_restricted_unpickler_checks_array_sizes(tmp_path):
    path = tmp_path / "p"
    for proto in (2, 4, 5):
        arrs = {"u": np.arange(6, dtype=np.uint8).reshape(2, 3), "f": np.arange(3, dtype=">f4"),
                "F": np.asfortranarray(np.arange(6).reshape(2, 3)), "s": ["a", b"b", (1, 2.5)]}
        path.write_bytes(pickle.dumps(arrs, protocol=proto))
        back = utils.load_pickled_arrays(str(path))
        for k in ("u", "f", "F"):
            assert np.array_equal(back[k], arrs[k]) and back[k].dtype.isnative
        assert back["s"] == ["a", b"b", (1, 2.5)]
    class Short:  # an ndarray pickle whose data is shorter than its shape says
        def __reduce__(self):
            return (np._core.multiarray._reconstruct, (np.ndarray, (0,), b"b"),
                    (1, (4,), np.dtype("u1"), False, b"\x00\x01\x02"))

    path.write_bytes(pickle.dumps(Short(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="needs 4 bytes"):
        utils.load_pickled_arrays(str(path))


def test_cifar_download_from_a_local_tarball(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _cifar_folder(src, datasets.CIFAR10)
    _with_md5s(monkeypatch, src, datasets.CIFAR10)
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / datasets.CIFAR10.base_folder, arcname=datasets.CIFAR10.base_folder)
    monkeypatch.setattr(datasets.CIFAR10, "url", f"file://{archive}")
    monkeypatch.setattr(datasets.CIFAR10, "tgz_md5", _md5(archive))
    ds = datasets.CIFAR10(str(tmp_path / "root"), train=True, download=True)
    assert len(ds) == 20 and os.path.isfile(tmp_path / "root" / "cifar-10-python.tar.gz")
    # a tarball reaching outside its folder is refused
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="outside"):
        utils.extract_tar(str(evil), str(tmp_path / "out"))
    assert not (tmp_path / "escaped").exists()


# --- MNIST family --------------------------------------------------------------------------------
def _idx_pair(folder, prefix, n, seed):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    utils.write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), images)
    utils.write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), labels)
    return images, labels


def test_kmnist_and_emnist(tmp_path):
    raw = tmp_path / "KMNIST" / "raw"
    raw.mkdir(parents=True)
    images, labels = _idx_pair(str(raw), "t10k", 3, 0)
    ds = datasets.KMNIST(str(tmp_path), train=False)
    assert np.array_equal(ds[2][0], images[2]) and ds[2][1] == labels[2] and ds.classes[1] == "ki"
    raw = tmp_path / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    images, labels = _idx_pair(str(raw), "emnist-letters-train", 4, 1)
    ds = datasets.EMNIST(str(tmp_path), split="letters")
    assert len(ds) == 4 and np.array_equal(ds[1][0], images[1]) and ds.classes[:3] == ["N/A", "a", "b"]
    assert len(datasets.EMNIST.classes_split_dict["byclass"]) == 62
    assert len(datasets.EMNIST.classes_split_dict["balanced"]) == 47
    with pytest.raises(ValueError, match="Unknown value 'nope' for argument split"):
        datasets.EMNIST(str(tmp_path), split="nope")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.EMNIST(str(tmp_path), split="digits")


def test_emnist_download_extracts_the_zip(tmp_path, monkeypatch):
    staging = tmp_path / "staging"
    staging.mkdir()
    images, _ = _idx_pair(str(staging), "emnist-digits-test", 2, 2)
    archive = tmp_path / "gzip.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in os.listdir(staging):
            gz = staging / (name + ".gz")
            utils.write_idx(str(gz), utils.read_idx(str(staging / name)))
            z.write(gz, f"gzip/{name}.gz")
        z.writestr("gzip/readme.txt", "not extracted")
    monkeypatch.setattr(datasets.EMNIST, "url", f"file://{archive}")
    monkeypatch.setattr(datasets.EMNIST, "md5", _md5(archive))
    ds = datasets.EMNIST(str(tmp_path / "root"), split="digits", train=False, download=True)
    assert np.array_equal(ds[1][0], images[1])
    assert "readme.txt" not in os.listdir(tmp_path / "root" / "EMNIST" / "raw")


# --- SVHN ----------------------------------------------------------------------------------------
def test_svhn_reads_mat_files(tmp_path, monkeypatch):
    sio = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (32, 32, 3, 5), dtype=np.uint8)
    y = np.array([[10], [1], [2], [10], [9]], dtype=np.uint8)
    sio.savemat(str(tmp_path / "test_32x32.mat"), {"X": x, "y": y})
    split = list(datasets.SVHN.split_list["test"])
    split[2] = _md5(tmp_path / "test_32x32.mat")
    monkeypatch.setitem(datasets.SVHN.split_list, "test", split)
    ds = datasets.SVHN(str(tmp_path), split="test")
    assert ds.data.shape == (5, 3, 32, 32) and ds.labels.tolist() == [0, 1, 2, 0, 9]
    img, target = ds[3]
    assert np.array_equal(img, x[:, :, :, 3]) and target == 0
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.SVHN(str(tmp_path), split="train")
    with pytest.raises(ValueError, match="Unknown value 'x' for argument split"):
        datasets.SVHN(str(tmp_path), split="x")


# --- folders -------------------------------------------------------------------------------------
def test_dataset_folder_with_a_numpy_loader(tmp_path):
    for cls, n in (("b_dog", 2), ("a_cat", 3)):
        (tmp_path / cls / "sub").mkdir(parents=True)
        for i in range(n):
            np.save(tmp_path / cls / ("sub" if i == 0 else "") / f"{i}.npy", np.full((2, 2), i))
    (tmp_path / "a_cat" / "notes.txt").write_text("skipped")
    ds = datasets.DatasetFolder(str(tmp_path), loader=np.load, extensions=(".npy",))
    assert ds.classes == ["a_cat", "b_dog"] and ds.class_to_idx == {"a_cat": 0, "b_dog": 1}
    assert ds.targets == [0, 0, 0, 1, 1] and len(ds) == 5
    assert [os.path.relpath(p, tmp_path) for p, _ in ds.samples][:3] == ["a_cat/1.npy", "a_cat/2.npy",
                                                                          "a_cat/sub/0.npy"]
    assert ds[4][0].tolist() == [[0, 0], [0, 0]] and ds[4][1] == 1
    (tmp_path / "c_empty").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes c_empty. Supported extensions"):
        datasets.DatasetFolder(str(tmp_path), loader=np.load, extensions=(".npy",))
    assert len(datasets.DatasetFolder(str(tmp_path), loader=np.load, extensions=(".npy",), allow_empty=True)) == 5
    with pytest.raises(ValueError, match="Both extensions and is_valid_file cannot be None"):
        datasets.DatasetFolder(str(tmp_path), loader=np.load)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.DatasetFolder(str(tmp_path / "a_cat" / "sub"), loader=np.load, extensions=".npy")


def test_image_folder_with_pillow(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(4)
    arrays = {}
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(2):
            a = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
            Image.fromarray(a).save(tmp_path / cls / f"{i}.png")
            arrays[(cls, i)] = a
    Image.fromarray(arrays[("dog", 1)][:, :, 0]).save(tmp_path / "dog" / "gray.PNG")  # grey -> RGB
    ds = datasets.ImageFolder(str(tmp_path), transform=transforms.Compose([transforms.RandomHorizontalFlip(0.0),
                                                                           transforms.ToTensor()]))
    assert len(ds) == 5 and ds.imgs == ds.samples and ds.targets == [0, 0, 1, 1, 1]
    x, y = ds[1]
    assert y == 0 and np.allclose(x.numpy(), arrays[("cat", 1)].transpose(2, 0, 1) / 255)
    gray, _ = datasets.ImageFolder(str(tmp_path))[4]
    assert gray.mode == "RGB" and np.array_equal(np.asarray(gray)[:, :, 1], arrays[("dog", 1)][:, :, 0])
