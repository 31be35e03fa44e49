"""Run several compat scripts in one interpreter and write their outputs as JSON.

``python _runner.py OUT.json script.py [script.py@float64 ...]`` runs each
script as ``__main__`` (``runpy``), capturing its stdout and any exception;
``python -m fabric.run _runner.py ...`` does the same on fabric (the alias is
installed before the scripts import ``torch``).  One interpreter for all
scripts saves an import of torch per script.  Global state a script may change
(print options, default dtype, grad mode) is reset between scripts; a script
with ``@float64`` runs with float64 as the default dtype.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import traceback


def _reset(torch):
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)


def main(argv):
    import torch

    out_path, specs = argv[0], argv[1:]
    results = {}
    for spec in specs:
        path, _, dtype = spec.partition("@")
        buf = io.StringIO()
        error = None
        _reset(torch)
        if dtype:
            torch.set_default_dtype(getattr(torch, dtype))
        old_argv, old_cwd = sys.argv, os.getcwd()
        sys.argv = [path]
        os.chdir(os.path.dirname(os.path.abspath(path)))
        try:
            with contextlib.redirect_stdout(buf):
                runpy.run_path(path, run_name="__main__")
        except BaseException:
            error = traceback.format_exc()
        finally:
            sys.argv = old_argv
            os.chdir(old_cwd)
        results[spec] = {"stdout": buf.getvalue(), "error": error}
    _reset(torch)
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1:])
