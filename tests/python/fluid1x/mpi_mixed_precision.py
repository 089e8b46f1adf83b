"""Mixed precision under mpirun (run by test_mixed_precision.py):

  mpi_mixed_precision.py bf16 OUT         20 bf16 steps with MPIExecutor and
      DistributedStrategy.amp; saves the parameters (and, on every rank, a
      single-process run of the global batch for N x B vs 1 x NB).
  mpi_mixed_precision.py fp16_poison OUT  fp16 with dynamic loss scaling;
      step 3's batch overflows on rank 1 only: every rank must skip it.
  mpi_mixed_precision.py composed OUT     bf16 with sync batch norm, a
      sparse embedding, clipping and decay, unsharded and sharded."""
import sys

import numpy as np

import fluid
from fluid1x_common import (CLASSES, FEATURES, rank_and_world, rank_batch,
                            global_batch, save_results)
from test_mixed_precision import build_mlp

STEPS = 20


def run(mode, out):
    rank, world = rank_and_world()
    strategy = fluid.DistributedStrategy()
    strategy.amp = True
    strategy.amp_configs = (
        {"dtype": "bf16"} if mode == "bf16" else
        {"dtype": "fp16", "init_loss_scaling": 64.0,
         "decr_every_n_nan_or_inf": 1, "decr_ratio": 0.5})
    main, startup, loss = build_mlp()
    with fluid.program_guard(main, startup):
        fluid.optimizer.Momentum(learning_rate=0.1,
                                 momentum=0.9).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    names = [p.name for p in main.all_parameters()]

    def params():
        return {n: np.array(scope.find_var(n).get_tensor()) for n in names}

    losses, extra, before = [], {}, None
    for step in range(STEPS if mode == "bf16" else 5):
        samples = rank_batch(step, rank, world)
        x = np.stack([s[0] for s in samples])
        y = np.stack([s[1] for s in samples])
        if mode == "fp16_poison" and step == 3:
            before = params()
            if rank == 1:
                x = x.copy()
                x[0, 0] = 1e30
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
        if mode == "fp16_poison" and step == 3:
            after = params()
            extra["unchanged"] = [int(all(
                before[n].tobytes() == after[n].tobytes() for n in names))]
            extra["scale"] = np.array(
                scope.find_var("loss_scaling").get_tensor())
    ref_losses, ref_params = None, None
    if mode == "bf16":
        # The second program's parameters have other generated names: they
        # pair with this one's by position.
        ref_losses, ref_values = single_process_bf16(strategy)
        ref_params = dict(zip(names, ref_values))
    save_results(out, mode, losses, params(), ref_losses, ref_params, **extra)
    print(f"rank {rank}: ok: {mode}")


def single_process_bf16(strategy):
    """The same STEPS steps on the global batch in one process: the losses
    and the parameters' values, in the program's order."""
    main, startup, loss = build_mlp()
    with fluid.program_guard(main, startup):
        opt = fluid.contrib.mixed_precision.decorate(
            fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9),
            use_bf16=True)
        opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for step in range(STEPS):
        x, y = global_batch(step)
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    return losses, [np.array(scope.find_var(p.name).get_tensor())
                    for p in main.all_parameters()]


def build_composed(sparse=True):
    """Everything bf16 composes with in one program: a conv + batch norm,
    a sparse embedding, global-norm clipping and L2 decay; (main, startup,
    loss)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", shape=[FEATURES])
        ids = fluid.layers.data("ids", shape=[1], dtype="int64")
        y = fluid.layers.data("y", shape=[1], dtype="int64")
        img = fluid.layers.reshape(x, [-1, 1, 4, 4])
        conv = fluid.layers.conv2d(img, 4, 3, padding=1)
        bn = fluid.layers.batch_norm(conv, act="relu")
        emb = fluid.layers.embedding(ids, size=[50, 8], is_sparse=sparse)
        h = fluid.layers.concat([fluid.layers.flatten(bn), emb], axis=1)
        logits = fluid.layers.fc(h, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
        fluid.optimizer.Momentum(
            learning_rate=0.05, momentum=0.9,
            regularization=fluid.regularizer.L2Decay(1e-4),
            grad_clip=fluid.clip.GradientClipByGlobalNorm(1.0)).minimize(loss)
    return main, startup, loss


def composed(out):
    """bf16 with sync batch norm, a sparse embedding, clipping and decay,
    unsharded and sharded (stage 2: the sparse embedding stays replicated,
    the rest is sharded)."""
    rank, world = rank_and_world()
    results = {}
    for tag, shard in (("plain", False), ("sharded", True)):
        strategy = fluid.DistributedStrategy()
        strategy.amp = True
        strategy.sync_batch_norm = True
        if shard:
            strategy.sharding = True
        main, startup, loss = build_composed(sparse=True)
        scope = fluid.Scope()
        exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
        exe.run(startup, scope=scope)
        losses = []
        for step in range(10):
            samples = rank_batch(step, rank, world)
            x = np.stack([s[0] for s in samples])
            y = np.stack([s[1] for s in samples])
            ids = (np.abs(x[:, :1]) * 10).astype(np.int64) % 50
            (value,) = exe.run(main, feed={"x": x, "ids": ids, "y": y},
                               fetch_list=[loss], scope=scope)
            losses.append(float(np.asarray(value).ravel()[0]))
        results[tag] = (losses, {
            p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in main.all_parameters()})
    names = list(results["plain"][1])
    sharded = dict(zip(names, results["sharded"][1].values()))
    save_results(out, "composed", results["plain"][0], results["plain"][1],
                 results["sharded"][0], sharded)
    print(f"rank {rank}: ok: composed")


if __name__ == "__main__":
    if sys.argv[1] == "composed":
        composed(sys.argv[2])
    else:
        run(sys.argv[1], sys.argv[2])
