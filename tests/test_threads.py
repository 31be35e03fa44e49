"""set_num_threads / get_num_threads control NumPy's BLAS threads."""
from __future__ import annotations

import pytest

import fabric


def test_set_and_get_num_threads():
    before = fabric.get_num_threads()
    try:
        fabric.set_num_threads(1)
        assert fabric.get_num_threads() == 1
    finally:
        fabric.set_num_threads(before)
    assert fabric.get_num_threads() == before
    with pytest.raises(RuntimeError, match="positive"):
        fabric.set_num_threads(0)
    fabric.set_num_interop_threads(2)
    assert fabric.get_num_interop_threads() == 2
