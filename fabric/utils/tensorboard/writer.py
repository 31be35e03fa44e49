"""``SummaryWriter``: PyTorch's TensorBoard logger, writing event files with
the ``tensorboard`` package's own event-file writer.

Example::

    >>> import tempfile, fabric
    >>> from fabric.utils.tensorboard import SummaryWriter
    >>> w = SummaryWriter(tempfile.mkdtemp(), comment="demo")
    >>> w.add_histogram("weights", fabric.randn(100), 0)
    >>> w.add_text("note", "hello", 0)
    >>> w.close()
"""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # pyright: ignore[reportMissingImports] (optional)

from . import summary as S

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes Summary protos as events into one event file in ``log_dir``."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""):
        log_dir = str(log_dir)
        self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()


class SummaryWriter:
    """Log scalars, histograms, images, figures, text and hyperparameters
    for TensorBoard (``tensorboard --logdir runs``)."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step, self.purge_step = self.purge_step, None
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    # --- what can be logged ------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One value of the curve ``tag`` (a number or a one-element Tensor)."""
        self._get_file_writer().add_summary(S.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Several curves in one chart: each goes to its own run ``<logdir>/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = root + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(path)
            if fw is None:
                fw = self.all_writers[path] = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """An image: floats in [0, 1] or uint8, ``dataformats`` CHW, HWC or HW."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "NCHW") -> None:
        """A batch of images, shown as one grid."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True, walltime=None) -> None:
        """A matplotlib figure (or a list of them, shown as a grid)."""
        figures = figure if isinstance(figure, list) else [figure]
        images = np.stack([_render_figure(f, close) for f in figures])
        if isinstance(figure, list):
            self.add_images(tag, images, global_step, walltime, dataformats="NHWC")
        else:
            self.add_image(tag, images[0], global_step, walltime, dataformats="HWC")

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step=None) -> None:
        """Hyperparameters and their metrics, in a run of their own (``run_name``, default the time)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, ssi, sei):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """The model's graph (traced with fabric.fx; shapes from ``input_to_model``) for TensorBoard's Graphs tab."""
        from ._graph import graph_def

        self._get_file_writer().add_event(Event(graph_def=graph_def(model, input_to_model, verbose)
                                                .SerializeToString()))

    def _missing(self, name):
        raise NotImplementedError(f"SummaryWriter.{name} is not implemented in fabric yet (see docs/tools.md); "
                                  "scalars, histograms, images, figures, text and hparams are")

    def add_embedding(self, *args, **kwargs):
        self._missing("add_embedding")

    def add_pr_curve(self, *args, **kwargs):
        self._missing("add_pr_curve")

    def add_video(self, *args, **kwargs):
        self._missing("add_video")

    def add_audio(self, *args, **kwargs):
        self._missing("add_audio")

    def add_mesh(self, *args, **kwargs):
        self._missing("add_mesh")

    def add_custom_scalars(self, *args, **kwargs):
        self._missing("add_custom_scalars")

    # --- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()

    def close(self) -> None:
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _render_figure(figure, close: bool) -> np.ndarray:
    """RGBA pixels of a matplotlib figure (drawn with the Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pyright: ignore[reportMissingImports] (optional)

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    img = np.asarray(canvas.buffer_rgba()).copy()
    if close:
        import matplotlib.pyplot as plt  # pyright: ignore[reportMissingImports] (optional)

        plt.close(figure)
    return img
