#!/usr/bin/env python3
"""PyTorch as the oracle: replays the steps oracle_dump took, from the same
initial weights on the same batches, and compares the losses and the final
parameters.

Exits 77 (ctest's skip code) with a message when torch is not installed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: PyTorch oracle needs numpy and torch ({e})")
    sys.exit(77)


def forward(model, p, x):
    """p: list of parameters in the framework's order, torch layouts."""
    if model == "mlp":
        h = x.reshape(x.shape[0], -1)
        h = F.relu(F.linear(h, p[0], p[1]))
        h = F.relu(F.linear(h, p[2], p[3]))
        return F.linear(h, p[4], p[5])
    h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1])), 2, 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3])), 2, 2)
    h = h.reshape(h.shape[0], -1)
    h = F.relu(F.linear(h, p[4], p[5]))
    return F.linear(h, p[6], p[7])


def to_torch(arr):
    # fc weights are [in, out] here and [out, in] in torch.
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.t().contiguous() if t.dim() == 2 else t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump-tool", required=True)
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory() as d:
        cmd = [a.dump_tool, "--model", a.model, "--optimizer", a.optimizer,
               "--lr", str(a.lr), "--momentum", str(a.momentum),
               "--steps", str(a.steps), "--batch", str(a.batch), "--out", d]
        if os.path.isdir(a.data):
            cmd += ["--data", a.data]
        subprocess.run(cmd, check=True)
        names = open(os.path.join(d, "params.txt")).read().split()
        params = [to_torch(np.load(os.path.join(d, f"init_{n}.npy")))
                  .requires_grad_() for n in names]
        if a.optimizer == "sgd":
            opt = torch.optim.SGD(params, lr=a.lr)
        elif a.optimizer == "momentum":
            opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum)
        else:
            opt = torch.optim.Adam(params, lr=a.lr)
        ours = np.load(os.path.join(d, "losses.npy"))
        worst = 0.0
        for s in range(a.steps):
            x = torch.from_numpy(np.load(os.path.join(d, f"image_{s}.npy")))
            y = torch.from_numpy(np.load(os.path.join(d, f"label_{s}.npy")))
            loss = F.cross_entropy(forward(a.model, params, x), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            ref = loss.item()
            rel = abs(ours[s] - ref) / max(abs(ref), 1e-12)
            worst = max(worst, rel)
            print(f"step {s:2d}  torch {ref:.7f}  ours {ours[s]:.7f}  "
                  f"rel {rel:.2e}")
        failed = worst > a.rtol
        for n, p in zip(names, params):
            final = to_torch(np.load(os.path.join(d, f"final_{n}.npy")))
            # Relative error in norm: single elements may differ more where
            # a ReLU or a max-pool tie went the other way on float rounding.
            err = (final - p.detach()).norm().item()
            scale = max(p.detach().norm().item(), 1e-12)
            print(f"final {n}: |diff| / |p| = {err / scale:.2e}")
            if err > a.rtol * scale:
                failed = True
        print(f"{a.model}/{a.optimizer}: worst loss rel diff {worst:.2e} "
              f"(limit {a.rtol:g}) -> {'FAIL' if failed else 'ok'}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
