#!/usr/bin/env python3
"""The pipeline bubble, measured from the timeline against 1F1B's
(p - 1) / (m + p - 1).

    /usr/bin/python3 benchmarks/pipeline_bubble.py --stages 2 4 --micro 4 8

For each (p stages, m micro-batches) it runs, under `mpirun -np p`, an MLP
of 4 x p equal fc layers (width --width, tanh), 4 layers per stage
(`fluid.pipeline_stage`; the input takes a gradient too, so that the
first stage's first layer costs what the others cost: equal stages, as
the formula assumes), with fluid.MPIExecutor (pipeline_stages p,
micro_batches m, 1F1B, 1 thread per rank) for --steps steps, the
timeline on. From the timeline of the steps after the first two:

    span(step)   = last op end - first op start, over every rank;
    busy(rank)   = the rank's compute ops' time in the step (every op but
                   send_v2, recv_v2, c_wait and the collectives, which
                   wait on other ranks);
    bubble(rank) = 1 - busy / span; the table's bubble is the mean over
                   ranks and steps.

1F1B with equal stages and free communication idles each stage for p - 1
micro-batch slots of m + p - 1, the formula. Prints a Markdown table:
p, m, the formula, the measured bubble, their ratio. With more ranks
than cores (p = 4 on a 2-core machine) the ranks share cores, so a stage
computes faster while its neighbours wait: the measure is then not a
pipeline's, and the table says so.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WAITS = {"send_v2", "recv_v2", "c_wait", "c_broadcast", "c_allreduce",
         "c_allgather", "c_reducescatter", "split", "sum"}


def worker(args):
    """One rank of one run (under mpirun)."""
    import numpy as np
    import fluid
    p, m = args.stages, args.micro
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        # The input's gradient too, so that the first stage's first layer
        # costs what every other layer costs: the formula's equal stages.
        h = fluid.layers.data("x", [args.width], stop_gradient=False)
        y = fluid.layers.data("y", [1], dtype="int64")
        for s in range(p):
            with fluid.pipeline_stage(s):
                for _ in range(4):
                    h = fluid.layers.fc(h, args.width, act="tanh")
                if s == p - 1:
                    loss = fluid.layers.mean(
                        fluid.layers.softmax_with_cross_entropy(
                            fluid.layers.fc(h, 10), y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    strategy = fluid.DistributedStrategy()
    strategy.pipeline_stages = p
    strategy.pipeline_configs = {"micro_batches": m, "schedule": "1F1B"}
    exe = fluid.MPIExecutor(fluid.CPUPlace(), threads=1, strategy=strategy,
                            timeline=args.timeline)
    exe.run(startup)
    rng = np.random.RandomState(0)
    batch = args.micro_rows * m
    feed = {"x": rng.rand(batch, args.width).astype("float32"),
            "y": rng.randint(0, 10, (batch, 1)).astype("int64")}
    for _ in range(args.steps):
        exe.run(main, feed=feed, fetch_list=[loss])
    exe.close()


def bubble(path, skip=2):
    """The mean bubble over ranks and steps past the first `skip`."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans, busy = {}, {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "op":
            continue
        step = e.get("args", {}).get("step", 0)
        if step <= skip:
            continue
        lo, hi = spans.get(step, (float("inf"), 0.0))
        spans[step] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
        if e["name"] not in WAITS:
            key = (step, e["pid"])
            busy[key] = busy.get(key, 0.0) + e["dur"]
    fractions = [1 - b / (spans[s][1] - spans[s][0])
                 for (s, _), b in busy.items()]
    return sum(fractions) / len(fractions)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--micro", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--micro-rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--timeline", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.stages, args.micro = args.stages[0], args.micro[0]
        return worker(args)
    cores = os.cpu_count() or 1
    print("| stages p | micro-batches m | (p-1)/(m+p-1) | measured | "
          "measured / formula |")
    print("|---|---|---|---|---|")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for p in args.stages:
        for m in args.micro:
            with tempfile.TemporaryDirectory() as tmp:
                tl = os.path.join(tmp, "timeline.json")
                cmd = ["mpirun", "--oversubscribe", "-np", str(p),
                       sys.executable, os.path.abspath(__file__), "--worker",
                       "--stages", str(p), "--micro", str(m),
                       "--width", str(args.width),
                       "--micro-rows", str(args.micro_rows),
                       "--steps", str(args.steps), "--timeline", tl]
                subprocess.run(cmd, check=True, env=env,
                               stdout=subprocess.DEVNULL)
                got = bubble(tl)
            want = (p - 1) / (m + p - 1)
            note = "" if p <= cores else f" ({p} ranks on {cores} cores)"
            print(f"| {p} | {m} | {want:.3f} | {got:.3f} | "
                  f"{got / want:.2f}{note} |")


if __name__ == "__main__":
    sys.exit(main())
