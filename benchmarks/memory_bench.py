#!/usr/bin/env python3
"""Peak resident memory (the kernel's VmHWM of each process, from wait4)
of this framework's built-in models against their PyTorch 1.13 twins on
the same model, batch and thread count:

  - mlp, lenet, resnet, vgg: build/benchmarks/train_bench against
    benchmarks/torch_train_bench.py (SGD with momentum, seeded noise
    batches: --data is absent so that neither holds Fashion-MNIST);
  - transformer: the character LM of benchmarks/transformer_lm_bench.py,
    fluid.Executor against its PyTorch twin (Adam, the same weights and
    batches).

Each run is its own process; eager deletion is on (this framework's
default) unless --keep-temporaries (FLAGS_eager_delete_tensor_gb=-1).
Prints a Markdown table: each framework's peak resident MiB, the same less
its baseline (the process that only loads the libraries: `train_bench`
refusing an unknown flag, `import torch`, and for the LM the module both
of its workers import, which loads fluid and torch), and the ratios ours /
PyTorch.

    /usr/bin/python3 benchmarks/memory_bench.py --models mlp,lenet,resnet \\
        --batch 64 --steps 20
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def child_peak(cmd, env):
    """Peak resident MiB of `cmd` (run alone), from wait4."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024.0, code, out, err


def run(cmd, env, allow_fail=False):
    mib, code, out, err = child_peak(cmd, env)
    if code != 0 and not allow_fail:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {err[-2000:]}")
    return mib, out


def environments(a):
    from compare_torch import torch_environment
    ours = dict(os.environ)
    ours["PYTHONPATH"] = os.path.join(a.build, "python")
    if a.keep_temporaries:
        ours["FLAGS_eager_delete_tensor_gb"] = "-1"
    theirs = torch_environment()
    for env in (ours, theirs):
        env["OMP_NUM_THREADS"] = str(a.threads)
    return ours, theirs


def image_model(a, model, ours, theirs):
    bench = a.train_bench
    common = ["--threads", str(a.threads), "--batch", str(a.batch),
              "--steps", str(a.steps), "--warmup", "5", "--data",
              "/nonexistent"]
    fluid, _ = run([bench, "--model", model] + common, ours)
    torch, _ = run([sys.executable, os.path.join(HERE, "torch_train_bench.py"),
                    "--model", model] + common, theirs)
    return fluid, torch


def transformer(a, ours, theirs):
    lm = os.path.join(HERE, "transformer_lm_bench.py")
    params = os.path.join("/tmp", f"memory_bench_params_{os.getpid()}.npz")
    common = [f"--steps={a.steps + 5}", f"--batch={a.lm_batch}",
              f"--threads={a.threads}", "--eval-windows=16",
              f"--params={params}"]
    try:
        fluid, _ = run([sys.executable, lm, "--worker", "fluid"] + common,
                       ours)
        torch, _ = run([sys.executable, lm, "--worker", "torch"] + common,
                       dict(theirs, PYTHONPATH=ours["PYTHONPATH"]))
    finally:
        if os.path.exists(params):
            os.remove(params)
    return fluid, torch


def baselines(a, ours, theirs):
    """The processes that only load the libraries: train_bench refusing a
    flag; Python with torch (torch_train_bench's); Python with the LM's
    module (tests/python/transformer_lm.py imports both fluid and torch,
    so each LM worker holds both), in each side's environment."""
    bench = a.train_bench
    native, _ = run([bench, "--no-such-flag", "x"], ours, allow_fail=True)
    py_torch, _ = run([sys.executable, "-c", "import torch, torch.nn"], theirs)
    lm = ["-c", "import sys; sys.path.insert(0, %r); import transformer_lm"
          % os.path.join(ROOT, "tests", "python")]
    lm_ours, _ = run([sys.executable] + lm, ours)
    lm_theirs, _ = run([sys.executable] + lm,
                       dict(theirs, PYTHONPATH=ours["PYTHONPATH"]))
    return native, py_torch, lm_ours, lm_theirs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="mlp,lenet,resnet,transformer")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lm-batch", type=int, default=16,
                    help="windows of 128 characters per step (transformer)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--train-bench",
                    help="the train_bench binary (default: BUILD/benchmarks/"
                         "train_bench)")
    ap.add_argument("--keep-temporaries", action="store_true",
                    help="ours with eager deletion off")
    a = ap.parse_args()
    if a.train_bench is None:
        a.train_bench = os.path.join(a.build, "benchmarks", "train_bench")
    ours, theirs = environments(a)
    native, py_torch, lm_ours, lm_theirs = baselines(a, ours, theirs)
    print(f"baselines: train_bench {native:.0f} MiB, python+torch "
          f"{py_torch:.0f} MiB, the LM module (fluid and torch) "
          f"{lm_ours:.0f} / {lm_theirs:.0f} MiB")
    print("| model | batch | ours MiB | PyTorch MiB | ratio | ours less "
          "baseline | PyTorch less baseline | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for model in a.models.split(","):
        if model == "transformer":
            fluid, torch = transformer(a, ours, theirs)
            base, base_theirs, batch = lm_ours, lm_theirs, a.lm_batch
        else:
            fluid, torch = image_model(a, model, ours, theirs)
            base, base_theirs, batch = native, py_torch, a.batch
        net_ours, net_theirs = fluid - base, torch - base_theirs
        print(f"| {model} | {batch} | {fluid:.0f} | {torch:.0f} | "
              f"{fluid / torch:.2f} | {net_ours:.0f} | {net_theirs:.0f} | "
              f"{net_ours / max(net_theirs, 1e-9):.2f} |", flush=True)


if __name__ == "__main__":
    main()
