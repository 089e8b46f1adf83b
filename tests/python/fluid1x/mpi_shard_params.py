"""Parameter sharding (stage 3) under mpirun (run by
test_shard_params.py):

  mpi_shard_params.py OPT OUT
      20 steps of a 16-31-7-4 classifier with optimizer OPT (sgd |
      momentum | adam | clipped: momentum with L2 decay and global-norm
      clipping), unsharded, at stage 2 and at stage 3 (parameters of
      100 elements or more kept as shards: the two larger weights, 496 and
      217 elements, each a bucket, the second split unevenly by 4 ranks);
      each run
      saves its persistables (stage 3: gathered, in the full form) and
      reads them back into a one-process scope. Saves the losses and the
      parameters of the three runs."""
import os
import sys

import numpy as np

import fluid
from fluid1x_common import (CLASSES, FEATURES, rank_and_world, rank_batch,
                            save_results)

STEPS = 20


def build(opt_name):
    """(main, startup, loss) of the classifier, with `opt_name` minimizing
    its loss."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", shape=[FEATURES])
        y = fluid.layers.data("y", shape=[1], dtype="int64")
        h = fluid.layers.fc(x, 31, act="relu")
        h = fluid.layers.fc(h, 7, act="relu")
        logits = fluid.layers.fc(h, CLASSES)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
        opt = {"sgd": lambda: fluid.optimizer.SGD(learning_rate=0.1),
               "momentum": lambda: fluid.optimizer.Momentum(
                   learning_rate=0.1, momentum=0.9),
               "adam": lambda: fluid.optimizer.Adam(learning_rate=0.01),
               # L2 decay and global-norm clipping run on the shards.
               "clipped": lambda: fluid.optimizer.Momentum(
                   learning_rate=0.1, momentum=0.9,
                   regularization=fluid.regularizer.L2Decay(1e-3),
                   grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5))}
        opt[opt_name]().minimize(loss)
    return main, startup, loss


def train(opt_name, stage, out):
    """Losses and the saved-and-reloaded parameters of one run."""
    rank, world = rank_and_world()
    strategy = fluid.DistributedStrategy()
    if stage:
        strategy.sharding = True
        strategy.sharding_configs = {"stage": stage,
                                     "param_persistence_threshold": 100}
    main, startup, loss = build(opt_name)
    scope = fluid.Scope()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy)
    exe.run(startup, scope=scope)
    losses = []
    for step in range(STEPS):
        samples = rank_batch(step, rank, world)
        x = np.stack([s[0] for s in samples])
        y = np.stack([s[1] for s in samples])
        (value,) = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss],
                           scope=scope)
        losses.append(float(np.asarray(value).ravel()[0]))
    ckpt = os.path.join(out, f"{opt_name}_stage{stage}_rank{rank}")
    fluid.io.save_persistables(exe, ckpt, main, scope=scope)
    # Back in one process, unsharded: the checkpoint is in the full form.
    plain_main, plain_startup, _ = build(opt_name)
    one = fluid.Scope()
    single = fluid.Executor(fluid.CPUPlace())
    single.run(plain_startup, scope=one)
    if rank == 0:
        fluid.io.load_persistables(single, ckpt, plain_main, scope=one)
    params = {p.name: np.array(one.find_var(p.name).get_tensor())
              for p in plain_main.all_parameters()}
    return losses, params


def main(argv):
    opt_name, out = argv[1], argv[2]
    rank, _ = rank_and_world()
    runs = {stage: train(opt_name, stage, out) for stage in (0, 2, 3)}
    extra = {f"losses{stage}": runs[stage][0] for stage in (0, 2)}
    for stage in (0, 2):
        for name, value in runs[stage][1].items():
            extra[f"s{stage}/{name}"] = value
    save_results(out, opt_name, runs[3][0], runs[3][1], **extra)
    print(f"rank {rank}: ok: {opt_name}")


if __name__ == "__main__":
    main(sys.argv)
