#!/usr/bin/env python3
"""Train the 784-512-256-10 MLP on Fashion-MNIST with fluid.

    PYTHONPATH=build/python /usr/bin/python3 examples/fashion_mnist_mlp.py
    mpirun -np 2 ... examples/fashion_mnist_mlp.py --distributed
    ... --save model.pb      # write the job for `trainer --program model.pb`
"""
import argparse
import time

import numpy as np

import fluid


def build(lr=0.1, momentum=0.9, seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = fluid.layers.data("image", [1, 28, 28])
        label = fluid.layers.data("label", [1], dtype="int64")
        h = fluid.layers.fc(image, 512, act="relu")
        h = fluid.layers.fc(h, 256, act="relu")
        logits = fluid.layers.fc(h, 10)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, label))
        acc = fluid.layers.accuracy(logits, label)
        test = main.clone(for_test=True)
        fluid.optimizer.Momentum(lr, momentum).minimize(loss)
    return main, startup, test, image, label, loss, acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--distributed", action="store_true",
                    help="fluid.MPIExecutor (run under mpirun)")
    ap.add_argument("--save", help="write the training job here and exit")
    a = ap.parse_args()
    main_p, startup, test, image, label, loss, acc = build()
    if a.save:
        fluid.io.save_job(a.save, main_p, startup, [image, label], loss, [acc])
        print(f"wrote {a.save}")
        return
    exe = (fluid.MPIExecutor(fluid.CPUPlace()) if a.distributed
           else fluid.Executor(fluid.CPUPlace()))
    rank = getattr(exe, "rank", 0)
    world = getattr(exe, "world_size", 1)
    exe.run(startup)
    x, y = fluid.datasets.fashion_mnist.train()
    for epoch in range(a.epochs):
        t0, n = time.time(), 0
        for bx, by in fluid.datasets.reader((x, y), a.batch_size, rank, world,
                                            seed=1, epoch=epoch):
            l, ac = exe.run(main_p, feed={"image": bx, "label": by},
                            fetch_list=[loss, acc])
            n += len(bx)
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {float(l[0]):.4f} accuracy "
                  f"{float(ac[0]):.4f} {n * world / (time.time() - t0):.0f} "
                  "samples/s")
    if rank == 0:
        tx, ty = fluid.datasets.fashion_mnist.test()
        (test_acc,) = fluid.Executor().run(test, feed={"image": tx,
                                                       "label": ty},
                                           fetch_list=[acc])
        print(f"test accuracy {float(test_acc[0]):.4f}")


if __name__ == "__main__":
    main()
