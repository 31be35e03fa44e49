"""The layers of docs/internals.md hold: no module imports from a layer above its own, at module
level or inside a function, except the few edges allowed below (each with its reason)."""
import ast
import functools
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "fabric")

# lowest first; a module belongs to the first layer with a matching prefix, else to "api"
LAYERS = [
    ("base", ("fabric._dtype", "fabric._special_functions", "fabric._threads", "fabric._rng",
              "fabric._shared_memory", "fabric._errors", "fabric._display", "fabric._layout")),
    ("backends", ("fabric.backends", "fabric._device")),
    ("autograd core", ("fabric.autograd.function", "fabric.autograd.engine", "fabric.autograd.grad_mode",
                       "fabric.autograd.anomaly_mode", "fabric.autograd.graph", "fabric.autograd.observe")),
    ("tensor and ops", ("fabric._tensor", "fabric.ops", "fabric._creation", "fabric._formatting")),
]

ALLOWED = {
    # A bare "cuda" device means the current CUDA device, which the user-facing CUDA API owns
    # (cuda.set_device / current_device); imported only when such a device is named.
    ("fabric._device", "fabric.cuda"): "the current CUDA device lives in fabric.cuda",
    # Tensor.backward is torch.autograd.backward, the autograd tools' entry point (imported when called).
    ("fabric._tensor", "fabric.autograd"): "Tensor.backward calls autograd.backward",
    # pin_memory / is_pinned answer "is there a CUDA device" as fabric.cuda.is_available does.
    ("fabric._tensor", "fabric.cuda"): "pin_memory needs cuda.is_available()",
}


def _layer(module):
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return len(LAYERS)


def _modules():
    out = {}
    for dirpath, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _imports(module, path, modules):
    """(imported module, line) for every fabric import in ``path``, in functions too."""
    is_pkg = path.endswith("__init__.py")
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("fabric"):
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if is_pkg else module.split(".")[:-1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("fabric"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                yield (full if full in modules else base), node.lineno


@functools.lru_cache(maxsize=1)
def _upward_edges():
    modules = _modules()
    found = []
    for module, path in modules.items():
        for target, line in _imports(module, path, modules):
            if _layer(target) > _layer(module):
                found.append((module, target, line))
    return tuple(found)


def test_no_upward_imports():
    bad = [f"{m}:{line} imports {t} ({LAYERS[_layer(m)][0]} -> "
           f"{LAYERS[_layer(t)][0] if _layer(t) < len(LAYERS) else 'api'})"
           for m, t, line in _upward_edges() if (m, t) not in ALLOWED]
    assert not bad, "imports from a higher layer:\n" + "\n".join(bad)


def test_allow_list_is_current():
    used = {(m, t) for m, t, _ in _upward_edges()}
    assert set(ALLOWED) <= used, f"allowed edges no longer used: {set(ALLOWED) - used}"


@pytest.mark.parametrize("module, target, expected", [
    ("fabric.ops.arith", "fabric.nn.functional", True),
    ("fabric.backends.fused", "fabric.ops.pointwise", True),
    ("fabric.ops.arith", "fabric._special_functions", False),
    ("fabric.nn.functional._loss", "fabric.ops.reduce", False),
    ("fabric._rng.philox", "fabric.backends.fused", True),       # the Philox stream sits below the backends
    ("fabric.backends.cupy_backend", "fabric._rng.philox", False),
])
def test_layer_order(module, target, expected):
    assert (_layer(target) > _layer(module)) is expected
