#!/usr/bin/env python3
"""Per-iteration overhead of a while loop: the executor running a loop's
block in a fresh step scope per iteration, with an empty-ish body (the
counter's increment and the loop test: two ops). One run of N iterations
minus one run of 1, over N, median of --repeats; with is_test (each step
scope freed at once) and without (steps kept for the gradient, with a copy
of the loop-carried counter).

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/while_overhead.py
"""
import argparse
import statistics
import time

import numpy as np

import fluid

L = fluid.layers


def build(is_test):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        n = L.data("n", [1], dtype="int64", append_batch_size=False)
        i = L.fill_constant([1], "int64", 0)
        cond = L.less_than(i, n)
        loop = L.While(cond, is_test=is_test)
        with loop.block():
            L.increment(i)
            L.less_than(i, n, cond=cond)
    return main, i


def seconds(exe, main, i, scope, n):
    feed = {"n": np.array([n], dtype="int64")}
    t0 = time.perf_counter()
    out, = exe.run(main, feed=feed, fetch_list=[i], scope=scope)
    t = time.perf_counter() - t0
    assert int(out[0]) == n, (out, n)
    return t


def per_iteration_us(is_test, n, repeats):
    main, i = build(is_test)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    seconds(exe, main, i, scope, 10)  # warm up (prepares the program)
    samples = []
    for _ in range(repeats):
        long_run = seconds(exe, main, i, scope, n)
        short_run = seconds(exe, main, i, scope, 1)
        samples.append((long_run - short_run) / (n - 1) * 1e6)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    for is_test in (True, False):
        us = per_iteration_us(is_test, a.iterations, a.repeats)
        print(f"| is_test={is_test} | {a.iterations} iterations | "
              f"{us:.2f} us per iteration |")


if __name__ == "__main__":
    main()
