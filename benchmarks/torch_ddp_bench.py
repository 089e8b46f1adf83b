#!/usr/bin/env python3
"""PyTorch DDP (gloo) counterpart of dist_bench: one process per rank,
launched with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set (Debian's torchrun
does not start on Python 3.11). Rank 0 prints one JSON line."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from torch_train_bench import model_of


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    net = nn.parallel.DistributedDataParallel(model_of(a.model))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank + 1)
    x = torch.rand(a.batch, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dist.barrier()
    s = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"framework": "torch-ddp", "model": a.model,
                          "np": world, "samples_per_s":
                          round(a.steps * a.batch * world / s, 1)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
