"""A character-level GPT trained on a text file — PyTorch code run on fabric.

    python examples/char_gpt.py                          # Shakespeare's sonnets (in the repo)
    python examples/char_gpt.py --text my.txt --steps 2000

Prints the loss and a generated sample as it learns.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import fabric as torch
from fabric import nn
from fabric.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, context, dropout):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, d_model, n_head, context, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, context, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context=64, d_model=128, n_layer=4, n_head=4, dropout=0.1):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_head, context, dropout) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx, targets=None):
        T = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(T))
        logits = self.head(self.ln(self.blocks(x)))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, n, temperature=0.8):
        for _ in range(n):
            logits, _ = self(idx[:, -self.context:])
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", default=os.path.join(HERE, "data", "sonnets.txt"))
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--sample-every", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    model = GPT(len(chars), args.context, args.d_model, args.layers, args.heads)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    print(f"{len(text)} characters, vocabulary {len(chars)}, "
          f"{sum(p.numel() for p in model.parameters())} parameters")
    t0 = time.perf_counter()
    losses = []
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(data) - args.context - 1, (args.batch_size,))
        offsets = torch.arange(args.context)
        x = data[ix[:, None] + offsets]
        y = data[ix[:, None] + offsets + 1]
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == 1:
            print(f"step {step:5d}  loss {sum(losses[-50:]) / len(losses[-50:]):.4f}  "
                  f"{step / (time.perf_counter() - t0):.2f} steps/s")
        if step % args.sample_every == 0 or step == args.steps:
            model.eval()
            start = torch.tensor([[stoi[c] for c in "Shall "]], dtype=torch.long) if all(
                c in stoi for c in "Shall ") else torch.zeros(1, 1, dtype=torch.long)
            out = model.generate(start, 160)[0].tolist()
            print("---- sample ----\n" + "".join(chars[i] for i in out) + "\n----------------")
            model.train()
    return losses


if __name__ == "__main__":
    main()
