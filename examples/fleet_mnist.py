#!/usr/bin/env python3
"""A Fluid 1.8 collective training script as its users wrote it: Fleet's
role maker and distributed optimizer, a DataLoader over a sample reader,
fleet.main_program run by a plain fluid.Executor, evaluation on a clone,
worker 0 saving the persistables. Only the import lines differ from such a
script (`paddle.fluid` -> `fluid`; the data is Fashion-MNIST, read by
fluid.datasets instead of paddle.dataset.mnist). Run it on N ranks with

    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 examples/fleet_mnist.py

(as root add --allow-run-as-root; PYTHONPATH=build/python). Without
mpirun it trains in one process.
"""
import argparse
import itertools

import numpy as np

import fluid
from fluid.incubate.fleet.base import role_maker
from fluid.incubate.fleet.collective import DistributedStrategy, fleet


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=0,
                        help="train on the first N samples (0: all)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--save_dir", default="")
    return parser.parse_args()


def mlp(img, label):
    hidden = fluid.layers.fc(input=img, size=200, act="tanh")
    hidden = fluid.layers.fc(input=hidden, size=200, act="tanh")
    prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(loss)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    return avg_loss, acc


def first(reader, n):
    if n <= 0:
        return reader
    return lambda: itertools.islice(reader(), n)


def train(args):
    role = role_maker.PaddleCloudRoleMaker(is_collective=True)
    fleet.init(role)

    img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    avg_loss, acc = mlp(img, label)
    test_program = fluid.default_main_program().clone(for_test=True)

    strategy = DistributedStrategy()
    strategy.fuse_all_reduce_ops = True
    optimizer = fluid.optimizer.Adam(learning_rate=0.001)
    optimizer = fleet.distributed_optimizer(optimizer, strategy=strategy)
    optimizer.minimize(avg_loss)

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(fluid.default_startup_program())

    train_reader = fluid.io.batch(
        fluid.io.shuffle(first(fluid.datasets.fashion_mnist.train_reader(),
                               args.samples), buf_size=500),
        batch_size=args.batch_size, drop_last=True)
    loader = fluid.io.DataLoader.from_generator(
        feed_list=[img, label], capacity=8, iterable=True)
    loader.set_sample_list_generator(train_reader, places=place)

    for epoch in range(args.epochs):
        for step, data in enumerate(loader()):
            loss_v, acc_v = exe.run(fleet.main_program, feed=data,
                                    fetch_list=[avg_loss, acc])
            if step % 20 == 0 and fleet.worker_index() == 0:
                print(f"epoch {epoch} step {step}: loss "
                      f"{float(np.mean(loss_v)):.4f} accuracy "
                      f"{float(np.mean(acc_v)):.4f}", flush=True)

    test_reader = fluid.io.batch(
        first(fluid.datasets.fashion_mnist.test_reader(), args.samples),
        batch_size=args.batch_size)
    feeder = fluid.DataFeeder(feed_list=[img, label], place=place)
    accs = []
    for data in test_reader():
        accs.append(exe.run(test_program, feed=feeder.feed(data),
                            fetch_list=[acc])[0])
    if fleet.is_first_worker():
        print(f"test accuracy {float(np.mean(accs)):.4f} on worker 0 of "
              f"{fleet.worker_num()}", flush=True)
        if args.save_dir:
            fleet.save_persistables(exe, args.save_dir)
    print(f"worker {fleet.worker_index()}: trained", flush=True)


if __name__ == "__main__":
    train(parse_args())
