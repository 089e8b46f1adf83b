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
    a = ap.parse_args()
    base_env = None
    if a.baseline:
        base_env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(
            os.path.abspath(a.baseline)))

    torch_env = torch_environment()

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
