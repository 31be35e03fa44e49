"""Regression tests for mismatches found by the compat scripts (tests/compat/scripts)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric


@pytest.mark.torch
@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (0, 2, 1)])
def test_dropout_mask_of_permuted_input_drawn_in_memory_order(perm):
    # torch: empty_like keeps a dense input's strides and bernoulli_ fills in memory
    # order, e.g. the transposed output of a batch_first MultiheadAttention
    import torch

    base = np.arange(1, 25, dtype=np.float32).reshape(2, 3, 4)
    torch.manual_seed(0)
    ref = torch.nn.functional.dropout(torch.from_numpy(base).permute(*perm), 0.5)
    fabric.manual_seed(0)
    got = fabric.nn.functional.dropout(fabric.from_numpy(base).permute(*perm), 0.5)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    # a strided (non-dense) input draws in C order of its shape
    torch.manual_seed(0)
    ref = torch.nn.functional.dropout(torch.from_numpy(base)[:, ::2], 0.5)
    fabric.manual_seed(0)
    got = fabric.nn.functional.dropout(fabric.from_numpy(base)[:, ::2], 0.5)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


@pytest.mark.torch
def test_transformer_encoder_layer_with_padding_mask_trains_like_torch():
    import torch

    def run(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.5, batch_first=True)
        x = lib.randn(2, 3, 4)
        mask = lib.tensor([[False, False, True], [False, False, False]])
        lib.manual_seed(2)
        return layer(x, src_key_padding_mask=mask).detach().numpy()

    np.testing.assert_allclose(run(fabric), run(torch), rtol=1e-5, atol=1e-6)
