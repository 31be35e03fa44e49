"""fabric.vision.models: parameter counts against torchvision's documented
``num_params``, state_dict keys against torchvision's checkpoint layout, and
eval-mode logits against the same architecture written here with torch.nn
(torchvision's module names), loaded with the same random weights.
``weights=`` reads checkpoints from $TORCH_HOME/hub/checkpoints only."""
import re
from collections import OrderedDict

import numpy as np
import pytest

import fabric
from fabric.vision import models
from fabric.vision.models import _api


@pytest.fixture
def fast_init(monkeypatch):
    """Skip random initialisation (the weights are overwritten by the test):
    filling 100M-element VGG layers one sample at a time is slow."""
    for name in ("kaiming_normal_", "kaiming_uniform_", "normal_", "uniform_", "constant_", "zeros_", "ones_",
                 "trunc_normal_", "xavier_uniform_"):
        monkeypatch.setattr(fabric.nn.init, name, lambda t, *a, **k: t)


# --- torch.nn versions of torchvision's architectures (reference for keys and logits) ---------------
def _torch_resnet(torch, block, layers, groups=1, width=64, num_classes=1000):
    nn = torch.nn

    class Basic(nn.Module):
        expansion = 1

        def __init__(self, inp, planes, stride, down):
            super().__init__()
            self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = down

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class Bottle(nn.Module):
        expansion = 4

        def __init__(self, inp, planes, stride, down):
            super().__init__()
            w = int(planes * (width / 64.0)) * groups
            self.conv1 = nn.Conv2d(inp, w, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(w)
            self.conv2 = nn.Conv2d(w, w, 3, stride, 1, groups=groups, bias=False)
            self.bn2 = nn.BatchNorm2d(w)
            self.conv3 = nn.Conv2d(w, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = down

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    B = Basic if block == "basic" else Bottle

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            inp = 64
            for i, (planes, n) in enumerate(zip((64, 128, 256, 512), layers)):
                stride = 1 if i == 0 else 2
                down = None
                if stride != 1 or inp != planes * B.expansion:
                    down = nn.Sequential(nn.Conv2d(inp, planes * B.expansion, 1, stride, bias=False),
                                         nn.BatchNorm2d(planes * B.expansion))
                blocks = [B(inp, planes, stride, down)]
                inp = planes * B.expansion
                blocks += [B(inp, planes, 1, None) for _ in range(1, n)]
                setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512 * B.expansion, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return Net()


def _torch_vgg(torch, cfg, bn, num_classes=1000):
    nn = torch.nn
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1)] + ([nn.BatchNorm2d(v)] if bn else []) + [nn.ReLU(True)]
            c = v
    m = nn.Module()
    m.features = nn.Sequential(*layers)
    m.avgpool = nn.AdaptiveAvgPool2d(7)
    m.classifier = nn.Sequential(nn.Linear(25088, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, 4096),
                                 nn.ReLU(True), nn.Dropout(), nn.Linear(4096, num_classes))
    m.forward = lambda x: m.classifier(torch.flatten(m.avgpool(m.features(x)), 1))
    return m


def _torch_alexnet(torch):
    nn = torch.nn
    m = nn.Module()
    m.features = nn.Sequential(nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(True), nn.MaxPool2d(3, 2),
                               nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(True), nn.MaxPool2d(3, 2),
                               nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(True), nn.Conv2d(384, 256, 3, padding=1),
                               nn.ReLU(True), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(True), nn.MaxPool2d(3, 2))
    m.avgpool = nn.AdaptiveAvgPool2d(6)
    m.classifier = nn.Sequential(nn.Dropout(), nn.Linear(9216, 4096), nn.ReLU(True), nn.Dropout(),
                                 nn.Linear(4096, 4096), nn.ReLU(True), nn.Linear(4096, 1000))
    m.forward = lambda x: m.classifier(torch.flatten(m.avgpool(m.features(x)), 1))
    return m


def _torch_squeezenet(torch, version):
    nn = torch.nn

    class Fire(nn.Module):
        def __init__(self, i, s, e1, e3):
            super().__init__()
            self.squeeze, self.squeeze_activation = nn.Conv2d(i, s, 1), nn.ReLU(True)
            self.expand1x1, self.expand1x1_activation = nn.Conv2d(s, e1, 1), nn.ReLU(True)
            self.expand3x3, self.expand3x3_activation = nn.Conv2d(s, e3, 3, padding=1), nn.ReLU(True)

        def forward(self, x):
            x = self.squeeze_activation(self.squeeze(x))
            return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                              self.expand3x3_activation(self.expand3x3(x))], 1)

    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)
    if version == "1_0":
        feats = [nn.Conv2d(3, 96, 7, 2), nn.ReLU(True), pool(), Fire(96, 16, 64, 64), Fire(128, 16, 64, 64),
                 Fire(128, 32, 128, 128), pool(), Fire(256, 32, 128, 128), Fire(256, 48, 192, 192),
                 Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), pool(), Fire(512, 64, 256, 256)]
    else:
        feats = [nn.Conv2d(3, 64, 3, 2), nn.ReLU(True), pool(), Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                 Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(), Fire(256, 48, 192, 192),
                 Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256)]
    m = nn.Module()
    m.features = nn.Sequential(*feats)
    m.classifier = nn.Sequential(nn.Dropout(), nn.Conv2d(512, 1000, 1), nn.ReLU(True), nn.AdaptiveAvgPool2d(1))
    m.forward = lambda x: torch.flatten(m.classifier(m.features(x)), 1)
    return m


def _torch_densenet(torch, growth, blocks, init_features):
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.norm1, self.relu1 = nn.BatchNorm2d(c), nn.ReLU(True)
            self.conv1 = nn.Conv2d(c, 4 * growth, 1, bias=False)
            self.norm2, self.relu2 = nn.BatchNorm2d(4 * growth), nn.ReLU(True)
            self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

        def forward(self, feats):
            x = self.conv1(self.relu1(self.norm1(torch.cat(feats, 1))))
            return self.conv2(self.relu2(self.norm2(x)))

    class Block(nn.ModuleDict):
        def __init__(self, n, c):
            super().__init__()
            for i in range(n):
                self.add_module(f"denselayer{i + 1}", Layer(c + i * growth))

        def forward(self, x):
            feats = [x]
            for layer in self.values():
                feats.append(layer(feats))
            return torch.cat(feats, 1)

    feats = nn.Sequential(OrderedDict([("conv0", nn.Conv2d(3, init_features, 7, 2, 3, bias=False)),
                                       ("norm0", nn.BatchNorm2d(init_features)), ("relu0", nn.ReLU(True)),
                                       ("pool0", nn.MaxPool2d(3, 2, 1))]))
    c = init_features
    for i, n in enumerate(blocks):
        feats.add_module(f"denseblock{i + 1}", Block(n, c))
        c += n * growth
        if i != len(blocks) - 1:
            feats.add_module(f"transition{i + 1}", nn.Sequential(OrderedDict([
                ("norm", nn.BatchNorm2d(c)), ("relu", nn.ReLU(True)), ("conv", nn.Conv2d(c, c // 2, 1, bias=False)),
                ("pool", nn.AvgPool2d(2, 2))])))
            c //= 2
    feats.add_module("norm5", nn.BatchNorm2d(c))
    m = nn.Module()
    m.features = feats
    m.classifier = nn.Linear(c, 1000)
    m.forward = lambda x: m.classifier(torch.flatten(
        torch.nn.functional.adaptive_avg_pool2d(torch.relu(m.features(x)), 1), 1))
    return m


def _torch_mobilenet_v2(torch):
    nn = torch.nn

    def cna(i, o, k=3, s=1, g=1):
        return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o),
                             nn.ReLU6(True))

    class IR(nn.Module):
        def __init__(self, i, o, s, t):
            super().__init__()
            h = i * t
            self.res = s == 1 and i == o
            layers = ([cna(i, h, 1)] if t != 1 else []) + [cna(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False),
                                                          nn.BatchNorm2d(o)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.res else self.conv(x)

    feats, c = [cna(3, 32, 3, 2)], 32
    for t, o, n, s in [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                       [6, 320, 1, 1]]:
        for i in range(n):
            feats.append(IR(c, o, s if i == 0 else 1, t))
            c = o
    feats.append(cna(320, 1280, 1))
    m = nn.Module()
    m.features = nn.Sequential(*feats)
    m.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))
    m.forward = lambda x: m.classifier(torch.flatten(
        torch.nn.functional.adaptive_avg_pool2d(m.features(x), 1), 1))
    return m


def _torch_mobilenet_v3_small(torch):
    nn = torch.nn

    def div8(v):
        n = max(8, int(v + 4) // 8 * 8)
        return n + 8 if n < 0.9 * v else n

    def cna(i, o, k, s=1, g=1, act=None):
        layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o, eps=0.001,
                                                                                             momentum=0.01)]
        return nn.Sequential(*(layers + ([act(inplace=True)] if act else [])))

    class SE(nn.Module):
        def __init__(self, c, sq):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1, self.fc2 = nn.Conv2d(c, sq, 1), nn.Conv2d(sq, c, 1)
            self.activation, self.scale_activation = nn.ReLU(), nn.Hardsigmoid()

        def forward(self, x):
            return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x))))) * x

    class Block(nn.Module):
        def __init__(self, i, k, e, o, se, act, s):
            super().__init__()
            a = nn.Hardswish if act == "HS" else nn.ReLU
            layers = ([cna(i, e, 1, act=a)] if e != i else []) + [cna(e, e, k, s, e, act=a)]
            layers += ([SE(e, div8(e // 4))] if se else []) + [cna(e, o, 1)]
            self.block = nn.Sequential(*layers)
            self.res = s == 1 and i == o

        def forward(self, x):
            y = self.block(x)
            return y + x if self.res else y

    cfg = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
           (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
           (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
           (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1)]
    m = nn.Module()
    m.features = nn.Sequential(cna(3, 16, 3, 2, act=nn.Hardswish), *[Block(*c) for c in cfg],
                               cna(96, 576, 1, act=nn.Hardswish))
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(True), nn.Dropout(0.2, True),
                                 nn.Linear(1024, 1000))
    m.forward = lambda x: m.classifier(torch.flatten(m.avgpool(m.features(x)), 1))
    return m


def _torch_shufflenet_v2(torch, repeats, channels):
    nn = torch.nn

    class Unit(nn.Module):
        def __init__(self, i, o, s):
            super().__init__()
            b = o // 2
            self.stride = s
            self.branch1 = nn.Sequential(nn.Conv2d(i, i, 3, s, 1, groups=i, bias=False), nn.BatchNorm2d(i),
                                         nn.Conv2d(i, b, 1, bias=False), nn.BatchNorm2d(b),
                                         nn.ReLU(True)) if s > 1 else nn.Sequential()
            self.branch2 = nn.Sequential(nn.Conv2d(i if s > 1 else b, b, 1, bias=False), nn.BatchNorm2d(b),
                                         nn.ReLU(True), nn.Conv2d(b, b, 3, s, 1, groups=b, bias=False),
                                         nn.BatchNorm2d(b), nn.Conv2d(b, b, 1, bias=False), nn.BatchNorm2d(b),
                                         nn.ReLU(True))

        def forward(self, x):
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = torch.cat((x1, self.branch2(x2)), 1)
            else:
                out = torch.cat((self.branch1(x), self.branch2(x)), 1)
            n, c, h, w = out.shape
            return out.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

    m = nn.Module()
    m.conv1 = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1, bias=False), nn.BatchNorm2d(channels[0]),
                            nn.ReLU(True))
    m.maxpool = nn.MaxPool2d(3, 2, 1)
    c = channels[0]
    for name, r, o in zip(("stage2", "stage3", "stage4"), repeats, channels[1:]):
        setattr(m, name, nn.Sequential(Unit(c, o, 2), *[Unit(o, o, 1) for _ in range(r - 1)]))
        c = o
    m.conv5 = nn.Sequential(nn.Conv2d(c, channels[-1], 1, bias=False), nn.BatchNorm2d(channels[-1]), nn.ReLU(True))
    m.fc = nn.Linear(channels[-1], 1000)
    m.forward = lambda x: m.fc(m.conv5(m.stage4(m.stage3(m.stage2(m.maxpool(m.conv1(x)))))).mean([2, 3]))
    return m


def _torch_efficientnet_b0(torch):
    nn = torch.nn

    def div8(v):
        n = max(8, int(v + 4) // 8 * 8)
        return n + 8 if n < 0.9 * v else n

    def cna(i, o, k, s=1, g=1, act=True):
        layers = [nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o)]
        return nn.Sequential(*(layers + ([nn.SiLU(inplace=True)] if act else [])))

    class SE(nn.Module):
        def __init__(self, c, sq):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1, self.fc2 = nn.Conv2d(c, sq, 1), nn.Conv2d(sq, c, 1)
            self.activation, self.scale_activation = nn.SiLU(inplace=True), nn.Sigmoid()

        def forward(self, x):
            return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x))))) * x

    class MB(nn.Module):
        def __init__(self, t, k, s, i, o):
            super().__init__()
            e = div8(i * t)
            layers = ([cna(i, e, 1)] if e != i else []) + [cna(e, e, k, s, e), SE(e, max(1, i // 4)), cna(e, o, 1,
                                                                                                            act=False)]
            self.block = nn.Sequential(*layers)
            self.res = s == 1 and i == o

        def forward(self, x):
            y = self.block(x)
            return y + x if self.res else y

    stages = []
    for t, k, s, i, o, n in [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                             (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]:
        stages.append(nn.Sequential(*[MB(t, k, s if j == 0 else 1, i if j == 0 else o, o) for j in range(n)]))
    m = nn.Module()
    m.features = nn.Sequential(cna(3, 32, 3, 2), *stages, cna(320, 1280, 1))
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(1280, 1000))
    m.forward = lambda x: m.classifier(torch.flatten(m.avgpool(m.features(x)), 1))
    return m


def _torch_convnext_tiny(torch):
    nn = torch.nn

    class LN2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class Perm(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.dims = dims

        def forward(self, x):
            return x.permute(*self.dims)

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.block = nn.Sequential(nn.Conv2d(d, d, 7, padding=3, groups=d), Perm([0, 2, 3, 1]),
                                       nn.LayerNorm(d, eps=1e-6), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                       Perm([0, 3, 1, 2]))
            self.layer_scale = nn.Parameter(torch.rand(d, 1, 1))

        def forward(self, x):
            return self.layer_scale * self.block(x) + x

    layers = [nn.Sequential(nn.Conv2d(3, 96, 4, 4), LN2d(96, eps=1e-6))]
    for i, o, n in [(96, 192, 3), (192, 384, 3), (384, 768, 9), (768, None, 3)]:
        layers.append(nn.Sequential(*[Block(i) for _ in range(n)]))
        if o is not None:
            layers.append(nn.Sequential(LN2d(i, eps=1e-6), nn.Conv2d(i, o, 2, 2)))
    m = nn.Module()
    m.features = nn.Sequential(*layers)
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(LN2d(768, eps=1e-6), nn.Flatten(1), nn.Linear(768, 1000))
    m.forward = lambda x: m.classifier(m.avgpool(m.features(x)))
    return m


def _torch_vit(torch, image_size, patch, layers, heads, hidden, mlp, num_classes):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
            self.dropout = nn.Dropout(0.0)
            self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(hidden, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, hidden),
                                     nn.Dropout(0.0))

        def forward(self, x):
            y = self.ln_1(x)
            y, _ = self.self_attention(y, y, y, need_weights=False)
            x = y + x
            return x + self.mlp(self.ln_2(x))

    seq = (image_size // patch) ** 2 + 1
    m = nn.Module()
    m.conv_proj = nn.Conv2d(3, hidden, patch, patch)
    m.class_token = nn.Parameter(torch.randn(1, 1, hidden))
    m.encoder = nn.Module()
    m.encoder.pos_embedding = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
    m.encoder.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", Block()) for i in range(layers)))
    m.encoder.ln = nn.LayerNorm(hidden, eps=1e-6)
    m.heads = nn.Sequential(OrderedDict([("head", nn.Linear(hidden, num_classes))]))

    def forward(x):
        n = x.shape[0]
        x = m.conv_proj(x).reshape(n, hidden, -1).permute(0, 2, 1)
        x = torch.cat([m.class_token.expand(n, -1, -1), x], 1) + m.encoder.pos_embedding
        return m.heads(m.encoder.ln(m.encoder.layers(x))[:, 0])

    m.forward = forward
    return m


def _torch_googlenet(torch):
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, i, o, **kw):
            super().__init__()
            self.conv = nn.Conv2d(i, o, bias=False, **kw)
            self.bn = nn.BatchNorm2d(o, eps=0.001)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    class Inc(nn.Module):
        def __init__(self, i, a, b1, b2, c1, c2, p):
            super().__init__()
            self.branch1 = Basic(i, a, kernel_size=1)
            self.branch2 = nn.Sequential(Basic(i, b1, kernel_size=1), Basic(b1, b2, kernel_size=3, padding=1))
            self.branch3 = nn.Sequential(Basic(i, c1, kernel_size=1), Basic(c1, c2, kernel_size=3, padding=1))
            self.branch4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), Basic(i, p, kernel_size=1))

        def forward(self, x):
            return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)

    m = nn.Module()
    m.conv1 = Basic(3, 64, kernel_size=7, stride=2, padding=3)
    m.maxpool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
    m.conv2 = Basic(64, 64, kernel_size=1)
    m.conv3 = Basic(64, 192, kernel_size=3, padding=1)
    m.maxpool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
    for name, args in [("inception3a", (192, 64, 96, 128, 16, 32, 32)), ("inception3b", (256, 128, 128, 192, 32, 96, 64)),
                       ("maxpool3", None), ("inception4a", (480, 192, 96, 208, 16, 48, 64)),
                       ("inception4b", (512, 160, 112, 224, 24, 64, 64)), ("inception4c", (512, 128, 128, 256, 24, 64, 64)),
                       ("inception4d", (512, 112, 144, 288, 32, 64, 64)),
                       ("inception4e", (528, 256, 160, 320, 32, 128, 128)), ("maxpool4", None),
                       ("inception5a", (832, 256, 160, 320, 32, 128, 128)),
                       ("inception5b", (832, 384, 192, 384, 48, 128, 128))]:
        if args is None:
            setattr(m, name, nn.MaxPool2d(3 if name == "maxpool3" else 2, 2, ceil_mode=True))
        else:
            setattr(m, name, Inc(*args))
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.dropout = nn.Dropout(0.2)
    m.fc = nn.Linear(1024, 1000)
    order = ["conv1", "maxpool1", "conv2", "conv3", "maxpool2", "inception3a", "inception3b", "maxpool3",
             "inception4a", "inception4b", "inception4c", "inception4d", "inception4e", "maxpool4", "inception5a",
             "inception5b", "avgpool"]

    def forward(x):
        x = torch.cat([x[:, :1] * (0.229 / 0.5) + (0.485 - 0.5) / 0.5, x[:, 1:2] * (0.224 / 0.5) + (0.456 - 0.5) / 0.5,
                       x[:, 2:] * (0.225 / 0.5) + (0.406 - 0.5) / 0.5], 1)
        for name in order:
            x = getattr(m, name)(x)
        return m.fc(torch.flatten(x, 1))

    m.forward = forward
    return m


def _randomize_bn(torch, model, seed):
    """Non-trivial running statistics so eval-mode batch norm matters."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def _to_fabric_state(sd):
    return OrderedDict((k, fabric.from_numpy(v.detach().numpy().copy())) for k, v in sd.items())


def _check(torch, name, ref, size, rtol=1e-4, atol=1e-4):
    """Same keys and shapes; same eval-mode logits once loaded with the reference's weights."""
    torch.manual_seed(0)
    ref.eval()
    _randomize_bn(torch, ref, 1)
    model = models.get_model(name)
    ours = model.state_dict()
    theirs = ref.state_dict()
    assert list(ours) == list(theirs)
    assert all(tuple(ours[k].shape) == tuple(theirs[k].shape) for k in ours)
    model.load_state_dict(_to_fabric_state(theirs))
    model.eval()
    x = np.random.default_rng(2).standard_normal((2, 3, size, size)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    with fabric.no_grad():
        got = model(fabric.from_numpy(x)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.torch
@pytest.mark.parametrize("name,block,layers,groups,width", [
    ("resnet18", "basic", [2, 2, 2, 2], 1, 64),
    ("resnet34", "basic", [3, 4, 6, 3], 1, 64),
    ("resnet50", "bottleneck", [3, 4, 6, 3], 1, 64),
    ("resnext50_32x4d", "bottleneck", [3, 4, 6, 3], 32, 4),
])
def test_resnets_match_torch(fast_init, name, block, layers, groups, width):
    import torch

    _check(torch, name, _torch_resnet(torch, block, layers, groups, width), 64)


@pytest.mark.torch
@pytest.mark.parametrize("name,version", [("squeezenet1_0", "1_0"), ("squeezenet1_1", "1_1")])
def test_squeezenets_match_torch(fast_init, name, version):
    import torch

    _check(torch, name, _torch_squeezenet(torch, version), 64)


@pytest.mark.torch
def test_densenet121_matches_torch(fast_init):
    import torch

    _check(torch, "densenet121", _torch_densenet(torch, 32, (6, 12, 24, 16), 64), 64)


@pytest.mark.torch
def test_mobilenet_v2_matches_torch(fast_init):
    import torch

    _check(torch, "mobilenet_v2", _torch_mobilenet_v2(torch), 64)


@pytest.mark.torch
def test_mobilenet_v3_small_and_shufflenet_v2_match_torch(fast_init):
    import torch

    _check(torch, "mobilenet_v3_small", _torch_mobilenet_v3_small(torch), 64)
    _check(torch, "shufflenet_v2_x0_5", _torch_shufflenet_v2(torch, [4, 8, 4], [24, 48, 96, 192, 1024]), 64)


@pytest.mark.torch
def test_efficientnet_b0_and_convnext_tiny_match_torch(fast_init):
    import torch

    _check(torch, "efficientnet_b0", _torch_efficientnet_b0(torch), 64)
    _check(torch, "convnext_tiny", _torch_convnext_tiny(torch), 64)


@pytest.mark.torch
def test_vision_transformer_matches_torch(fast_init):
    import torch

    torch.manual_seed(3)
    ref = _torch_vit(torch, 32, 8, 2, 4, 32, 64, 10).eval()
    model = models.VisionTransformer(32, 8, 2, 4, 32, 64, num_classes=10).eval()
    assert list(model.state_dict()) == list(ref.state_dict())
    model.load_state_dict(_to_fabric_state(ref.state_dict()))
    x = np.random.default_rng(4).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(fabric.from_numpy(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
    keys = set(models.vit_b_16().state_dict())
    assert {"class_token", "conv_proj.weight", "encoder.pos_embedding",
            "encoder.layers.encoder_layer_11.self_attention.in_proj_weight",
            "encoder.layers.encoder_layer_0.mlp.3.bias", "encoder.ln.weight", "heads.head.weight"} <= keys
    with pytest.raises(AssertionError, match="Wrong image height! Expected 32 but got 16!"):
        model(fabric.zeros(1, 3, 16, 32))


@pytest.mark.torch
def test_googlenet_matches_torch(fast_init, tmp_path, monkeypatch):
    """Through weights=: transform_input on, auxiliary heads dropped after loading, as torchvision."""
    import torch

    torch.manual_seed(0)
    ref = _torch_googlenet(torch).eval()
    _randomize_bn(torch, ref, 2)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setattr(_api, "_HASH", re.compile(r"(?!)"))
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    state = ref.state_dict()
    aux = models.googlenet(aux_logits=True, init_weights=False).state_dict()
    full = OrderedDict((k, state[k] if k in state else torch.zeros(tuple(aux[k].shape), dtype=torch.float32
                                                                   if aux[k].is_floating_point() else torch.int64))
                       for k in aux)
    torch.save(full, tmp_path / "hub" / "checkpoints" / "googlenet-1378be20.pth")
    model = models.googlenet(weights="DEFAULT").eval()
    assert model.aux1 is None and model.transform_input and list(model.state_dict()) == list(state)
    x = np.random.default_rng(5).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(fabric.from_numpy(x)).detach().numpy(), want, rtol=1e-4, atol=1e-4)
    train = models.googlenet(init_weights=False).train()
    with fabric.no_grad():
        for p in train.parameters():
            p.fill_(0.01)  # fast_init left them unset
    out = train(fabric.from_numpy(x))
    assert out._fields == ("logits", "aux_logits2", "aux_logits1") and out.aux_logits1.shape == (2, 1000)
    with pytest.warns(FutureWarning, match="default weight initialization of GoogleNet"):
        models.googlenet()


@pytest.mark.torch
def test_alexnet_and_vgg11_bn_match_torch(fast_init):
    import torch

    _check(torch, "alexnet", _torch_alexnet(torch), 64)
    _check(torch, "vgg11_bn", _torch_vgg(torch, models.vgg.cfgs["A"], True), 32)


@pytest.mark.torch
@pytest.mark.parametrize("name", ["vgg11", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"])
def test_vgg_keys_and_shapes(fast_init, name):
    import torch

    cfg = {"11": "A", "13": "B", "16": "D", "19": "E"}[name[3:5]]
    ref = _torch_vgg(torch, models.vgg.cfgs[cfg], name.endswith("_bn")).state_dict()
    ours = models.get_model(name).state_dict()
    assert list(ours) == list(ref) and all(tuple(ours[k].shape) == tuple(ref[k].shape) for k in ours)


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
                                  "resnext101_32x8d", "wide_resnet50_2", "densenet121", "densenet161",
                                  "densenet169", "densenet201", "mobilenet_v2", "squeezenet1_0", "squeezenet1_1",
                                  "alexnet", "vgg16", "vgg19_bn", "mobilenet_v3_large", "mobilenet_v3_small",
                                  "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
                                  "shufflenet_v2_x2_0", "efficientnet_b0", "convnext_tiny", "vit_b_16", "googlenet",
                                  "inception_v3"])
def test_parameter_counts_match_torchvision(fast_init, name):
    extra = {"googlenet": {"aux_logits": False, "init_weights": True}, "inception_v3": {"init_weights": True}}
    model = models.get_model(name, **extra.get(name, {}))
    assert sum(p.numel() for p in model.parameters()) == models.get_model_weights(name).DEFAULT.meta["num_params"]


def test_inception_v3_layout_and_outputs(fast_init):
    model = models.inception_v3(init_weights=True)
    keys = set(model.state_dict())
    assert {"Conv2d_1a_3x3.conv.weight", "Conv2d_1a_3x3.bn.running_var", "Mixed_5b.branch5x5_2.conv.weight",
            "Mixed_6e.branch7x7dbl_5.bn.bias", "Mixed_7c.branch3x3dbl_3b.conv.weight", "AuxLogits.conv1.conv.weight",
            "AuxLogits.fc.weight", "fc.weight"} <= keys
    with fabric.no_grad():
        for p in model.parameters():
            p.fill_(0.01)
    x = fabric.from_numpy(np.random.default_rng(6).standard_normal((2, 3, 299, 299)).astype(np.float32))
    out = model.train()(x)  # the auxiliary head needs 17x17 at Mixed_6e: 299x299 inputs
    assert out._fields == ("logits", "aux_logits") and out.logits.shape == out.aux_logits.shape == (2, 1000)
    assert model.eval()(x[:, :, :75, :75]).shape == (2, 1000)


def test_checkpoint_keys_follow_torchvision(fast_init):
    keys = set(models.resnet18().state_dict())
    assert {"conv1.weight", "bn1.running_mean", "bn1.num_batches_tracked", "layer1.0.conv1.weight",
            "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_var", "fc.weight", "fc.bias"} <= keys
    keys = set(models.densenet121().state_dict())
    assert {"features.conv0.weight", "features.denseblock1.denselayer1.norm1.weight",
            "features.denseblock4.denselayer16.conv2.weight", "features.transition3.conv.weight",
            "features.norm5.running_var", "classifier.weight"} <= keys
    keys = set(models.mobilenet_v2().state_dict())
    assert {"features.0.0.weight", "features.0.1.running_mean", "features.1.conv.0.0.weight",
            "features.1.conv.1.weight", "features.2.conv.3.weight", "features.18.0.weight",
            "classifier.1.weight"} <= keys
    keys = set(models.squeezenet1_0().state_dict())
    assert {"features.0.weight", "features.3.squeeze.weight", "features.12.expand3x3.bias",
            "classifier.1.weight"} <= keys
    keys = set(models.alexnet().state_dict())
    assert {"features.0.weight", "features.10.weight", "classifier.1.weight", "classifier.4.weight",
            "classifier.6.bias"} <= keys


# --- weights= ------------------------------------------------------------------------------------
def test_weights_enums_names_and_transforms():
    w = models.ResNet50_Weights.DEFAULT
    assert w is models.ResNet50_Weights.IMAGENET1K_V2 and w.url.endswith("resnet50-11ad3fa6.pth")
    assert models.get_weight("ResNet50_Weights.IMAGENET1K_V1").url.endswith("resnet50-0676ba61.pth")
    assert models.ResNet18_Weights.verify("IMAGENET1K_V1") is models.ResNet18_Weights.IMAGENET1K_V1
    assert models.ResNet18_Weights.verify("ResNet18_Weights.DEFAULT") is models.ResNet18_Weights.IMAGENET1K_V1
    with pytest.raises(TypeError, match="Invalid Weight class provided; expected ResNet18_Weights but received "
                                        "ResNet50_Weights"):
        models.ResNet18_Weights.verify(models.ResNet50_Weights.DEFAULT)
    preprocess = w.transforms()
    out = preprocess(fabric.randint(0, 256, (3, 300, 260), dtype=fabric.uint8))
    assert out.shape == (3, 224, 224) and out.dtype == fabric.float32
    assert preprocess.resize_size == [232]
    assert "resnet18" in models.list_models() and "vgg16_bn" in models.list_models(include="vgg*")
    with pytest.raises(ValueError, match="Unknown model nope"):
        models.get_model("nope")


def test_missing_checkpoint_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(RuntimeError) as e:
        models.resnet18(weights="IMAGENET1K_V1")
    msg = str(e.value)
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in msg
    assert str(tmp_path / "hub" / "checkpoints" / "resnet18-f37072fd.pth") in msg
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 1000 but got 10"):
        models.resnet18(weights="DEFAULT", num_classes=10)


@pytest.mark.torch
def test_weights_load_from_torch_home(tmp_path, monkeypatch):
    """A torch-saved checkpoint under torchvision's file name loads through weights=; densenet's
    old-style keys ('norm.1') are renamed; a hash prefix that does not match is refused."""
    import torch

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    folder = tmp_path / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    monkeypatch.setattr(_api, "_HASH", re.compile(r"(?!)"))  # random weights cannot carry the real hash
    ref = _torch_squeezenet(torch, "1_1").eval()
    torch.save(ref.state_dict(), folder / "squeezenet1_1-b8a52dc0.pth")
    model = models.squeezenet1_1(weights=models.SqueezeNet1_1_Weights.IMAGENET1K_V1).eval()
    x = np.random.default_rng(3).standard_normal((1, 3, 48, 48)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(fabric.from_numpy(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
    dense = _torch_densenet(torch, 32, (6, 12, 24, 16), 64)
    old = OrderedDict((re.sub(r"(denselayer\d+\.(?:norm|conv))([12])\.", r"\1.\2.", k), v)
                      for k, v in dense.state_dict().items() if not k.endswith("num_batches_tracked"))
    assert "features.denseblock1.denselayer1.norm.1.weight" in old
    torch.save(old, folder / "densenet121-a639ec97.pth")
    model = models.densenet121(weights="DEFAULT")
    assert np.array_equal(model.features.denseblock1.denselayer1.norm1.weight.detach().numpy(),
                          dense.features.denseblock1.denselayer1.norm1.weight.detach().numpy())
    monkeypatch.undo()
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "b8a52dc0"'):
        models.squeezenet1_1(weights="DEFAULT")
