"""Sparse tests seed their own draws and leave the global RNG as they found it,
so adding them does not shift the random inputs of later (unseeded) tests."""
import pytest

import fabric


@pytest.fixture(autouse=True)
def _hermetic_rng():
    state = fabric.get_rng_state()
    fabric.manual_seed(0)
    yield
    fabric.set_rng_state(state)
