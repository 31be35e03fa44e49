"""SummaryWriter: every kind of summary is read back with TensorBoard's own
event reader (skipped without the ``tensorboard`` extra)."""
from __future__ import annotations

import importlib.util
import os
import struct
import zlib

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import fabric
from fabric.utils.tensorboard import SummaryWriter


def _read(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"images": 0, "histograms": 0, "scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _decode_png(data: bytes) -> np.ndarray:
    """Pixels of a PNG written with filter 0 (what fabric writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = header[:4]
    c = {2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, c)


def test_scalars_in_order_with_steps(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("acc", fabric.tensor(0.75), 7)
        w.add_scalar("new", 2.5, 1, new_style=True)
    acc = _read(tmp_path)
    got = [(e.step, e.value) for e in acc.Scalars("loss")]
    assert got == [(s, pytest.approx(1.0 / (s + 1))) for s in range(5)]
    assert [(e.step, e.value) for e in acc.Scalars("acc")] == [(7, 0.75)]
    t = acc.Tensors("new")[0]
    assert t.step == 1 and t.tensor_proto.float_val == [2.5]
    with pytest.raises(AssertionError, match="one element"):
        SummaryWriter(tmp_path / "x").add_scalar("bad", fabric.ones(3))


def test_add_scalars_writes_one_run_per_curve(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalars("run", {"sin": np.sin(i), "cos": np.cos(i)}, i)
    for name, fn in (("sin", np.sin), ("cos", np.cos)):
        acc = _read(tmp_path / f"run_{name}")
        assert [e.value for e in acc.Scalars("run")] == pytest.approx([fn(i) for i in range(3)], rel=1e-6)


def test_histogram_statistics_and_buckets(tmp_path):
    values = fabric.randn(1000, dtype=fabric.float64)
    v = values.numpy()
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", values, 3)
        w.add_histogram("w10", v, 3, bins=10)
    acc = _read(tmp_path)
    h = acc.Histograms("w")[0]
    assert h.step == 3
    hv = h.histogram_value
    assert hv.num == 1000 and sum(hv.bucket) == 1000
    assert hv.min == pytest.approx(v.min()) and hv.max == pytest.approx(v.max())
    assert hv.sum == pytest.approx(v.sum()) and hv.sum_squares == pytest.approx((v * v).sum())
    assert list(hv.bucket_limit) == sorted(hv.bucket_limit) and hv.bucket_limit[-1] >= v.max()
    h10 = acc.Histograms("w10")[0].histogram_value
    counts, edges = np.histogram(v, bins=10)
    assert list(h10.bucket) == list(counts.astype(float)) and list(h10.bucket_limit) == pytest.approx(edges[1:])


def test_images_round_trip_pixels(tmp_path):
    rng = np.random.default_rng(0)
    chw = rng.random((3, 4, 5)).astype(np.float32)
    gray = rng.integers(0, 256, (6, 7), dtype=np.uint8)
    batch = rng.random((3, 3, 2, 2)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", fabric.tensor(chw), 0)
        w.add_image("hw", gray, 0, dataformats="HW")
        w.add_images("grid", batch, 0)
    acc = _read(tmp_path)
    img = acc.Images("chw")[0]
    assert (img.height, img.width) == (4, 5)
    np.testing.assert_array_equal(_decode_png(img.encoded_image_string),
                                  (np.clip(chw * 255, 0, 255)).astype(np.uint8).transpose(1, 2, 0))
    g = _decode_png(acc.Images("hw")[0].encoded_image_string)
    np.testing.assert_array_equal(g, np.stack([gray] * 3, axis=2))
    grid = _decode_png(acc.Images("grid")[0].encoded_image_string)
    assert grid.shape == (2, 6, 3)  # three 2x2 images side by side
    np.testing.assert_array_equal(grid[:, 2:4], (batch[1] * 255).astype(np.uint8).transpose(1, 2, 0))
    with pytest.raises(AssertionError, match="different"):
        SummaryWriter(tmp_path / "x").add_image("bad", chw, dataformats="HW")


def test_png_opens_in_pillow():
    image = pytest.importorskip("PIL.Image")
    import io

    from fabric.utils.tensorboard.summary import encode_png

    px = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(image.open(io.BytesIO(encode_png(px)))), px)


def test_text_and_hparams(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "hello **world**", 2)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "nesterov": True}, {"hparam/loss": 0.25}, run_name="run1")
    acc = _read(tmp_path)
    t = acc.Tensors("notes/text_summary")[0]
    assert t.step == 2 and t.tensor_proto.string_val == [b"hello **world**"]

    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    run = _read(tmp_path / "run1")
    content = run.PluginTagToContent("hparams")
    start = HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["opt"].string_value == "sgd"
    assert start.hparams["nesterov"].bool_value is True
    exp = HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/loss"]
    assert {h.name for h in exp.hparam_infos} == {"lr", "opt", "nesterov"}
    assert [e.value for e in run.Scalars("hparam/loss")] == [0.25]
    with pytest.raises(TypeError, match="should be dictionary"):
        SummaryWriter(tmp_path / "x").add_hparams([], {})


def test_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [0, 1])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
    img = _read(tmp_path).Images("fig")[0]
    assert (img.width, img.height) == (100, 50)
    assert _decode_png(img.encoded_image_string).shape == (50, 100, 4)


def test_default_logdir_purge_and_graph(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_x", purge_step=5)
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_x")
    w.add_scalar("a", 1.0, 6)
    w.flush()
    if importlib.util.find_spec("fabric.fx") is None:
        with pytest.raises(NotImplementedError, match="graph IR"):
            w.add_graph(fabric.nn.Linear(2, 2), fabric.ones(1, 2))
    for name in ("add_embedding", "add_pr_curve", "add_video", "add_audio", "add_mesh", "add_custom_scalars"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(w, name)("tag")
    w.close()
    w.close()  # closing twice is harmless
    assert [e.step for e in _read(w.get_logdir()).Scalars("a")] == [6]


def test_add_graph_from_the_fx_graph(tmp_path):
    pytest.importorskip("fabric.fx")

    class Net(fabric.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = fabric.nn.Sequential(fabric.nn.Linear(3, 4), fabric.nn.ReLU())
            self.head = fabric.nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.body(x)) + 1.0

    with SummaryWriter(tmp_path) as w:
        w.add_graph(Net(), fabric.ones(5, 3))
    graph = _read(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}
    by_op = {}
    for n in graph.node:
        by_op.setdefault(n.op, []).append(n.name)
    assert sorted(by_op["Linear"]) == sorted(name for name in nodes if "Linear[" in name)
    assert len(by_op["Linear"]) == 2 and len(by_op["ReLU"]) == 1 and len(by_op["IO Node"]) == 2
    relu = nodes[by_op["ReLU"][0]]
    assert relu.name.startswith("Net/Sequential[body]/ReLU[1]/")
    assert list(relu.input) == [n for n in by_op["Linear"] if "Sequential[body]" in n]
    out = nodes["output/output"]
    assert len(out.input) == 1 and nodes[out.input[0]].op.startswith("aten::")
    shapes = {name: [d.size for d in n.attr["_output_shapes"].list.shape[0].dim] for name, n in nodes.items()
              if "_output_shapes" in n.attr}
    assert shapes[relu.name] == [5, 4] and shapes["output/output"] == [5, 2]
