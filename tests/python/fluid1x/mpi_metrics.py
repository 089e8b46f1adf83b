#!/usr/bin/env python3
"""Metrics of a data-parallel job, summed over its ranks.

    mpirun -np N /usr/bin/python3 tests/python/fluid1x/mpi_metrics.py OUT

Every rank takes its contiguous share of each global batch (one rank takes
all of it), then

  - updates one of each fluid.metrics metric with its share, and records
    eval() before and after metric.sum_over_ranks();
  - trains a small model with fluid.MPIExecutor in a program that also
    holds fluid.layers.auc over fed predictions, and records this rank's
    auc and batch auc, its histograms, and
    fluid.metrics.global_auc(stat_pos, stat_neg);
  - sums a nested list with fluid.metrics.sum_over_ranks.

and writes OUT/metrics.rank<r>.npz. test_metrics.py compares N = 2 with
N = 1: summed over the ranks, every metric is the one process's.
"""
import os
import sys

import numpy as np

import fluid

L = fluid.layers
STEPS = 3
GLOBAL_BATCH = 64
NUM_THRESHOLDS = 4095


def global_batch(step):
    """Step `step`'s global batch: the probability of class 1 of each row,
    in the middle of a bucket of its own (p * 4095 = b + 1/2, so no two
    rows of a batch share a bucket), float32 [N, 2] predictions, int64
    labels [N, 1], features x [N, 4] and targets y [N, 1] for the model,
    edit distances [N, 1] and chunk counts [N, 3]."""
    rng = np.random.RandomState(100 + step)
    b = rng.permutation(NUM_THRESHOLDS)[:GLOBAL_BATCH]
    p = (b + 0.5) / NUM_THRESHOLDS
    preds = np.stack([1 - p, p], axis=1).astype(np.float32)
    labels = rng.randint(0, 2, (GLOBAL_BATCH, 1)).astype(np.int64)
    x = rng.randn(GLOBAL_BATCH, 4).astype(np.float32)
    y = x.sum(axis=1, keepdims=True).astype(np.float32)
    distances = rng.randint(0, 4, (GLOBAL_BATCH, 1)).astype(np.float32)
    infer = rng.randint(0, 5, GLOBAL_BATCH)
    label_chunks = rng.randint(0, 5, GLOBAL_BATCH)
    correct = np.minimum(infer, label_chunks) // 2
    chunks = np.stack([infer, label_chunks, correct], axis=1)
    return dict(preds=preds, labels=labels, x=x, y=y, distances=distances,
                chunks=chunks)


def share(batch, rank, world):
    """This rank's contiguous share of every array of a global batch."""
    per = GLOBAL_BATCH // world
    return {k: v[rank * per:(rank + 1) * per] for k, v in batch.items()}


def metrics():
    """One of each metric, in a fixed order."""
    composite = fluid.metrics.CompositeMetric()
    composite.add_metric(fluid.metrics.Precision())
    composite.add_metric(fluid.metrics.Recall())
    return [fluid.metrics.Accuracy(), fluid.metrics.Precision(),
            fluid.metrics.Recall(), fluid.metrics.Auc("auc"),
            fluid.metrics.EditDistance("edit"),
            fluid.metrics.ChunkEvaluator(), composite]


def update(ms, part):
    """Adds a share of a batch to the metrics of metrics()."""
    acc, precision, recall, auc, edit, chunk, composite = ms
    p = part["preds"][:, 1:]
    n = len(p)
    acc.update(value=float(np.mean(np.rint(p) == part["labels"])),
               weight=n)
    precision.update(p, part["labels"])
    recall.update(p, part["labels"])
    auc.update(part["preds"], part["labels"])
    edit.update(part["distances"], n)
    chunk.update(*[int(c) for c in part["chunks"].sum(axis=0)])
    composite.update(p, part["labels"])


def evals(ms):
    """Every metric's eval(), flattened to one float64 vector."""
    out = []
    for m in ms:
        v = m.eval()
        out.extend(np.ravel(np.asarray(v, dtype=np.float64)).tolist())
    return np.asarray(out)


def train_with_auc(rank, world):
    """fluid.MPIExecutor trains a linear model whose program also counts
    fluid.layers.auc over the fed predictions; returns what it records."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        y = L.data("y", [1])
        pred = L.data("pred", [2])
        label = L.data("label", [1], dtype="int64")
        loss = L.mean(L.square_error_cost(L.fc(x, 1), y))
        auc_var, batch_auc_var, auc_states = L.auc(input=pred, label=label)
        fluid.optimizer.SGD(0.05).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for step in range(STEPS):
        part = share(global_batch(step), rank, world)
        _, auc, batch_auc = exe.run(
            main, feed={"x": part["x"], "y": part["y"],
                        "pred": part["preds"], "label": part["labels"]},
            fetch_list=[loss, auc_var, batch_auc_var], scope=scope)
    stat_pos, stat_neg = auc_states[2], auc_states[3]
    return dict(
        auc=auc, batch_auc=batch_auc,
        stat_pos=np.array(scope.find_var(stat_pos.name).get_tensor()),
        stat_neg=np.array(scope.find_var(stat_neg.name).get_tensor()),
        global_auc=np.float64(fluid.metrics.global_auc(stat_pos, stat_neg,
                                                       scope=scope)),
        # The scope keeps this rank's own counts.
        stat_pos_after=np.array(scope.find_var(stat_pos.name).get_tensor()))


def main(out):
    rank = fluid._core.launcher_rank()
    world = fluid._core.launcher_world_size()
    ms = metrics()
    for step in range(STEPS):
        update(ms, share(global_batch(step), rank, world))
    local = evals(ms)
    for m in ms:
        m.sum_over_ranks()
    summed = evals(ms)
    nested = fluid.metrics.sum_over_ranks(
        [rank + 1, [np.full((2, 3), rank, dtype=np.int32), 0.25 * rank],
         (np.arange(3.0) * (rank + 1),)])
    results = dict(local=local, summed=summed,
                   nested_int=np.int64(nested[0]), nested_array=nested[1][0],
                   nested_float=np.float64(nested[1][1]),
                   nested_tuple=nested[2][0],
                   nested_types=np.array([type(nested[0]).__name__,
                                          str(nested[1][0].dtype),
                                          type(nested[1][1]).__name__,
                                          type(nested[2]).__name__]))
    results.update(train_with_auc(rank, world))
    np.savez(os.path.join(out, f"metrics.rank{rank}.npz"), **results)
    print(f"rank {rank} of {world}: done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
