"""``fabric.cuda``: CUDA devices through CuPy (optional).

Everything here answers cleanly on a machine without CuPy or a GPU:
``is_available()`` is False, ``device_count()`` and the memory counters are 0,
seeding is a no-op, and whatever needs a device (streams, events, device
properties, RNG state) raises a ``RuntimeError`` that says why.  CuPy is
imported only when one of these functions is called.

Example::

    >>> import fabric
    >>> fabric.cuda.is_available() in (True, False)
    True
    >>> fabric.cuda.memory_allocated() >= 0
    True
    >>> with fabric.cuda.stream(None):      # no stream: nothing changes
    ...     pass
"""
from __future__ import annotations

import functools

__all__ = [
    "Event",
    "ExternalStream",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
    "unavailable_reason",
]


@functools.cache
def _probe():
    """(device count, reason) — never raises."""
    try:
        import cupy
    except ImportError:
        return 0, "CuPy is not installed (pip install 'fabric-dl[cuda12]')"
    except Exception as e:
        return 0, f"CuPy failed to import: {e}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return 0, f"CuPy found no usable CUDA device: {e}"
    if n == 0:
        return 0, "CuPy found no CUDA device"
    return n, ""


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU."""
    return _probe()[0] > 0


def device_count() -> int:
    return _probe()[0]


def unavailable_reason() -> str:
    """Why CUDA is unavailable ('' when it is available)."""
    return _probe()[1]


def _require():
    if not is_available():
        raise RuntimeError(f"CUDA is not available: {unavailable_reason()}")


def _cupy():
    _require()
    import cupy

    return cupy


def _backend():
    _require()
    from ..backends import get_cupy_backend

    return get_cupy_backend()


def _index(device=None) -> int:
    """The CUDA device index meant by ``device`` (None, int, "cuda:N", fabric.device)."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    from .._device import device as _device

    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


def current_device() -> int:
    return _cupy().cuda.runtime.getDevice()


def set_device(device) -> None:
    """Make ``device`` the current CUDA device (a negative index is ignored, as in PyTorch)."""
    idx = _index(device)
    if idx >= 0:
        _cupy().cuda.runtime.setDevice(idx)


def is_initialized() -> bool:
    """Whether fabric has created its CUDA backend (CuPy imported, a device found)."""
    from .. import backends

    return backends._cupy_instance is not None


def init() -> None:
    """Create the CUDA backend now (RuntimeError without a device)."""
    _backend()


class device:
    """Context manager that makes a CUDA device current (``None`` or a
    negative index: nothing changes)."""

    def __init__(self, device):
        self.idx = -1 if device is None else (_index(device) if not isinstance(device, int) else device)
        self.prev = -1

    def __enter__(self):
        if self.idx < 0:
            return
        cupy = _cupy()
        self.prev = cupy.cuda.runtime.getDevice()
        if self.prev != self.idx:
            cupy.cuda.runtime.setDevice(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev != self.idx:
            import cupy

            cupy.cuda.runtime.setDevice(self.prev)
        return False


class device_of(device):
    """Context manager: the device of tensor ``obj`` current (no-op for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.device.index if obj.is_cuda else -1)


def synchronize(device=None) -> None:
    """Wait for all work on ``device`` (default: the current one) to finish."""
    _cupy().cuda.Device(_index(device)).synchronize()


# --------------------------------------------------------------------------
# device properties
# --------------------------------------------------------------------------
class _CudaDeviceProperties:
    """What ``get_device_properties`` returns (the fields PyTorch's object has)."""

    __slots__ = (
        "L2_cache_size",
        "is_integrated",
        "is_multi_gpu_board",
        "major",
        "max_threads_per_multi_processor",
        "minor",
        "multi_processor_count",
        "name",
        "total_memory",
        "uuid",
        "warp_size",
    )

    def __init__(self, props: dict):
        name = props.get("name", b"")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.major, self.minor = int(props.get("major", 0)), int(props.get("minor", 0))
        self.total_memory = int(props.get("totalGlobalMem", 0))
        self.multi_processor_count = int(props.get("multiProcessorCount", 0))
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.max_threads_per_multi_processor = int(props.get("maxThreadsPerMultiProcessor", 0))
        self.warp_size = int(props.get("warpSize", 32))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))
        raw = props.get("uuid", b"")
        self.uuid = bytes(raw).hex() if raw else ""

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2 ** 20}MB, multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // 2 ** 20}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    _require()
    idx = _index(device)
    if not 0 <= idx < device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(_cupy().cuda.runtime.getDeviceProperties(idx))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported() -> bool:
    """False: CuPy (and NumPy without ml_dtypes) has no bfloat16 arrays."""
    return False


# --------------------------------------------------------------------------
# memory (CuPy's default memory pool: "allocated" = used, "reserved" = held)
# --------------------------------------------------------------------------
def memory_stats(device=None) -> dict:
    """Current and peak allocated / reserved bytes (``{}`` without CUDA)."""
    if not is_available():
        return {}
    return _backend().memory_stats(_index(device))


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by tensors (0 without CUDA)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    """The peak of :func:`memory_allocated` since the start or the last
    :func:`reset_peak_memory_stats` (0 without CUDA)."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes held by CuPy's memory pool, used or cached (0 without CUDA)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None) -> None:
    """Start peak tracking afresh from the current values (a no-op without CUDA)."""
    if is_available():
        _backend().reset_peak_memory_stats(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device, as the driver reports them."""
    cupy = _cupy()
    with cupy.cuda.Device(_index(device)):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def empty_cache() -> None:
    """Give the pool's cached, unused blocks back to the driver, on every device
    (a no-op without CUDA)."""
    if is_available():
        be = _backend()
        for i in range(device_count()):
            be.empty_cache(i)


# --------------------------------------------------------------------------
# streams and events
# --------------------------------------------------------------------------
class Stream:
    """A CUDA stream (``torch.cuda.Stream``), wrapping ``cupy.cuda.Stream``.

    Work queued while the stream is current (``with fabric.cuda.stream(s):``)
    runs on it; ``wait_stream``/``wait_event`` order streams, ``synchronize``
    waits on the host.  Like PyTorch's, new streams do not synchronise with
    the default stream implicitly.
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        cupy = _cupy()
        idx = _index(device)
        with cupy.cuda.Device(idx):
            self._s = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self._idx = idx

    @classmethod
    def _wrap(cls, cupy_stream, idx: int) -> Stream:
        s = object.__new__(cls)
        s._s, s._idx = cupy_stream, idx
        return s

    @property
    def device(self):
        from .._device import device as _device

        return _device("cuda", self._idx)

    @property
    def cuda_stream(self) -> int:
        return int(self._s.ptr)

    @property
    def priority(self) -> int:
        return int(getattr(self._s, "priority", 0))

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        return bool(self._s.done)

    def synchronize(self) -> None:
        self._s.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        self._s.wait_event(event._ev)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for what is queued on ``stream`` now."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream and self._idx == other._idx

    def __hash__(self):
        return hash((self.cuda_stream, self._idx))

    def __repr__(self):
        return f"<fabric.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """A stream created elsewhere (by its ``cudaStream_t`` pointer)."""

    def __init__(self, stream_ptr: int, device=None, **kwargs):
        cupy = _cupy()
        idx = _index(device)
        self._s, self._idx = cupy.cuda.ExternalStream(int(stream_ptr), idx), idx


def current_stream(device=None) -> Stream:
    """The stream work is queued on for ``device`` (default: the current device)."""
    cupy = _cupy()
    idx = _index(device)
    with cupy.cuda.Device(idx):
        return Stream._wrap(cupy.cuda.get_current_stream(), idx)


def default_stream(device=None) -> Stream:
    """The default (legacy null) stream of ``device``."""
    cupy = _cupy()
    return Stream._wrap(cupy.cuda.Stream.null, _index(device))


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` current on its device (prefer the :func:`stream` context manager)."""
    if stream is None:
        return
    cupy = _cupy()
    with cupy.cuda.Device(stream._idx):
        stream._s.use()


class StreamContext:
    """Context manager: ``stream`` current (and its device, if another one is);
    both are restored on exit.  ``None`` changes nothing."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._prev_stream = None
        self._prev_device = -1

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        cupy = _cupy()
        self._prev_device = cupy.cuda.runtime.getDevice()
        if self._prev_device != s._idx:
            cupy.cuda.runtime.setDevice(s._idx)
        self._prev_stream = cupy.cuda.get_current_stream()
        s._s.use()
        return s

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        import cupy

        self._prev_stream.use()
        if self._prev_device != self.stream._idx:
            cupy.cuda.runtime.setDevice(self._prev_device)
        return False


def stream(stream: Stream | None) -> StreamContext:
    """``with fabric.cuda.stream(s): ...`` queues the block's GPU work on ``s``."""
    return StreamContext(stream)


class Event:
    """A CUDA event (``torch.cuda.Event``): a marker in a stream, for
    synchronisation and timing (``enable_timing=True``)::

        start, end = fabric.cuda.Event(enable_timing=True), fabric.cuda.Event(enable_timing=True)
        start.record(); work(); end.record(); end.synchronize()
        ms = start.elapsed_time(end)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        cupy = _cupy()
        self.enable_timing, self.blocking, self.interprocess = bool(enable_timing), bool(blocking), bool(interprocess)
        self._ev = cupy.cuda.Event(block=self.blocking, disable_timing=not self.enable_timing,
                                   interprocess=self.interprocess)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        s = current_stream() if stream is None else stream
        self._ev.record(s._s)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (default: current) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """True when the work before the recorded point has finished (or it was never recorded)."""
        return bool(self._ev.done)

    def synchronize(self) -> None:
        """Wait on the host until the event has completed."""
        self._ev.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        import cupy

        return float(cupy.cuda.get_elapsed_time(self._ev, end_event._ev))

    def __repr__(self):
        return f"<fabric.cuda.Event {'recorded' if self._recorded else 'uninitialized'}>"


# --------------------------------------------------------------------------
# random number generators (one Philox stream per device, see
# fabric._rng.philox.PhiloxGenerator; not PyTorch's CUDA numbers)
# --------------------------------------------------------------------------
_generators: dict = {}
_seeds: dict = {}            # device -> seed given before its generator existed
_seed_all_value: list = []   # [seed] from fabric.manual_seed / manual_seed_all, for generators made later


def _default_generator(index: int):
    _require()
    g = _generators.get(index)
    if g is None:
        if not 0 <= index < device_count():
            raise RuntimeError(f"CUDA error: invalid device ordinal (device {index}, {device_count()} devices)")
        from ..random import Generator

        g = Generator(f"cuda:{index}")
        seed = _seeds.pop(index, _seed_all_value[0] if _seed_all_value else None)
        if seed is not None:
            g.manual_seed(seed)
        _generators[index] = g
    return g


def _seed_all_if_initialized(seed: int) -> None:
    """``fabric.manual_seed``: seed every CUDA generator, now or when it is created."""
    _seed_all_value[:] = [int(seed)]
    _seeds.clear()
    for g in _generators.values():
        g.manual_seed(seed)


def manual_seed(seed) -> None:
    """Seed the current device's generator (silently ignored without CUDA)."""
    seed = int(seed)
    if not is_available():
        return
    idx = current_device()
    if idx in _generators:
        _generators[idx].manual_seed(seed)
    else:
        _seeds[idx] = seed


def manual_seed_all(seed) -> None:
    """Seed every device's generator (silently ignored without CUDA)."""
    _seed_all_if_initialized(int(seed))


def seed() -> None:
    """Seed the current device's generator from a non-deterministic source."""
    if is_available():
        _default_generator(current_device()).seed()


def seed_all() -> None:
    """Seed every device's generator with one non-deterministic seed."""
    if is_available():
        s = _default_generator(0).seed()
        for i in range(1, device_count()):
            _default_generator(i).manual_seed(s)


def initial_seed() -> int:
    """The seed of the current device's generator."""
    return _default_generator(current_device()).initial_seed()


def get_rng_state(device="cuda"):
    """The generator state of ``device`` as a 16-byte uint8 CPU tensor (seed, offset)."""
    return _default_generator(_index(device)).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    _default_generator(_index(device)).set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def _reset_state() -> None:
    """Forget the probe and all per-device state (tests that swap CuPy use this)."""
    _probe.cache_clear()
    _generators.clear()
    _seeds.clear()
    _seed_all_value.clear()


from . import amp  # noqa: E402,F401  (fabric.cuda.amp: deprecated spellings of fabric.amp)
