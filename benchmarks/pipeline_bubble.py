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
p, m, the formula, the measured bubble, their ratio, (at p = 2) two
replays of the same steps that say where a gap to the formula comes
from (see replay()), and the step's span, a rank's compute and its idle
time in ms (means), which compare runs whose compute differs:

    messages free:             each rank's recorded ops back to back,
                               each receive waiting only for its send's
                               issue: what the run's own op times give
                               with messages that take no time;
    messages free, ops equal:  the same with every op taking its median
                               time over ranks and steps: the schedule's
                               own bubble.

measured - "messages free" is what the messages cost; "messages free" -
"ops equal" is what the op times' variation and any difference between
the stages cost (in a 1F1B steady state with equal stages neither stage
has slack, so every op that runs long delays the other stage). With more ranks
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
    strategy.pipeline_configs = {"micro_batches": m, "schedule": "1F1B",
                                 "forwards_ahead": args.forwards_ahead[0]}
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


def step_ops(path, skip=2):
    """{step: {rank: [op events in time order]}} past the first `skip`."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    steps = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "op":
            continue
        step = e.get("args", {}).get("step", 0)
        if step > skip:
            steps.setdefault(step, {}).setdefault(e["pid"], []).append(e)
    for ranks in steps.values():
        for ops in ranks.values():
            ops.sort(key=lambda e: e["ts"])
    return steps


def busy(ops):
    """A rank's compute time in a step: every op but the waits."""
    return sum(e["dur"] for e in ops if e["name"] not in WAITS)


def span(ranks):
    """One step's span over every rank: last op end - first op start."""
    lo = min(e["ts"] for ops in ranks.values() for e in ops)
    hi = max(e["ts"] + e["dur"] for ops in ranks.values() for e in ops)
    return hi - lo


def bubble(steps):
    """The mean bubble over ranks and steps."""
    fractions = []
    for ranks in steps.values():
        fractions += [1 - busy(ops) / span(ranks) for ops in ranks.values()]
    return sum(fractions) / len(fractions)


def times(steps):
    """(step span, compute per rank, idle per rank), means over ranks and
    steps, in the timeline's unit (us): what the bubble's fraction is
    made of, so that runs whose compute differs compare in time."""
    spans, computes = [], []
    for ranks in steps.values():
        spans.append(span(ranks))
        computes += [busy(ops) for ops in ranks.values()]
    step = sum(spans) / len(spans)
    compute = sum(computes) / len(computes)
    return step, compute, step - compute


def replay(ranks, m):
    """The span of one step of two stages replayed with messages that take
    no time: each rank runs its own recorded compute ops back to back,
    except that its i-th receive (its first m c_waits: a stage of two
    receives one kind of message, activations or gradients, and waits
    for its sends only after its last backward) starts no earlier than
    the other rank's i-th send_v2, and the loss broadcast joins both."""
    seqs = {}
    for pid, ops in ranks.items():
        seq, waits = [], 0
        for e in ops:
            if e["name"] == "c_wait":
                if waits < m:
                    seq.append(("recv", 0.0))
                waits += 1
            elif e["name"] in ("send_v2", "c_broadcast"):
                seq.append((e["name"], 0.0))
            elif e["name"] not in WAITS:
                seq.append(("op", e["dur"]))
        seqs[pid] = seq
    a, b = sorted(seqs)
    other = {a: b, b: a}
    clock = {a: 0.0, b: 0.0}
    at = {a: 0, b: 0}
    sent = {a: [], b: []}  # when each send was issued
    joined = {a: [], b: []}  # when each broadcast was joined
    received = {a: 0, b: 0}
    moved = True
    while moved:
        moved = False
        for pid in (a, b):
            seq, o = seqs[pid], other[pid]
            while at[pid] < len(seq):
                kind, dur = seq[at[pid]]
                if kind == "recv":
                    i = received[pid]
                    if i >= len(sent[o]):
                        break
                    clock[pid] = max(clock[pid], sent[o][i])
                    received[pid] += 1
                elif kind == "c_broadcast":
                    i = sum(1 for k, _ in seq[:at[pid]] if k == kind)
                    if len(joined[pid]) == i:
                        joined[pid].append(clock[pid])
                    if len(joined[o]) <= i:
                        break
                    clock[pid] = max(joined[pid][i], joined[o][i])
                elif kind == "send_v2":
                    sent[pid].append(clock[pid])
                else:
                    clock[pid] += dur
                at[pid] += 1
                moved = True
    if any(at[pid] < len(seqs[pid]) for pid in (a, b)):
        raise RuntimeError("the replay of a step did not finish: its "
                           "receives and sends do not pair")
    return max(clock.values())


def free_bubble(steps, m, equal=False):
    """The bubble of the same steps with messages that take no time; with
    `equal`, also every op taking its median time over all ranks and steps
    (the stages' work equal and steady: the schedule's own bubble)."""
    if equal:
        times = {}
        for ranks in steps.values():
            for ops in ranks.values():
                for e in ops:
                    key = (e["name"], str(e.get("args", {}).get("shapes")))
                    times.setdefault(key, []).append(e["dur"])
        median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        steps = {s: {pid: [dict(e, dur=median[(e["name"], str(
            e.get("args", {}).get("shapes")))]) for e in ops]
            for pid, ops in ranks.items()} for s, ranks in steps.items()}
    fractions = []
    for ranks in steps.values():
        span = replay(ranks, m)
        fractions += [1 - busy(ops) / span for ops in ranks.values()]
    return sum(fractions) / len(fractions)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--micro", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--micro-rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--forwards-ahead", type=int, nargs="+", default=[0],
                    help="pipeline_configs.forwards_ahead values to run "
                    "(each (p, m) runs once per value, in turn)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--timeline", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.stages, args.micro = args.stages[0], args.micro[0]
        return worker(args)
    cores = os.cpu_count() or 1
    print("| stages p | micro-batches m | forwards ahead | (p-1)/(m+p-1) "
          "| measured | "
          "measured / formula | messages free / formula | "
          "messages free, ops equal / formula | step, compute, idle (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for p in args.stages:
        for m in args.micro:
            for ahead in args.forwards_ahead:
                print(row(args, p, m, ahead, env, cores))


def row(args, p, m, ahead, env, cores):
    """The table's row of one run of p stages, m micro-batches."""
    with tempfile.TemporaryDirectory() as tmp:
        tl = os.path.join(tmp, "timeline.json")
        cmd = ["mpirun", "--oversubscribe", "-np", str(p),
               sys.executable, os.path.abspath(__file__), "--worker",
               "--stages", str(p), "--micro", str(m),
               "--width", str(args.width),
               "--micro-rows", str(args.micro_rows),
               "--steps", str(args.steps), "--timeline", tl,
               "--forwards-ahead", str(ahead)]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        steps = step_ops(tl)
    got = bubble(steps)
    want = (p - 1) / (m + p - 1)
    free = equal = "-"
    if p == 2:
        free = f"{free_bubble(steps, m) / want:.2f}"
        equal = f"{free_bubble(steps, m, equal=True) / want:.2f}"
    note = "" if p <= cores else f" ({p} ranks on {cores} cores)"
    ms = ", ".join(f"{t / 1000:.0f}" for t in times(steps))
    return (f"| {p} | {m} | {ahead} | {want:.3f} | {got:.3f} | "
            f"{got / want:.2f}{note} | {free} | {equal} | {ms} |")

if __name__ == "__main__":
    sys.exit(main())
