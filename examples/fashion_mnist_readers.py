#!/usr/bin/env python3
"""Train an MLP on Fashion-MNIST the Fluid 1.x way: sample readers, the
fluid.io decorators and fluid.DataFeeder.

    PYTHONPATH=build/python /usr/bin/python3 examples/fashion_mnist_readers.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/fashion_mnist_readers.py

Every rank shuffles with the same seed, then `shard` gives it every N-th
sample of that one order, the same number on every rank, so each step's
allreduce finds all ranks.
"""
import argparse

import numpy as np

import fluid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--samples", type=int, default=None,
                    help="train on the first N shuffled samples only")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    main_p, startup = fluid.Program(), fluid.Program()
    main_p.random_seed = a.seed
    with fluid.program_guard(main_p, startup):
        image = fluid.layers.data("image", [1, 28, 28])
        label = fluid.layers.data("label", [1], dtype="int64")
        h = fluid.layers.fc(image, 256, act="relu")
        logits = fluid.layers.fc(h, 10)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, label))
        acc = fluid.layers.accuracy(logits, label)
        test_p = main_p.clone(for_test=True)
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)

    exe = fluid.MPIExecutor(fluid.CPUPlace())  # a world of one without mpirun
    exe.run(startup)

    samples = fluid.io.shuffle(fluid.datasets.fashion_mnist.train_reader(),
                               buf_size=60000, seed=a.seed)
    if a.samples is not None:
        samples = fluid.io.firstn(samples, a.samples)
    train = fluid.io.buffered(fluid.io.batch(
        fluid.io.shard(samples, exe.rank, exe.world_size), a.batch_size), 4)
    feeder = fluid.DataFeeder(feed_list=[image, label],
                              place=fluid.CPUPlace(), program=main_p)

    steps = 0
    for epoch in range(a.epochs):
        for minibatch in train():
            l, ac = exe.run(main_p, feed=feeder.feed(minibatch),
                            fetch_list=[loss, acc])
            steps += 1
        print(f"rank {exe.rank}: epoch {epoch + 1}: {steps} steps, loss "
              f"{float(l[0]):.4f} accuracy {float(ac[0]):.4f}", flush=True)

    if exe.rank == 0:
        test = fluid.io.batch(fluid.datasets.fashion_mnist.test_reader(), 1000)
        accs = [exe.run(test_p, feed=feeder.feed(b), fetch_list=[acc])[0][0]
                for b in test()]
        print(f"test accuracy {float(np.mean(accs)):.4f}")


if __name__ == "__main__":
    main()
