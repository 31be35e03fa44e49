"""Embedding + LSTM with pack_padded_sequence for sequence classification."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class Classifier(nn.Module):
    def __init__(self, vocab=20, emb=8, hidden=12, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, tokens, lengths):
        e = self.emb(tokens)
        packed = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        h = torch.cat([h[-2], h[-1]], dim=1)
        return self.out(h), out


torch.manual_seed(0)
seqs = [torch.randint(1, 20, (int(n),)) for n in torch.randint(2, 9, (12,))]
lengths = torch.tensor([len(s) for s in seqs])
tokens = pad_sequence(seqs, batch_first=True)
labels = torch.randint(0, 3, (12,))
print(tokens.shape, lengths)
print(tokens[:3])
model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for epoch in range(5):
    opt.zero_grad()
    logits, packed_out = model(tokens, lengths)
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
padded, lens = pad_packed_sequence(packed_out, batch_first=True)
print(padded.shape, lens)
print(padded[0, :3, :4])
print(model.emb.weight[0])

gru = nn.GRU(4, 5, num_layers=2, batch_first=False)
x = torch.randn(6, 2, 4)
o, h = gru(x)
print(o.shape, h.shape, o[-1])
cell = nn.LSTMCell(4, 3)
hx, cx = torch.zeros(2, 3), torch.zeros(2, 3)
for t in range(3):
    hx, cx = cell(x[t], (hx, cx))
print(hx)
rnn = nn.RNN(4, 3, nonlinearity="tanh")
print(rnn(x)[1])
packed = pack_padded_sequence(torch.randn(3, 4, 2), torch.tensor([4, 2, 1]), batch_first=True)
print(packed.batch_sizes, packed.data.shape)
