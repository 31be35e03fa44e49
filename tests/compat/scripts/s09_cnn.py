"""CNN classifier: Conv/BatchNorm/Dropout/MaxPool/AdaptiveAvgPool, Adam, CE with label smoothing, eval/train."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d((1, 1))
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.gap(x).flatten(1)
        return self.fc(self.drop(x))


torch.manual_seed(0)
X = torch.randn(32, 1, 12, 12)
y = torch.randint(0, 4, (32,))
X[y == 1, :, :6] += 1.0
X[y == 2, :, :, :6] -= 1.0
net = Net()
print(net)
opt = torch.optim.Adam(net.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=1e-4)
crit = nn.CrossEntropyLoss(label_smoothing=0.1)
for epoch in range(4):
    net.train()
    perm = torch.randperm(32)
    tot = 0.0
    for i in range(0, 32, 8):
        idx = perm[i:i + 8]
        opt.zero_grad()
        out = net(X[idx])
        loss = crit(out, y[idx])
        loss.backward()
        opt.step()
        tot += loss.item()
    net.eval()
    with torch.no_grad():
        logits = net(X)
        acc = (logits.argmax(1) == y).float().mean().item()
    print(f"epoch {epoch}: loss={tot / 4:.5f} acc={acc:.4f}")
print(net.bn1.running_mean, net.bn1.running_var, net.bn1.num_batches_tracked)
print(logits[:3])
print(F.softmax(logits[:2], dim=1))
print(F.cross_entropy(logits, y, reduction="none")[:4])
print(F.nll_loss(F.log_softmax(logits, 1), y, weight=torch.tensor([1.0, 2.0, 1.0, 0.5])))
print(nn.CrossEntropyLoss(ignore_index=0)(logits, y))
x = torch.randn(2, 3, 9, 9)
print(F.max_pool2d(x, 3, stride=2, padding=1).shape, F.avg_pool2d(x, 2).shape, F.adaptive_max_pool2d(x, 4).shape)
print(nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1, bias=False)(x).shape, nn.ConvTranspose2d(3, 2, 2, stride=2)(x).shape)
print(F.conv1d(torch.randn(1, 2, 10), torch.randn(3, 2, 3), padding="same").shape)
drop = nn.Dropout(0.5)
print(drop(torch.ones(8)))
drop.eval()
print(drop(torch.ones(4)))
