"""fabric's CPU caching allocator (fabric/backends/_malloc.py): freed NumPy temporaries are
reused instead of being returned to the kernel and faulted in again.  Page faults are
counted (getrusage), not timed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "confstr")
                                or "glibc" not in (os.confstr("CS_GNU_LIBC_VERSION") or "").lower(),
                                reason="the allocator settings are glibc's")

CODE = """
import resource, numpy as np, fabric
from fabric.backends import _malloc
def step():
    temps = [np.ones(300_000) for _ in range(40)]   # 40 temporaries of 2.4 MB
    del temps
step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(_malloc.configure(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5)
"""


def _run(allocator):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}   # glibc's own defaults
    env.update(PYTHONPATH=os.pathsep.join(sys.path), FABRIC_CPU_ALLOCATOR=allocator)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True)
    configured, faults = out.stdout.split()
    return configured == "True", float(faults)


def test_freed_temporaries_are_reused_without_page_faults():
    configured, faults = _run("cached")
    assert configured
    # 96 MB of temporaries per step would be ~23,000 faults if the memory went back to the kernel
    assert faults < 100


def test_system_allocator_opt_out():
    configured, faults = _run("system")
    assert not configured
    assert faults > 1000   # glibc's defaults: the memory is unmapped and faulted in again each step
