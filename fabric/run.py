"""``python -m fabric.run script.py [args]``: run a PyTorch script on fabric.

Installs the ``torch`` alias (see :func:`fabric.install_torch_alias`: every
``torch.<path>`` is ``fabric.<path>``, here and in child processes) and runs
the script as ``__main__``, as ``python script.py`` would: the script's
folder comes first on ``sys.path``.

Example::

    $ python -m fabric.run examples/mnist/main.py --epochs 1
"""
from __future__ import annotations

import os
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: python -m fabric.run script.py [args...]", file=sys.stderr)
        raise SystemExit(2)
    from ._torch_alias import install_torch_alias

    install_torch_alias()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
