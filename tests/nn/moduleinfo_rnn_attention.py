"""ModuleInfo entries for recurrent layers, attention and transformers
(family "rnn_attention").

Sizes are tiny because gradcheck perturbs every input and parameter element;
composite stacks (two-layer RNNs, TransformerEncoder/Decoder, Transformer)
skip gradcheck (their parts are gradchecked; the composites are compared with
PyTorch).
Dropout between RNN layers and inside attention is exercised with
``random=True`` entries (PyTorch's CPU stream is reproduced, so they are
compared with PyTorch too).  ``Packed*`` / ``*States`` entries wrap a
recurrent module so that one output tensor covers the packed path (through
``pack_padded_sequence`` / ``pad_packed_sequence`` with unsorted lengths) and
the final states.
"""
from __future__ import annotations

import numpy as np
from moduleinfo import Const, ModuleInfo, ModuleInput


def randn(rng, *shape, dtype):
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


# --- recurrent ---------------------------------------------------------------------------------

def _rnn_inputs(cls):
    def gen(dtype, rng):
        lstm = cls == "LSTM"
        out = [
            ModuleInput((2, 3), {}, (randn(rng, 4, 2, 2, dtype=dtype),), output_shape=(4, 2, 3)),
            ModuleInput((2, 3), {"num_layers": 2, "bidirectional": True}, (randn(rng, 3, 2, 2, dtype=dtype),),
                        output_shape=(3, 2, 6), desc="2layers_bidirectional", gradcheck=cls == "RNN"),
            ModuleInput((2, 3), {"batch_first": True, "bias": False}, (randn(rng, 2, 4, 2, dtype=dtype),),
                        output_shape=(2, 4, 3), desc="batch_first_no_bias"),
            ModuleInput((2, 3), {}, (randn(rng, 3, 2, dtype=dtype),), output_shape=(3, 3), desc="unbatched"),
        ]
        h0 = randn(rng, 2, 2, 3, dtype=dtype)
        state = (h0, randn(rng, 2, 2, 3, dtype=dtype)) if lstm else h0
        out.append(ModuleInput((2, 3), {"bidirectional": True}, (randn(rng, 3, 2, 2, dtype=dtype), state),
                               output_shape=(3, 2, 6), desc="initial_state"))
        if lstm:
            out.append(ModuleInput((2, 3), {"proj_size": 2, "num_layers": 2}, (randn(rng, 3, 2, 2, dtype=dtype),),
                                   output_shape=(3, 2, 2), desc="proj_size"))
        if cls == "RNN":
            out.append(ModuleInput((2, 3), {"nonlinearity": "relu", "num_layers": 2},
                                   (randn(rng, 3, 2, 2, dtype=dtype),), output_shape=(3, 2, 3), desc="relu"))
        return out
    return gen


def _rnn_dropout_inputs(dtype, rng):
    return [ModuleInput((2, 3), {"num_layers": 3, "dropout": 0.4}, (randn(rng, 3, 2, 2, dtype=dtype),),
                        output_shape=(3, 2, 3))]


def _with_state_make(cls, packed):
    """A module returning one tensor: the (padded) output and the final states, flattened."""
    def make(nn, *args, **kwargs):
        class Packed(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(nn, cls)(*args, **kwargs)

            def forward(self, x, lengths=None, hx=None):
                rnn = nn.utils.rnn
                bf = self.rnn.batch_first
                if packed:
                    x = rnn.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=False)
                out, h = self.rnn(x, hx)
                if packed:
                    out, _ = rnn.pad_packed_sequence(out, batch_first=bf, total_length=5)
                states = list(h) if isinstance(h, tuple) else [h]
                parts = [out.reshape(-1)] + [s.reshape(-1) for s in states]
                return _cat(nn, parts)

        Packed.__name__ = f"{'Packed' if packed else 'Stateful'}{cls}"
        return Packed()
    return make


def _cat(nn, parts):
    import importlib

    lib = importlib.import_module(nn.__name__.split(".")[0])
    return lib.cat(parts)


def _packed_inputs(cls):
    # gradcheck runs on the one-layer variants (the fused layer's gradients); the two-layer one is
    # compared with PyTorch only (stacking is plain Tensor composition)
    def gen(dtype, rng):
        lstm = cls == "LSTM"
        lengths = np.array([3, 5, 1], dtype=np.int64)
        x = randn(rng, 5, 3, 2, dtype=dtype)

        def n_state(layers, dirs, h=3, p=3):
            return layers * dirs * 3 * (p + (h if lstm else 0))

        h0 = randn(rng, 2, 3, 3, dtype=dtype)
        state = (h0, randn(rng, 2, 3, 3, dtype=dtype)) if lstm else h0
        out = [
            ModuleInput((2, 3), {"num_layers": 2, "bidirectional": True}, (x, lengths),
                        output_shape=(5 * 3 * 6 + n_state(2, 2),), gradcheck=False),
            ModuleInput((2, 3), {"bidirectional": True}, (x, lengths, state),
                        output_shape=(5 * 3 * 6 + n_state(1, 2),), desc="initial_state"),
            ModuleInput((2, 3), {"batch_first": True}, (randn(rng, 3, 5, 2, dtype=dtype), lengths),
                        output_shape=(5 * 3 * 3 + n_state(1, 1),), desc="batch_first"),
        ]
        if lstm:
            out.append(ModuleInput((2, 3), {"proj_size": 2, "bidirectional": True}, (x, lengths),
                                   output_shape=(5 * 3 * 4 + n_state(1, 2, p=2),), desc="proj_size"))
        return out
    return gen


def _stateful_inputs(cls):
    def gen(dtype, rng):
        lstm = cls == "LSTM"
        n_state = 2 * 3 * 3 * (2 if lstm else 1)
        return [ModuleInput((2, 3), {"bidirectional": True}, (randn(rng, 4, 3, 2, dtype=dtype),),
                            output_shape=(4 * 3 * 6 + n_state,))]
    return gen


def _cell_inputs(cls):
    def gen(dtype, rng):
        lstm = cls == "LSTMCell"
        state = randn(rng, 2, 3, dtype=dtype)
        state = (state, randn(rng, 2, 3, dtype=dtype)) if lstm else state
        out = [
            ModuleInput((2, 3), {}, (randn(rng, 2, 2, dtype=dtype),), output_shape=(2, 3)),
            ModuleInput((2, 3), {}, (randn(rng, 2, 2, dtype=dtype), state), output_shape=(2, 3), desc="state"),
            ModuleInput((2, 3), {"bias": False}, (randn(rng, 2, dtype=dtype),), output_shape=(3,), desc="unbatched"),
        ]
        if cls == "RNNCell":
            out.append(ModuleInput((2, 3), {"nonlinearity": "relu"}, (randn(rng, 2, 2, dtype=dtype), state),
                                   output_shape=(2, 3), desc="relu"))
        return out
    return gen


# --- attention -----------------------------------------------------------------------------------

def _mha_inputs(dtype, rng):
    x = randn(rng, 3, 2, 4, dtype=dtype)
    kpm = np.array([[False, False, True], [False, False, False]])
    bool_mask = np.array([[False, True, True], [False, False, True], [False, False, False]])
    float_mask = Const(randn(rng, 3, 3, dtype=dtype))
    return [
        ModuleInput((4, 2), {}, (x, x, x), output_shape=(3, 2, 4)),
        ModuleInput((4, 2), {"batch_first": True},
                    (randn(rng, 2, 3, 4, dtype=dtype), randn(rng, 2, 5, 4, dtype=dtype), randn(rng, 2, 5, 4, dtype=dtype)),
                    output_shape=(2, 3, 4), desc="batch_first_cross"),
        ModuleInput((4, 2), {}, (x, x, x), {"key_padding_mask": kpm}, output_shape=(3, 2, 4), desc="key_padding"),
        ModuleInput((4, 2), {}, (x, x, x), {"attn_mask": bool_mask, "need_weights": False}, output_shape=(3, 2, 4),
                    desc="bool_mask_no_weights"),
        ModuleInput((4, 2), {"bias": False}, (x, x, x), {"attn_mask": float_mask, "average_attn_weights": False},
                    output_shape=(3, 2, 4), desc="float_mask_no_bias"),
        ModuleInput((4, 2), {"kdim": 3, "vdim": 5, "add_bias_kv": True, "add_zero_attn": True},
                    (x, randn(rng, 4, 2, 3, dtype=dtype), randn(rng, 4, 2, 5, dtype=dtype)),
                    {"key_padding_mask": np.array([[False, False, True, True], [False] * 4])},
                    output_shape=(3, 2, 4), desc="kdim_vdim_bias_kv_zero_attn"),
        ModuleInput((4, 2), {}, (x[:, 0], x[:, 0], x[:, 0]), output_shape=(3, 4), desc="unbatched"),
        ModuleInput((4, 2), {}, (x, x, x), {"attn_mask": Const(np.triu(np.full((3, 3), -np.inf, dtype), 1)),
                                            "is_causal": True, "need_weights": False},
                    output_shape=(3, 2, 4), desc="causal_hint"),
    ]


def _mha_weights_inputs(dtype, rng):
    # the weights do not depend on the value: it is a constant here
    q, k, v = randn(rng, 3, 2, 4, dtype=dtype), randn(rng, 3, 2, 4, dtype=dtype), Const(randn(rng, 3, 2, 4, dtype=dtype))
    return [ModuleInput((4, 2), {}, (q, k, v), output_shape=(2, 3, 3)),
            ModuleInput((4, 2), {}, (q, k, v), {"average_attn_weights": False}, output_shape=(2, 2, 3, 3),
                        desc="per_head")]


def _mha_dropout_inputs(dtype, rng):
    x = randn(rng, 3, 2, 4, dtype=dtype)
    return [ModuleInput((4, 2), {"dropout": 0.3}, (x, x, x), output_shape=(3, 2, 4)),
            ModuleInput((4, 2), {"dropout": 0.3}, (x, x, x), {"need_weights": False}, output_shape=(3, 2, 4),
                        desc="sdpa")]


# --- transformers ----------------------------------------------------------------------------------

def _encoder_layer_inputs(dtype, rng):
    x = randn(rng, 3, 2, 4, dtype=dtype)
    kpm = np.array([[False, False, True], [False, False, False]])
    causal = Const(np.triu(np.full((3, 3), -np.inf, dtype), 1))
    return [
        ModuleInput((4, 2, 6, 0.0), {}, (x,), output_shape=(3, 2, 4)),
        ModuleInput((4, 2, 6, 0.0), {"activation": "gelu", "norm_first": True}, (x,), {"src_mask": causal},
                    output_shape=(3, 2, 4), desc="gelu_norm_first_mask"),
        ModuleInput((4, 2, 6, 0.0), {"batch_first": True, "bias": False, "layer_norm_eps": 1e-3},
                    (randn(rng, 2, 3, 4, dtype=dtype),), {"src_key_padding_mask": kpm}, output_shape=(2, 3, 4),
                    desc="batch_first_padding_no_bias"),
        ModuleInput((4, 2, 6, 0.0), {}, (x[:, 0],), output_shape=(3, 4), desc="unbatched"),
    ]


def _encoder_layer_dropout_inputs(dtype, rng):
    return [ModuleInput((4, 2, 6, 0.2), {}, (randn(rng, 3, 2, 4, dtype=dtype),), output_shape=(3, 2, 4))]


def _decoder_layer_inputs(dtype, rng):
    tgt, mem = randn(rng, 3, 2, 4, dtype=dtype), randn(rng, 5, 2, 4, dtype=dtype)
    causal = Const(np.triu(np.full((3, 3), -np.inf, dtype), 1))
    return [
        ModuleInput((4, 2, 6, 0.0), {}, (tgt, mem), {"tgt_mask": causal}, output_shape=(3, 2, 4)),
        ModuleInput((4, 2, 6, 0.0), {"norm_first": True, "activation": "gelu"}, (tgt, mem),
                    {"memory_key_padding_mask": np.array([[False] * 4 + [True], [False] * 5])},
                    output_shape=(3, 2, 4), desc="norm_first_memory_padding"),
    ]


def _encoder_make(nn, num_layers, with_norm, **layer_kwargs):
    layer = nn.TransformerEncoderLayer(4, 2, 6, 0.0, **layer_kwargs)
    return nn.TransformerEncoder(layer, num_layers, nn.LayerNorm(4) if with_norm else None,
                                 enable_nested_tensor=False)


def _encoder_inputs(dtype, rng):
    return [
        ModuleInput((2, True), {}, (randn(rng, 3, 2, 4, dtype=dtype),), output_shape=(3, 2, 4), gradcheck=False),
        ModuleInput((1, False), {"batch_first": True}, (randn(rng, 2, 3, 4, dtype=dtype),),
                    {"src_key_padding_mask": np.array([[False, False, True], [False, False, False]])},
                    output_shape=(2, 3, 4), desc="padding"),
    ]


def _decoder_make(nn, num_layers, with_norm):
    return nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6, 0.0), num_layers,
                                 nn.LayerNorm(4) if with_norm else None)


def _decoder_inputs(dtype, rng):
    return [ModuleInput((2, True), {}, (randn(rng, 3, 2, 4, dtype=dtype), randn(rng, 4, 2, 4, dtype=dtype)),
                        output_shape=(3, 2, 4), gradcheck=False)]


def _transformer_inputs(dtype, rng):
    causal = Const(np.triu(np.full((3, 3), -np.inf, dtype), 1))
    return [
        ModuleInput((4, 2, 1, 1, 6, 0.0), {}, (randn(rng, 4, 2, 4, dtype=dtype), randn(rng, 3, 2, 4, dtype=dtype)),
                    {"tgt_mask": causal}, output_shape=(3, 2, 4), gradcheck=False),
        ModuleInput((4, 2, 1, 1, 6, 0.0), {"batch_first": True, "norm_first": True},
                    (randn(rng, 2, 4, 4, dtype=dtype), randn(rng, 2, 3, 4, dtype=dtype)),
                    {"src_key_padding_mask": np.array([[False] * 3 + [True], [False] * 4])},
                    output_shape=(2, 3, 4), desc="batch_first_norm_first", gradcheck=False),
    ]


_DROPOUT_NOTE = ("dropout masks equal PyTorch's for the same seed (the CPU stream is reproduced); with batch_first "
                 "the attention output is non-contiguous and F.dropout draws in logical order where PyTorch draws in "
                 "memory order, so batch_first + dropout in training differs")


def _first(gen):
    """Only the first sample of ``gen`` (for the gradgradcheck entries: it is O(numel^2))."""
    return lambda dtype, rng: gen(dtype, rng)[:1]


def _rest(gen):
    return lambda dtype, rng: gen(dtype, rng)[1:]


MODULES = [
    ModuleInfo("RNN", _first(_rnn_inputs("RNN")), output_index=0, gradgrad=True),
    ModuleInfo("RNN", _rest(_rnn_inputs("RNN")), output_index=0),
    ModuleInfo("LSTM", _rnn_inputs("LSTM"), output_index=0),
    ModuleInfo("GRU", _rnn_inputs("GRU"), output_index=0),
    ModuleInfo("LSTM", _rnn_dropout_inputs, output_index=0, random=True, train_eval_differ=True),
    ModuleInfo("GRU", _rnn_dropout_inputs, output_index=0, random=True, train_eval_differ=True),
    ModuleInfo("PackedRNN", _packed_inputs("RNN"), make=_with_state_make("RNN", True)),
    ModuleInfo("PackedLSTM", _packed_inputs("LSTM"), make=_with_state_make("LSTM", True)),
    ModuleInfo("PackedGRU", _packed_inputs("GRU"), make=_with_state_make("GRU", True)),
    ModuleInfo("StatefulLSTM", _stateful_inputs("LSTM"), make=_with_state_make("LSTM", False)),
    ModuleInfo("StatefulGRU", _stateful_inputs("GRU"), make=_with_state_make("GRU", False)),
    ModuleInfo("RNNCell", _cell_inputs("RNNCell"), gradgrad=True),
    ModuleInfo("LSTMCell", _cell_inputs("LSTMCell"), output_index=0, gradgrad=True),
    ModuleInfo("GRUCell", _cell_inputs("GRUCell"), gradgrad=True),
    ModuleInfo("MultiheadAttention", _first(_mha_inputs), output_index=0, gradgrad=True),
    ModuleInfo("MultiheadAttention", _rest(_mha_inputs), output_index=0),
    ModuleInfo("MultiheadAttention", _mha_weights_inputs, output_index=1),
    ModuleInfo("MultiheadAttention", _mha_dropout_inputs, output_index=0, random=True, train_eval_differ=True,
               notes=_DROPOUT_NOTE),
    ModuleInfo("TransformerEncoderLayer", _first(_encoder_layer_inputs), gradgrad=True),
    ModuleInfo("TransformerEncoderLayer", _rest(_encoder_layer_inputs)),
    ModuleInfo("TransformerEncoderLayer", _encoder_layer_dropout_inputs, random=True, train_eval_differ=True),
    ModuleInfo("TransformerDecoderLayer", _decoder_layer_inputs),
    ModuleInfo("TransformerEncoder", _encoder_inputs, make=_encoder_make),
    ModuleInfo("TransformerDecoder", _decoder_inputs, make=_decoder_make),
    ModuleInfo("Transformer", _transformer_inputs, atol=1e-5, grad_atol=2e-4),
]
