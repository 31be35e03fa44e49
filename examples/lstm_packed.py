"""An LSTM over variable-length sequences with packing — PyTorch code on fabric.

Task: each sequence is random tokens of length 5..40; its label is its
last token modulo 5. Sequences are padded, packed with pack_padded_sequence
(enforce_sorted=False), and classified from the LSTM's final hidden state,
which packing takes at each sequence's own last step — without packing the
final state would come after the padding and the task could not be learned.

    python examples/lstm_packed.py [--steps 300]
"""
from __future__ import annotations

import argparse
import time

import fabric as torch
from fabric import nn
from fabric.nn.utils.rnn import pack_padded_sequence, pad_sequence


class Classifier(nn.Module):
    def __init__(self, vocab=10, embed=16, hidden=64, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab + 1, embed, padding_idx=0)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


def batch(n, generator):
    lengths = torch.randint(5, 41, (n,), generator=generator)
    seqs = [torch.randint(1, 11, (int(L),), generator=generator) for L in lengths]
    labels = torch.stack([s[-1] for s in seqs]) % 5
    return pad_sequence(seqs, batch_first=True), lengths, labels


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    model = Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        tokens, lengths, labels = batch(args.batch_size, g)
        loss = loss_fn(model(tokens, lengths), labels)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == 1:
            print(f"step {step:4d}  loss {loss.item():.4f}  {step / (time.perf_counter() - t0):.1f} steps/s")
    model.eval()
    with torch.no_grad():
        tokens, lengths, labels = batch(512, g)
        acc = (model(tokens, lengths).argmax(1) == labels).float().mean().item()
    print(f"held-out accuracy: {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()
