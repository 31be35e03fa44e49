"""TransformerEncoder with src_key_padding_mask; MultiheadAttention; LayerNorm."""
import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class Model(nn.Module):
    def __init__(self, vocab=30, d=16, heads=2, layers=2, classes=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = PositionalEncoding(d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, tok, pad_mask):
        h = self.enc(self.pos(self.emb(tok) * math.sqrt(16)), src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1))


torch.manual_seed(0)
tok = torch.randint(1, 30, (6, 7))
lens = torch.tensor([7, 5, 3, 6, 2, 7])
pad_mask = torch.arange(7)[None, :] >= lens[:, None]
tok[pad_mask] = 0
y = torch.tensor([0, 1, 0, 1, 1, 0])
print(pad_mask)
model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(5):
    model.train()
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tok, pad_mask), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
model.eval()
with torch.no_grad():
    print(model(tok, pad_mask))

mha = nn.MultiheadAttention(8, 2, batch_first=True)
q = torch.randn(2, 3, 8)
kv = torch.randn(2, 4, 8)
out, w = mha(q, kv, kv, key_padding_mask=torch.tensor([[False, False, True, True], [False] * 4]))
print(out.shape, w.shape)
print(w[0])
causal = nn.Transformer.generate_square_subsequent_mask(4)
print(causal)
out2, w2 = mha(kv, kv, kv, attn_mask=causal, need_weights=True, average_attn_weights=False)
print(w2.shape, w2[1, 0])
ln = nn.LayerNorm(8)
print(ln(q)[0, 0])
sdpa = nn.functional.scaled_dot_product_attention(q, kv, kv)
print(sdpa[0, 0])
print(nn.functional.scaled_dot_product_attention(kv, kv, kv, is_causal=True)[1, 1])
