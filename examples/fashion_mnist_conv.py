#!/usr/bin/env python3
"""Train LeNet on Fashion-MNIST with fluid (the `trainer --model lenet`
network, written in Python).

    PYTHONPATH=build/python /usr/bin/python3 examples/fashion_mnist_conv.py
    mpirun -np 2 -x PYTHONPATH /usr/bin/python3 \\
        examples/fashion_mnist_conv.py --distributed
    ... --save lenet.pb      # write the job for `trainer --program lenet.pb`
    ... --max-steps 50       # a quick run
"""
import argparse
import time

import fluid


def build(lr=0.05, momentum=0.9, seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = fluid.layers.data("image", [1, 28, 28])
        label = fluid.layers.data("label", [1], dtype="int64")
        h = fluid.layers.conv2d(image, 20, 5, act="relu")
        h = fluid.layers.pool2d(h, 2, "max", 2)
        h = fluid.layers.conv2d(h, 50, 5, act="relu")
        h = fluid.layers.pool2d(h, 2, "max", 2)
        h = fluid.layers.fc(h, 500, act="relu")
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
    ap.add_argument("--batch-size", type=int, default=64,
                    help="samples per step per rank")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop each epoch after this many steps (0: all)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--distributed", action="store_true",
                    help="fluid.MPIExecutor (run under mpirun)")
    ap.add_argument("--use-cuda", action="store_true",
                    help="run on the GPU (of each rank's node-local rank)")
    ap.add_argument("--save", help="write the training job here and exit")
    a = ap.parse_args()
    place = fluid.CUDAPlace() if a.use_cuda else fluid.CPUPlace()
    main_p, startup, test, image, label, loss, acc = build()
    if a.save:
        fluid.io.save_job(a.save, main_p, startup, [image, label], loss, [acc])
        print(f"wrote {a.save}")
        return
    exe = (fluid.MPIExecutor(place, threads=a.threads) if a.distributed
           else fluid.Executor(place, threads=a.threads))
    rank = getattr(exe, "rank", 0)
    world = getattr(exe, "world_size", 1)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    x, y = fluid.datasets.fashion_mnist.train()
    for epoch in range(a.epochs):
        t0, n, step = time.time(), 0, 0
        for bx, by in fluid.datasets.reader((x, y), a.batch_size, rank, world,
                                            seed=1, epoch=epoch):
            l, ac = exe.run(main_p, feed={"image": bx, "label": by},
                            fetch_list=[loss, acc], scope=scope)
            n += len(bx)
            step += 1
            if a.max_steps and step >= a.max_steps:
                break
        if rank == 0:
            print(f"epoch {epoch + 1}: {step} steps, loss {float(l[0]):.4f} "
                  f"accuracy {float(ac[0]):.4f} "
                  f"{n * world / (time.time() - t0):.0f} samples/s",
                  flush=True)
    if a.distributed:
        exe.check_consistency()  # every rank holds the same parameters
    if rank == 0:
        tx, ty = fluid.datasets.fashion_mnist.test()
        evaluator = fluid.Executor(place, threads=a.threads)
        (test_acc,) = evaluator.run(test, feed={"image": tx, "label": ty},
                                    fetch_list=[acc], scope=scope)
        print(f"test accuracy {float(test_acc[0]):.4f}", flush=True)
        del evaluator
    del exe  # before `scope`, which it is bound to


if __name__ == "__main__":
    main()
