"""``torchvision.ops``: box utilities (``nms``, ``batched_nms``, ``box_iou``,
``box_convert`` ...), ``roi_align`` / ``roi_pool``, ``sigmoid_focal_loss``,
``stochastic_depth`` and the model building blocks.

Example::

    >>> import fabric
    >>> from fabric.vision.ops import nms
    >>> boxes = fabric.tensor([[0., 0., 10., 10.], [1., 1., 10., 10.], [20., 20., 30., 30.]])
    >>> nms(boxes, fabric.tensor([0.9, 0.8, 0.7]), 0.5)
    tensor([0, 2])
"""
from __future__ import annotations

from .boxes import (
                    batched_nms,
                    box_area,
                    box_convert,
                    box_iou,
                    clip_boxes_to_image,
                    generalized_box_iou,
                    nms,
                    remove_small_boxes,
)
from .losses import sigmoid_focal_loss
from .misc import MLP, Conv2dNormActivation, FrozenBatchNorm2d, Permute, SqueezeExcitation
from .roi import RoIAlign, RoIPool, roi_align, roi_pool
from .stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["nms", "batched_nms", "box_iou", "box_area", "box_convert", "clip_boxes_to_image", "remove_small_boxes",
           "generalized_box_iou", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "sigmoid_focal_loss",
           "stochastic_depth", "StochasticDepth", "Conv2dNormActivation", "SqueezeExcitation", "MLP", "Permute",
           "FrozenBatchNorm2d"]
