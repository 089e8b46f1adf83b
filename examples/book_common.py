"""What the book's examples share: the command line, Fashion-MNIST sample
readers sharded by rank (fluid.io decorators, fluid.DataFeeder) and the
train-then-test loop under fluid.MPIExecutor, a world of one without
mpirun and data-parallel under `mpirun -np N`."""
import argparse

import numpy as np

import fluid


def parse_args(doc, lr, batch_size=64, extra=None):
    """The shared options; `extra(parser)` adds an example's own."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=batch_size,
                    help="samples per step per rank")
    ap.add_argument("--samples", type=int, default=None,
                    help="train and test on the first N samples only")
    ap.add_argument("--lr", type=float, default=lr, help="learning rate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--use-cuda", action="store_true",
                    help="each rank on the GPU of its node-local rank")
    if extra is not None:
        extra(ap)
    return ap.parse_args()


def readers(a, rank, world, mapper=None, samples=None):
    """Batched train (shuffled, this rank's shard) and test readers over
    `samples`, a (train, test) pair of sample reader creators (default:
    Fashion-MNIST's (image, label) samples); `mapper`, if given, turns each
    sample into the feeds."""
    if samples is None:
        samples = (fluid.datasets.fashion_mnist.train_reader(),
                   fluid.datasets.fashion_mnist.test_reader())
    train = fluid.io.shuffle(samples[0], buf_size=60000, seed=a.seed)
    test = samples[1]
    if a.samples is not None:
        train = fluid.io.firstn(train, a.samples)
        test = fluid.io.firstn(test, a.samples)
    if mapper is not None:
        train = fluid.io.map_readers(mapper, train)
        test = fluid.io.map_readers(mapper, test)
    train = fluid.io.batch(fluid.io.shard(train, rank, world), a.batch_size)
    return train, fluid.io.batch(test, 500)


def evaluate(exe, test_p, test, feeder, fetches, names):
    """The test set's sample-weighted mean of each fetch."""
    totals, n = np.zeros(len(fetches)), 0
    for minibatch in test():
        values = exe.run(test_p, feed=feeder.feed(minibatch),
                         fetch_list=fetches)
        totals += [float(v[0]) * len(minibatch) for v in values]
        n += len(minibatch)
    return {k: t / n for k, t in zip(names, totals)}


def executor(a):
    """This rank's fluid.MPIExecutor on the place a.use_cuda picks."""
    return fluid.MPIExecutor(fluid.CUDAPlace() if a.use_cuda
                             else fluid.CPUPlace())


def train_and_test(a, programs, feeds, fetches, names, mapper=None,
                   samples=None, exe=None):
    """Trains `programs` (main, startup, test) for a.epochs on `samples`
    (see readers), printing rank 0's last step's `fetches` each epoch, then
    the test set's, on `exe` (default: executor(a)); returns the executor
    and, on rank 0, the test set's {name: mean} (None on the other
    ranks)."""
    main_p, startup, test_p = programs
    exe = exe or executor(a)
    place = exe.place
    exe.run(startup)
    train, test = readers(a, exe.rank, exe.world_size, mapper, samples)
    feeder = fluid.DataFeeder(feed_list=feeds, place=place, program=main_p)
    steps = 0
    for epoch in range(a.epochs):
        for minibatch in train():
            values = exe.run(main_p, feed=feeder.feed(minibatch),
                             fetch_list=fetches)
            steps += 1
        if exe.rank == 0:
            last = ", ".join(f"{k} {float(v[0]):.4f}"
                             for k, v in zip(names, values))
            print(f"epoch {epoch + 1}: {steps} steps, {last}", flush=True)
    exe.sync_running_stats()  # batch_norm's statistics, averaged over ranks
    exe.check_consistency()  # every rank holds the same parameters
    metrics = None
    if exe.rank == 0:
        metrics = evaluate(exe, test_p, test, feeder, fetches, names)
        print("test " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()),
              flush=True)
    print(f"rank {exe.rank}: trained {steps} steps on {exe.world_size} "
          f"rank(s)", flush=True)
    return exe, metrics
