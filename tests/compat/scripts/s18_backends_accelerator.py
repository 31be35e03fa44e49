# The setup lines at the top of real training scripts: backend flags, accelerator
# checks, memory formats, size= factories and constants.
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn

cudnn.benchmark = True
cudnn.deterministic = True
print(cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.is_available())
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
print(torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
torch.backends.cuda.matmul.allow_tf32 = False
print(torch.backends.mps.is_available(), torch.backends.mps.is_built(), torch.backends.mkldnn.enabled)
use_accel = torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
print(use_accel, device)
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()).to(device)
model = model.to(memory_format=torch.channels_last)
print(model[0].weight.stride(), model[0].weight.is_contiguous(memory_format=torch.channels_last))
x = torch.randn(size=(2, 3, 5, 5)).to(device).contiguous(memory_format=torch.channels_last)
print(x.stride(), x.is_contiguous(), x.is_contiguous(memory_format=torch.channels_last))
out = model(x)
print(tuple(out.shape), round(out.sum().item(), 4), round(out.abs().mean().item(), 5))
print(torch.zeros(size=(2, 3)).shape, torch.ones(size=[4]).sum(), torch.empty(size=(1, 2)).shape)
print(torch.pi, torch.e, torch.inf, torch.nan, torch.newaxis)
print(x.layout, x.layout == torch.strided, x.is_xpu, x.is_mps, x.is_nested, x.is_meta, x.is_quantized, x.is_sparse)
print(x.clone().stride(), x.clone(memory_format=torch.contiguous_format).stride())
cudnn.benchmark = False
cudnn.deterministic = False
