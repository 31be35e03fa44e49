"""Run CUDA C kernels on the CPU: g++ + ``cuda_cpu.h`` + a RawKernel-like launcher.

``HarnessModule(source, name_expressions)`` compiles a kernel source (the same
text NVRTC gets) into a shared library, cached by content hash, and
``module.get_function("softmax_fwd<float>")`` returns a :class:`HarnessKernel`
called exactly like a ``cupy.RawKernel``::

    kernel(grid, block, args, shared_mem=0)

with NumPy arrays standing in for device arrays.  Before launching, every
argument is checked against the kernel's C signature (taken from the compiled
template, not parsed): arrays must have the pointee's dtype and be
C-contiguous, scalars must be NumPy scalars of the parameter's exact type (a
Python ``int`` is what CuPy passes as a 64-bit integer, so it is refused for an
``int`` parameter).  Each array is copied into its own mapping next to a
``PROT_NONE`` guard page (after the data with ``guard="end"``, before it with
``guard="start"``) with canary bytes on the other side, so out-of-bounds reads
and writes are reported with the argument's name and offset.

:class:`HarnessKernels` is a kernel provider for
:class:`fabric.backends.cupy_backend.KernelOps`, and :class:`HarnessBackend`
is that launch code running on these kernels with NumPy arrays.

Example::

    >>> import numpy as np
    >>> src = 'template <typename T> __global__ void twice(T* x, int n) {'
    >>> src += ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }'
    >>> k = HarnessModule(src, ["twice<float>"]).get_function("twice<float>")
    >>> x = np.arange(4, dtype=np.float32); k((1,), (32,), (x, np.int32(4))); x.tolist()
    [0.0, 2.0, 4.0, 6.0]
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from fabric.backends.base import Backend
from fabric.backends.cuda import launch as _launch
from fabric.backends.cupy_backend import KernelOps

__all__ = [
    "CompileError",
    "HarnessBackend",
    "HarnessKernel",
    "HarnessKernels",
    "HarnessModule",
    "KernelError",
    "PointerTable",
    "have_compiler",
    "module_for",
]

HERE = os.path.dirname(os.path.abspath(__file__))
CXX = os.environ.get("CXX", "g++")
# -fno-gnu-unique: template statics (block_allreduce's __shared__ scratch, the harness
# state) would otherwise be STB_GNU_UNIQUE, one copy shared by every loaded module -
# a second build of a source (a mutant, the race-check twin) would use the first's.
FLAGS = ["-std=c++17", "-O1", "-g0", "-fPIC", "-shared", "-U_FORTIFY_SOURCE", "-fno-strict-aliasing",
         "-fno-gnu-unique", "-Wno-attributes", "-I", HERE]
# the race-check build: g++ instruments every load and store with ThreadSanitizer's
# hooks (defined by cuda_cpu.h; libtsan is not linked), with line tables for reports
RACE_FLAGS = ["-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-DFABRIC_RACECHECK", "-g1"]
PAGE = os.sysconf("SC_PAGESIZE")

_LOCK = threading.RLock()   # one launch at a time: the harness state and signal handlers are global


class KernelError(RuntimeError):
    """A kernel misbehaved: out-of-bounds access, barrier divergence, deadlock, timeout."""


class CompileError(RuntimeError):
    """g++ rejected the source; the message holds its diagnostics."""


def have_compiler() -> bool:
    return all(shutil.which(t) is not None for t in (CXX, "nm", "addr2line", "c++filt"))


def cache_dir() -> str:
    d = os.environ.get("FABRIC_CUDA_HARNESS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "fabric-cuda-harness")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        d = os.path.join(tempfile.gettempdir(), "fabric-cuda-harness")
        os.makedirs(d, exist_ok=True)
    return d


# ---- C type codes (as produced by fabric_harness::param_code) ---------------------
_SCALARS = {
    "f2": (np.float16, ctypes.c_uint16, "__half"), "f4": (np.float32, ctypes.c_float, "float"),
    "f8": (np.float64, ctypes.c_double, "double"), "i4": (np.int32, ctypes.c_int32, "int"),
    "u4": (np.uint32, ctypes.c_uint32, "unsigned int"), "i8": (np.int64, ctypes.c_int64, "long long"),
    "u8": (np.uint64, ctypes.c_uint64, "unsigned long long"), "u1": (np.uint8, ctypes.c_uint8, "unsigned char"),
    "i1": (np.int8, ctypes.c_int8, "signed char"), "b1": (np.bool_, ctypes.c_bool, "bool"),
    "i2": (np.int16, ctypes.c_int16, "short"),
}


def _c_type(code: str) -> str:
    parts = code.split(":")
    const = "const " if parts[-1] == "const" else ""
    if parts[0] == "p":
        return f"{const}{_SCALARS[parts[1]][2]}*"
    if parts[0] == "pp":
        return f"{const}{_SCALARS[parts[1]][2]}* const*"
    return _SCALARS[parts[0]][2]


def _dtype_ok(code: str, dtype) -> bool:
    want = np.dtype(_SCALARS[code][0])
    return dtype == want or (code == "u1" and dtype == np.bool_)


class PointerTable:
    """A list of arrays passed where a kernel takes ``T* const*`` (on the GPU, a
    device array of data pointers)."""

    def __init__(self, arrays):
        self.arrays = list(arrays)


# ---- guarded host buffers ----------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_NONE, _PROT_RW = 0, 3
_MAP_PRIVATE_ANON = 0x02 | 0x20
_CANARY = 0xA5


class _Guarded:
    """``nbytes`` of memory flush against a PROT_NONE page (after the data for
    guard='end', before it for 'start'); the slack on the other side is canary."""

    def __init__(self, nbytes: int, guard: str):
        self.nbytes = nbytes
        self.span = -(-nbytes // PAGE) * PAGE
        self.total = self.span + 2 * PAGE
        base = _libc.mmap(None, self.total, _PROT_RW, _MAP_PRIVATE_ANON, -1, 0)
        if base in (None, ctypes.c_void_p(-1).value):
            raise MemoryError("mmap failed")
        self.base = base
        _libc.mprotect(base, PAGE, _PROT_NONE)
        _libc.mprotect(base + PAGE + self.span, PAGE, _PROT_NONE)
        self.ptr = base + PAGE + (self.span - nbytes if guard == "end" else 0)
        slack = self.span - nbytes
        self.slack = (base + PAGE, slack) if guard == "end" else (self.ptr + nbytes, slack)
        if slack:
            ctypes.memset(self.slack[0], _CANARY, slack)

    def canary_ok(self) -> bool:
        addr, n = self.slack
        return not n or ctypes.string_at(addr, n) == bytes([_CANARY]) * n

    def close(self):
        if self.base:
            _libc.munmap(self.base, self.total)
            self.base = 0


# ---- compiling -----------------------------------------------------------------
_modules: dict[tuple[str, bool], HarnessModule] = {}


def _compiler_id() -> str:
    try:
        return subprocess.run([CXX, "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return CXX


def _kernel_param_names(source: str) -> dict[str, list[str]]:
    names = {}
    for m in re.finditer(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", source):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        names[m.group(1)] = [re.findall(r"\w+", p)[-1] for p in params]
    return names


class HarnessModule:
    """A kernel source compiled by g++ for the CPU, like ``cupy.RawModule``.
    ``race=True`` builds the race-check variant (every memory access recorded)."""

    def __init__(self, source: str, name_expressions, name: str = "module", race: bool = False):
        self.source = source
        self.name_expressions = list(name_expressions)
        self.name = name
        self.race = race
        prelude = _launch._read(_launch.PRELUDE)
        # line tables (race reports) name common.cuh for the prelude's lines
        first = prelude.split("\n", 1)[0]
        tu = ['#include "cuda_cpu.h"', f'#line 1 "{_launch.PRELUDE}"' if source.startswith(first) else "", source, ""]
        for i, ne in enumerate(self.name_expressions):
            tu.append(f'extern "C" int fabric_launch_{i}(const fabric_harness::LaunchCfg* c, void** a) '
                      f'{{ return fabric_harness::launch(&{ne}, c, a); }}')
            tu.append(f'extern "C" const char* fabric_sig_{i}() {{ return fabric_harness::signature(&{ne}); }}')
        text = "\n".join(tu) + "\n"
        with open(os.path.join(HERE, "cuda_cpu.h"), encoding="utf-8") as f:
            header = f.read()
        flags = FLAGS + (RACE_FLAGS if race else [])
        key = hashlib.sha256("\0".join([header, text, " ".join(flags), _compiler_id()]).encode()).hexdigest()[:24]
        so = os.path.join(cache_dir(), f"{name.replace('.', '_')}{'-race' if race else ''}-{key}.so")
        self.so = so
        if not os.path.exists(so):
            self._compile(text, so)
        self.lib = ctypes.CDLL(so)
        self.lib.fabric_last_error.restype = ctypes.c_char_p
        self.lib.fabric_fault_address.restype = ctypes.c_void_p
        self._set_static_shared(so)
        self._param_names = _kernel_param_names(source)
        self._functions: dict[str, HarnessKernel] = {}

    def _compile(self, text: str, so: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, f"{self.name}.cpp")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            out = os.path.join(tmp, "out.so")
            if self.race:   # compile instrumented, link without libtsan (the hooks are in the source)
                obj = os.path.join(tmp, "out.o")
                cmds = [[CXX, *[f for f in FLAGS if f != "-shared"], *RACE_FLAGS, "-c", src, "-o", obj],
                        [CXX, "-shared", obj, "-o", out]]
            else:
                cmds = [[CXX, *FLAGS, src, "-o", out]]
            for cmd in cmds:
                r = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if r.returncode:
                    raise CompileError(f"g++ failed to compile {self.name}:\n{r.stderr[-8000:]}")
            os.replace(out, so + f".{os.getpid()}.tmp")
            os.replace(so + f".{os.getpid()}.tmp", so)

    def _set_static_shared(self, so: str) -> None:
        """Tell the library where its static __shared__ arrays are, to poison them per block."""
        r = subprocess.run(["nm", "-S", "--defined-only", so], capture_output=True, text=True, check=True)
        anchor, regions, names = None, [], []
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[2] == "fabric_anchor":
                anchor = int(parts[0], 16)
            if len(parts) != 4:
                continue
            value, size, kind, sym = parts
            if sym == "fabric_anchor":
                anchor = int(value, 16)
            elif (sym.startswith("_ZZ") and not sym.startswith("_ZZN14fabric_harness")
                  and kind in "bBdDuV"):
                regions.append((int(value, 16), int(size, 16)))
                names.append(sym)
        base = ctypes.addressof(ctypes.c_ubyte.in_dll(self.lib, "fabric_anchor")) - anchor
        self.load_base = base
        n = len(regions)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[base + v for v, _ in regions])
        sizes = (ctypes.c_ulonglong * max(n, 1))(*[s for _, s in regions])
        self.lib.fabric_set_static_shared(ptrs, sizes, n)
        self.static_shared = regions
        self._shared_symbols = names

    def shared_name(self, addr: int) -> str:
        """``__shared__ scratch in block_allreduce<...>`` for an address in a static shared array."""
        for (value, size), sym in zip(self.static_shared, self._shared_symbols):
            if self.load_base + value <= addr < self.load_base + value + size:
                name = sym
                if shutil.which("c++filt"):
                    name = subprocess.run(["c++filt", sym], capture_output=True, text=True,
                                          check=False).stdout.strip() or sym
                fn, _, var = name.rpartition("::")
                return f"byte {addr - self.load_base - value} of __shared__ {var} in {fn.split('(')[0]}"
        return ""

    def get_function(self, name_expression: str) -> HarnessKernel:
        fn = self._functions.get(name_expression)
        if fn is None:
            try:
                i = self.name_expressions.index(name_expression)
            except ValueError:
                raise KeyError(f"{name_expression!r} is not among the module's name expressions") from None
            sig = getattr(self.lib, f"fabric_sig_{i}")
            sig.restype = ctypes.c_char_p
            codes = sig().decode().split(",") if sig() else []
            base = name_expression.split("<")[0]
            names = self._param_names.get(base) or [f"arg{j}" for j in range(len(codes))]
            if len(names) != len(codes):
                names = [f"arg{j}" for j in range(len(codes))]
            fn = HarnessKernel(self, name_expression, getattr(self.lib, f"fabric_launch_{i}"), codes, names)
            self._functions[name_expression] = fn
        return fn


    def race_twin(self) -> HarnessModule:
        """The race-check build of the same source (this module if it is one)."""
        if self.race:
            return self
        twin = self.__dict__.get("_race_twin")
        if twin is None:
            twin = self._race_twin = HarnessModule(self.source, self.name_expressions, self.name, race=True)
        return twin

    def source_line(self, pc: int) -> str:
        """``file.cu:line`` of a code address of this library (race-check builds carry line tables)."""
        if not shutil.which("addr2line"):
            return ""
        r = subprocess.run(["addr2line", "-e", self.so, "-i", hex(pc - self.load_base - 1)],
                           capture_output=True, text=True, check=False)
        lines = [ln for ln in r.stdout.splitlines() if ln and not ln.startswith("??")]
        return os.path.basename(lines[0]) if lines else ""


def module_for(file: str, race: bool = False) -> HarnessModule:
    """The harness build of a fabric kernel file (cached per process and on disk);
    ``race=True``: the race-check build."""
    with _LOCK:
        mod = _modules.get((file, race))
        if mod is None:
            mod = _modules[(file, race)] = HarnessModule(
                _launch.module_source(file), _launch.name_expressions(file), name=file, race=race)
        return mod


# ---- launching ---------------------------------------------------------------------
class _LaunchCfg(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_mem", ctypes.c_ulonglong),
                ("seed", ctypes.c_ulonglong), ("timeout_ms", ctypes.c_int), ("race", ctypes.c_int),
                ("preempt", ctypes.c_double)]


def _dim3(v, what):
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(e) for e in v)
    if not 1 <= len(v) <= 3 or any(e < 1 for e in v):
        raise ValueError(f"invalid {what} {v}")
    return v + (1,) * (3 - len(v))


class HarnessKernel:
    """One kernel instantiation; call it like ``cupy.RawKernel``:
    ``kernel(grid, block, args, shared_mem=0)``.  ``seed`` shuffles block and
    thread order, ``guard`` ('end' or 'start') says which side of each array
    touches a guard page.  ``race=True`` (a kernel of a race-check build,
    :meth:`race_checked`) records every access to the arguments and to shared
    memory and raises :class:`KernelError` on a data race; ``preempt`` is the
    probability of switching threads at such an access."""

    def __init__(self, module, name, fn, codes, names, seed=0, guard="end", timeout_ms=60000, race=False,
                 preempt=0.25):
        self.module, self.name, self._fn = module, name, fn
        self.codes, self.param_names = codes, names
        self.seed, self.guard, self.timeout_ms = seed, guard, timeout_ms
        self.race, self.preempt = int(race), preempt
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(_LaunchCfg), ctypes.c_void_p]

    def configured(self, seed=None, guard=None, timeout_ms=None, preempt=None) -> HarnessKernel:
        return HarnessKernel(self.module, self.name, self._fn, self.codes, self.param_names,
                             self.seed if seed is None else seed, self.guard if guard is None else guard,
                             self.timeout_ms if timeout_ms is None else timeout_ms, self.race,
                             self.preempt if preempt is None else preempt)

    def race_checked(self, preempt=None, report: bool = True) -> HarnessKernel:
        """This kernel from the race-check build of its module; ``report=False`` only
        preempts threads at memory operations (no recording, no race reports)."""
        mod = self.module.race_twin()
        k = mod.get_function(self.name)
        return HarnessKernel(mod, self.name, k._fn, k.codes, k.param_names, self.seed, self.guard,
                             self.timeout_ms, 1 if report else 2, self.preempt if preempt is None else preempt)

    @property
    def signature(self) -> str:
        base = self.name.split("<")[0]
        return f"{base}(" + ", ".join(f"{_c_type(c)} {n}" for c, n in zip(self.codes, self.param_names)) + ")"

    def _describe(self, i):
        return f"argument {i} ({_c_type(self.codes[i])} {self.param_names[i]}) of {self.name}"

    def _check_array(self, i, a, elem):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{self._describe(i)} needs a NumPy array, got {type(a).__name__}")
        if not _dtype_ok(elem, a.dtype):
            raise TypeError(f"{self._describe(i)} needs dtype {np.dtype(_SCALARS[elem][0])}, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise TypeError(f"{self._describe(i)} got a non-contiguous array (a kernel sees only its data pointer)")

    def __call__(self, grid, block, args, shared_mem=0):
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        args = tuple(args)
        if len(args) != len(self.codes):
            raise TypeError(f"{self.signature} takes {len(self.codes)} arguments, got {len(args)}")
        with _LOCK:
            return self._launch(grid, block, args, int(shared_mem))

    def _launch(self, grid, block, args, shared_mem):
        keep, buffers, outputs = [], [], []   # buffers: (_Guarded, arg index, table position)
        cargs = (ctypes.c_void_p * max(len(args), 1))()
        placed = {}   # id(array) -> buffer: an array passed twice is one device allocation

        def place(a, i, j, writable):
            g = placed.get(id(a))
            if g is None:
                g = placed[id(a)] = _Guarded(a.nbytes, self.guard)
                buffers.append((g, i, j))
                if a.nbytes:
                    ctypes.memmove(g.ptr, a.ctypes.data, a.nbytes)
                keep.append(a)
            if writable and all(o is not a for _, o in outputs):
                outputs.append((g, a))
            return g

        try:
            for i, (code, a) in enumerate(zip(self.codes, args)):
                parts = code.split(":")
                if parts[0] == "p":
                    self._check_array(i, a, parts[1])
                    g = place(a, i, None, parts[-1] != "const")
                    cell = ctypes.c_void_p(g.ptr)
                elif parts[0] == "pp":
                    if not isinstance(a, PointerTable):
                        raise TypeError(f"{self._describe(i)} needs a PointerTable, got {type(a).__name__}")
                    ptrs = []
                    for j, e in enumerate(a.arrays):
                        self._check_array(i, e, parts[1])
                        ptrs.append(place(e, i, j, parts[-1] != "const").ptr)
                    table = np.array(ptrs, dtype=np.uint64)
                    gt = _Guarded(table.nbytes, self.guard)
                    buffers.append((gt, i, "table"))
                    if table.nbytes:
                        ctypes.memmove(gt.ptr, table.ctypes.data, table.nbytes)
                    cell = ctypes.c_void_p(gt.ptr)
                else:
                    dtype, ctype, _cname = _SCALARS[parts[0]]
                    if not isinstance(a, np.generic):
                        raise TypeError(
                            f"{self._describe(i)} got a Python {type(a).__name__}; CuPy passes a Python int as a "
                            f"64-bit integer and a float as a double, so pass numpy.{np.dtype(dtype).name}(...)")
                    if a.dtype != np.dtype(dtype):
                        raise TypeError(f"{self._describe(i)} needs numpy.{np.dtype(dtype).name}, got {a.dtype}")
                    cell = ctype(int(a.view(np.uint16)) if parts[0] == "f2" else a.item())
                keep.append(cell)
                cargs[i] = ctypes.addressof(cell)
            cfg = _LaunchCfg((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared_mem,
                             self.seed, self.timeout_ms, int(self.race), float(self.preempt))
            if self.race:
                n = len(buffers)
                self.module.lib.fabric_set_global_regions(
                    (ctypes.c_void_p * max(n, 1))(*[g.ptr for g, _, _ in buffers]),
                    (ctypes.c_ulonglong * max(n, 1))(*[g.nbytes for g, _, _ in buffers]), n)
            rc = self._fn(ctypes.byref(cfg), ctypes.cast(cargs, ctypes.c_void_p))
            if rc:
                msg = self.module.lib.fabric_last_error().decode(errors="replace")
                if rc == 2:
                    msg += self._locate_fault(buffers)
                elif msg.startswith("data race"):
                    msg = self._explain_race(msg, buffers)
                raise KernelError(f"{self.name}: {msg}")
            for g, i, j in buffers:
                if not g.canary_ok():
                    side = "before the start" if self.guard == "end" else "past the end"
                    what = self._describe(i) + ("" if j is None else f" (table entry {j})")
                    raise KernelError(f"{self.name}: out-of-bounds write {side} of {what}")
            for g, a in outputs:
                if a.nbytes:
                    ctypes.memmove(a.ctypes.data, g.ptr, a.nbytes)
        finally:
            for g, _, _ in buffers:
                g.close()

    def _explain_race(self, msg: str, buffers) -> str:
        """Addresses to argument names and byte offsets, code addresses to .cu lines."""
        def where(m):
            addr = int(m.group(1), 16)
            for g, i, j in buffers:
                if g.ptr <= addr < g.ptr + g.nbytes:
                    what = self._describe(i) + ("" if j is None else f", pointer table entry {j}"
                                                if j != "table" else ", the pointer table")
                    return f"byte {addr - g.ptr} of {what}"
            return self.module.shared_name(addr) or m.group(1)

        def line(m):
            src = self.module.source_line(int(m.group(1), 16))
            return f"({src})" if src else ""

        msg = re.sub(r"at (0x[0-9a-f]+)", lambda m: "at " + where(m), msg, count=1)
        msg = re.sub(r"\[pc (0x[0-9a-f]+)\]", line, msg)
        return re.sub(r" \(discriminator \d+\)", "", msg)

    def _locate_fault(self, buffers) -> str:
        addr = self.module.lib.fabric_fault_address() or 0
        for g, i, j in buffers:
            what = self._describe(i) + ("" if j is None else f", pointer table entry {j}" if j != "table"
                                        else ", the pointer table")
            if g.ptr + g.nbytes <= addr < g.ptr + g.nbytes + PAGE:
                return f" - {addr - g.ptr - g.nbytes} bytes past the end of {what} ({g.nbytes} bytes)"
            if g.ptr - PAGE <= addr < g.ptr:
                return f" - {g.ptr - addr} bytes before the start of {what}"
        return ""


class HarnessKernels:
    """Kernel provider for :class:`KernelOps` backed by the harness.  Small
    launch limits (few blocks, small blocks, tiny optimizer chunks) make the
    grid-stride and multi-chunk paths run at test sizes."""

    def __init__(self, seed: int = 0, guard: str = "end", limits: _launch.Limits | None = None,
                 race: bool = False, preempt: float = 0.25, modules: dict | None = None):
        self.seed, self.guard, self.race, self.preempt = seed, guard, race, preempt
        self.limits = limits or _launch.Limits(max_block=128, max_grid=3, max_shared=44 * 1024,
                                               elementwise_block=64, chunk_size=96)
        self.modules = modules or {}   # file -> HarnessModule replacing the build of the fabric source
        self.launched: list[str] = []

    def get(self, kernel: str, dtype):
        file = _launch.kernel_file(kernel)
        mod = self.modules.get(file) or module_for(file, self.race)
        fn = mod.get_function(_launch.name_expression(kernel, dtype))
        self.launched.append(fn.name)
        fn = fn.configured(seed=self.seed, guard=self.guard)
        return fn.race_checked(self.preempt) if self.race else fn

    def pointer_tables(self, *lists):
        return [PointerTable(lst) for lst in lists]


class HarnessBackend(KernelOps, Backend):
    """The CuPy backend's launch code on NumPy arrays and harness kernels."""

    name = "cuda-harness"
    xp = np

    def __init__(self, seed: int = 0, guard: str = "end", limits: _launch.Limits | None = None,
                 race: bool = False, preempt: float = 0.25, modules: dict | None = None):
        self.kernels = HarnessKernels(seed, guard, limits, race, preempt, modules)
