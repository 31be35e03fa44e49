"""The code path of PyTorch's official GCN example (examples/gcn): a
normalized adjacency turned sparse with to_sparse(), torch.spmm/torch.sparse.mm
in each layer, Adam training, and the printed sparse tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
n, f_in, hidden, classes = 12, 6, 8, 3
edges = [(i, (i * 5 + 3) % n) for i in range(n)] + [(i, (i + 1) % n) for i in range(n)]
adj = torch.zeros(n, n)
for a, b in edges:
    adj[a, b] = adj[b, a] = 1.0
adj = adj + torch.eye(n)
deg = adj.sum(1)
d_inv_sqrt = torch.diag(deg.pow(-0.5))
adj = (d_inv_sqrt @ adj @ d_inv_sqrt).to_sparse()
print(adj.layout, adj.is_sparse, adj._nnz(), adj.shape)
print(torch.sparse_coo_tensor(adj.indices()[:, :4], adj.values()[:4], (n, n)))

x = torch.randn(n, f_in)
labels = torch.arange(n) % classes


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=True):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gc1 = GraphConv(f_in, hidden)
        self.gc2 = GraphConv(hidden, classes)

    def forward(self, x, adj_mat):
        x = F.relu(self.gc1(x, adj_mat))
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


model = GCN()
opt = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
for epoch in range(20):
    opt.zero_grad()
    out = model(x, adj)
    loss = F.nll_loss(out, labels)
    loss.backward()
    opt.step()
    if epoch % 5 == 0:
        print(epoch, round(loss.item(), 5))
print(torch.sparse.mm(adj, x).sum(0))
print(torch.sparse.sum(adj))
