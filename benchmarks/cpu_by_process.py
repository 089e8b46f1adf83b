#!/usr/bin/env python3
"""CPU time by process name while a command runs: what a launch costs
beside the ranks it starts.

    benchmarks/cpu_by_process.py [--interval S] [--top N] -- COMMAND ...

Runs COMMAND and samples /proc every S seconds (0.1) until it ends. For
every process seen (the machine's, not only COMMAND's), its CPU time
(user + system) since the start, or since it appeared, up to the last
sample. Then prints the window, the machine's busy CPU-seconds over it,
and the N (12) names with the most CPU time. COMMAND's own output goes
through, and so does its exit status.

A process that starts and ends between two samples is missed. So is
the part of a process's time after its last sample. The machine's busy
time counts both, so a gap between it and the names' sum is such time.
"""
import argparse
import collections
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def machine_busy():
    """The machine's busy CPU-seconds since boot (all but idle, iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / HZ


def sample(seen):
    """Records each process's CPU-seconds in `seen`, keyed by (pid, start
    time) so that a reused pid is another process."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue  # ended since the listing
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / HZ
        seen[(pid, fields[19])] = (name, cpu)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command to run: cpu_by_process.py -- COMMAND ...")
    if args.interval <= 0:
        ap.error("--interval must be positive, not %g" % args.interval)
    before = {}
    sample(before)
    busy0, t0 = machine_busy(), time.time()
    proc = subprocess.Popen(command)
    seen = dict(before)
    while proc.poll() is None:
        sample(seen)
        time.sleep(args.interval)
    sample(seen)
    busy1, t1 = machine_busy(), time.time()
    by_name = collections.Counter()
    for key, (name, cpu) in seen.items():
        by_name[name] += cpu - before.get(key, (name, 0.0))[1]
    out = sys.stderr
    print("cpu_by_process: %.1f s, machine busy %.2f CPU-s, by name:" %
          (t1 - t0, busy1 - busy0), file=out)
    for name, cpu in by_name.most_common(args.top):
        if cpu > 0:
            print("  %-24s %.2f" % (name, cpu), file=out)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
