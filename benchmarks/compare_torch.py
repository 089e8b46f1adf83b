#!/usr/bin/env python3
"""Side-by-side training throughput: this framework vs PyTorch 1.13 on the
same model, batch and thread count, in one run, interleaved, with PyTorch on
OpenBLAS (Debian's libopenblas0-openmp), as its users get it.

    /usr/bin/python3 benchmarks/compare_torch.py --bench build/benchmarks/train_bench

    ... --models resnet,vgg --steps 150   # the batch-normed conv nets

Prints a Markdown table of samples/s (median of --repeats runs) and the ratio
ours / PyTorch. With --baseline, a second train_bench (an earlier build, run
with its own directory first on LD_LIBRARY_PATH) joins the interleaving and
the table gains its figures and the ratio ours / baseline.

    ... --amp bf16 --models mlp,lenet,resnet,vgg

pairs ours in bfloat16 (train_bench --amp bf16) with PyTorch under
torch.autocast("cpu", dtype=torch.bfloat16), and runs ours in float32 in
the same rounds: the table shows the three and the ratios ours-bf16 /
PyTorch-bf16 and ours-bf16 / ours-fp32 (medians of the per-round ratios,
with how many rounds were above 1.0), and the ISA each framework's 16-bit
matrix kernels ran on.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"


def torch_environment():
    """The environment a PyTorch process runs in: OpenBLAS (OpenMP) first
    on LD_LIBRARY_PATH, no thread-count variables (the caller sets
    OMP_NUM_THREADS)."""
    env = dict(os.environ)
    if os.path.isdir(OPENBLAS):
        env["LD_LIBRARY_PATH"] = OPENBLAS + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
            else "")
    else:
        print(f"warning: {OPENBLAS} missing; PyTorch runs on the default "
              "BLAS and is not a fair peer", file=sys.stderr)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.pop(k, None)
    return env


def run(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def paired(xs, ys):
    """The median of the per-round ratios xs[i] / ys[i], and how many of
    them are above 1.0."""
    r = [x / y for x, y in zip(xs, ys)]
    return statistics.median(r), sum(v > 1.0 for v in r)


def torch_isa(torch_cmd, model, amp, env):
    """The ISAs PyTorch's oneDNN ran `model`'s convolutions and matmuls on
    under autocast `amp` (one untimed step with ONEDNN_VERBOSE=1), e.g.
    "avx512_core_amx_bf16"; "none" when it ran none through oneDNN."""
    out = subprocess.run(
        torch_cmd + ["--model", model, "--steps", "1", "--warmup", "1",
                     "--amp", amp], check=True, capture_output=True,
        text=True, env=dict(env, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")).stdout
    isas = set()
    for line in out.splitlines():
        f = line.split(",")
        if len(f) > 4 and f[2] == "cpu" and f[3] in ("convolution", "matmul"):
            isas.add(f[4].split(":")[-1])
    return "+".join(sorted(isas)) or "none"


def compare_amp(a, torch_env):
    """Ours bf16, ours fp32 and PyTorch autocast bf16, interleaved per
    round; prints the Markdown table."""
    torch_cmd = [sys.executable, os.path.join(HERE, "torch_train_bench.py")]
    rows = []
    for model in a.models.split(","):
        steps = a.steps if model == "mlp" else max(a.steps // 3, 50)
        for threads in [int(t) for t in a.threads.split(",")]:
            common = ["--model", model, "--threads", str(threads),
                      "--batch", str(a.batch), "--steps", str(steps)]
            env = dict(torch_env, OMP_NUM_THREADS=str(threads))
            t_isa = torch_isa(torch_cmd, model, a.amp, env)
            b16, f32, th = [], [], []
            # OpenMP's team (oneDNN's, and Eigen's float32 GEMM built with
            # -fopenmp) sized to --threads, as for PyTorch: left to its
            # default of every core, its spinning workers contend with the
            # executor's threads.
            ours_env = dict(os.environ, OMP_NUM_THREADS=str(threads))
            for _ in range(a.repeats):  # interleaved against drift
                r = run([a.bench] + common + ["--amp", a.amp], ours_env)
                b16.append(r["samples_per_s"])
                isa = r.get("cpu_isa", "?")
                f32.append(run([a.bench] + common + ["--amp", "none"],
                               ours_env)["samples_per_s"])
                th.append(run(torch_cmd + common + ["--amp", a.amp],
                              env)["samples_per_s"])
            vs_torch, vs_fp32 = paired(b16, th), paired(b16, f32)
            rows.append((model, threads, f"{isa} / {t_isa}",
                         statistics.median(b16),
                         statistics.median(f32), statistics.median(th),
                         vs_torch, vs_fp32))
            print(f"{model} threads={threads} [{isa} / {t_isa}]: ours {a.amp} "
                  f"{b16}, ours fp32 {f32}, torch {a.amp} {th}",
                  file=sys.stderr)
    n = a.repeats
    print(f"| model | threads | ISA (ours / PyTorch's oneDNN) | ours {a.amp} "
          f"| ours fp32 | PyTorch autocast {a.amp} | ours-{a.amp} / "
          f"PyTorch-{a.amp} (rounds > 1) | ours-{a.amp} / ours-fp32 "
          f"(rounds > 1) |")
    print("|---|---|---|---|---|---|---|---|")
    for model, threads, isa, o, f, t, (rt, kt), (rf, kf) in rows:
        print(f"| {model} | {threads} | {isa} | {o:.0f} | "
              f"{f:.0f} | {t:.0f} | {rt:.2f} ({kt}/{n}) | {rf:.2f} "
              f"({kf}/{n}) |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path to train_bench")
    ap.add_argument("--models", default="mlp,lenet",
                    help="comma-separated: mlp, lenet, resnet, vgg")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", help="an earlier build's train_bench")
    ap.add_argument("--amp", default="none", choices=["none", "bf16"],
                    help="bf16: ours bf16 against PyTorch autocast bf16 "
                         "and ours fp32")
    a = ap.parse_args()
    if a.amp != "none" and a.baseline:
        ap.error("--amp and --baseline: choose one (the amp table has no "
                 "baseline column)")
    base_env = None
    if a.baseline:
        base_env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(
            os.path.abspath(a.baseline)))

    torch_env = torch_environment()
    if a.amp != "none":
        return compare_amp(a, torch_env)

    rows = []
    for model in a.models.split(","):
        steps = a.steps if model == "mlp" else max(a.steps // 3, 50)
        for threads in [int(t) for t in a.threads.split(",")]:
            common = ["--model", model, "--threads", str(threads),
                      "--batch", str(a.batch), "--steps", str(steps)]
            ours, theirs, base = [], [], []
            for _ in range(a.repeats):  # interleaved against drift
                ours.append(run([a.bench] + common)["samples_per_s"])
                if a.baseline:
                    base.append(run([a.baseline] + common,
                                    base_env)["samples_per_s"])
                env = dict(torch_env, OMP_NUM_THREADS=str(threads))
                theirs.append(run([sys.executable,
                                   os.path.join(HERE, "torch_train_bench.py")]
                                  + common, env)["samples_per_s"])
            o, t = statistics.median(ours), statistics.median(theirs)
            b = statistics.median(base) if base else None
            rows.append((model, threads, o, t, b))
            print(f"{model} threads={threads}: ours {o:.0f}, torch {t:.0f}, "
                  f"ratio {o / t:.2f}"
                  + (f", baseline {b:.0f}" if b else ""), file=sys.stderr)

    extra = " baseline (samples/s) | ours / baseline |" if a.baseline else ""
    print(f"| model | threads | ours (samples/s) | PyTorch 1.13 + OpenBLAS "
          f"(samples/s) | ratio |" + extra)
    print("|---|---|---|---|---|" + ("---|---|" if a.baseline else ""))
    for model, threads, o, t, b in rows:
        tail = f" {b:.0f} | {o / b:.2f} |" if b else ""
        print(f"| {model} | {threads} | {o:.0f} | {t:.0f} | {o / t:.2f} |"
              + tail)


if __name__ == "__main__":
    main()
