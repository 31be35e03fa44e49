"""Run unmodified PyTorch scripts on fabric: ``import torch.<path>`` is ``fabric.<path>``.

``import fabric as torch`` covers code that only uses attribute access
(``torch.nn.Linear``). Statements like ``import torch.nn as nn`` or
``from torch.utils.data.sampler import Sampler`` name *modules*, so
:func:`install_torch_alias` puts an import hook (a meta-path finder) in front
of Python's import system:

* ``torch`` is :mod:`fabric`, and ``torch.<path>`` is the module object
  ``fabric.<path>`` itself, so a class is the same object whichever path
  imported it (``torch.nn.modules.module.Module is torch.nn.Module``);
* ``torchvision.<path>`` is ``fabric.vision.<path>``;
* where PyTorch's layout differs from fabric's, :data:`PATH_MAP` names the
  fabric module (``torch.utils.data`` is ``fabric.data``,
  ``torch.optim.adamw`` is ``fabric.optim.adam`` ...);
* a PyTorch module fabric does not have raises ``ModuleNotFoundError``
  naming it (see ``docs/compat.md`` for what exists).

The alias also reaches every new Python process started from this one
(``spawn`` / ``forkserver`` children, ``mp.spawn``, DataLoader workers, the
distributed launcher, ``subprocess`` runs of ``python``): it prepends
fabric's ``_torch_shim`` folder to ``PYTHONPATH`` and ``sys.path``, whose ``torch`` and
``torchvision`` packages install the alias in the child as its first import.
(A child started with ``python -E`` or ``-I`` ignores ``PYTHONPATH``.)
``python -m fabric.run script.py`` runs a script with the alias installed.

Example::

    >>> import fabric
    >>> fabric.install_torch_alias()          # doctest: +SKIP
    >>> import torch.nn.modules.module as m    # doctest: +SKIP
    >>> m.Module is fabric.nn.Module           # doctest: +SKIP
    True
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys

__all__ = ["install_torch_alias", "uninstall_torch_alias", "fabric_module_name", "PATH_MAP", "ROOTS"]

#: top-level PyTorch packages and the fabric package each one is
ROOTS = {"torch": "fabric", "torchvision": "fabric.vision"}

#: PyTorch module paths that live elsewhere in fabric (the longest matching
#: prefix wins; everything not listed maps path for path)
PATH_MAP = {
    "torch.utils.data": "fabric.data",
    "torch.optim.adamw": "fabric.optim.adam",
    "torch.optim.adamax": "fabric.optim.adam",
    "torch.optim.nadam": "fabric.optim.adam",
    "torch.optim.radam": "fabric.optim.adam",
    "torch.optim.adagrad": "fabric.optim.rmsprop",
    "torch.optim.adadelta": "fabric.optim.rmsprop",
    "torch.optim.rprop": "fabric.optim.rmsprop",
    "torch.optim.asgd": "fabric.optim.rmsprop",
}

SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_shim")


def fabric_module_name(name: str) -> str | None:
    """The fabric module that the PyTorch module ``name`` is, or None when
    ``name`` is not under ``torch`` / ``torchvision``.

    Example::

        >>> fabric_module_name("torch.utils.data.sampler")
        'fabric.data.sampler'
        >>> fabric_module_name("torchvision.transforms")
        'fabric.vision.transforms'
    """
    prefix = name
    while True:
        target = PATH_MAP.get(prefix) or ROOTS.get(prefix)
        if target is not None:
            return target + name[len(prefix):]
        if "." not in prefix:
            return None
        prefix = prefix.rpartition(".")[0]


def _torch_name(fabric_name: str) -> str:
    """The PyTorch spelling under which an already imported fabric module is mirrored."""
    if fabric_name == "fabric.vision" or fabric_name.startswith("fabric.vision."):
        return "torchvision" + fabric_name[len("fabric.vision"):]
    if fabric_name == "fabric.data" or fabric_name.startswith("fabric.data."):
        return "torch.utils.data" + fabric_name[len("fabric.data"):]
    return "torch" + fabric_name[len("fabric"):]


class _AliasLoader(importlib.abc.Loader):
    """Hands out the already imported fabric module instead of making a new one."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # importlib stamped the torch spec on the module; it stays fabric's own
        module.__spec__ = self.spec


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """The meta-path finder behind :func:`install_torch_alias`."""

    def find_spec(self, fullname, path=None, target=None):
        fabric_name = fabric_module_name(fullname)
        if fabric_name is None:
            return None
        try:
            module = importlib.import_module(fabric_name)
        except ModuleNotFoundError as e:
            if e.name is not None and (fabric_name == e.name or fabric_name.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named {fullname!r}: fabric does not implement the PyTorch module {fullname} "
                    f"(there is no {fabric_name}); docs/compat.md lists what fabric covers",
                    name=fullname) from None
            raise
        # the module being found must stay out of sys.modules until the import system puts it there
        # (finding it there, importlib would reload it from fabric's own spec: a second module object)
        _mirror_loaded(skip=fullname)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))
        if hasattr(module, "__path__"):
            spec.submodule_search_locations = list(module.__path__)
        return spec


_FINDER = TorchAliasFinder()


def _mirror_loaded(skip: str | None = None) -> None:
    """Register every imported fabric module under its PyTorch name too.

    A hit in ``sys.modules`` skips the import machinery, which would set the
    module as an attribute of its parent: ``fabric.nn.utils.spectral_norm``
    (the function) must not be replaced by the module of the same name."""
    modules = sys.modules
    for name, module in list(modules.items()):
        if name.startswith("fabric.") and module is not None:
            alias = _torch_name(name)
            if alias != skip:
                modules.setdefault(alias, module)


def _shim_on_path(add: bool) -> None:
    """Put the shim first on ``PYTHONPATH`` (new interpreters) and ``sys.path``
    (which spawn and forkserver children copy from this process)."""
    while SHIM_DIR in sys.path:
        sys.path.remove(SHIM_DIR)
    if add:
        sys.path.insert(0, SHIM_DIR)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SHIM_DIR]
    if add:
        parts.insert(0, SHIM_DIR)
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        os.environ.pop("PYTHONPATH", None)


def install_torch_alias(force: bool = False) -> None:
    """Make ``import torch`` (and every ``torch.<path>``, ``torchvision.<path>``)
    resolve to fabric, here and in child processes.

    Raises RuntimeError if the real torch is already imported, unless
    ``force`` (then fabric replaces it in ``sys.modules``)."""
    import fabric

    current = sys.modules.get("torch")
    if current is not None and current is not fabric and not force:
        raise RuntimeError("the real 'torch' is already imported; install the alias before importing torch "
                           "(or pass force=True)")
    if force:
        for name in [n for n in sys.modules if n.partition(".")[0] in ROOTS]:
            if not getattr(sys.modules[name], "__name__", "").startswith("fabric"):
                del sys.modules[name]
    sys.modules["torch"] = fabric
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    _mirror_loaded()
    _shim_on_path(True)


def uninstall_torch_alias() -> None:
    """Undo :func:`install_torch_alias`: ``torch`` is PyTorch again (if installed)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n.partition(".")[0] in ROOTS]:
        if getattr(sys.modules[name], "__name__", "").startswith("fabric"):
            del sys.modules[name]
    _shim_on_path(False)
