#!/usr/bin/env python3
"""The character language model on fortunes, this framework against
PyTorch 1.13 in one run: the same decoder-only transformer
(tests/python/transformer_lm.py), the same initial weights (this
framework's initialisation, copied into torch), the same batches, Adam
with a linear warmup into a cosine decay and global-norm clipping at 1.0,
the same thread count. Each trains --steps steps, then both evaluate the
first --eval-windows windows of the validation split.

    /usr/bin/python3 benchmarks/transformer_lm_bench.py --steps 300

Prints a Markdown table: tokens/s (median of --repeats runs, interleaved,
timed after the first 5 steps), the validation loss and perplexity per
character, and the ratios ours / PyTorch: the median of the ratios of
runs in the same round, with each round's. PyTorch runs on OpenBLAS as in
compare_torch.py; each framework runs in its own process.

    /usr/bin/python3 benchmarks/transformer_lm_bench.py --amp bf16 --width 512

trains ours in bfloat16 (fluid.contrib.mixed_precision.decorate(...,
use_bf16=True); evaluated by the rewritten program's forward pass) and
PyTorch under torch.autocast("cpu", dtype=torch.bfloat16) (forward and
loss, training and evaluation), and ours in float32 in the same rounds: the
table gains ours fp32 and the ratio ours-bf16 / ours-fp32.

    /usr/bin/python3 benchmarks/transformer_lm_bench.py --scaling 2

measures weak scaling instead: fluid.MPIExecutor on 1 rank and under
`mpirun -np 2` (each rank --batch windows a step, --threads threads),
interleaved; efficiency = tokens/s on N ranks / (N x tokens/s on 1).
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
SKIP = 5  # untimed first steps


def args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-windows", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--amp", default="none", choices=("none", "bf16"),
                    help="bf16: ours bf16 (and fp32) against PyTorch "
                         "autocast bf16")
    ap.add_argument("--timeline", metavar="FILE",
                    help="ours: run on a 1-rank fluid.MPIExecutor that "
                         "writes its op timeline to FILE (then "
                         "tools/timeline_report.py FILE); no PyTorch")
    ap.add_argument("--scaling", type=int, default=0,
                    help="N: weak scaling on 1 and N ranks, no PyTorch")
    ap.add_argument("--worker", choices=("fluid", "torch"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    return ap.parse_args()


def data(a, rank=0, world=1):
    """(vocab size, this rank's training batches [steps, B, seq + 1] of
    the global batches of world x B, the validation windows [n, seq + 1])
    as int64 arrays."""
    import fluid
    f = fluid.datasets.fortunes
    vocab = f.build_vocab("char")

    def windows(split):
        return np.array([np.append(x, y[-1]) for x, y in
                         f.lm_reader(split, "char", a.seq_len, vocab)()])

    train = windows("train")
    need = a.steps * a.batch * world
    order = np.random.RandomState(a.seed).permutation(len(train))
    order = np.resize(order, need)  # wraps around if the split is short
    batches = train[order].reshape(a.steps, world, a.batch, -1)[:, rank]
    return len(vocab), batches, windows("valid")[:a.eval_windows]


def lr_factor(a, step):
    """The schedule as a multiple of a.lr at `step` (0-based), as
    fluid.layers.linear_lr_warmup over cosine_decay computes it."""
    if step < a.warmup:
        return step / a.warmup
    return 0.5 * (math.cos(step * math.pi / a.steps) + 1)


def timed(steps, run_step):
    """tokens/s and the losses of `steps` calls of run_step(i)."""
    losses = []
    for i in range(steps):
        if i == SKIP:
            start = time.perf_counter()
        losses.append(run_step(i))
    return time.perf_counter() - start, losses


def fluid_worker(a, cfg, batches, valid):
    import fluid
    from transformer_lm import fluid_lm, param_names
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = a.seed
    with fluid.program_guard(main, startup):
        (ids, nxt), _, loss = fluid_lm(cfg, "float32")
        test = main.clone(for_test=True)
        fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(1.0))
        lr = L.linear_lr_warmup(
            L.cosine_decay(a.lr, step_each_epoch=1, epochs=a.steps),
            a.warmup, 0.0, a.lr)
        opt = fluid.optimizer.Adam(learning_rate=lr)
        if a.amp == "bf16":
            opt = fluid.contrib.mixed_precision.decorate(opt, use_bf16=True)
        opt.minimize(loss)
    if a.amp == "bf16":  # evaluated in the precision it trained in
        test = main.clone(for_test=True)
    if a.scaling or a.timeline:
        exe = fluid.MPIExecutor(fluid.CPUPlace(), threads=a.threads,
                                timeline=a.timeline)
    else:
        exe = fluid.Executor(fluid.CPUPlace(), threads=a.threads)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    if not (a.scaling or a.timeline):
        np.savez(a.params, **{n: np.array(scope.get(n))
                              for n in param_names(cfg)})

    def feed(w):
        return {"ids": w[:, :-1, None], "next_ids": w[:, 1:, None]}

    def step(i):
        (v,) = exe.run(main, feed=feed(batches[i]), fetch_list=[loss],
                       scope=scope)
        return float(v[0])

    seconds, losses = timed(a.steps, step)
    val = [float(exe.run(test, feed=feed(valid[i:i + a.batch]),
                         fetch_list=[loss], scope=scope)[0][0])
           * len(valid[i:i + a.batch]) for i in range(0, len(valid), a.batch)]
    return seconds, losses, sum(val) / len(valid)


def torch_worker(a, cfg, batches, valid):
    import torch
    from transformer_lm import TorchLM
    torch.set_num_threads(a.threads)
    model = TorchLM(cfg, torch.float32)
    model.load(dict(np.load(a.params)))
    f32 = [float(np.float32(v)) for v in (0.9, 0.999, 1e-8)]
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=f32[:2],
                           eps=f32[2])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(a, s))
    batches = torch.from_numpy(batches)

    def autocast():
        if a.amp == "none":
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=torch.bfloat16)

    def step(i):
        opt.zero_grad()
        with autocast():
            loss = model(batches[i][:, :-1], batches[i][:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return float(loss)

    seconds, losses = timed(a.steps, step)
    valid = torch.from_numpy(valid)
    with torch.no_grad(), autocast():
        val = [float(model(w[:, :-1], w[:, 1:])) * len(w)
               for w in torch.split(valid, a.batch)]
    return seconds, losses, sum(val) / len(valid)


def worker(a):
    from transformer_lm import LMConfig
    import fluid
    rank, world = 0, 1
    if a.scaling:
        probe = fluid.MPIExecutor(fluid.CPUPlace())
        rank, world = probe.rank, probe.world_size
    vocab, batches, valid = data(a, rank, world)
    cfg = LMConfig(vocab, a.seq_len, a.width, a.heads, a.layers)
    run = fluid_worker if a.worker == "fluid" else torch_worker
    seconds, losses, val = run(a, cfg, batches, valid)
    tokens = (a.steps - SKIP) * a.batch * a.seq_len * world
    if rank == 0:
        print(json.dumps({"tokens_per_s": tokens / seconds, "val_loss": val,
                          "first_loss": losses[0],
                          "last_loss": losses[-1]}))


def launch(a, which, params, np_=1):
    from compare_torch import torch_environment
    env = torch_environment() if which == "torch" else dict(os.environ)
    env["OMP_NUM_THREADS"] = str(a.threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", which,
           "--params", params] + [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items()
        if k not in ("worker", "params", "repeats") and v is not None]
    if np_ > 1:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np",
               str(np_), "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS"] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def scaling(a):
    """Weak scaling of this framework on 1 and a.scaling ranks."""
    runs = {1: [], a.scaling: []}
    for _ in range(a.repeats):  # interleaved against drift
        for n in runs:
            runs[n].append(launch(a, "fluid", "", n)["tokens_per_s"])
            print(f"np {n}: {runs[n][-1]:.0f} tokens/s", file=sys.stderr)
    one, many = (statistics.median(runs[n]) for n in runs)
    print("| ranks | tokens/s (all ranks) | efficiency |")
    print("|---|---|---|")
    print(f"| 1 | {one:.0f} | 1.00 |")
    print(f"| {a.scaling} | {many:.0f} | {many / (a.scaling * one):.2f} |")


def main():
    a = args()
    if a.worker:
        return worker(a)
    sys.path.insert(0, HERE)
    if a.scaling:
        return scaling(a)
    if a.timeline:
        r = launch(a, "fluid", os.devnull)
        print(f"ours {a.amp}: {r['tokens_per_s']:.0f} tokens/s; timeline "
              f"in {a.timeline}")
        return None
    return compare(a)


def compare(a):
    """Ours against PyTorch (and with --amp, ours in float32 too),
    interleaved per round; prints the Markdown table."""
    runs = [("fluid", a, "ours"), ("torch", a, "PyTorch 1.13 + OpenBLAS")]
    if a.amp != "none":
        runs = [("fluid", a, f"ours {a.amp}"),
                ("fluid", argparse.Namespace(**dict(vars(a), amp="none")),
                 "ours fp32"),
                ("torch", a, f"PyTorch 1.13 autocast {a.amp}")]
    results = {name: [] for _, _, name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        params = os.path.join(tmp, "params.npz")
        for _ in range(a.repeats):  # interleaved against drift
            for which, opts, name in runs:  # fluid writes the weights
                results[name].append(launch(opts, which, params))
                print(name, results[name][-1], file=sys.stderr)
    med = {w: statistics.median(r["tokens_per_s"] for r in rs)
           for w, rs in results.items()}
    val = {w: rs[-1]["val_loss"] for w, rs in results.items()}
    print(f"width {a.width}, {a.layers} layers, {a.heads} heads, batch "
          f"{a.batch} x {a.seq_len}, {a.steps} steps, {a.threads} "
          f"thread(s), median of {a.repeats}\n")
    print("| framework | tokens/s | validation loss | perplexity |")
    print("|---|---|---|---|")
    for name in results:
        print(f"| {name} | {med[name]:.0f} | {val[name]:.4f} | "
              f"{math.exp(val[name]):.3f} |")
    ours, theirs = runs[0][2], runs[-1][2]
    print(f"\ntokens/s {ours} / {theirs}: {paired(results, ours, theirs)}; "
          f"perplexity {ours} / {theirs}: "
          f"{math.exp(val[ours]) / math.exp(val[theirs]):.4f}")
    if a.amp != "none":
        print(f"tokens/s {ours} / ours fp32: "
              f"{paired(results, ours, 'ours fp32')}; perplexity "
              f"{ours} / ours fp32: "
              f"{math.exp(val[ours]) / math.exp(val['ours fp32']):.4f}")


def paired(results, a, b):
    """The median over rounds of a's tokens/s over b's in the same round,
    the rounds where a was faster, and every round's ratio (the runs of one
    round are closest in time, so their ratio moves least with the load of
    a shared machine)."""
    ratios = [x["tokens_per_s"] / y["tokens_per_s"]
              for x, y in zip(results[a], results[b])]
    above = sum(r > 1 for r in ratios)
    rounds = ", ".join(f"{r:.2f}" for r in ratios)
    return (f"{statistics.median(ratios):.2f} (median of {len(ratios)} "
            f"rounds, {above} above 1: {rounds})")


if __name__ == "__main__":
    main()
