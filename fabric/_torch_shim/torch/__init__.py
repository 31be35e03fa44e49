"""``torch`` in a child process of a fabric run: installs fabric's torch alias.

:func:`fabric.install_torch_alias` puts this folder's parent on
``PYTHONPATH``, so a new Python process (spawn / forkserver children, the
distributed launcher's workers) finds this package first when it imports
``torch``; it installs the alias and replaces itself with :mod:`fabric` in
``sys.modules``, which is what the importing statement then receives.
"""
import os
import sys

try:
    from fabric import _torch_alias
except ImportError:  # fabric not installed: it sits three folders above this file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    from fabric import _torch_alias

_torch_alias.install_torch_alias(force=True)
