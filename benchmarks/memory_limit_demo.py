#!/usr/bin/env python3
"""A model that does not fit, made to fit: the character LM of
examples/transformer_lm.py (Adam, warmup + cosine decay, global-norm
clipping) at a size whose float32 job needs more than --limit bytes per
rank, on one process and on 4 plain data-parallel ranks, trained on 4
ranks under parameter sharding stage 3 + recompute + bf16 within the
limit, against the same job on one process in float32 with no limit (the
reference), at the same global batch, seed and steps.

    /usr/bin/python3 benchmarks/memory_limit_demo.py            # all of it
    /usr/bin/python3 benchmarks/memory_limit_demo.py --plan-only

Prints the memory plan (fluid.memory_plan) of each configuration against
the limit, then each run's measured peak of tensor memory per rank
(fluid.memory.max_memory_allocated, the largest over the ranks) and its
validation loss and perplexity per character after --steps steps, and
exits 1 if the levered run's plan or measured peak exceeds the limit.
The workers run under `mpirun -np 4` (as root: OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) with one thread each.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))

CONFIGS = {  # name: (ranks, levers)
    "plain-1": (1, False),
    "plain-4": (4, False),
    "levered-4": (4, True),
}


def args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16,
                    help="windows per step, over all ranks")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--warmup-steps", type=int, default=15)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--eval-windows", type=int, default=256)
    ap.add_argument("--limit", default="48M",
                    help="bytes per rank (K, M, G suffixes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plan-only", action="store_true")
    ap.add_argument("--worker", choices=sorted(CONFIGS), default=None,
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.limit_bytes = parse_bytes(a.limit)
    a.clip_norm = 1.0
    return a


def parse_bytes(text):
    """'48M' -> 50331648; plain digits are bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    scale = units.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in units else t
    if not digits.isdigit() or int(digits) < 1:
        raise SystemExit(f"memory_limit_demo: --limit must be a positive "
                         f"byte count (K, M, G suffixes), got {text!r}")
    return int(digits) * scale


def strategy(levered):
    import fluid
    s = fluid.DistributedStrategy()
    if levered:
        s.sharding = True
        s.sharding_configs = {"stage": 3}
        s.amp = True
        s.amp_configs = {"dtype": "bf16"}
        s.recompute = True
        s.recompute_configs = {"checkpoints": ["auto"]}
    return s


def build(a, vocab_size):
    """(main, startup, test, feeds, loss) of the LM, trained a.steps."""
    import fluid
    import transformer_lm as lm
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = a.seed
    with fluid.program_guard(main, startup):
        feeds, _, loss = lm.network(a, vocab_size)
        test = main.clone(for_test=True)
        fluid.clip.set_gradient_clip(
            fluid.clip.GradientClipByGlobalNorm(a.clip_norm))
        fluid.optimizer.Adam(learning_rate=lm.schedule(a, a.steps)).minimize(
            loss)
    return main, startup, test, feeds, loss


def plans(a):
    """{config: MemoryPlan} at a.batch windows per step over the ranks."""
    import fluid
    vocab = fluid.datasets.fortunes.build_vocab("char")
    main, startup, _, _, _ = build(a, len(vocab))
    out = {}
    for name, (ranks, levered) in CONFIGS.items():
        out[name] = fluid.memory_plan(main, strategy(levered), ranks,
                                      a.batch // ranks,
                                      startup_program=startup)
    return out


def windows(a, split, vocab, count):
    import fluid
    import numpy as np
    reader = fluid.datasets.fortunes.lm_reader(split, "char", a.seq_len,
                                               vocab)
    out = []
    for x, y in reader():
        out.append((np.asarray(x).reshape(a.seq_len, 1),
                    np.asarray(y).reshape(a.seq_len, 1)))
        if len(out) == count:
            break
    return out


def worker(a):
    """One rank of config a.worker: trains, then rank 0 prints a JSON line
    of the peak, the losses and the validation loss."""
    import numpy as np
    import fluid
    ranks, levered = CONFIGS[a.worker]
    vocab = fluid.datasets.fortunes.build_vocab("char")
    main, startup, test, feeds, loss = build(a, len(vocab))
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy(levered))
    if exe.world_size != ranks:
        raise SystemExit(f"memory_limit_demo: {a.worker} needs {ranks} "
                         f"rank(s), got {exe.world_size}")
    exe.run(startup)
    per_rank = a.batch // ranks
    train = windows(a, "train", vocab, a.steps * a.batch)
    feeder = fluid.DataFeeder(feed_list=feeds, place=exe.place, program=main)
    losses = []
    for step in range(a.steps):
        batch = train[step * a.batch:(step + 1) * a.batch]
        mine = batch[exe.rank * per_rank:(exe.rank + 1) * per_rank]
        value, = exe.run(main, feed=feeder.feed(mine), fetch_list=[loss])
        losses.append(float(np.asarray(value).reshape(-1)[0]))
        if step == 0:  # from here on: the steps alone, not the startup's
            first = fluid.memory.max_memory_allocated()
            fluid.memory.reset_max_memory_allocated()
    peak = fluid.memory.max_memory_allocated()
    print(f"PEAK {exe.rank} {peak} {max(first, peak)}", flush=True)
    valid = windows(a, "valid", vocab, a.eval_windows)
    total = 0.0
    with exe.gathered_parameters():  # stage 3: whole parameters, collective
        if exe.rank != 0:
            return
        for i in range(0, len(valid), 64):
            part = valid[i:i + 64]
            value, = exe.run(test, feed=feeder.feed(part), fetch_list=[loss])
            total += float(np.asarray(value).reshape(-1)[0]) * len(part)
    print("RESULT " + json.dumps({
        "config": a.worker, "ranks": ranks, "first_loss": losses[0],
        "last_loss": losses[-1], "valid_loss": total / len(valid)}),
        flush=True)


def run_config(a, name, argv):
    ranks = CONFIGS[name][0]
    env = dict(os.environ, OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [sys.executable, os.path.abspath(sys.argv[0]), *argv, "--worker", name]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "-x",
               "PYTHONPATH", "-x", "OMP_NUM_THREADS", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"memory_limit_demo: {name} failed "
                         f"({out.returncode}):\n{out.stderr[-3000:]}")
    # mpirun may join the ranks' lines: read the records, not the lines.
    peaks = re.findall(r"PEAK \d+ (\d+) (\d+)", out.stdout)
    result = re.search(r"RESULT (\{[^}]*\})", out.stdout)
    if result and len(peaks) == ranks:
        return dict(json.loads(result.group(1)),
                    peak=max(int(p[0]) for p in peaks),
                    startup_peak=max(int(p[1]) for p in peaks))
    raise SystemExit(f"memory_limit_demo: {name} printed no result:\n"
                     f"{out.stdout[-2000:]}")


def mib(n):
    return f"{n / 2**20:.1f}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = args(argv)
    if a.worker:
        return worker(a)
    if a.batch % 4:
        raise SystemExit(f"memory_limit_demo: --batch must be a multiple "
                         f"of 4, got {a.batch}")
    print(f"transformer LM: width {a.width}, {a.layers} layers, "
          f"{a.heads} heads, sequence {a.seq_len}, {a.batch} windows per "
          f"step; limit {mib(a.limit_bytes)} MiB per rank", flush=True)
    planned = plans(a)
    print("| config | ranks | params | optimizer | other state | comm | "
          "grads | activations | planned total (MiB) | fits |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, p in planned.items():
        fits = "yes" if p["total"] <= a.limit_bytes else "no"
        print(f"| {name} | {p['nranks']} | {mib(p['parameters'])} | "
              f"{mib(p['optimizer_state'])} | {mib(p['other_state'])} | "
              f"{mib(p['communication'])} | {mib(p['gradients'])} | "
              f"{mib(p['activations'])} | {mib(p['total'])} | {fits} |")
    if a.plan_only:
        return 0
    results = [run_config(a, name, argv) for name in ("plain-1", "levered-4")]
    print("\n| run | ranks | measured peak per rank in steps 2+ (MiB) | "
          "with the startup and step 1 | first loss | last loss | "
          "valid loss | valid perplexity |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['config']} | {r['ranks']} | {mib(r['peak'])} | "
              f"{mib(r['startup_peak'])} | "
              f"{r['first_loss']:.4f} | {r['last_loss']:.4f} | "
              f"{r['valid_loss']:.4f} | {math.exp(r['valid_loss']):.3f} |")
    levered = results[1]
    ok = (planned["levered-4"]["total"] <= a.limit_bytes
          and levered["peak"] <= a.limit_bytes)
    print(f"levered run within the limit: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
