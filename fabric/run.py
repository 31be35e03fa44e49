"""``python -m fabric.run script.py [args]``: run a PyTorch script on fabric.

Installs the ``torch`` alias (see :func:`fabric.install_torch_alias`) and runs
the script as ``__main__``.
"""
from __future__ import annotations

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
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
