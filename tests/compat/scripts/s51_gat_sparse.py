"""The code path of a GAT layer as in PyTorch's official GAT example: attention
over the edges of a dense adjacency, then the same graph as a sparse tensor
multiplied with torch.sparse.mm, gradients flowing to the sparse values."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1)
n, f_in, f_out = 10, 5, 4
adj = torch.eye(n)
for i in range(n):
    adj[i, (i + 2) % n] = adj[(i + 2) % n, i] = 1.0


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, leaky_relu_slope=0.2):
        super().__init__()
        self.W = nn.Parameter(torch.empty(in_features, out_features))
        self.a = nn.Parameter(torch.empty(2 * out_features, 1))
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.out_features = out_features

    def forward(self, h, adj_mat):
        wh = torch.mm(h, self.W)
        s1 = torch.matmul(wh, self.a[: self.out_features, :])
        s2 = torch.matmul(wh, self.a[self.out_features:, :])
        e = self.leakyrelu(s1 + s2.T)
        attention = torch.where(adj_mat > 0, e, torch.full_like(e, -9e15))
        attention = F.softmax(attention, dim=1)
        # the attention matrix is mostly zeros: multiply it as a sparse tensor
        sparse_att = attention.to_sparse()
        return torch.sparse.mm(sparse_att, wh)


layer = GraphAttentionLayer(f_in, f_out)
h = torch.randn(n, f_in)
out = layer(h, adj)
print(out.shape, out.sum(1))
out.pow(2).sum().backward()
print(layer.W.grad.sum(0))
print(layer.a.grad.view(-1))

idx = adj.to_sparse().indices()
vals = torch.rand(idx.shape[1], requires_grad=True)
s = torch.sparse_coo_tensor(idx, vals, (n, n))
y = torch.sparse.mm(s, h)
y.sum().backward()
print(vals.grad[:6])
