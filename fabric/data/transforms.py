"""Basic image transforms with torchvision's names and behaviour:
:class:`Compose`, :class:`ToTensor`, :class:`Normalize`, :class:`RandomCrop`,
:class:`RandomHorizontalFlip`, :class:`Lambda`.

Images are NumPy arrays in HxW or HxWxC layout (what the datasets here give;
PIL images also work where Pillow is installed) or Tensors in (..., C, H, W)
layout. Random decisions are drawn from fabric's default generator with the
same calls torchvision makes on torch's (``rand(1)`` for a flip,
``randint(0, n, (1,))`` for a crop offset), so the same seed makes the same
choices.

Example::

    >>> import numpy as np
    >>> from fabric.data import transforms as T
    >>> t = T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,))])
    >>> t(np.full((2, 2), 255, dtype=np.uint8))
    tensor([[[1., 1.],
             [1., 1.]]])
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .._creation import as_tensor
from .._random_ops import rand, randint
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..backends import backend_of

__all__ = ["Compose", "ToTensor", "Normalize", "RandomCrop", "RandomHorizontalFlip", "Lambda"]


def _is_pil(img) -> bool:
    return type(img).__module__.startswith("PIL.") and hasattr(img, "mode")


def _pil_to_numpy(img) -> np.ndarray:
    arr = np.array(img, copy=True)
    if img.mode == "1":
        arr = 255 * arr.astype(np.uint8)
    return arr


def _hw(img):
    """(height, width) of a Tensor (..., H, W) or a NumPy HxW[xC] image."""
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise TypeError(f"Tensor is not a torch image. Expected at least 2 dims, got {img.ndim}")
        return img.shape[-2], img.shape[-1]
    if isinstance(img, np.ndarray):
        if img.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {img.ndim} dimensions.")
        return img.shape[0], img.shape[1]
    if _is_pil(img):
        return img.size[1], img.size[0]
    raise TypeError(f"img should be a Tensor, a NumPy array or a PIL Image. Got {type(img)}")


class Compose:
    """Apply ``transforms`` one after the other."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """HxW or HxWxC image (NumPy array or PIL image) -> CxHxW Tensor; uint8
    images become the default float dtype scaled to [0, 1], other dtypes are
    kept as they are (as torchvision does)."""

    def __call__(self, pic) -> Tensor:
        if _is_pil(pic):
            pic = _pil_to_numpy(pic)
        if not isinstance(pic, np.ndarray):
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        chw = pic.transpose(2, 0, 1)
        if chw.dtype == np.uint8:
            dt = D.get_default_dtype().to_numpy()
            out = np.empty(chw.shape, dt)
            np.divide(chw, dt.type(255), out=out, dtype=dt)  # to(float) then div(255), in one pass
            return Tensor._make(out, False)
        return as_tensor(np.ascontiguousarray(chw))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class Normalize:
    """``(x - mean[c]) / std[c]`` per channel of a float Tensor (..., C, H, W)."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean = mean
        self.std = std
        self.inplace = inplace
        self._cache = {}  # (numpy dtype, array class) -> (mean, std) arrays shaped for (C, 1, 1)

    def _stats(self, tensor: Tensor):
        a = tensor._data
        key = (a.dtype, a.__class__, getattr(getattr(a, "device", None), "id", None))
        stats = self._cache.get(key)
        if stats is None:
            mean = as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
            std = as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
            if bool((std == 0).any()):
                raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division "
                                 "by zero.")
            if mean.ndim == 1:
                mean = mean.view(-1, 1, 1)
            if std.ndim == 1:
                std = std.view(-1, 1, 1)
            stats = self._cache[key] = (mean, std)
        return stats

    def __call__(self, tensor: Tensor) -> Tensor:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.ndim < 3:
            raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tensor.size()}")
        mean, std = self._stats(tensor)
        if tensor._requires_grad and is_grad_enabled():  # recorded by autograd
            return tensor.sub_(mean).div_(std) if self.inplace else (tensor - mean) / std
        # data path: the same float arithmetic straight on the arrays, without per-op overhead
        a = tensor._data
        if self.inplace:
            a -= mean._data
            a /= std._data
            tensor._bump_version()
            return tensor
        out = a - mean._data
        out /= std._data
        return Tensor._make(out, False)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


def _pad(img, left: int, top: int, right: int, bottom: int, fill, padding_mode: str):
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}.get(padding_mode)
    if mode is None:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    kw = {"constant_values": fill} if mode == "constant" else {}
    if isinstance(img, Tensor):
        if img._requires_grad and is_grad_enabled():  # through nn.functional.pad, recorded by autograd
            if mode == "symmetric":
                raise NotImplementedError("symmetric padding of a tensor that requires grad is not differentiable in "
                                          "fabric yet; use another padding_mode or pad under fabric.no_grad()")
            from ..nn import functional as F

            if mode == "constant":
                return F.pad(img, (left, right, top, bottom), mode="constant", value=fill)
            return F.pad(img, (left, right, top, bottom), mode="replicate" if mode == "edge" else mode)
        a = img._data
        widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
        return Tensor._make(backend_of(a).xp.pad(a, widths, mode=mode, **kw), False)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    return np.pad(img, widths, mode=mode, **kw)


class RandomCrop:
    """Crop a random ``size`` window, after optional ``padding`` (int: all
    sides; (lr, tb); or (left, top, right, bottom)) with ``fill`` /
    ``padding_mode``; ``pad_if_needed`` pads images smaller than ``size``."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        if isinstance(size, numbers.Number):
            self.size = (int(size), int(size))
        elif isinstance(size, Sequence) and len(size) == 1:
            self.size = (int(size[0]), int(size[0]))
        elif isinstance(size, Sequence) and len(size) == 2:
            self.size = (int(size[0]), int(size[1]))
        else:
            raise ValueError("Please provide only two dimensions (h, w) for size.")
        if padding is not None and not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of ``output_size``."""
        h, w = _hw(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = randint(0, h - th + 1, size=(1,)).item()
        j = randint(0, w - tw + 1, size=(1,)).item()
        return i, j, th, tw

    def __call__(self, img):
        if _is_pil(img):
            img = _pil_to_numpy(img)
        if self.padding is not None:
            p = self.padding
            if isinstance(p, numbers.Number):
                p = [p]
            p = [int(v) for v in p]
            if len(p) == 1:
                left = top = right = bottom = p[0]
            elif len(p) == 2:
                left, top, right, bottom = p[0], p[1], p[0], p[1]
            else:
                left, top, right, bottom = p
            img = _pad(img, left, top, right, bottom, self.fill, self.padding_mode)
        h, w = _hw(img)
        if self.pad_if_needed and w < self.size[1]:
            d = self.size[1] - w
            img = _pad(img, d, 0, d, 0, self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            d = self.size[0] - h
            img = _pad(img, 0, d, 0, d, self.fill, self.padding_mode)
        i, j, th, tw = self.get_params(img, self.size)
        if isinstance(img, Tensor):
            return img[..., i:i + th, j:j + tw]
        return img[i:i + th, j:j + tw].copy()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """Mirror the image left-right with probability ``p``."""

    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, img):
        if bool(rand(1) < self.p):
            if isinstance(img, Tensor):
                return img.flip(-1)
            if _is_pil(img):
                img = _pil_to_numpy(img)
            _hw(img)
            return img[:, ::-1].copy()
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class Lambda:
    """Wrap a function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"
