#!/usr/bin/env python3
"""PyTorch counterpart of train_bench: the same model, batch, thread count,
optimizer and timing loop (warm-up, then timed steps over in-memory batches).
Prints one JSON line.

--amp bf16 runs the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), as PyTorch documents for CPU
mixed precision; backward and the optimizer step stay outside it (the
parameters stay float32)."""
import argparse
import contextlib
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn


def load_fashion(d):
    def read(name):
        for path in (os.path.join(d, name + ".gz"), os.path.join(d, name)):
            if os.path.exists(path):
                opener = gzip.open if path.endswith(".gz") else open
                with opener(path, "rb") as f:
                    return f.read()
        return None
    img, lab = read("train-images-idx3-ubyte"), read("train-labels-idx1-ubyte")
    if img is None or lab is None:
        return None
    x = np.frombuffer(img, np.uint8, offset=16).reshape(-1, 1, 28, 28)
    y = np.frombuffer(lab, np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y)


def cpu_capability():
    """The vector ISA PyTorch's own CPU kernels were dispatched to, as
    torch.__config__ reports it (its oneDNN picks its ISA separately:
    ONEDNN_VERBOSE=1 shows it)."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def conv_bn(c_in, c_out, k, stride=1):
    """conv (no bias) and batch norm, as the built-in models' ConvBn."""
    return [nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False),
            nn.BatchNorm2d(c_out)]


class BasicBlock(nn.Module):
    """The resnet model's block: conv-BN-ReLU-conv-BN plus the shortcut (a
    1x1 conv and BN where the shape changes), then ReLU."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.body = nn.Sequential(*conv_bn(c_in, c_out, 3, stride), nn.ReLU(),
                                  *conv_bn(c_out, c_out, 3))
        self.short = (nn.Sequential(*conv_bn(c_in, c_out, 1, stride))
                      if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def resnet():
    blocks, c_in = [], 16
    for c in (16, 32, 64):
        for i in range(2):
            blocks.append(BasicBlock(c_in, c, 2 if i == 0 and c != 16 else 1))
            c_in = c
    return nn.Sequential(*conv_bn(1, 16, 3), nn.ReLU(), *blocks,
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 10))


def vgg():
    layers, c_in = [], 1
    for c in (32, 64):
        layers += conv_bn(c_in, c, 3) + [nn.ReLU()]
        layers += conv_bn(c, c, 3) + [nn.ReLU(), nn.MaxPool2d(2, 2)]
        c_in = c
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(3136, 128),
                         nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, 10))


def model_of(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                             nn.Linear(512, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    if name == "resnet":
        return resnet()
    if name == "vgg":
        return vgg()
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Linear(800, 500), nn.ReLU(),
                         nn.Linear(500, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp",
                    choices=["mlp", "lenet", "resnet", "vgg"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--device", default="cpu",
                    help="cpu | cuda[:N]; batches are copied from host "
                         "memory and the loss is read back every step, as "
                         "fluid's train_bench does")
    ap.add_argument("--amp", default="none", choices=["none", "bf16"],
                    help="bf16: forward and loss under torch.autocast with "
                         "bfloat16 on the device's type")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    data = load_fashion(a.data)
    if data is None:
        g = torch.Generator().manual_seed(1)
        data = (torch.rand(a.batch * 16, 1, 28, 28, generator=g),
                torch.randint(0, 10, (a.batch * 16,), generator=g))
    x_all, y_all = data
    n = x_all.shape[0]
    net = model_of(a.model).to(dev)
    lr = 0.1 if a.model == "mlp" else 0.05
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(n)
    pos = [0]

    def autocast():
        if a.amp == "none":
            return contextlib.nullcontext()
        return torch.autocast(dev.type, dtype=torch.bfloat16)

    def step():
        if pos[0] + a.batch > n:
            pos[0] = 0
        idx = perm[pos[0]:pos[0] + a.batch]
        pos[0] += a.batch
        x, y = x_all[idx].to(dev), y_all[idx].to(dev)
        with autocast():
            loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    s = time.perf_counter() - t0
    print(json.dumps({"framework": "torch", "model": a.model,
                      "threads": a.threads, "batch": a.batch,
                      "steps": a.steps, "seconds": round(s, 4),
                      "samples_per_s": round(a.steps * a.batch / s, 1),
                      "device": a.device, "amp": a.amp,
                      "cpu_isa": cpu_capability(),
                      "final_loss": round(loss, 4)}))


if __name__ == "__main__":
    main()
