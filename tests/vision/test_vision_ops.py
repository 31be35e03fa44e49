"""fabric.vision.ops against plain-Python transliterations of torchvision's
CPU kernels, NumPy formulas, gradcheck, and torch's generator."""
import math

import numpy as np
import pytest

import fabric
from fabric.vision import ops


def _boxes(n, seed, scale=20.0):
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2)) * scale
    wh = rng.random((n, 2)) * scale / 2 + 0.5
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def _nms_reference(boxes, scores, thr):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    area = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
    suppressed, keep = set(), []
    for pos, i in enumerate(order):
        if i in suppressed:
            continue
        keep.append(i)
        for j in order[pos + 1:]:
            w = max(0.0, min(boxes[i][2], boxes[j][2]) - max(boxes[i][0], boxes[j][0]))
            h = max(0.0, min(boxes[i][3], boxes[j][3]) - max(boxes[i][1], boxes[j][1]))
            inter = w * h
            if inter / (area[i] + area[j] - inter) > thr:
                suppressed.add(j)
    return keep


@pytest.mark.parametrize("thr", [0.0, 0.3, 0.7])
def test_nms_matches_the_greedy_reference(thr):
    b = _boxes(60, 0)
    s = np.random.default_rng(1).random(60).astype(np.float32)
    keep = ops.nms(fabric.from_numpy(b), fabric.from_numpy(s), thr)
    assert keep.dtype == fabric.int64
    assert keep.tolist() == _nms_reference(b.astype(np.float64).tolist(), s.tolist(), thr)
    assert ops.nms(fabric.zeros(0, 4), fabric.zeros(0), 0.5).tolist() == []
    with pytest.raises(RuntimeError, match=r"boxes should have 2 dimensions of size \(N, 4\)"):
        ops.nms(fabric.zeros(3, 5), fabric.zeros(3), 0.5)


def test_batched_nms_keeps_categories_apart():
    b = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [0, 0, 10, 10], [50, 50, 60, 60]], np.float32)
    s = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    idx = fabric.tensor([0, 0, 1, 1])
    keep = ops.batched_nms(fabric.from_numpy(b), fabric.from_numpy(s), idx, 0.5)
    assert keep.tolist() == [0, 2, 3]
    # the per-class path (used for large inputs) gives the same answer
    big = _boxes(300, 2)
    bs = np.random.default_rng(3).random(300).astype(np.float32)
    cats = fabric.from_numpy(np.random.default_rng(4).integers(0, 5, 300))
    a = ops.boxes._batched_nms_coordinate_trick(fabric.from_numpy(big), fabric.from_numpy(bs), cats, 0.4)
    v = ops.boxes._batched_nms_vanilla(fabric.from_numpy(big), fabric.from_numpy(bs), cats, 0.4)
    assert a.tolist() == v.tolist()


def test_box_iou_area_convert_clip():
    b1, b2 = _boxes(5, 5), _boxes(4, 6)
    iou = ops.box_iou(fabric.from_numpy(b1), fabric.from_numpy(b2)).numpy()
    ref = np.zeros((5, 4))
    for i in range(5):
        for j in range(4):
            w = max(0, min(b1[i, 2], b2[j, 2]) - max(b1[i, 0], b2[j, 0]))
            h = max(0, min(b1[i, 3], b2[j, 3]) - max(b1[i, 1], b2[j, 1]))
            a1 = (b1[i, 2] - b1[i, 0]) * (b1[i, 3] - b1[i, 1])
            a2 = (b2[j, 2] - b2[j, 0]) * (b2[j, 3] - b2[j, 1])
            ref[i, j] = w * h / (a1 + a2 - w * h)
    np.testing.assert_allclose(iou, ref, rtol=1e-5)
    giou = ops.generalized_box_iou(fabric.from_numpy(b1), fabric.from_numpy(b1)).numpy()
    np.testing.assert_allclose(np.diag(giou), 1.0, rtol=1e-6)
    assert (giou >= -1).all() and (giou <= 1).all()
    t = fabric.tensor([[1.0, 2.0, 5.0, 8.0]])
    assert ops.box_convert(t, "xyxy", "xywh").tolist() == [[1.0, 2.0, 4.0, 6.0]]
    assert ops.box_convert(t, "xyxy", "cxcywh").tolist() == [[3.0, 5.0, 4.0, 6.0]]
    assert ops.box_convert(fabric.tensor([[3.0, 5.0, 4.0, 6.0]]), "cxcywh", "xywh").tolist() == [[1.0, 2.0, 4.0, 6.0]]
    for fmt in ("xywh", "cxcywh"):
        assert np.allclose(ops.box_convert(ops.box_convert(t, "xyxy", fmt), fmt, "xyxy").numpy(), t.numpy())
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions for given in_fmt and out_fmt"):
        ops.box_convert(t, "xyxy", "yxyx")
    assert ops.box_area(fabric.tensor([[0, 0, 2, 3]], dtype=fabric.int16)).dtype == fabric.int32
    assert ops.clip_boxes_to_image(fabric.tensor([[-1.0, 2.0, 9.0, 12.0]]), (10, 8)).tolist() == [[0.0, 2.0, 8.0,
                                                                                                   10.0]]
    assert ops.remove_small_boxes(fabric.tensor([[0.0, 0.0, 1.0, 5.0], [0.0, 0.0, 3.0, 3.0]]), 2.0).tolist() == [1]


def test_box_iou_gradcheck():
    b1 = fabric.from_numpy(_boxes(3, 7).astype(np.float64)).requires_grad_(True)
    b2 = fabric.from_numpy(_boxes(2, 8).astype(np.float64) + 0.25)
    assert fabric.autograd.gradcheck(lambda a: ops.box_iou(a, b2), (b1,))


def _bilinear_ref(img, y, x):
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return hy * hx * img[yl, xl] + hy * lx * img[yl, xh] + ly * hx * img[yh, xl] + ly * lx * img[yh, xh]


def _roi_align_ref(x, rois, ph, pw, scale, sampling, aligned):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        off = 0.5 if aligned else 0.0
        sw, sh, ew, eh = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = ew - sw, eh - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling if sampling > 0 else math.ceil(rh / ph)
        gw = sampling if sampling > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for iy in range(gh):
                        yy = sh + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = sw + j * bw + (ix + 0.5) * bw / gw
                            acc += _bilinear_ref(x[int(b), c], yy, xx)
                    out[k, c, i, j] = acc / count
    return out


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling", [-1, 2])
def test_roi_align_matches_the_kernel_reference(aligned, sampling):
    rng = np.random.default_rng(9)
    x = rng.random((2, 3, 10, 12))
    rois = [[0, 1.0, 1.5, 8.0, 7.0], [1, -2.0, 0.0, 5.5, 4.0], [1, 3.0, 2.0, 3.5, 2.2], [0, 9.0, 8.0, 14.0, 12.0]]
    out = ops.roi_align(fabric.from_numpy(x), fabric.tensor(rois, dtype=fabric.float64), (3, 4), 0.9, sampling,
                        aligned)
    np.testing.assert_allclose(out.numpy(), _roi_align_ref(x, rois, 3, 4, 0.9, sampling, aligned), rtol=1e-10,
                               atol=1e-12)
    # float32, and boxes given as a list per image
    x32 = fabric.from_numpy(x.astype(np.float32))
    lst = [fabric.tensor([r[1:] for r in rois if r[0] == i]) for i in range(2)]
    ordered = [r for r in rois if r[0] == 0] + [r for r in rois if r[0] == 1]
    out32 = ops.roi_align(x32, lst, 2, 0.9, sampling, aligned)
    np.testing.assert_allclose(out32.numpy(), _roi_align_ref(x, ordered, 2, 2, 0.9, sampling, aligned), rtol=1e-5,
                               atol=1e-6)


def test_roi_align_gradcheck_and_identity():
    x = fabric.from_numpy(np.random.default_rng(10).random((1, 2, 5, 6))).requires_grad_(True)
    rois = fabric.tensor([[0, 0.5, 1.0, 4.5, 4.0], [0, 1.2, 0.3, 5.0, 3.3]], dtype=fabric.float64)
    assert fabric.autograd.gradcheck(lambda t: ops.roi_align(t, rois, 2, 1.0, 2, True), (x,))
    whole = ops.roi_align(x, fabric.tensor([[0, 0.0, 0.0, 6.0, 5.0]], dtype=fabric.float64), (5, 6), 1.0, 1, True)
    np.testing.assert_allclose(whole.detach().numpy()[0], x.detach().numpy()[0], atol=1e-12)
    layer = ops.RoIAlign((5, 6), 1.0, 1, aligned=True)
    assert "RoIAlign(output_size=(5, 6)" in repr(layer)


def _roi_pool_ref(x, rois, ph, pw, scale):
    def cround(v):
        return int(math.copysign(math.floor(abs(v) + 0.5), v))

    n, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sw, sh, ew, eh = cround(x1 * scale), cround(y1 * scale), cround(x2 * scale), cround(y2 * scale)
        rw, rh = max(ew - sw + 1, 1), max(eh - sh + 1, 1)
        for i in range(ph):
            hs = min(max(math.floor(i * rh / ph) + sh, 0), h)
            he = min(max(math.ceil((i + 1) * rh / ph) + sh, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * rw / pw) + sw, 0), w)
                we = min(max(math.ceil((j + 1) * rw / pw) + sw, 0), w)
                if he > hs and we > ws:
                    out[k, :, i, j] = x[int(b), :, hs:he, ws:we].reshape(c, -1).max(1)
    return out


def test_roi_pool_matches_the_kernel_reference_and_routes_gradients():
    rng = np.random.default_rng(11)
    x = rng.random((2, 2, 9, 11))
    rois = [[0, 0.0, 0.0, 10.0, 8.0], [1, 2.5, 1.5, 6.0, 7.0], [1, 20.0, 20.0, 25.0, 25.0], [0, 3.0, 3.0, 3.0, 3.0]]
    t = fabric.from_numpy(x).requires_grad_(True)
    out = ops.roi_pool(t, fabric.tensor(rois, dtype=fabric.float64), (3, 2), 0.8)
    np.testing.assert_allclose(out.detach().numpy(), _roi_pool_ref(x, rois, 3, 2, 0.8))
    out.sum().backward()
    g = t.grad.numpy()
    # every output bin sends its gradient to the one pixel it picked
    assert g.sum() == np.count_nonzero(_roi_pool_ref(x, rois, 3, 2, 0.8))
    assert np.array_equal(g, np.round(g))  # whole counts: each bin adds 1 to its pixel


@pytest.mark.torch
def test_sigmoid_focal_loss_matches_torch_formula():
    import torch

    rng = np.random.default_rng(12)
    logits, targets = rng.standard_normal((4, 5)), (rng.random((4, 5)) > 0.5).astype(np.float64)
    ti, tt = torch.from_numpy(logits), torch.from_numpy(targets)
    p = torch.sigmoid(ti)
    ce = torch.nn.functional.binary_cross_entropy_with_logits(ti, tt, reduction="none")
    p_t = p * tt + (1 - p) * (1 - tt)
    ref = (0.25 * tt + 0.75 * (1 - tt)) * ce * (1 - p_t) ** 2
    out = ops.sigmoid_focal_loss(fabric.from_numpy(logits), fabric.from_numpy(targets))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    assert np.isclose(ops.sigmoid_focal_loss(fabric.from_numpy(logits), fabric.from_numpy(targets), alpha=-1,
                                             gamma=0, reduction="mean").item(), ce.mean().item())
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction': 'max"):
        ops.sigmoid_focal_loss(fabric.from_numpy(logits), fabric.from_numpy(targets), reduction="max")
    x = fabric.from_numpy(logits).requires_grad_(True)
    assert fabric.autograd.gradcheck(lambda t: ops.sigmoid_focal_loss(t, fabric.from_numpy(targets)), (x,))


@pytest.mark.torch
def test_stochastic_depth_draws_like_torchvision():
    import torch

    x = fabric.ones(6, 2, 3)
    fabric.manual_seed(5)
    torch.manual_seed(5)
    out = ops.stochastic_depth(x, 0.4, "row")
    noise = torch.empty([6, 1, 1]).bernoulli_(0.6).div_(0.6)
    assert np.allclose(out.numpy(), (torch.ones(6, 2, 3) * noise).numpy())
    out = ops.StochasticDepth(0.4, "batch")(x)
    noise = torch.empty([1, 1, 1]).bernoulli_(0.6).div_(0.6)
    assert np.allclose(out.numpy(), (torch.ones(6, 2, 3) * noise).numpy())
    layer = ops.StochasticDepth(0.4, "row").eval()
    assert layer(x) is x and repr(layer) == "StochasticDepth(p=0.4, mode=row)"
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1, but got 1.5"):
        ops.stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="mode has to be either 'batch' or 'row', but got col"):
        ops.stochastic_depth(x, 0.5, "col")
