"""``python -m fabric.run script.py [args]`` (or ``-m module [args]``): run a PyTorch program on fabric.

Installs the ``torch`` alias (see :func:`fabric.install_torch_alias`: every
``torch.<path>`` is ``fabric.<path>``, here and in every child process) and
runs the script as ``__main__`` as ``python script.py`` would (the script's
folder first on ``sys.path``), or a module as ``python -m module`` would.
Through the alias, PyTorch's own launcher runs too and its workers get the
alias: ``python -m fabric.run -m torch.distributed.run --nproc-per-node 2 train.py``.

Example::

    $ python -m fabric.run examples/mnist/main.py --epochs 1
"""
from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m fabric.run script.py [args...]\n       python -m fabric.run -m module [args...]"


def main() -> None:
    args = sys.argv[1:]
    if not args or (args[0] == "-m" and len(args) < 2):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    from ._torch_alias import fabric_module_name, install_torch_alias

    install_torch_alias()
    if args[0] == "-m":
        module = fabric_module_name(args[1]) or args[1]  # torch.distributed.run runs fabric.distributed.run
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    script = args[0]
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
