"""Summary protos for TensorBoard, built from fabric Tensors, NumPy arrays
and numbers: scalars, histograms, images (PNG written here with zlib, no
imaging library needed), text and hyperparameters.

Example::

    >>> from fabric.utils.tensorboard.summary import scalar
    >>> scalar("loss", 0.5).value[0].simple_value
    0.5
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.tensor_pb2 import TensorProto  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto  # pyright: ignore[reportMissingImports] (optional)

__all__ = ["scalar", "histogram", "image", "text", "hparams", "make_np", "encode_png"]


def make_np(x) -> np.ndarray:
    """A host NumPy array from a Tensor (detached, moved to CPU), an array or a number."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (int, float, bool, np.generic)):
        return np.array([x])
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    if hasattr(x, "get"):  # a CuPy array
        return x.get()
    return np.asarray(x)


def scalar(name: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    arr = make_np(value).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {arr.size} and "
                             f"{arr.ndim} dimensions.")
    v = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    tensor = (TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision
              else TensorProto(float_val=[v], dtype="DT_FLOAT"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=tensor, metadata=meta)])


def _tensorflow_bins() -> list:
    """TensorFlow's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos


def histogram(name: str, values, bins="tensorflow", max_bins: int | None = None) -> Summary:
    """A histogram of ``values``; ``bins`` as in ``numpy.histogram`` or
    ``"tensorflow"`` (TensorFlow's exponential buckets).  Empty buckets at
    both ends are dropped."""
    arr = make_np(values).astype(np.float64).reshape(-1)
    if arr.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    counts, limits = np.histogram(arr, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:
        group = -(-len(counts) // max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    nonzero = np.nonzero(counts)[0]
    lo, hi = nonzero[0], nonzero[-1] + 1
    counts, limits = counts[lo:hi], limits[lo + 1:hi + 1]  # each bucket named by its right edge
    proto = HistogramProto(min=float(arr.min()), max=float(arr.max()), num=int(arr.size), sum=float(arr.sum()),
                           sum_squares=float(arr.dot(arr)), bucket_limit=limits.tolist(),
                           bucket=counts.astype(np.float64).tolist())
    return Summary(value=[Summary.Value(tag=name, histo=proto)])


def _to_hwc(img: np.ndarray, dataformats: str) -> np.ndarray:
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or len(fmt) != img.ndim:
        raise AssertionError(f"You can not use the same dimension shordhand twice. input_format: {dataformats}"
                             if len(set(fmt)) != len(fmt) else
                             f"size of input tensor and input format are different. tensor shape: {img.shape}, "
                             f"input_format: {dataformats}")
    if fmt == "HW":
        img = img[:, :, None]
        fmt = "HWC"
    img = np.transpose(img, [fmt.index(c) for c in "HWC"])
    if img.shape[2] == 1:
        img = np.concatenate([img] * 3, axis=2)
    return img


def _grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (NHWC) tiled into one, ``ncols`` per row, as torchvision's make_grid."""
    n, h, w, c = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((nrows * h, ncols * w, c), images.dtype)
    for i in range(n):
        r, k = divmod(i, ncols)
        canvas[r * h:(r + 1) * h, k * w:(k + 1) * w] = images[i]
    return canvas


def encode_png(img: np.ndarray) -> bytes:
    """PNG bytes of an ``H x W x C`` uint8 image (C = 3 RGB or 4 RGBA)."""
    h, w, c = img.shape
    color = {3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + img[row].tobytes() for row in range(h))  # filter 0 on every row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def image(tag: str, tensor, rescale: float = 1, dataformats: str = "CHW") -> Summary:
    """An image summary.  Floats are taken in [0, 1] and scaled to 0..255,
    integers are used as they are; ``dataformats`` names the axes (``CHW``,
    ``HWC``, ``HW``, or ``NCHW``/``NHWC`` for a grid of images)."""
    arr = make_np(tensor)
    fmt = dataformats.upper()
    if "N" in fmt:
        arr = np.transpose(arr, [fmt.index(c) for c in "NHWC"]) if "C" in fmt else arr[..., None]
        if arr.shape[3] == 1:
            arr = np.concatenate([arr] * 3, axis=3)
        arr = _grid(arr)
    else:
        arr = _to_hwc(arr, fmt)
    if arr.dtype != np.uint8:
        scale = 255.0 if arr.dtype.kind == "f" else 1.0
        arr = np.clip(arr * scale, 0, 255).astype(np.uint8)
    if rescale != 1:
        arr = np.repeat(np.repeat(arr, int(rescale), axis=0), int(rescale), axis=1)
    h, w, c = arr.shape
    img = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=encode_png(np.ascontiguousarray(arr)))
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def text(tag: str, text: str) -> Summary:
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData  # pyright: ignore[reportMissingImports] (optional)

    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The three summaries of TensorBoard's HParams plugin: the experiment
    (hyperparameter and metric names), the session start (the values) and
    the session end."""
    from google.protobuf import struct_pb2  # pyright: ignore[reportMissingImports] (optional)
    from tensorboard.plugins.hparams import metadata  # pyright: ignore[reportMissingImports] (optional)
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status  # pyright: ignore[reportMissingImports] (optional)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo  # pyright: ignore[reportMissingImports] (optional)

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    ssi = SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if hasattr(v, "detach"):  # a Tensor: its first element
            v = float(make_np(v).reshape(-1)[0])
        if isinstance(v, bool):
            field, dtype, make = "bool_value", "DATA_TYPE_BOOL", lambda d: struct_pb2.Value(bool_value=d)
        elif isinstance(v, (int, float)):
            field, dtype, make = "number_value", "DATA_TYPE_FLOAT64", lambda d: struct_pb2.Value(number_value=d)
        elif isinstance(v, str):
            field, dtype, make = "string_value", "DATA_TYPE_STRING", lambda d: struct_pb2.Value(string_value=d)
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], field, v)
        domain = struct_pb2.ListValue(values=[make(d) for d in domains[k]]) if k in domains else None
        infos.append(HParamInfo(name=k, type=DataType.Value(dtype), domain_discrete=domain))

    def wrap(tag, **content):
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME,
                                                                      content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=meta)])

    exp = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (wrap(metadata.EXPERIMENT_TAG, experiment=exp),
            wrap(metadata.SESSION_START_INFO_TAG, session_start_info=ssi),
            wrap(metadata.SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
