"""Image operations on tensors (..., C, H, W), written with fabric's own ops so
they run on CPU and GPU and are recorded by autograd. Each follows the torch
calls torchvision makes (same order of float operations, same dtype round
trips), so the numbers agree.

Example::

    >>> import fabric
    >>> from fabric.vision.transforms import _functional_tensor as F_t
    >>> F_t.hflip(fabric.arange(4.0).reshape(1, 2, 2))
    tensor([[[1., 0.],
             [3., 2.]]])
"""
from __future__ import annotations

import numpy as np

import fabric

from ..._tensor import Tensor
from ...nn import functional as F

_INT_DTYPES = None


def _int_dtypes():
    global _INT_DTYPES
    if _INT_DTYPES is None:
        _INT_DTYPES = (fabric.uint8, fabric.int8, fabric.int16, fabric.int32, fabric.int64)
    return _INT_DTYPES


def _assert_image_tensor(img: Tensor) -> None:
    if img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    return [channels, img.shape[-2], img.shape[-1]]


def get_image_size(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img: Tensor) -> int:
    _assert_image_tensor(img)
    return 1 if img.ndim == 2 else img.shape[-3]


def _max_value(dtype) -> int:
    """The value of 'white' for an image dtype (1 for floats)."""
    if dtype.is_floating_point or dtype == fabric.bool:
        return 1
    return int(np.iinfo(dtype.to_numpy()).max)


def _assert_channels(img: Tensor, permitted: list[int]) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def convert_image_dtype(image: Tensor, dtype=fabric.float32) -> Tensor:
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == fabric.float32 and dtype in (fabric.int32, fabric.int64)) or (
                image.dtype == fabric.float64 and dtype == fabric.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        eps = 1e-3
        return image.mul(float(_max_value(dtype)) + 1.0 - eps).to(dtype)
    input_max = float(_max_value(image.dtype))
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return fabric.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def vflip(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    return img.flip(-2)


def hflip(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    return img.flip(-1)


def crop(img: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0), max(right - max(w, left), 0),
                        max(bottom - max(h, top), 0)]
        return pad(img[..., max(top, 0):bottom, max(left, 0):right], padding_ltrb, fill=0)
    return img[..., top:bottom, left:right]


def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        l_img = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    else:
        l_img = img.clone()
    if num_output_channels == 3:
        return l_img.expand(img.shape)
    return l_img


def _blend(img1: Tensor, img2: Tensor, ratio: float) -> Tensor:
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    return _blend(img, fabric.zeros_like(img), brightness_factor)


def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [3, 1])
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    gray = rgb_to_grayscale(img) if get_dimensions(img)[0] == 3 else img
    mean = fabric.mean(gray.to(dtype), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:  # as PIL
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb2hsv(img: Tensor) -> Tensor:
    r, g, b = img.unbind(dim=-3)
    maxc = fabric.max(img, dim=-3).values
    minc = fabric.min(img, dim=-3).values
    eqc = maxc == minc  # grey pixels: S and H are 0; dividing by 1 there avoids NaN
    cr = maxc - minc
    ones = fabric.ones_like(maxc)
    s = cr / fabric.where(eqc, ones, maxc)
    cr_divisor = fabric.where(eqc, ones, cr)
    rc = (maxc - r) / cr_divisor
    gc = (maxc - g) / cr_divisor
    bc = (maxc - b) / cr_divisor
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = fabric.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return fabric.stack((h, s, maxc), dim=-3)


def _hsv2rgb(img: Tensor) -> Tensor:
    h, s, v = img.unbind(dim=-3)
    i = fabric.floor(h * 6.0)
    f = (h * 6.0) - i
    i = i.to(dtype=fabric.int32)
    p = fabric.clamp(v * (1.0 - s), 0.0, 1.0)
    q = fabric.clamp(v * (1.0 - s * f), 0.0, 1.0)
    t = fabric.clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    i = i % 6
    mask = i.unsqueeze(dim=-3) == fabric.arange(6, device=i.device).view(-1, 1, 1)
    a1 = fabric.stack((v, q, p, p, t, v), dim=-3)
    a2 = fabric.stack((t, v, v, q, p, p), dim=-3)
    a3 = fabric.stack((p, p, t, v, v, q), dim=-3)
    a4 = fabric.stack((a1, a2, a3), dim=-4)
    return fabric.einsum("...ijk, ...xijk -> ...xjk", mask.to(dtype=img.dtype), a4)


def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor image")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:  # as PIL
        return img
    orig_dtype = img.dtype
    img = _rgb2hsv(convert_image_dtype(img, fabric.float32))
    h, s, v = img.unbind(dim=-3)
    h = (h + hue_factor) % 1.0
    return convert_image_dtype(_hsv2rgb(fabric.stack((h, s, v), dim=-3)), orig_dtype)


def adjust_gamma(img: Tensor, gamma: float, gain: float = 1) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be a Tensor.")
    _assert_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    dtype = img.dtype
    result = img if img.is_floating_point() else convert_image_dtype(img, fabric.float32)
    result = (gain * result ** gamma).clamp(0, 1)
    return convert_image_dtype(result, dtype)


def _pad_symmetric(img: Tensor, padding: list[int]) -> Tensor:
    # padding is left, right, top, bottom
    if min(padding) < 0:
        crop_left, crop_right, crop_top, crop_bottom = [-min(x, 0) for x in padding]
        img = img[..., crop_top:img.shape[-2] - crop_bottom, crop_left:img.shape[-1] - crop_right]
        padding = [max(x, 0) for x in padding]
    h, w = img.shape[-2], img.shape[-1]
    x_idx = list(range(padding[0] - 1, -1, -1)) + list(range(w)) + [w - 1 - i for i in range(padding[1])]
    y_idx = list(range(padding[2] - 1, -1, -1)) + list(range(h)) + [h - 1 - i for i in range(padding[3])]
    if img.ndim not in (3, 4):
        raise RuntimeError("Symmetric padding of N-D tensors are not supported yet")
    xs = fabric.tensor(x_idx, device=img.device)
    ys = fabric.tensor(y_idx, device=img.device)
    return img.index_select(-2, ys).index_select(-1, xs)


def _parse_pad_padding(padding) -> list[int]:
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    return [padding[0], padding[2], padding[1], padding[3]]


def pad(img: Tensor, padding, fill=0, padding_mode: str = "constant") -> Tensor:
    _assert_image_tensor(img)
    if fill is None:
        fill = 0
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    p = _parse_pad_padding(padding)
    if padding_mode == "symmetric":
        return _pad_symmetric(img, p)
    mode = "replicate" if padding_mode == "edge" else padding_mode
    need_squeeze = img.ndim < 4
    if need_squeeze:
        img = img.unsqueeze(dim=0)
    out_dtype = img.dtype
    need_cast = mode != "constant" and img.dtype not in (fabric.float32, fabric.float64)
    if need_cast:
        img = img.to(fabric.float32)
    img = F.pad(img, p, mode=mode) if mode != "constant" else F.pad(img, p, mode=mode, value=float(fill))
    if need_squeeze:
        img = img.squeeze(dim=0)
    return img.to(out_dtype) if need_cast else img


def _cast_squeeze_in(img: Tensor, req_dtypes):
    need_squeeze = img.ndim < 4
    if need_squeeze:
        img = img.unsqueeze(dim=0)
    out_dtype = img.dtype
    need_cast = out_dtype not in req_dtypes
    if need_cast:
        img = img.to(req_dtypes[0])
    return img, need_cast, need_squeeze, out_dtype


def _cast_squeeze_out(img: Tensor, need_cast: bool, need_squeeze: bool, out_dtype) -> Tensor:
    if need_squeeze:
        img = img.squeeze(dim=0)
    if need_cast:
        if out_dtype in _int_dtypes():
            img = fabric.round(img)  # round before the cast
        img = img.to(out_dtype)
    return img


def _aa_filter(x: np.ndarray, mode: str) -> np.ndarray:
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1.0, 1.0 - x, 0.0).astype(x.dtype)
    a = -0.5  # bicubic, as PyTorch's antialiased kernel
    return np.where(x < 1.0, ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0,
                    np.where(x < 2.0, (((x - 5.0) * x + 8.0) * x - 4.0) * a, 0.0)).astype(x.dtype)


def _aa_weights(in_size: int, out_size: int, mode: str, dtype: np.dtype) -> np.ndarray:
    """Dense (out_size, in_size) matrix of PyTorch's antialiased interpolation
    weights (``_upsample_bilinear2d_aa``): the filter is stretched by the scale
    when shrinking, and each row is normalized to sum to 1."""
    scale = dtype.type(in_size / out_size)
    interp = 2.0 if mode == "bilinear" else 4.0
    support = dtype.type(interp / 2 * scale if scale >= 1.0 else interp / 2)
    invscale = dtype.type(1.0 / scale if scale >= 1.0 else 1.0)
    m = np.zeros((out_size, in_size), dtype)
    for i in range(out_size):
        center = scale * dtype.type(i + 0.5)
        xmin = max(int(center - support + dtype.type(0.5)), 0)
        xmax = min(int(center + support + dtype.type(0.5)), in_size)
        j = np.arange(xmin, xmax)
        w = _aa_filter((j - center + dtype.type(0.5)).astype(dtype) * invscale, mode)
        total = w.sum(dtype=dtype)
        m[i, xmin:xmax] = w / total if total != 0 else w
    return m


def _resize_antialias(img: Tensor, size: list[int], mode: str) -> Tensor:
    """Antialiased bilinear/bicubic resize of a float (N, C, H, W) tensor as
    two matrix products (``Wy @ img @ Wx.T``): linear, so autograd handles it."""
    dt = np.dtype(img.dtype.to_numpy())
    h, w = img.shape[-2], img.shape[-1]
    oh, ow = size
    if ow != w:
        wx = fabric.from_numpy(_aa_weights(w, ow, mode, dt)).to(img.device)
        img = fabric.matmul(img, wx.t())
    if oh != h:
        wy = fabric.from_numpy(_aa_weights(h, oh, mode, dt)).to(img.device)
        img = fabric.matmul(wy, img)
    return img


def resize(img: Tensor, size: list[int], interpolation: str = "bilinear", antialias: bool | None = True) -> Tensor:
    _assert_image_tensor(img)
    size = list(size)
    if antialias is None:
        antialias = False
    if antialias and interpolation not in ("bilinear", "bicubic"):
        antialias = False  # irrelevant for the other modes (as torchvision)
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [fabric.float32, fabric.float64])
    if antialias:
        img = _resize_antialias(img, size, interpolation)
    else:
        align_corners = False if interpolation in ("bilinear", "bicubic") else None
        img = F.interpolate(img, size=size, mode=interpolation, align_corners=align_corners)
    if interpolation == "bicubic" and out_dtype == fabric.uint8:
        img = img.clamp(min=0, max=255)
    return _cast_squeeze_out(img, need_cast=need_cast, need_squeeze=need_squeeze, out_dtype=out_dtype)


def _assert_grid_transform_inputs(img, matrix, interpolation, fill, supported_interpolation_modes, coeffs=None):
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor")
    _assert_image_tensor(img)
    if matrix is not None and not isinstance(matrix, list):
        raise TypeError("Argument matrix should be a list")
    if matrix is not None and len(matrix) != 6:
        raise ValueError("Argument matrix should have 6 float values")
    if coeffs is not None and len(coeffs) != 8:
        raise ValueError("Argument coeffs should have 8 float values")
    num_channels = get_dimensions(img)[0]
    if fill is not None and isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != num_channels:
        raise ValueError("The number of elements in 'fill' cannot broadcast to match the number of channels of the "
                         f"image ({len(fill)} != {num_channels})")
    if interpolation not in supported_interpolation_modes:
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")


def _apply_grid_transform(img: Tensor, grid: Tensor, mode: str, fill) -> Tensor:
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [grid.dtype])
    if img.shape[0] > 1:
        grid = grid.expand(img.shape[0], grid.shape[1], grid.shape[2], grid.shape[3])
    if fill is not None:  # a channel of ones marks where the source image lands
        mask = fabric.ones((img.shape[0], 1, img.shape[2], img.shape[3]), dtype=img.dtype, device=img.device)
        img = fabric.cat((img, mask), dim=1)
    img = F.grid_sample(img, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        mask = img[:, -1:, :, :]
        img = img[:, :-1, :, :]
        mask = mask.expand_as(img)
        fill_list = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = fabric.tensor(fill_list, dtype=img.dtype, device=img.device).view(1, len(fill_list), 1, 1)
        fill_img = fill_img.expand_as(img)
        if mode == "nearest":
            img = fabric.where(mask < 0.5, fill_img, img)
        else:
            img = img * mask + (1.0 - mask) * fill_img
    return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)


def _gen_affine_grid(theta: Tensor, w: int, h: int, ow: int, oh: int) -> Tensor:
    # as AffineGridGenerator, but the grid is normalized after theta is applied,
    # and by the input size, so that `expand` covers the whole rotated image (as PIL)
    d = 0.5
    x_grid = fabric.linspace(-ow * 0.5 + d, ow * 0.5 + d - 1, steps=ow, device=theta.device).to(theta.dtype)
    y_grid = fabric.linspace(-oh * 0.5 + d, oh * 0.5 + d - 1, steps=oh, device=theta.device).to(theta.dtype)
    base_grid = fabric.stack((x_grid.view(1, ow).expand(oh, ow), y_grid.view(oh, 1).expand(oh, ow),
                              fabric.ones((oh, ow), dtype=theta.dtype, device=theta.device)), dim=-1)
    rescaled_theta = theta.transpose(1, 2) / fabric.tensor([0.5 * w, 0.5 * h], dtype=theta.dtype,
                                                           device=theta.device)
    output_grid = base_grid.reshape(1, oh * ow, 3).bmm(rescaled_theta)
    return output_grid.view(1, oh, ow, 2)


def affine(img: Tensor, matrix: list[float], interpolation: str = "nearest", fill=None) -> Tensor:
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    theta = fabric.tensor(matrix, dtype=dtype, device=img.device).reshape(1, 2, 3)
    grid = _gen_affine_grid(theta, w=img.shape[-1], h=img.shape[-2], ow=img.shape[-1], oh=img.shape[-2])
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _compute_affine_output_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    # the bounding box of the transformed corners, as PIL's rotate(expand=True); float32 like torchvision
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, -0.5 * h, 1.0]], np.float32)
    theta = np.array(matrix, np.float32).reshape(2, 3)
    new_pts = pts @ theta.T
    min_vals = new_pts.min(axis=0) + np.array([w * 0.5, h * 0.5], np.float32)
    max_vals = new_pts.max(axis=0) + np.array([w * 0.5, h * 0.5], np.float32)
    tol = np.float32(1e-4)  # so that a ceil of 1e-15 is not 1
    cmax = np.ceil(np.trunc(max_vals / tol) * tol)
    cmin = np.floor(np.trunc(min_vals / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def rotate(img: Tensor, matrix: list[float], interpolation: str = "nearest", expand: bool = False,
           fill=None) -> Tensor:
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    w, h = img.shape[-1], img.shape[-2]
    ow, oh = _compute_affine_output_size(matrix, w, h) if expand else (w, h)
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    theta = fabric.tensor(matrix, dtype=dtype, device=img.device).reshape(1, 2, 3)
    grid = _gen_affine_grid(theta, w=w, h=h, ow=ow, oh=oh)
    return _apply_grid_transform(img, grid, interpolation, fill=fill)


def _get_gaussian_kernel1d(kernel_size: int, sigma: float, dtype, device) -> Tensor:
    ksize_half = (kernel_size - 1) * 0.5
    x = fabric.linspace(-ksize_half, ksize_half, steps=kernel_size, dtype=dtype, device=device)
    pdf = fabric.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def _get_gaussian_kernel2d(kernel_size: list[int], sigma: list[float], dtype, device) -> Tensor:
    kx = _get_gaussian_kernel1d(kernel_size[0], sigma[0], dtype, device)
    ky = _get_gaussian_kernel1d(kernel_size[1], sigma[1], dtype, device)
    return fabric.mm(ky[:, None], kx[None, :])


def gaussian_blur(img: Tensor, kernel_size: list[int], sigma: list[float]) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    kernel = _get_gaussian_kernel2d(kernel_size, sigma, dtype=dtype, device=img.device)
    kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
    img, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    img = F.pad(img, padding, mode="reflect")
    img = F.conv2d(img, kernel, groups=img.shape[-3])
    return _cast_squeeze_out(img, need_cast, need_squeeze, out_dtype)


def invert(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    return _max_value(img.dtype) - img


def posterize(img: Tensor, bits: int) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != fabric.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    return img & -int(2 ** (8 - bits))


def solarize(img: Tensor, threshold: float) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if threshold > _max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return fabric.where(img >= threshold, invert(img), img)


def _blurred_degenerate_image(img: Tensor) -> Tensor:
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    kernel = fabric.ones((3, 3), dtype=dtype, device=img.device)
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
    tmp, need_cast, need_squeeze, out_dtype = _cast_squeeze_in(img, [kernel.dtype])
    tmp = F.conv2d(tmp, kernel, groups=tmp.shape[-3])
    tmp = _cast_squeeze_out(tmp, need_cast, need_squeeze, out_dtype)
    result = img.clone()
    result[..., 1:-1, 1:-1] = tmp
    return result


def adjust_sharpness(img: Tensor, sharpness_factor: float) -> Tensor:
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _blurred_degenerate_image(img), sharpness_factor)


def autocontrast(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    bound = _max_value(img.dtype)
    dtype = img.dtype if img.is_floating_point() else fabric.float32
    minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    scale = bound / (maximum - minimum)
    eq = fabric.isfinite(scale).logical_not()
    minimum = fabric.where(eq, fabric.zeros_like(minimum), minimum)
    scale = fabric.where(eq, fabric.ones_like(scale), scale)
    return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)


def _scale_channel(img_chan: Tensor) -> Tensor:
    hist = fabric.bincount(img_chan.reshape(-1), minlength=256)
    nonzero_hist = hist[hist != 0]
    step = fabric.div(nonzero_hist[:-1].sum(), 255, rounding_mode="floor")
    if int(step) == 0:
        return img_chan
    lut = fabric.div(fabric.cumsum(hist, 0) + fabric.div(step, 2, rounding_mode="floor"), step,
                     rounding_mode="floor")
    lut = F.pad(lut, [1, 0])[:-1].clamp(0, 255)
    return lut[img_chan.to(fabric.int64)].to(fabric.uint8)


def equalize(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if not 3 <= img.ndim <= 4:
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
    if img.dtype != fabric.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    if img.ndim == 3:
        return fabric.stack([_scale_channel(img[c]) for c in range(img.shape[0])])
    return fabric.stack([fabric.stack([_scale_channel(x[c]) for c in range(x.shape[0])]) for x in img])


def normalize(tensor: Tensor, mean, std, inplace: bool = False) -> Tensor:
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")
    if not inplace:
        tensor = tensor.clone()
    mean = fabric.as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    std = fabric.as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if bool((std == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    return tensor.sub_(mean).div_(std)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False) -> Tensor:
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


