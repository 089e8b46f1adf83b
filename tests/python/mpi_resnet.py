#!/usr/bin/env python3
"""The ResNet of test_resnet_torch_oracle.py (Momentum, L2Decay,
GradientClipByGlobalNorm) under data parallelism with synchronised batch
norm equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_resnet.py

fluid.MPIExecutor(sync_batch_norm=True), each rank feeding its half of a
global batch of 16 for 10 steps, ends with the parameters and batch-norm
running statistics of one fluid.Executor on the whole batch
(relative 1e-5, norm-wise per tensor), and every persistable bitwise
identical on all ranks. In float64: the ranks sum the batch statistics in
another order than one process, and over 10 steps of this network float32
rounding differences grow past 1e-5 whoever computes them (see the
oracle test). Rank 0 prints "PASS ..." or "FAIL ..."; exits non-zero on
failure.
"""
import os
import sys
import traceback

# The reference is a plain Executor on every rank, on purpose.
os.environ["FLUID_INDEPENDENT_RANKS"] = "1"

import numpy as np

import fluid
from mpi_equivalence import compare, max_rel, shard
from test_resnet_torch_oracle import fluid_program

STEPS = 10
GLOBAL_BATCH = 16


def batch(step):
    rng = np.random.RandomState(500 + step)
    y = rng.randint(0, 10, size=(GLOBAL_BATCH, 1)).astype(np.int64)
    x = rng.rand(GLOBAL_BATCH, 1, 28, 28) * 0.3
    for i, label in enumerate(y[:, 0]):
        x[i, 0, 2 * label + 4:2 * label + 7, :] += 0.7
    return x.astype(np.float64), y


def train(exe, main, startup, loss, scope, rank=0, world=1):
    exe.run(startup, scope=scope)
    losses = []
    for step in range(STEPS):
        x, y = shard(batch(step), rank, world)
        (l,) = exe.run(main, feed={"image": x, "label": y},
                       fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(l).reshape(-1)[0]))
    return losses


def state_of(main, scope):
    """Parameters and running statistics (persistables but the optimizer's
    velocities and learning rate)."""
    names = [v["name"] for v in main.desc.vars() if v["persistable"]
             and v["name"].startswith(("conv2d_", "batch_norm_", "fc_"))
             and "velocity" not in v["name"]]
    return {n: np.array(scope.get(n), copy=True) for n in sorted(names)}


def check(exe):
    rank, world = exe.rank, exe.world_size
    with fluid.unique_name.guard():
        main, startup, loss = fluid_program("float64")
    ref_scope = fluid.Scope()
    ref = fluid.Executor(fluid.CPUPlace())
    ref_losses = train(ref, main, startup, loss, ref_scope)
    want = state_of(main, ref_scope)
    assert any(n.endswith(".w_2") for n in want), sorted(want)
    scope = fluid.Scope()
    train(exe, main, startup, loss, scope, rank, world)
    exe.check_consistency()  # every persistable, bitwise
    got = state_of(main, scope)
    bad = compare(got, want)
    result = (f"max relative difference {max_rel(got, want):.2e}; loss "
              f"{ref_losses[0]:.4f} -> {ref_losses[-1]:.4f}")
    del ref
    return bad, result, (ref_scope, scope)


def main():
    try:
        exe = fluid.MPIExecutor(fluid.CPUPlace(), sync_batch_norm=True)
        bad, result, keep = check(exe)
        if exe.rank == 0:
            print(f"{'FAIL' if bad else 'PASS'} resnet sync_batch_norm "
                  f"{exe.world_size} x {GLOBAL_BATCH // exe.world_size} == "
                  f"1 x {GLOBAL_BATCH}: {bad or result}", flush=True)
        exe = None  # noqa: F841 - the executor goes before the scopes
        del keep
        rc = 1 if bad else 0
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.exit(rc)


if __name__ == "__main__":
    main()
