#!/usr/bin/env python3
"""Weak-scaling harness: data-parallel training throughput of the built-in
models at np = 1, 2 (and 4, oversubscribed on a 2-core machine, flagged as
such), a fixed batch per rank, one thread per rank; next to PyTorch DDP with
gloo on the same model, batch and threads when torch is installed.

    /usr/bin/python3 benchmarks/scaling.py --build build --out docs/scaling

Across emulated hosts (tools/hosts.sh, as root): --hosts H spreads each np
over H hosts (np = 1 stays on one host, the baseline), optionally over a
link shaped to --rate (e.g. 1gbit), with --allreduce and
--grad-compression passed to every run (PyTorch DDP is not run there):

    /usr/bin/python3 benchmarks/scaling.py --hosts 2 --rate 1gbit \
        --models mlp --nps 1,2 --grad-compression bf16 --out /tmp/hosts

The hosts dimension in one run: --grid lists hosts x ranks per host
(ranks placed in blocks, one host's ranks consecutive), --rates the links:

    /usr/bin/python3 benchmarks/scaling.py --grid 1x1,2x1,2x2 \
        --rates unshaped,1gbit --models mlp,lenet --out docs/scaling_hosts

Writes <out>.csv, <out>.md and <out>.png (samples/s and efficiency per np).
Each point is the median of --repeats runs, interleaved across frameworks.
"""
import argparse
import atexit
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"


HOSTS = os.path.join(HERE, "..", "tools", "hosts.sh")


def ours(build, model, np_, batch, steps, a):
    bench = [os.path.join(build, "benchmarks", "dist_bench"), "--model",
             model, "--batch", str(batch), "--steps", str(steps),
             "--allreduce", a.allreduce, "--grad-compression",
             a.grad_compression]
    per_host = getattr(a, "per_host", 0)
    if per_host:
        # Grid mode: np_ ranks, per_host of them on each host, in blocks.
        cmd = [HOSTS, "run", "--", "-np", str(np_), "--map-by",
               f"ppr:{per_host}:node"]
    elif a.hosts > 1 and np_ > 1:
        cmd = [HOSTS, "run", "--", "-np", str(np_), "--map-by", "node"]
    else:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(np_)]
    out = subprocess.run(cmd + bench, check=True, capture_output=True,
                         text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


def hosts_up(a, max_np, hosts=None, rate=None):
    """Emulated hosts for the multi-host points (tools/hosts.sh)."""
    hosts = hosts or a.hosts
    rate = a.rate if rate is None else rate
    slots = max(1, -(-max_np // hosts))
    cmd = [HOSTS, "up", str(hosts), "--slots", str(slots)]
    if rate:
        cmd += ["--rate", rate]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    atexit.register(subprocess.run, [HOSTS, "down"], check=False,
                    stdout=subprocess.DEVNULL)


def grid(a):
    """The hosts dimension: every "HxR" of --grid (H hosts, R ranks each)
    on every link of --rates, interleaved within each repeat; efficiency
    against 1x1 of the same link and repeat set. Writes <out>.csv/.md/.png."""
    configs = [tuple(int(v) for v in c.split("x")) for c in a.grid.split(",")]
    rates = [r if r != "unshaped" else "" for r in a.rates.split(",")]
    max_hosts = max(h for h, _ in configs)
    rows = []
    for rate in rates:
        hosts_up(a, max(h * r for h, r in configs), max_hosts, rate)
        for model in a.models.split(","):
            steps = 200 if model == "mlp" else 60
            runs = {c: [] for c in configs}
            for _ in range(a.repeats):
                for h, r in configs:
                    a.per_host = r if h > 1 else 0
                    runs[(h, r)].append(ours(a.build, model, h * r, a.batch,
                                             steps, a)["samples_per_s"])
            base = statistics.median(runs[min(configs, key=lambda c: c[0] * c[1])])
            for (h, r), vals in runs.items():
                sps = statistics.median(vals)
                rows.append({
                    "model": model, "hosts": h, "ranks_per_host": r,
                    "np": h * r, "link": rate or "unshaped",
                    "allreduce": a.allreduce,
                    "grad_compression": a.grad_compression,
                    "samples_per_s": round(sps, 1),
                    "efficiency": round(sps / (h * r * base), 3)})
                print(f"{model} {h}x{r} {rate or 'unshaped'}: {sps:.0f} "
                      f"samples/s, efficiency {rows[-1]['efficiency']:.2f}",
                      file=sys.stderr)
    write_grid(a, rows)


def write_csv(out, rows):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def write_grid(a, rows):
    write_csv(a.out, rows)
    with open(a.out + ".md", "w") as f:
        f.write("| model | hosts x ranks | link | allreduce | compression | "
                "samples/s | efficiency |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['hosts']}x{r['ranks_per_host']} | "
                    f"{r['link']} | {r['allreduce']} | "
                    f"{r['grad_compression']} | {r['samples_per_s']:.0f} | "
                    f"{r['efficiency']:.2f} |\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(models), squeeze=False,
                             figsize=(5 * len(models), 4))
    for col, model in enumerate(models):
        ax = axes[0][col]
        for link in dict.fromkeys(r["link"] for r in rows):
            pts = [r for r in rows if r["model"] == model and r["link"] == link]
            ax.plot([f"{r['hosts']}x{r['ranks_per_host']}" for r in pts],
                    [r["efficiency"] for r in pts], "o-", label=link)
        ax.axhline(0.9, color="grey", linestyle=":")
        ax.set_title(f"{model}, batch {a.batch}/rank, 1 thread/rank")
        ax.set_xlabel("hosts x ranks per host")
        ax.set_ylabel("weak-scaling efficiency")
        ax.legend(title="link")
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=100)


def ddp(model, np_, batch, steps, port):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if os.path.isdir(OPENBLAS):
        env["LD_LIBRARY_PATH"] = OPENBLAS
    procs = []
    for r in range(np_):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(np_),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "torch_ddp_bench.py"),
             "--model", model, "--batch", str(batch), "--steps", str(steps)],
            env=e, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("DDP run failed")
    return json.loads(outs[0].strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="docs/scaling")
    ap.add_argument("--models", default="mlp,lenet")
    ap.add_argument("--nps", default="1,2,4")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--hosts", type=int, default=1,
                    help="spread each np > 1 over this many emulated hosts")
    ap.add_argument("--rate", default="",
                    help="with --hosts: shape each host's link (e.g. 1gbit)")
    ap.add_argument("--allreduce", default="flat")
    ap.add_argument("--grad-compression", default="none")
    ap.add_argument("--grid", default="",
                    help="hosts dimension: e.g. 1x1,2x1,2x2 (hosts x ranks "
                    "per host, emulated hosts) on every link of --rates")
    ap.add_argument("--rates", default="unshaped,1gbit",
                    help="with --grid: the links, e.g. unshaped,10gbit,1gbit")
    a = ap.parse_args()
    if a.grid:
        grid(a)
        print(open(a.out + ".md").read())
        return
    nps = [int(n) for n in a.nps.split(",")]
    if a.hosts > 1:
        a.no_torch = True
        hosts_up(a, max(nps))
    try:
        import torch  # noqa: F401
        have_torch = not a.no_torch
    except ImportError:
        have_torch = False
    cores = os.cpu_count() or 1
    rows = []
    port = 29500
    for model in a.models.split(","):
        steps = 200 if model == "mlp" else 60
        base = {}
        for np_ in nps:
            runs = {"fluid": [], "torch-ddp": []}
            share = []
            for _ in range(a.repeats):
                r = ours(a.build, model, np_, a.batch, steps, a)
                runs["fluid"].append(r["samples_per_s"])
                share.append(r["exposed_comm_share"])
                if have_torch:
                    port += 1
                    runs["torch-ddp"].append(
                        ddp(model, np_, a.batch, steps, port)["samples_per_s"])
            for fw, vals in runs.items():
                if not vals:
                    continue
                sps = statistics.median(vals)
                if np_ == 1:
                    base[fw] = sps
                eff = sps / (np_ * base[fw]) if fw in base else float("nan")
                rows.append({
                    "model": model, "framework": fw, "np": np_,
                    "hosts": min(a.hosts, np_), "link": a.rate or "unshaped",
                    "grad_compression": a.grad_compression,
                    "oversubscribed": np_ > cores, "batch_per_rank": a.batch,
                    "samples_per_s": round(sps, 1),
                    "efficiency": round(eff, 3),
                    "exposed_comm_share":
                        round(statistics.median(share), 3)
                        if fw == "fluid" else "",
                })
                print(f"{model} {fw} np={np_}: {sps:.0f} samples/s, "
                      f"efficiency {eff:.2f}", file=sys.stderr)

    write_csv(a.out, rows)
    with open(a.out + ".md", "w") as f:
        f.write("| model | framework | np | hosts | link | compression | "
                "samples/s | efficiency | exposed comm share |\n"
                "|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            np_s = f"{r['np']}{' (oversubscribed)' if r['oversubscribed'] else ''}"
            f.write(f"| {r['model']} | {r['framework']} | {np_s} | "
                    f"{r['hosts']} | {r['link']} | {r['grad_compression']} | "
                    f"{r['samples_per_s']:.0f} | {r['efficiency']:.2f} | "
                    f"{r['exposed_comm_share']} |\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        models = sorted({r["model"] for r in rows})
        fig, axes = plt.subplots(2, len(models), squeeze=False,
                                 figsize=(5 * len(models), 7))
        for col, model in enumerate(models):
            for fw in ("fluid", "torch-ddp"):
                pts = [r for r in rows if r["model"] == model
                       and r["framework"] == fw]
                if not pts:
                    continue
                nps = [r["np"] for r in pts]
                axes[0][col].plot(nps, [r["samples_per_s"] for r in pts],
                                  "o-", label=fw)
                axes[1][col].plot(nps, [r["efficiency"] for r in pts], "o-",
                                  label=fw)
            axes[0][col].set_title(
                f"{model}, batch {a.batch}/rank, 1 thread/rank")
            axes[0][col].set_ylabel("samples/s")
            axes[1][col].set_ylabel("weak-scaling efficiency")
            axes[1][col].axhline(0.9, color="grey", linestyle=":")
            for row in (0, 1):
                axes[row][col].set_xlabel(
                    "ranks (np > %d oversubscribed)" % cores)
                axes[row][col].legend()
        fig.tight_layout()
        fig.savefig(a.out + ".png", dpi=100)
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
    print(open(a.out + ".md").read())


if __name__ == "__main__":
    main()
