"""Box utilities on (N, 4) tensors: ``nms``, ``batched_nms``, ``box_iou``,
``box_area``, ``box_convert`` and friends, with torchvision's formulas (IoU
from areas ``(x2 - x1) * (y2 - y1)``, overlap ``> iou_threshold`` suppresses).

Example::

    >>> import fabric
    >>> from fabric.vision.ops import box_iou
    >>> box_iou(fabric.tensor([[0., 0., 2., 2.]]), fabric.tensor([[1., 1., 3., 3.]]))
    tensor([[0.1429]])
"""
from __future__ import annotations

import fabric

from ..._tensor import Tensor
from ...backends import backend_of

__all__ = ["nms", "batched_nms", "box_iou", "box_area", "box_convert", "clip_boxes_to_image", "remove_small_boxes",
           "generalized_box_iou"]


def _nms_keep(boxes, scores, iou_threshold: float):
    """Indices kept by greedy NMS, on arrays (NumPy or CuPy), in decreasing score order."""
    xp = backend_of(boxes).xp
    order = xp.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (boxes[:, i] for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    suppressed = xp.zeros(boxes.shape[0], dtype=bool)
    keep = []
    order_host = order.tolist()
    for pos, i in enumerate(order_host):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        if rest.size == 0:
            break
        xx1 = xp.maximum(x1[i], x1[rest])
        yy1 = xp.maximum(y1[i], y1[rest])
        xx2 = xp.minimum(x2[i], x2[rest])
        yy2 = xp.minimum(y2[i], y2[rest])
        inter = xp.maximum(xx2 - xx1, 0) * xp.maximum(yy2 - yy1, 0)
        ovr = inter / (areas[i] + areas[rest] - inter)
        suppressed[rest[ovr > iou_threshold]] = True
    return xp.asarray(keep, dtype=xp.int64)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression: the indices (int64) of the boxes kept,
    by decreasing score. ``boxes`` is (N, 4) in (x1, y1, x2, y2)."""
    if boxes.ndim != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have 2 dimensions of size (N, 4), got {tuple(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError(f"boxes and scores should have the same number of elements in dimension 0, got "
                           f"{boxes.shape[0]} and {scores.shape[0] if scores.ndim else scores.ndim}")
    if boxes.shape[0] == 0:
        return fabric.empty((0,), dtype=fabric.int64, device=boxes.device)
    return Tensor._make(_nms_keep(boxes.detach()._data, scores.detach()._data, float(iou_threshold)), False)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS within each category of ``idxs`` (boxes of different categories never
    suppress each other): indices kept, by decreasing score."""
    if boxes.numel() > 4000:
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


def _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold):
    # offset each category's boxes so that boxes of different categories never overlap
    if boxes.numel() == 0:
        return fabric.empty((0,), dtype=fabric.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes.dtype) * (max_coordinate + fabric.tensor(1).to(boxes.dtype))
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def _batched_nms_vanilla(boxes, scores, idxs, iou_threshold):
    keep_mask = fabric.zeros_like(scores, dtype=fabric.bool)
    for class_id in fabric.unique(idxs).tolist():
        curr = fabric.where(idxs == class_id)[0]
        keep_mask[curr[nms(boxes[curr], scores[curr], iou_threshold)]] = True
    keep = fabric.where(keep_mask)[0]
    return keep[scores[keep].sort(descending=True)[1]]


def _upcast(t: Tensor) -> Tensor:
    if t.is_floating_point():
        return t if t.dtype in (fabric.float32, fabric.float64) else t.float()
    return t if t.dtype in (fabric.int32, fabric.int64) else t.int()


def box_area(boxes: Tensor) -> Tensor:
    """``(x2 - x1) * (y2 - y1)`` of (N, 4) boxes."""
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1: Tensor, boxes2: Tensor):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = fabric.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = fabric.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter, area1[:, None] + area2 - inter


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """(N, M) intersection-over-union of two sets of (x1, y1, x2, y2) boxes."""
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """(N, M) generalized IoU: IoU minus the share of the enclosing box not covered by the union."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = fabric.min(boxes1[:, None, :2], boxes2[:, :2])
    rbi = fabric.max(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai


def _box_xyxy_to_cxcywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return fabric.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _box_cxcywh_to_xyxy(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return fabric.stack((cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h), dim=-1)


def _box_xywh_to_xyxy(boxes):
    x, y, w, h = boxes.unbind(-1)
    return fabric.stack([x, y, x + w, y + h], dim=-1)


def _box_xyxy_to_xywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return fabric.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert between 'xyxy', 'xywh' and 'cxcywh'."""
    allowed = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in allowed or out_fmt not in allowed:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt != "xyxy" and out_fmt != "xyxy":
        boxes = _box_xywh_to_xyxy(boxes) if in_fmt == "xywh" else _box_cxcywh_to_xyxy(boxes)
        in_fmt = "xyxy"
    if in_fmt == "xyxy":
        return _box_xyxy_to_xywh(boxes) if out_fmt == "xywh" else _box_xyxy_to_cxcywh(boxes)
    return _box_xywh_to_xyxy(boxes) if in_fmt == "xywh" else _box_cxcywh_to_xyxy(boxes)


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Clip (x1, y1, x2, y2) boxes to an image of ``size`` (height, width)."""
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return fabric.stack((x, y), dim=boxes.ndim).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose sides are both at least ``min_size``."""
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return fabric.where((ws >= min_size) & (hs >= min_size))[0]
