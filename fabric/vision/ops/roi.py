"""``roi_align`` and ``roi_pool``: pool a fixed-size feature map from each
region of interest, as torchvision's CPU kernels do (the same sample points,
the same clamping at the borders, the same float arithmetic for the
coordinates). Built from fabric's indexing ops, so autograd differentiates
them (the gradient scatters back to the sampled pixels).

Example::

    >>> import fabric
    >>> from fabric.vision.ops import roi_align
    >>> x = fabric.arange(16.0).reshape(1, 1, 4, 4)
    >>> roi_align(x, [fabric.tensor([[0., 0., 4., 4.]])], 2, aligned=True, sampling_ratio=1)
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
"""
from __future__ import annotations

import math

import numpy as np

import fabric

from ..._tensor import Tensor
from ...nn.modules.module import Module

__all__ = ["roi_align", "RoIAlign", "roi_pool", "RoIPool"]


def _pair(v) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


def convert_boxes_to_roi_format(boxes) -> Tensor:
    """A list of (L_i, 4) tensors -> one (K, 5) tensor whose first column is the image index."""
    concat = fabric.cat([b for b in boxes], dim=0)
    ids = fabric.cat([fabric.full((b.shape[0], 1), i, dtype=concat.dtype, device=concat.device)
                      for i, b in enumerate(boxes)], dim=0)
    return fabric.cat([ids, concat], dim=1)


def _rois(boxes) -> Tensor:
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if b.shape[-1] != 4:
                raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
        return convert_boxes_to_roi_format(boxes)
    if not isinstance(boxes, Tensor) or boxes.ndim != 2 or boxes.shape[1] != 5:
        raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    return boxes


def _bilinear_taps(y, x, height: int, width: int, dt):
    """Corner indices and weights of bilinear samples at (y, x) arrays, with
    torchvision's border rules (samples beyond one pixel outside count 0)."""
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y = np.where(y <= 0, dt.type(0), y)
    x = np.where(x <= 0, dt.type(0), x)
    y_low = y.astype(np.int64)
    x_low = x.astype(np.int64)
    top = y_low >= height - 1
    y_low = np.where(top, height - 1, y_low)
    y_high = np.where(top, height - 1, y_low + 1)
    y = np.where(top, y_low.astype(dt), y)
    right = x_low >= width - 1
    x_low = np.where(right, width - 1, x_low)
    x_high = np.where(right, width - 1, x_low + 1)
    x = np.where(right, x_low.astype(dt), x)
    ly = y - y_low.astype(dt)
    lx = x - x_low.astype(dt)
    hy = dt.type(1) - ly
    hx = dt.type(1) - lx
    idx = np.stack([y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high],
                   -1)
    w = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], -1)
    w[outside] = 0
    idx[outside] = 0
    return idx, w


def roi_align(input: Tensor, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """Average of bilinear samples in each of ``output_size`` bins of every
    region. ``boxes``: (K, 5) tensor (image index, x1, y1, x2, y2) or a list of
    (L, 4) tensors, one per image. ``sampling_ratio`` <= 0 samples
    ``ceil(roi_size / output_size)`` points per bin; ``aligned`` shifts boxes by
    half a pixel. Returns (K, C, out_h, out_w)."""
    rois = _rois(boxes)
    ph, pw = _pair(output_size)
    n, c, height, width = input.shape
    dt = np.dtype(input.dtype.to_numpy())
    host = rois.detach().cpu().numpy().astype(dt)
    flat = input.reshape(n, c, height * width)
    scale = dt.type(spatial_scale)
    offset = dt.type(0.5 if aligned else 0.0)
    outs = []
    for k in range(host.shape[0]):
        b = int(host[k, 0])
        x1, y1, x2, y2 = (v * scale - offset for v in host[k, 1:])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not aligned:
            roi_w, roi_h = max(roi_w, dt.type(1)), max(roi_h, dt.type(1))
        bin_h, bin_w = roi_h / dt.type(ph), roi_w / dt.type(pw)
        gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_h / ph))
        gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_w / pw))
        count = dt.type(max(gh * gw, 1))
        iy = (np.arange(gh, dtype=dt) + dt.type(0.5)) * bin_h / dt.type(gh) if gh else np.zeros(0, dt)
        ix = (np.arange(gw, dtype=dt) + dt.type(0.5)) * bin_w / dt.type(gw) if gw else np.zeros(0, dt)
        ys = y1 + np.arange(ph, dtype=dt)[:, None] * bin_h + iy[None, :]  # (ph, gh)
        xs = x1 + np.arange(pw, dtype=dt)[:, None] * bin_w + ix[None, :]  # (pw, gw)
        yy = np.broadcast_to(ys[:, None, :, None], (ph, pw, gh, gw)).astype(dt)
        xx = np.broadcast_to(xs[None, :, None, :], (ph, pw, gh, gw)).astype(dt)
        idx, w = _bilinear_taps(yy, xx, height, width, dt)
        idx = fabric.from_numpy(idx.reshape(-1)).to(input.device)
        w = fabric.from_numpy((w / count).astype(dt).reshape(ph, pw, -1)).to(input.device)
        taps = flat[b].index_select(1, idx).reshape(c, ph, pw, -1)
        outs.append((taps * w).sum(-1))
    if not outs:
        return fabric.zeros((0, c, ph, pw), dtype=input.dtype, device=input.device)
    return fabric.stack(outs)


def _cround(v: float) -> int:
    """C's round(): halves away from zero."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """Max over each of ``output_size`` bins of every region (integer bin
    edges, as torchvision's RoIPool); empty bins give 0. Returns (K, C, out_h, out_w)."""
    rois = _rois(boxes)
    ph, pw = _pair(output_size)
    n, c, height, width = input.shape
    dt = np.dtype(input.dtype.to_numpy())
    host = rois.detach().cpu().numpy().astype(dt)
    data = input.detach().cpu().numpy().reshape(n, c, height * width)
    flat = input.reshape(n, c, height * width)
    outs = []
    for k in range(host.shape[0]):
        b = int(host[k, 0])
        sw, sh, ew, eh = (_cround(float(v * dt.type(spatial_scale))) for v in host[k, 1:])
        roi_w, roi_h = max(ew - sw + 1, 1), max(eh - sh + 1, 1)
        bin_h, bin_w = dt.type(roi_h) / dt.type(ph), dt.type(roi_w) / dt.type(pw)
        index = np.zeros((c, ph, pw), np.int64)
        empty = np.zeros((ph, pw), bool)
        for i in range(ph):
            hs = min(max(int(math.floor(dt.type(i) * bin_h)) + sh, 0), height)
            he = min(max(int(math.ceil(dt.type(i + 1) * bin_h)) + sh, 0), height)
            for j in range(pw):
                ws = min(max(int(math.floor(dt.type(j) * bin_w)) + sw, 0), width)
                we = min(max(int(math.ceil(dt.type(j + 1) * bin_w)) + sw, 0), width)
                if he <= hs or we <= ws:
                    empty[i, j] = True
                    continue
                cells = (np.arange(hs, he)[:, None] * width + np.arange(ws, we)[None, :]).reshape(-1)
                index[:, i, j] = cells[data[b][:, cells].argmax(axis=1)]
        picked = fabric.gather(flat[b], 1, fabric.from_numpy(index.reshape(c, -1)).to(input.device))
        if empty.any():
            picked = picked * fabric.from_numpy(~empty.reshape(-1)).to(input.device)
        outs.append(picked.reshape(c, ph, pw))
    if not outs:
        return fabric.zeros((0, c, ph, pw), dtype=input.dtype, device=input.device)
    return fabric.stack(outs)


class RoIAlign(Module):
    """Module form of :func:`roi_align`."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


class RoIPool(Module):
    """Module form of :func:`roi_pool`."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"
