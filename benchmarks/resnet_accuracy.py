#!/usr/bin/env python3
"""Accuracy, not speed: `trainer --model resnet` and its PyTorch twin
(torch_train_bench.resnet(): the same layers) trained for the same epochs
of Fashion-MNIST with the same schedule (Momentum 0.9, lr 0.05, batch 64,
shuffled each epoch, each framework's own default initialisation and
seed), then scored on the 10,000 test images with batch norm on its
running statistics. Both run in this one invocation, one after the other,
with the same thread count.

    /usr/bin/python3 benchmarks/resnet_accuracy.py --trainer build/bin/trainer
    ... --train-samples 10000     # a shorter run

Prints one Markdown table row per framework and the difference in points.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

DATA = "/usr/share/datasets/fashion-mnist"


def load_split(d, train):
    import gzip
    prefix = "train" if train else "t10k"

    def read(name):
        for path in (os.path.join(d, name + ".gz"), os.path.join(d, name)):
            if os.path.exists(path):
                opener = gzip.open if path.endswith(".gz") else open
                with opener(path, "rb") as f:
                    return f.read()
        raise FileNotFoundError(os.path.join(d, name))

    img = read(f"{prefix}-images-idx3-ubyte")
    lab = read(f"{prefix}-labels-idx1-ubyte")
    x = np.frombuffer(img, np.uint8, offset=16).reshape(-1, 1, 28, 28)
    y = np.frombuffer(lab, np.uint8, offset=8).astype(np.int64)
    return x.astype(np.float32) / 255.0, y


def ours(a):
    cmd = [a.trainer, "--model", "resnet", "--data", a.data, "--epochs",
           str(a.epochs), "--batch-size", str(a.batch), "--threads",
           str(a.threads), "--seed", str(a.seed)]
    if a.train_samples:
        cmd += ["--train-samples", str(a.train_samples)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True,
                         text=True).stdout
    seconds = time.perf_counter() - t0
    acc = re.findall(r"test accuracy\s*[=:]?\s*([0-9.]+)", out)
    if not acc:
        raise RuntimeError("no test accuracy in the trainer's output:\n" + out)
    return float(acc[-1]), seconds


def theirs(a):
    import torch
    from torch_train_bench import resnet

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    x, y = load_split(a.data, True)
    if a.train_samples:
        x, y = x[:a.train_samples], y[:a.train_samples]
    tx, ty = load_split(a.data, False)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    net = resnet()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        net.train()
        perm = torch.randperm(x.shape[0])
        for i in range(0, x.shape[0], a.batch):
            idx = perm[i:i + a.batch]
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, tx.shape[0], 1000):
            pred = net(torch.from_numpy(tx[i:i + 1000])).argmax(1).numpy()
            correct += int((pred == ty[i:i + 1000]).sum())
    return correct / tx.shape[0], time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainer", default=os.path.join(
        HERE, "..", "build", "bin", "trainer"))
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-samples", type=int, default=0,
                    help="the first N training images (0: all 60,000)")
    a = ap.parse_args()
    n = a.train_samples or 60000
    print(f"resnet, {a.epochs} epoch(s) of {n} images, batch {a.batch}, "
          f"{a.threads} threads")
    print("| framework | test accuracy | seconds |")
    print("|---|---|---|", flush=True)
    o_acc, o_s = ours(a)
    print(f"| ours (`trainer --model resnet`) | {o_acc:.4f} | {o_s:.0f} |",
          flush=True)
    t_acc, t_s = theirs(a)
    print(f"| PyTorch 1.13 | {t_acc:.4f} | {t_s:.0f} |")
    print(f"difference: {100 * (o_acc - t_acc):+.2f} points")

if __name__ == "__main__":
    main()
