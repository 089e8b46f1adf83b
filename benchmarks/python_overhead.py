#!/usr/bin/env python3
"""Per-step overhead of driving training from Python: fluid.MPIExecutor.run
on the mlp (batch 64), next to the C++ train_bench on the same model, batch
and data, in one run, interleaved, median of --repeats.

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/python_overhead.py \
        --bench build/benchmarks/train_bench
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import fluid


def python_run(steps, warmup, batch, model):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.layers.data("image", [1, 28, 28])
        label = fluid.layers.data("label", [1], dtype="int64")
        if model == "mlp":
            h = fluid.layers.fc(image, 512, act="relu")
            h = fluid.layers.fc(h, 256, act="relu")
        else:
            h = fluid.layers.conv2d(image, 20, 5, act="relu")
            h = fluid.layers.pool2d(h, 2, "max", 2)
            h = fluid.layers.conv2d(h, 50, 5, act="relu")
            h = fluid.layers.pool2d(h, 2, "max", 2)
            h = fluid.layers.fc(h, 500, act="relu")
        logits = fluid.layers.fc(h, 10)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Momentum(0.1 if model == "mlp" else 0.05,
                                 0.9).minimize(loss)
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    try:
        x, y = fluid.datasets.fashion_mnist.train()
    except Exception:  # no data set: seeded noise
        rng = np.random.RandomState(1)
        x = rng.rand(batch * 16, 1, 28, 28).astype(np.float32)
        y = rng.randint(0, 10, (batch * 16, 1)).astype(np.int64)
    batches = [(x[i:i + batch], y[i:i + batch])
               for i in range(0, batch * 64, batch)]
    for i in range(warmup):
        bx, by = batches[i % len(batches)]
        exe.run(main, feed={"image": bx, "label": by}, fetch_list=[loss],
                scope=scope)
    t0 = time.perf_counter()
    for i in range(steps):
        bx, by = batches[i % len(batches)]
        exe.run(main, feed={"image": bx, "label": by}, fetch_list=[loss],
                scope=scope)
    return steps * batch / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    py, cc = [], []
    for _ in range(a.repeats):
        py.append(python_run(a.steps, 20, 64, a.model))
        out = subprocess.run([a.bench, "--model", a.model, "--steps",
                              str(a.steps)], check=True, capture_output=True,
                             text=True).stdout
        cc.append(json.loads(out.strip().splitlines()[-1])["samples_per_s"])
    p, c = statistics.median(py), statistics.median(cc)
    print(f"| {a.model} | batch 64 | C++ {c:.0f} samples/s | Python "
          f"MPIExecutor.run {p:.0f} samples/s | overhead "
          f"{(c / p - 1) * 100:+.1f}% per step |")


if __name__ == "__main__":
    main()
