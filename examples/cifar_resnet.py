"""Train a small ResNet on CIFAR-10 with torchvision's API on fabric.

Reads the official python tarball's folder (``ROOT/cifar-10-batches-py``,
e.g. after ``tar xzf cifar-10-python.tar.gz -C ROOT``) when it is there, and
falls back to ``FakeData`` (random 32x32 images, offline) otherwise, so the
script always runs. The same file runs on PyTorch: replace the two fabric
imports by ``import torch`` and ``import torchvision``.

    python examples/cifar_resnet.py --root ~/data --epochs 10
    python examples/cifar_resnet.py --max-steps 20       # a quick look, FakeData if no CIFAR-10
"""
from __future__ import annotations

import argparse
import os
import time

import fabric as torch
import fabric.vision as torchvision
from fabric import nn
from fabric.data import DataLoader

try:
    from tqdm import tqdm
except ImportError:  # tqdm is an optional extra; fall back to plain output
    tqdm = None

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def small_resnet(num_classes: int = 10) -> nn.Module:
    """torchvision's ResNet with one BasicBlock per stage and a CIFAR stem
    (3x3 convolution, no max pool): 4.9M parameters."""
    from fabric.vision.models.resnet import BasicBlock, ResNet

    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


def load_data(args):
    T = torchvision.transforms
    train_tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    test_tf = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
    folder = os.path.join(os.path.expanduser(args.root), torchvision.datasets.CIFAR10.base_folder)
    if os.path.isdir(folder):
        train = torchvision.datasets.CIFAR10(args.root, train=True, transform=train_tf)
        test = torchvision.datasets.CIFAR10(args.root, train=False, transform=test_tf)
        return train, test, "CIFAR-10"
    train = torchvision.datasets.FakeData(args.fake_size, (3, 32, 32), 10, transform=train_tf)
    test = torchvision.datasets.FakeData(args.fake_size // 5, (3, 32, 32), 10, transform=test_tf,
                                         random_offset=args.fake_size)
    return train, test, f"FakeData (no {folder})"


def evaluate(model, loader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.shape[0]
    return correct / max(total, 1)


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default="./data")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (0: no limit)")
    p.add_argument("--fake-size", type=int, default=2000, help="FakeData training images when CIFAR-10 is absent")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    train, test, name = load_data(args)
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    test_loader = DataLoader(test, batch_size=args.batch_size, num_workers=args.workers)
    model = small_resnet()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    steps_per_epoch = len(train_loader) if not args.max_steps else min(args.max_steps, len(train_loader))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    print(f"{name}: {len(train)} training / {len(test)} test images, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters")
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.time()
        batches = train_loader if args.no_progress or tqdm is None else tqdm(
            train_loader, total=steps_per_epoch, desc=f"epoch {epoch}", leave=False)
        for step, (x, y) in enumerate(batches):
            if step >= steps_per_epoch:
                break
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            if tqdm is not None and not args.no_progress:
                batches.set_postfix(loss=f"{loss.item():.3f}")
        acc = evaluate(model, test_loader)
        print(f"epoch {epoch:2d}  loss {loss.item():.4f}  test accuracy {acc:.3f}  ({time.time() - start:.0f}s)")
    return acc


if __name__ == "__main__":
    main()
