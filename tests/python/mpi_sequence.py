#!/usr/bin/env python3
"""Data-parallel training on ragged sequence batches equals one process on
the whole batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_sequence.py OUT_DIR

A tiny sequence classifier (per-token features [8], lod_level=1 -> fc ->
sequence_pool -> fc -> softmax cross entropy, mean over the sequences,
SGD) trains for STEPS steps. Each step's global batch holds GLOBAL
sequences of different lengths (an empty one included); rank r feeds the
r-th contiguous share of whole sequences, packed by DataFeeder. The ranks
must end with the parameters a single-process Executor reaches on the
whole batch (relative 1e-5, norm-wise per parameter), and with the same
bits on every rank (check_consistency, and each rank's parameters written
to OUT_DIR/rank<r>.npz for the caller to compare). Rank 0 prints PASS or
FAIL; the exit status is non-zero on failure.
"""
import os
import sys

import numpy as np

import fluid

L = fluid.layers
SEED = 11
GLOBAL = 8
STEPS = 6
LR = 0.2
RTOL = 1e-5
FEATURES = 8
CLASSES = 3


def build(pool_type):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        main.random_seed = SEED
        x = L.data("x", [FEATURES], lod_level=1)
        label = L.data("label", [1], dtype="int64")
        h = L.fc(x, 16, act="tanh")
        pooled = L.sequence_pool(h, pool_type)
        logits = L.fc(pooled, CLASSES)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.SGD(LR).minimize(loss)
    return main, startup, loss, x, label


def global_batch(step):
    """GLOBAL samples (sequence [len, FEATURES], label); the label is which
    feature carries a bright band, so the loss falls."""
    rng = np.random.RandomState(500 + step)
    samples = []
    for i in range(GLOBAL):
        n = 0 if (i == 3 and step % 2 == 0) else int(rng.randint(1, 7))
        y = int(rng.randint(0, CLASSES))
        seq = rng.rand(n, FEATURES).astype(np.float32) * 0.3
        seq[:, 2 * y] += 0.7
        samples.append((seq, [y]))
    return samples


def params(scope, program):
    names = sorted(v["name"] for v in program.desc.vars()
                   if v["persistable"] and v["trainable"])
    return {n: np.array(scope.get(n), copy=True) for n in names}


def train(exe, main, startup, loss, feeder, scope, rank, world):
    exe.run(startup, scope=scope)
    per = GLOBAL // world
    for step in range(STEPS):
        batch = global_batch(step)[rank * per:(rank + 1) * per]
        exe.run(main, feed=feeder.feed(batch), fetch_list=[loss], scope=scope)
    return params(scope, main)


def main_():
    out_dir = sys.argv[1]
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    problems = []
    for pool_type in ("sum", "average", "max"):
        main, startup, loss, x, label = build(pool_type)
        feeder = fluid.DataFeeder([x, label], fluid.CPUPlace(), program=main)
        ref_scope = fluid.Scope()
        ref = fluid.Executor(fluid.CPUPlace())
        want = train(ref, main, startup, loss, feeder, ref_scope, 0, 1)
        scope = fluid.Scope()
        got = train(exe, main, startup, loss, feeder, scope, rank, world)
        exe.check_consistency()
        for n in want:
            den = max(np.linalg.norm(want[n]), 1e-30)
            rel = float(np.linalg.norm(got[n] - want[n]) / den)
            if not rel <= RTOL:
                problems.append(f"{pool_type} {n}: relative difference "
                                f"{rel:.3g} > {RTOL:g}")
        np.savez(os.path.join(out_dir, f"rank{rank}_{pool_type}.npz"), **got)
        del ref  # before ref_scope, which it is bound to
    if rank == 0:
        print("FAIL " + "; ".join(problems) if problems else
              f"PASS on {world} rank(s)", flush=True)
    elif problems:
        print(f"rank {rank}: FAIL " + "; ".join(problems), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main_())
