"""fabric.vision.utils: make_grid layout, save_image through Pillow, draw_bounding_boxes."""
import numpy as np
import pytest

import fabric
from fabric.vision import utils


def test_make_grid_layout_and_normalize():
    x = fabric.from_numpy(np.arange(5 * 3 * 2 * 2, dtype=np.float32).reshape(5, 3, 2, 2))
    g = utils.make_grid(x, nrow=3, padding=1, pad_value=-1.0)
    assert g.shape == (3, 2 * 3 + 1, 3 * 3 + 1)
    a = g.numpy()
    assert np.array_equal(a[:, 1:3, 1:3], x.numpy()[0]) and np.array_equal(a[:, 4:6, 4:6], x.numpy()[4])
    assert (a[:, 0] == -1).all() and (a[:, 4:6, 7:9] == -1).all()  # the sixth cell stays padding
    one = utils.make_grid(fabric.ones(1, 4, 4))
    assert one.shape == (3, 4, 4)  # a single grey image: three channels, no padding
    n = utils.make_grid([fabric.full((1, 2, 2), 3.0), fabric.full((1, 2, 2), 5.0)], normalize=True, padding=0)
    assert n.shape == (3, 2, 4) and n.min().item() == 0.0 and n.max().item() == 1.0
    s = utils.make_grid(fabric.stack([fabric.full((3, 2, 2), 3.0), fabric.arange(12.0).reshape(3, 2, 2)]),
                        normalize=True, value_range=(0.0, 6.0), scale_each=True, padding=0)
    assert np.allclose(s.numpy()[:, :, :2], 0.5) and s.numpy()[:, :, 2:].max() == 1.0
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(fabric.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])


def test_save_image_round_trip(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    x = fabric.from_numpy(np.random.default_rng(0).random((2, 3, 4, 5)).astype(np.float32))
    path = tmp_path / "grid.png"
    utils.save_image(x, str(path), nrow=2, padding=0)
    back = np.asarray(Image.open(path))
    ref = np.clip(np.concatenate([x.numpy()[0], x.numpy()[1]], 2) * 255 + 0.5, 0, 255).astype(np.uint8)
    assert np.array_equal(back, ref.transpose(1, 2, 0))


def test_draw_bounding_boxes():
    pytest.importorskip("PIL")
    img = fabric.zeros(3, 20, 30, dtype=fabric.uint8)
    boxes = fabric.tensor([[2, 3, 10, 12], [15, 1, 29, 19]])
    out = utils.draw_bounding_boxes(img, boxes, colors=["red", (0, 255, 0)], labels=["a", "b"], width=1)
    a = out.numpy()
    assert out.dtype == fabric.uint8 and out.shape == (3, 20, 30)
    assert a[:, 3, 5].tolist() == [255, 0, 0] and a[:, 12, 2].tolist() == [255, 0, 0]  # red outline
    assert a[:, 1, 20].tolist() == [0, 255, 0] and a[:, 7, 7].tolist() == [0, 0, 0]  # inside stays black
    assert img.sum().item() == 0
    filled = utils.draw_bounding_boxes(fabric.zeros(1, 20, 30), boxes[:1], fill=True, colors="white")
    assert filled.dtype == fabric.float32 and filled.shape == (3, 20, 30) and 0 < filled[0, 7, 7].item() < 1
    with pytest.raises(ValueError, match="Boxes need to be in \\(xmin, ymin, xmax, ymax\\) format"):
        utils.draw_bounding_boxes(img, fabric.tensor([[5, 5, 1, 1]]))
    with pytest.raises(ValueError, match="Pass individual images, not batches"):
        utils.draw_bounding_boxes(fabric.zeros(1, 3, 4, 4, dtype=fabric.uint8), boxes)
    assert utils._generate_color_palette(2) == [(0, 0, 0), ((2 ** 25 - 1) % 255, (2 ** 15 - 1) % 255,
                                                            (2 ** 21 - 1) % 255)]
    with pytest.warns(UserWarning, match="boxes doesn't contain any box"):
        utils.draw_bounding_boxes(img, fabric.zeros(0, 4))
