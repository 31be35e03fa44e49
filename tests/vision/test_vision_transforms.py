"""fabric.vision.transforms: numbers against the torch calls torchvision makes,
seeded draws in torchvision's order, PIL images through Pillow, NumPy images."""
import colorsys
import math

import numpy as np
import pytest

import fabric
from fabric.vision import transforms as T
from fabric.vision.transforms import functional as TF


def _img(c=3, h=7, w=9, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, (c, h, w), dtype=np.uint8)
    return rng.random((c, h, w)).astype(dtype)


# --- geometry ------------------------------------------------------------------------------------
def test_crop_center_crop_pad_flip():
    x = _img()
    t = fabric.from_numpy(x)
    assert np.array_equal(TF.crop(t, 1, 2, 3, 4).numpy(), x[:, 1:4, 2:6])
    # a crop leaving the image is zero-padded
    out = TF.crop(t, -1, -2, 4, 5).numpy()
    ref = np.zeros((3, 4, 5), np.float32)
    ref[:, 1:, 2:] = x[:, :3, :3]
    assert np.array_equal(out, ref)
    # center crop: round((h - ch) / 2); larger crops pad
    assert np.array_equal(TF.center_crop(t, 4).numpy(), x[:, 2:6, 2:6])
    big = TF.center_crop(t, [9, 12]).numpy()
    assert big.shape == (3, 9, 12) and np.array_equal(big[:, 1:8, 1:10], x) and big[:, 0].sum() == 0
    for mode, np_mode in (("constant", "constant"), ("edge", "edge"), ("reflect", "reflect"),
                          ("symmetric", "symmetric")):
        out = TF.pad(t, [1, 2, 3, 4], padding_mode=mode).numpy()
        assert np.array_equal(out, np.pad(x, ((0, 0), (2, 4), (1, 3)), np_mode)), mode
    assert np.array_equal(TF.pad(t, 2, fill=7).numpy(), np.pad(x, ((0, 0), (2, 2), (2, 2)), constant_values=7))
    assert np.array_equal(TF.hflip(t).numpy(), x[:, :, ::-1]) and np.array_equal(TF.vflip(t).numpy(), x[:, ::-1])
    with pytest.raises(ValueError, match="Padding mode should be either"):
        TF.pad(t, 1, padding_mode="wrap")
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3"):
        TF.pad(t, [1, 2, 3])
    tl, tr, bl, br, c = TF.five_crop(t, 3)
    assert np.array_equal(tr.numpy(), x[:, :3, 6:]) and np.array_equal(bl.numpy(), x[:, 4:, :3])
    assert len(TF.ten_crop(t, 3)) == 10
    with pytest.raises(ValueError, match="Requested crop size"):
        TF.five_crop(t, 8)


def test_resize_output_size_rules():
    t = fabric.zeros(1, 10, 20)
    assert TF.resize(t, 5).shape == (1, 5, 10)
    assert TF.resize(t, [4, 6]).shape == (1, 4, 6)
    assert TF.resize(t, 5, max_size=8).shape == (1, 4, 8)
    assert TF.resize(t, [10]) is t  # same size: returned as is
    with pytest.raises(ValueError, match="max_size = 5 must be strictly greater"):
        TF.resize(t, 5, max_size=5)
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        TF.resize(t, 5, interpolation="bilinear")


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(3, 4), (11, 5), (14, 20)])
def test_resize_antialias_matches_torch_interpolate(mode, size):
    import torch

    x = _img(2, 9, 13, seed=1)
    ref = torch.nn.functional.interpolate(torch.from_numpy(x)[None], size=size, mode=mode, align_corners=False,
                                          antialias=True)[0].numpy()
    out = TF.resize(fabric.from_numpy(x), list(size), getattr(T.InterpolationMode, mode.upper())).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    # uint8 goes through float32 and is rounded back
    xu = _img(2, 9, 13, seed=2, dtype=np.uint8)
    tx = torch.from_numpy(xu)[None].float()
    refu = torch.nn.functional.interpolate(tx, size=size, mode=mode, align_corners=False, antialias=True)
    if mode == "bicubic":
        refu = refu.clamp(0, 255)
    refu = refu.round().to(torch.uint8)[0].numpy()
    outu = TF.resize(fabric.from_numpy(xu), list(size), getattr(T.InterpolationMode, mode.upper())).numpy()
    assert outu.dtype == np.uint8 and np.abs(outu.astype(int) - refu.astype(int)).max() <= 1


@pytest.mark.torch
def test_resize_without_antialias_and_nearest_match_torch():
    import torch

    x = _img(3, 8, 10, seed=3)
    for mode, aa in (("bilinear", False), ("nearest", True), ("bicubic", False)):
        ref = torch.nn.functional.interpolate(torch.from_numpy(x)[None], size=(5, 7), mode=mode,
                                              align_corners=None if mode == "nearest" else False)[0].numpy()
        out = TF.resize(fabric.from_numpy(x), [5, 7], getattr(T.InterpolationMode, mode.upper()), antialias=aa)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_resize_antialias_gradcheck():
    x = fabric.from_numpy(_img(1, 5, 6, seed=4).astype(np.float64)).requires_grad_(True)
    assert fabric.autograd.gradcheck(lambda t: TF.resize(t, [3, 4]), (x,))


def _torch_affine_grid(torch, matrix, w, h, ow, oh):
    """torchvision's _gen_affine_grid, with torch ops."""
    theta = torch.tensor(matrix, dtype=torch.float32).reshape(1, 2, 3)
    base = torch.empty(1, oh, ow, 3)
    base[..., 0].copy_(torch.linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, steps=ow))
    base[..., 1].copy_(torch.linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, steps=oh).unsqueeze_(-1))
    base[..., 2].fill_(1)
    rescaled = theta.transpose(1, 2) / torch.tensor([0.5 * w, 0.5 * h])
    return base.view(1, oh * ow, 3).bmm(rescaled).view(1, oh, ow, 2)


def _inverse_matrix(center, angle, translate, scale, shear):
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [v / scale for v in [d, -b, 0.0, -c, a, 0.0]]
    cx, cy = center
    tx, ty = translate
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


@pytest.mark.torch
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_rotate_and_affine_match_grid_sample(interp):
    import torch

    x = _img(3, 8, 11, seed=5)
    tx = torch.from_numpy(x)[None]
    mode = getattr(T.InterpolationMode, interp.upper())
    # affine: angle 20, translate (1, -2), scale 1.1, shear (5, 3)
    m = _inverse_matrix([0.0, 0.0], 20.0, [1.0, -2.0], 1.1, [5.0, 3.0])
    grid = _torch_affine_grid(torch, m, 11, 8, 11, 8)
    ref = torch.nn.functional.grid_sample(tx, grid, mode=interp, padding_mode="zeros", align_corners=False)[0]
    out = TF.affine(fabric.from_numpy(x), 20.0, [1, -2], 1.1, [5.0, 3.0], interpolation=mode)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    # rotate turns the other way; with fill, a ones-channel marks the inside
    m = _inverse_matrix([0.0, 0.0], -30.0, [0.0, 0.0], 1.0, [0.0, 0.0])
    grid = _torch_affine_grid(torch, m, 11, 8, 11, 8)
    both = torch.nn.functional.grid_sample(torch.cat([tx, torch.ones(1, 1, 8, 11)], 1), grid, mode=interp,
                                           padding_mode="zeros", align_corners=False)
    img, mask = both[:, :3], both[:, 3:].expand(1, 3, 8, 11)
    fill = torch.tensor([0.5, 0.25, 1.0]).view(1, 3, 1, 1).expand_as(img)
    if interp == "nearest":
        ref = torch.where(mask < 0.5, fill, img)[0]
    else:
        ref = (img * mask + (1.0 - mask) * fill)[0]
    out = TF.rotate(fabric.from_numpy(x), 30.0, interpolation=mode, fill=[0.5, 0.25, 1.0])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_rotate_expand_and_right_angles():
    x = _img(1, 4, 6, seed=6)
    out = TF.rotate(fabric.from_numpy(x), 90.0, expand=True)
    assert out.shape == (1, 6, 4)
    np.testing.assert_allclose(out.numpy(), np.rot90(x, 1, axes=(1, 2)), atol=1e-6)
    u = _img(1, 5, 5, seed=7, dtype=np.uint8)
    assert np.array_equal(TF.rotate(fabric.from_numpy(u), 180.0).numpy(), u[:, ::-1, ::-1])
    with pytest.raises(ValueError, match="Interpolation mode 'bicubic' is unsupported with Tensor input"):
        TF.rotate(fabric.from_numpy(x), 10.0, interpolation=T.InterpolationMode.BICUBIC)


# --- color ---------------------------------------------------------------------------------------
def test_color_adjustments_against_formulas():
    x = _img(3, 4, 5, seed=8)
    t = fabric.from_numpy(x)
    gray = (0.2989 * x[0] + 0.587 * x[1] + 0.114 * x[2]).astype(np.float32)
    np.testing.assert_allclose(TF.rgb_to_grayscale(t).numpy()[0], gray, rtol=1e-6)
    assert TF.rgb_to_grayscale(t, 3).shape == (3, 4, 5)
    np.testing.assert_allclose(TF.adjust_brightness(t, 1.5).numpy(), np.clip(1.5 * x, 0, 1), rtol=1e-6)
    mean = gray.mean()
    np.testing.assert_allclose(TF.adjust_contrast(t, 0.3).numpy(), np.clip(0.3 * x + 0.7 * mean, 0, 1), rtol=1e-5)
    np.testing.assert_allclose(TF.adjust_saturation(t, 2.0).numpy(), np.clip(2 * x - gray, 0, 1), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(TF.adjust_gamma(t, 0.5, 2.0).numpy(), np.clip(2 * x ** 0.5, 0, 1), rtol=1e-6)
    u = (x * 255).astype(np.uint8)
    tu = fabric.from_numpy(u)
    assert np.array_equal(TF.invert(tu).numpy(), 255 - u)
    assert np.array_equal(TF.posterize(tu, 3).numpy(), u & 0b11100000)
    assert np.array_equal(TF.solarize(tu, 100).numpy(), np.where(u >= 100, 255 - u, u))
    ac = TF.autocontrast(tu).numpy()
    lo = u.min(axis=(1, 2), keepdims=True).astype(np.float32)
    scale = np.float32(255) / (u.max(axis=(1, 2), keepdims=True).astype(np.float32) - lo)
    assert np.array_equal(ac, np.clip((u - lo) * scale, 0, 255).astype(np.uint8))  # truncated, as torchvision
    with pytest.raises(ValueError, match=r"brightness_factor \(-1\) is not non-negative"):
        TF.adjust_brightness(t, -1)
    with pytest.raises(TypeError, match="Only torch.uint8 image tensors are supported"):
        TF.posterize(t, 3)


def test_adjust_hue_matches_colorsys():
    x = _img(3, 3, 4, seed=9)
    out = TF.adjust_hue(fabric.from_numpy(x), 0.2).numpy()
    ref = np.empty_like(x)
    for i in range(3):
        for j in range(4):
            h, s, v = colorsys.rgb_to_hsv(*x[:, i, j])
            ref[:, i, j] = colorsys.hsv_to_rgb((h + 0.2) % 1.0, s, v)
    np.testing.assert_allclose(out, ref, atol=1e-5)
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]"):
        TF.adjust_hue(fabric.from_numpy(x), 0.7)


@pytest.mark.torch
def test_gaussian_blur_and_sharpness_match_torch_conv():
    import torch

    x = _img(3, 9, 10, seed=10)
    tx = torch.from_numpy(x)[None]
    k = torch.linspace(-2, 2, 5)
    ky = torch.exp(-0.5 * (k / 1.5).pow(2))
    ky = ky / ky.sum()
    kx = torch.linspace(-1, 1, 3)
    kx = torch.exp(-0.5 * (kx / 0.7).pow(2))
    kx = kx / kx.sum()
    kernel = torch.mm(ky[:, None], kx[None, :]).expand(3, 1, 5, 3)
    ref = torch.nn.functional.conv2d(torch.nn.functional.pad(tx, [1, 1, 2, 2], mode="reflect"), kernel, groups=3)
    out = TF.gaussian_blur(fabric.from_numpy(x), [3, 5], [0.7, 1.5])
    np.testing.assert_allclose(out.numpy(), ref[0].numpy(), rtol=1e-5, atol=1e-6)
    kernel = torch.ones(3, 3)
    kernel[1, 1] = 5.0
    kernel = (kernel / kernel.sum()).expand(3, 1, 3, 3)
    blurred = tx.clone()
    blurred[..., 1:-1, 1:-1] = torch.nn.functional.conv2d(tx, kernel, groups=3)
    ref = (1.7 * tx + (1 - 1.7) * blurred).clamp(0, 1)[0]
    np.testing.assert_allclose(TF.adjust_sharpness(fabric.from_numpy(x), 1.7).numpy(), ref.numpy(), rtol=1e-5,
                               atol=1e-6)


def test_equalize_against_numpy_reference():
    u = np.random.default_rng(11).integers(40, 200, (1, 40, 50), dtype=np.uint8)
    hist = np.bincount(u.ravel(), minlength=256)
    step = hist[hist != 0][:-1].sum() // 255
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.clip(np.concatenate([[0], lut[:-1]]), 0, 255)
    assert np.array_equal(TF.equalize(fabric.from_numpy(u)).numpy(), lut[u].astype(np.uint8))


def test_convert_image_dtype():
    u = fabric.tensor([[[0, 128, 255]]], dtype=fabric.uint8)
    f = TF.convert_image_dtype(u, fabric.float32)
    assert f.tolist() == [[[0.0, 128 / 255, 1.0]]] or np.allclose(f.numpy(), [[[0, 128 / 255, 1]]])
    back = TF.convert_image_dtype(f, fabric.uint8)
    assert back.tolist() == [[[0, 128, 255]]]
    assert TF.convert_image_dtype(u, fabric.int16).tolist() == [[[0, 128 * 128, 255 * 128]]]
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        TF.convert_image_dtype(f, fabric.int32)
    assert T.ConvertImageDtype(fabric.float64)(u).dtype == fabric.float64


# --- seeded random transforms: the draws torchvision makes, in its order ---------------------------
@pytest.mark.torch
def test_random_resized_crop_draws_like_torchvision():
    import torch

    x = _img(3, 20, 30, seed=12)
    t = T.RandomResizedCrop(8, scale=(0.1, 0.9))
    for seed in range(15):
        fabric.manual_seed(seed)
        torch.manual_seed(seed)
        i, j, h, w = t.get_params(fabric.from_numpy(x), t.scale, t.ratio)
        log_ratio = torch.log(torch.tensor(t.ratio))
        for _ in range(10):
            target_area = 600 * torch.empty(1).uniform_(0.1, 0.9).item()
            ar = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            rw, rh = int(round(math.sqrt(target_area * ar))), int(round(math.sqrt(target_area / ar)))
            if 0 < rw <= 30 and 0 < rh <= 20:
                ri = torch.randint(0, 20 - rh + 1, size=(1,)).item()
                rj = torch.randint(0, 30 - rw + 1, size=(1,)).item()
                break
        assert (i, j, h, w) == (ri, rj, rh, rw)
    fabric.manual_seed(0)
    out = t(fabric.from_numpy(x))
    assert out.shape == (3, 8, 8)


@pytest.mark.torch
def test_color_jitter_rotation_affine_blur_erasing_draw_like_torchvision():
    import torch

    fabric.manual_seed(3)
    torch.manual_seed(3)
    fn_idx, b, c, s, h = T.ColorJitter(0.4, 0.3, 0.2, 0.1).get_params((0.6, 1.4), (0.7, 1.3), (0.8, 1.2),
                                                                        (-0.1, 0.1))
    ref_idx = torch.randperm(4)
    refs = [float(torch.empty(1).uniform_(lo, hi)) for lo, hi in ((0.6, 1.4), (0.7, 1.3), (0.8, 1.2),
                                                                  (-0.1, 0.1))]
    assert fn_idx.tolist() == ref_idx.tolist() and [b, c, s, h] == refs
    assert T.RandomRotation(30).get_params([-30.0, 30.0]) == float(torch.empty(1).uniform_(-30.0, 30.0).item())
    got = T.RandomAffine.get_params([-10.0, 10.0], (0.1, 0.2), (0.9, 1.1), [-5.0, 5.0, -3.0, 3.0], [30, 20])
    angle = float(torch.empty(1).uniform_(-10.0, 10.0).item())
    tx = int(round(torch.empty(1).uniform_(-3.0, 3.0).item()))
    ty = int(round(torch.empty(1).uniform_(-4.0, 4.0).item()))
    scale = float(torch.empty(1).uniform_(0.9, 1.1).item())
    shear = (float(torch.empty(1).uniform_(-5.0, 5.0).item()), float(torch.empty(1).uniform_(-3.0, 3.0).item()))
    assert got == (angle, (tx, ty), scale, shear)
    assert T.GaussianBlur(3).get_params(0.1, 2.0) == torch.empty(1).uniform_(0.1, 2.0).item()
    # RandomErasing: rand(1) < p, then the area/ratio tries, the noise, the offsets
    x = fabric.zeros(3, 10, 12)
    out = T.RandomErasing(p=1.0, value="random")(x)
    assert torch.rand(1) < 1.0
    log_ratio = torch.log(torch.tensor((0.3, 3.3)))
    for _ in range(10):
        area = 120 * torch.empty(1).uniform_(0.02, 0.33).item()
        ar = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        eh, ew = int(round(math.sqrt(area * ar))), int(round(math.sqrt(area / ar)))
        if eh < 10 and ew < 12:
            break
    v = torch.empty([3, eh, ew], dtype=torch.float32).normal_()
    i = torch.randint(0, 10 - eh + 1, size=(1,)).item()
    j = torch.randint(0, 12 - ew + 1, size=(1,)).item()
    ref = torch.zeros(3, 10, 12)
    ref[:, i:i + eh, j:j + ew] = v
    assert np.array_equal(out.numpy(), ref.numpy())
    assert x.abs().sum().item() == 0  # not in place by default


@pytest.mark.torch
def test_flip_grayscale_apply_draws_like_torchvision():
    import torch

    x = fabric.from_numpy(_img(3, 4, 4, seed=13))
    pipeline = T.Compose([T.RandomHorizontalFlip(), T.RandomVerticalFlip(), T.RandomGrayscale(0.5),
                          T.RandomApply([T.ColorJitter(brightness=0.5)], p=0.5)])
    fabric.manual_seed(7)
    torch.manual_seed(7)
    for _ in range(10):
        out = pipeline(x)
        ref = x.numpy()
        if torch.rand(1) < 0.5:
            ref = ref[:, :, ::-1]
        if torch.rand(1) < 0.5:
            ref = ref[:, ::-1]
        if torch.rand(1) < 0.5:
            g = (0.2989 * ref[0] + 0.587 * ref[1] + 0.114 * ref[2]).astype(np.float32)
            ref = np.stack([g, g, g])
        if not torch.rand(1) > 0.5:
            torch.randperm(4)
            b = float(torch.empty(1).uniform_(0.5, 1.5))
            ref = np.clip(b * ref, 0, 1)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-7)


# --- PIL images -----------------------------------------------------------------------------------
def test_pil_round_trips_and_ops():
    Image = pytest.importorskip("PIL.Image")
    rgb = np.random.default_rng(14).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    img = Image.fromarray(rgb)
    t = TF.to_tensor(img)
    assert t.shape == (3, 6, 8) and np.allclose(t.numpy(), rgb.transpose(2, 0, 1) / 255.0)
    assert np.array_equal(TF.pil_to_tensor(img).numpy(), rgb.transpose(2, 0, 1))
    back = TF.to_pil_image(TF.pil_to_tensor(img))
    assert back.mode == "RGB" and np.array_equal(np.asarray(back), rgb)
    assert TF.to_pil_image(fabric.zeros(1, 2, 3)).mode == "L"
    assert TF.to_pil_image(fabric.zeros(1, 2, 3), mode="F").mode == "F"
    assert TF.get_dimensions(img) == [3, 6, 8] and TF.get_image_size(img) == [8, 6]
    assert np.array_equal(np.asarray(TF.hflip(img)), rgb[:, ::-1])
    assert np.array_equal(np.asarray(TF.crop(img, 1, 2, 3, 4)), rgb[1:4, 2:6])
    assert np.array_equal(np.asarray(TF.center_crop(img, 4)), rgb[1:5, 2:6])
    resized = TF.resize(img, 3)
    assert resized.size == (4, 3)
    assert np.array_equal(np.asarray(resized), np.asarray(img.resize((4, 3), Image.Resampling.BILINEAR)))
    for mode in ("constant", "edge", "reflect", "symmetric"):
        out = np.asarray(TF.pad(img, [1, 2], fill=5, padding_mode=mode))
        kw = {"constant_values": 5} if mode == "constant" else {}
        assert np.array_equal(out, np.pad(rgb, ((2, 2), (1, 1), (0, 0)), mode, **kw)), mode
    gray = TF.rgb_to_grayscale(img)
    assert gray.mode == "L" and TF.rgb_to_grayscale(img, 3).mode == "RGB"
    assert np.array_equal(np.asarray(TF.rotate(img, 180)), rgb[::-1, ::-1])
    assert TF.adjust_hue(img, 0.0).mode == "RGB"
    assert np.array_equal(np.asarray(TF.invert(img)), 255 - rgb)
    blurred = TF.gaussian_blur(img, 3, 1.0)
    ref = TF.gaussian_blur(TF.pil_to_tensor(img), 3, 1.0)
    assert np.array_equal(np.asarray(blurred), ref.numpy().transpose(1, 2, 0))
    fabric.manual_seed(0)
    out = T.Compose([T.RandomResizedCrop(4), T.RandomHorizontalFlip(), T.ColorJitter(0.2, 0.2, 0.2, 0.1),
                     T.RandomRotation(10), T.ToTensor()])(img)
    assert out.shape == (3, 4, 4) and out.dtype == fabric.float32


def test_to_pil_image_errors():
    with pytest.raises(TypeError, match="pic should be Tensor or ndarray"):
        pytest.importorskip("PIL")
        TF.to_pil_image([1])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional"):
        TF.to_pil_image(fabric.zeros(1, 1, 1, 1))


def test_numpy_images_come_back_as_arrays():
    u = np.random.default_rng(15).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    out = TF.rotate(u, 180.0)
    assert isinstance(out, np.ndarray) and np.array_equal(out, u[::-1, ::-1])
    r = TF.resize(u[:, :, 0], [3, 4])
    assert isinstance(r, np.ndarray) and r.shape == (3, 4) and r.dtype == np.uint8
    assert TF.get_dimensions(u) == [3, 6, 8]


def test_reprs_and_argument_errors():
    assert repr(T.Resize(4)) == "Resize(size=4, interpolation=bilinear, max_size=None, antialias=True)"
    assert "ColorJitter(brightness=(0.5, 1.5)" in repr(T.ColorJitter(0.5))
    assert T.ColorJitter(0).brightness is None
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative"):
        T.ColorJitter(-1)
    with pytest.raises(ValueError, match=r"hue values should be between \(-0.5, 0.5\)"):
        T.ColorJitter(hue=0.6)
    with pytest.raises(ValueError, match="If degrees is a single number, it must be positive"):
        T.RandomRotation(-1)
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number"):
        T.GaussianBlur(4)
    with pytest.raises(ValueError, match="Please provide only two dimensions"):
        T.CenterCrop((1, 2, 3))
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="x")


# --- AutoAugment family: torchvision's draws and magnitude tables ---------------------------------
def _record_ops(monkeypatch):
    from fabric.vision.transforms import autoaugment

    calls = []
    real = autoaugment._apply_op

    def spy(img, op_name, magnitude, interpolation, fill):
        calls.append((op_name, round(magnitude, 5)))
        return real(img, op_name, magnitude, interpolation, fill)

    monkeypatch.setattr(autoaugment, "_apply_op", spy)
    return calls


_COMMON = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast", "Sharpness",
           "Posterize", "Solarize", "AutoContrast", "Equalize"]


def _torch_table(torch, name, bins, h, w, wide=False):
    if name in ("Identity", "AutoContrast", "Equalize", "Invert"):
        return torch.tensor(0.0), False
    top = {"ShearX": 0.99 if wide else 0.3, "ShearY": 0.99 if wide else 0.3,
           "TranslateX": 32.0 if wide else 150.0 / 331.0 * w, "TranslateY": 32.0 if wide else 150.0 / 331.0 * h,
           "Rotate": 135.0 if wide else 30.0}.get(name, 0.99 if wide else 0.9)
    if name == "Posterize":
        return 8 - (torch.arange(bins) / ((bins - 1) / (6 if wide else 4))).round().int(), False
    if name == "Solarize":
        return torch.linspace(255.0, 0.0, bins), False
    return torch.linspace(0.0, top, bins), True


@pytest.mark.torch
def test_randaugment_and_trivialaugment_draw_like_torchvision(monkeypatch):
    import torch

    calls = _record_ops(monkeypatch)
    img = fabric.randint(0, 256, (3, 12, 20), dtype=fabric.uint8)
    names = ["Identity"] + _COMMON
    fabric.manual_seed(21)
    torch.manual_seed(21)
    for _ in range(6):
        T.RandAugment(num_ops=3, magnitude=7)(img)
    expected = []
    for _ in range(18):
        name = names[int(torch.randint(len(names), (1,)).item())]
        mags, signed = _torch_table(torch, name, 31, 12, 20)
        m = float(mags[7].item()) if mags.ndim > 0 else 0.0
        if signed and torch.randint(2, (1,)):
            m *= -1.0
        expected.append((name, round(m, 5)))
    assert calls == expected
    calls.clear()
    for _ in range(10):
        T.TrivialAugmentWide()(img)
    expected = []
    for _ in range(10):
        name = names[int(torch.randint(len(names), (1,)).item())]
        mags, signed = _torch_table(torch, name, 31, 12, 20, wide=True)
        m = float(mags[torch.randint(len(mags), (1,), dtype=torch.long)].item()) if mags.ndim > 0 else 0.0
        if signed and torch.randint(2, (1,)):
            m *= -1.0
        expected.append((name, round(m, 5)))
    assert calls == expected


@pytest.mark.torch
def test_autoaugment_draws_like_torchvision(monkeypatch):
    import torch

    from fabric.vision.transforms.autoaugment import _POLICIES

    calls = _record_ops(monkeypatch)
    img = fabric.randint(0, 256, (3, 10, 10), dtype=fabric.uint8)
    fabric.manual_seed(8)
    torch.manual_seed(8)
    aa = T.AutoAugment(T.AutoAugmentPolicy.CIFAR10)
    for _ in range(12):
        aa(img)
    expected = []
    for _ in range(12):
        pid = int(torch.randint(25, (1,)).item())
        probs, signs = torch.rand((2,)), torch.randint(2, (2,))
        for i, (name, p, mid) in enumerate(_POLICIES[T.AutoAugmentPolicy.CIFAR10][pid]):
            if probs[i] <= p:
                mags, signed = _torch_table(torch, name, 10, 10, 10)
                m = float(mags[mid].item()) if mid is not None else 0.0
                if signed and signs[i] == 0:
                    m *= -1.0
                expected.append((name, round(m, 5)))
    assert calls == expected and len(calls) > 5


def test_autoaugment_on_pil_and_numpy_images():
    Image = pytest.importorskip("PIL.Image")
    arr = np.random.default_rng(16).integers(0, 256, (12, 12, 3), dtype=np.uint8)
    for seed in range(8):
        fabric.manual_seed(seed)
        out = T.AutoAugment(T.AutoAugmentPolicy.SVHN)(Image.fromarray(arr))
        assert out.size == (12, 12) and out.mode == "RGB"
        out = T.TrivialAugmentWide()(arr)
        assert isinstance(out, np.ndarray) and out.shape == (12, 12, 3) and out.dtype == np.uint8
    with pytest.raises(ValueError, match="The provided operator Blur is not recognized"):
        from fabric.vision.transforms.autoaugment import _apply_op

        _apply_op(arr, "Blur", 0.0, T.InterpolationMode.NEAREST, None)
