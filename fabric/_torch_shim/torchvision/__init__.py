"""``torchvision`` in a child process of a fabric run: ``fabric.vision`` (see
``_torch_shim/torch/__init__.py``)."""
import importlib
import sys

import torch  # noqa: F401  (the shim next to this one: installs the alias)

del sys.modules["torchvision"]
sys.modules["torchvision"] = importlib.import_module("torchvision")
