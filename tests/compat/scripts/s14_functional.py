"""Common utilities: no_grad/inference_mode, printoptions, numpy interop, F helpers."""
import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(5)
labels = torch.tensor([0, 2, 1, 2])
print(F.one_hot(labels), F.one_hot(labels, num_classes=4).dtype)
x = torch.arange(6.).reshape(1, 2, 3)
print(F.pad(x, (1, 2)), F.pad(x, (1, 1, 1, 0), value=-1.0))
print(F.pad(x, (2, 2), mode="reflect"), F.pad(x, (1, 1), mode="replicate"), F.pad(x, (1, 1), mode="circular"))
img = torch.arange(16.).reshape(1, 1, 4, 4)
print(F.interpolate(img, scale_factor=2, mode="nearest")[0, 0, :3])
print(F.interpolate(img, size=(3, 3), mode="bilinear", align_corners=False))
print(F.interpolate(img, size=(6, 6), mode="bilinear", align_corners=True)[0, 0, 1])
print(F.interpolate(torch.arange(4.).reshape(1, 1, 4), size=7, mode="linear"))
v = torch.randn(3, 4)
print(F.normalize(v, dim=1), F.normalize(v, p=1, dim=0))
print(F.cosine_similarity(v[0:1], v, dim=1), F.cosine_similarity(v, v.flip(0)))
print(F.pairwise_distance(v, v.flip(0)))
print(F.softmax(v, dim=0), F.softmax(v, dim=-1).sum(1), F.log_softmax(v, dim=1))
print(F.gelu(v), F.silu(v), F.elu(v), F.leaky_relu(v, 0.1), F.softplus(v), F.hardtanh(v), F.mish(v))
print(F.gelu(v, approximate="tanh")[0], torch.sigmoid(v)[1], torch.tanh(v)[2], F.relu6(v * 5)[0], F.softsign(v)[0])
print(F.dropout(v, 0.5, training=False).equal(v), F.dropout(torch.ones(6), 0.5))
print(F.embedding(torch.tensor([[0, 2]]), torch.arange(12.).reshape(3, 4)))
print(F.linear(v, torch.ones(2, 4), torch.tensor([0.5, -0.5])))
print(F.layer_norm(v, (4,)), F.group_norm(torch.randn(2, 4, 3), 2)[0])
print(F.mse_loss(v, torch.zeros(3, 4)), F.l1_loss(v, torch.ones(3, 4), reduction="sum"))
print(F.unfold(img, kernel_size=2, stride=2).shape, F.fold(F.unfold(img, 2, stride=2), (4, 4), 2, stride=2).equal(img))
print(F.pixel_shuffle(torch.arange(8.).reshape(1, 4, 1, 2), 2))
print(F.glu(torch.arange(4.).reshape(1, 4)), F.logsigmoid(v)[0], F.hardswish(v)[0])
print(F.margin_ranking_loss(v[0], v[1], torch.tensor([1., -1, 1, -1])), F.triplet_margin_loss(v[:1], v[1:2], v[2:]))
print(F.cross_entropy(v, torch.softmax(v.flip(1), 1)))
with torch.no_grad():
    r = v * 2
print(r.requires_grad)
w = torch.ones(2, requires_grad=True)
with torch.inference_mode():
    r = w * 3
print(r.requires_grad, torch.is_inference_mode_enabled())


@torch.no_grad()
def evaluate(t):
    return (t * w).sum()


print(evaluate(torch.ones(2)).requires_grad)
t = torch.tensor([[1.5, 2.25], [3.125, -4.0]])
print(t.item() if t.numel() == 1 else t[0, 0].item(), t.tolist(), type(t.tolist()[0][0]).__name__)
print(torch.tensor([3]).item(), type(torch.tensor(5).item()).__name__, torch.tensor([True]).item())
n = t.numpy()
print(n.dtype, n.shape, type(n).__name__)
arr = np.arange(4, dtype=np.float32)
ft = torch.from_numpy(arr)
arr[0] = 100.0
ft[1] = -5.0
print(ft, arr, ft.dtype)
print(torch.from_numpy(np.array([1, 2], dtype=np.int64)).dtype, torch.as_tensor(np.ones(2)).dtype, torch.tensor(np.ones(2, dtype=np.float32)).dtype)
tn = torch.ones(3)
nn_ = tn.numpy()
tn.add_(1)
print(nn_)
torch.set_printoptions(precision=2)
print(torch.tensor([1.23456, 2.34567]))
torch.set_printoptions(precision=6)
print(torch.tensor([1.23456789, 2.0]))
torch.set_printoptions(sci_mode=True)
print(torch.tensor([1.5, 20.0]))
torch.set_printoptions(profile="default")
torch.set_printoptions(threshold=5, edgeitems=2)
print(torch.arange(10))
torch.set_printoptions(profile="default")
print(torch.arange(10.) / 3)
print(torch.isclose(torch.tensor([1.0, 1.1]), torch.tensor([1.0, 1.0])), torch.allclose(torch.ones(2), torch.ones(2) + 1e-9))
print(torch.equal(torch.ones(2), torch.ones(2)), torch.is_tensor(t), torch.numel(t))
print(torch.zeros_like(t, dtype=torch.long), torch.full_like(t, 2), torch.empty(2, 3).shape, torch.eye(2, 3))
print(t.new_zeros(2), t.new_ones((1, 2)), t.new_tensor([1, 2]), t.new_full((2,), 3.0))
print(torch.clone(t).data_ptr() != t.data_ptr(), t.shape == torch.Size([2, 2]))
print(torch.logspace(0, 2, 3), torch.exp(torch.tensor(1.0)), torch.log1p(torch.tensor([0.5])), torch.rsqrt(torch.tensor([4.0])))
print(torch.sign(torch.tensor([-2.0, 0.0, 3.0])), torch.nan_to_num(torch.tensor([float("nan"), float("inf")])), torch.lerp(torch.zeros(2), torch.ones(2), 0.3))
