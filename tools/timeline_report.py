#!/usr/bin/python3
"""Summarises a timeline (trainer --timeline FILE, MPIExecutor(timeline=))
and, with --check, tells whether it is whole.

    tools/timeline_report.py FILE [--check STEPS] [--max-offset-ms MS]

Part files an aborted job left next to FILE (FILE.rank-R.part) are read
with it. A FILE that is missing, empty, cut short or holds no events is
said so in one line (exit 1), naming the parts read instead, if any; a
part that is cut short is left out with a line saying so.

Prints, per rank: its clock offset from rank 0 and the bound on it, the
events of each track, the op time by type (top 8), the collectives per
step and the time spent in them, and the exposed waits (c_wait).

--check STEPS fails (exit 1, one line per problem) unless every rank has op
and collective events, and every step 1..STEPS holds, on every rank, each
collective its program issued: as many as it ran collective ops (c_*, but
c_wait), numbered 1..n with none missing, the same n on every rank; and
every rank's clock offset is within --max-offset-ms (default 1) of rank
0's, which holds on one machine, where the ranks share one clock.
"""
import argparse
import collections
import glob
import json
import sys

# The ops that issue one collective each when they run.
COLLECTIVE_OPS = ("c_allreduce", "c_broadcast", "c_allgather",
                  "c_reducescatter")


class TimelineError(Exception):
    """A file that cannot be read as a timeline; the message says why."""


def read_json(path, what):
    """The JSON value in `path`, or a TimelineError saying what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise TimelineError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TimelineError(f"{path}: cannot read it: {e}") from None
    if not text.strip():
        raise TimelineError(
            f"{path} is empty: the job that was to write this {what} ended "
            "before it did")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise TimelineError(
            f"{path} is not a whole {what}: {e.msg} at line {e.lineno} "
            f"column {e.colno} of {len(text)} bytes (cut short while it was "
            "written?)") from None


def read_part(part):
    """One rank's events from a part file (comma-separated events)."""
    try:
        with open(part, encoding="utf-8") as f:
            text = f.read().rstrip().rstrip(",")
    except (OSError, UnicodeDecodeError) as e:
        raise TimelineError(f"{part}: cannot read it: {e}") from None
    try:
        events = json.loads("[" + text + "]")
    except json.JSONDecodeError as e:
        raise TimelineError(f"{part} is cut short or damaged ({e.msg} at "
                            f"line {e.lineno} column {e.colno})") from None
    if not all(isinstance(e, dict) and "pid" in e and "ph" in e
               for e in events):
        raise TimelineError(f"{part} holds something other than events")
    return events


def load(path, notes=None):
    """The trace, with the events of any part files an aborted job left
    next to it (PATH.rank-R.part: one rank's events, comma-separated).
    Raises TimelineError, with one line saying why, for a file that cannot
    be read as a timeline and no parts to read instead, or one that holds
    no events; `notes` (a list) collects lines about what was left out or
    read instead."""
    notes = [] if notes is None else notes
    parts = sorted(glob.glob(glob.escape(path) + ".rank-*.part"))
    try:
        trace = read_json(path, "timeline")
        if not isinstance(trace, dict) or not isinstance(
                trace.get("traceEvents"), list):
            raise TimelineError(f"{path}: no traceEvents: not a timeline")
    except TimelineError as e:
        if not parts:
            raise
        notes.append(f"{e}; reading the {len(parts)} part(s) next to it")
        trace = {"traceEvents": [],
                 "otherData": {"note": str(e), "unreadable": str(e)}}
    for part in parts:
        try:
            trace["traceEvents"].extend(read_part(part))
        except TimelineError as e:
            notes.append(f"{e}: left out")
            continue
        trace.setdefault("parts", []).append(part)
    if not any(e.get("ph") != "M" for e in trace["traceEvents"]
               if isinstance(e, dict)):
        note = trace.get("otherData", {}).get("note", "")
        raise TimelineError(f"{path} holds no events" +
                            (f" (its note: {note})" if note else ""))
    return trace


def by_rank(trace):
    """rank -> {"ops": [...], "collectives": [...], "clock": {...},
    "spans": [...]}"""
    ranks = collections.defaultdict(
        lambda: {"ops": [], "collectives": [], "clock": None, "spans": []})
    for e in trace["traceEvents"]:
        r = ranks[e["pid"] - 1]  # pid: rank + 1
        if e["ph"] == "M":
            if e["name"] == "clock_sync":
                r["clock"] = e["args"]
        elif e["ph"] == "X" and e.get("cat") == "op":
            r["ops"].append(e)
        elif e["ph"] == "X" and e.get("cat") == "collective":
            r["collectives"].append(e)
        elif e["ph"] == "X":
            r["spans"].append(e)
    return dict(ranks)


def world_size(trace):
    """The ranks the file says the job had; at least as many as have
    events (a trace read from parts alone says nothing)."""
    pids = [e["pid"] for e in trace["traceEvents"] if "pid" in e]
    return max([int(trace.get("otherData", {}).get("ranks", 0))] + pids)


def check(trace, steps, max_offset_ms=1.0):
    """The problems that make `trace` less than whole (see the module
    docstring); empty when there are none."""
    problems = []
    if "unreadable" in trace.get("otherData", {}):
        problems.append(trace["otherData"]["unreadable"])
    ranks = by_rank(trace)
    size = world_size(trace)
    per_step = {}  # rank -> collectives per step
    for rank in range(size):
        r = ranks.get(rank)
        if r is None or not r["ops"] or not r["collectives"]:
            problems.append(f"rank {rank}: no op or no collective events")
            continue
        clock = r["clock"] or {}
        if abs(clock.get("offset_ns", 1e18)) > max_offset_ms * 1e6:
            problems.append(f"rank {rank}: clock offset "
                            f"{clock.get('offset_ns')} ns exceeds "
                            f"{max_offset_ms} ms")
        issued = collections.Counter(
            e["args"]["step"] for e in r["ops"]
            if e["name"] in COLLECTIVE_OPS)
        got = collections.defaultdict(list)
        for e in r["collectives"]:
            got[e["args"]["step"]].append(e["args"]["bucket"])
        for step in range(1, steps + 1):
            buckets = sorted(got.get(step, []))
            want = issued.get(step, 0)
            if want == 0:
                problems.append(f"rank {rank} step {step}: no collective op ran")
            if buckets != list(range(1, want + 1)):
                problems.append(f"rank {rank} step {step}: collectives "
                                f"{buckets}, expected 1..{want}")
        per_step[rank] = {s: len(got.get(s, [])) for s in range(1, steps + 1)}
        extra = [s for s in got if s > steps]
        if extra:
            problems.append(f"rank {rank}: collectives in steps {extra} "
                            f"past {steps}")
    if len(set(tuple(sorted(v.items())) for v in per_step.values())) > 1:
        problems.append(f"ranks disagree on collectives per step: {per_step}")
    return problems


def report(trace, out):
    ranks = by_rank(trace)
    for rank in sorted(ranks):
        r = ranks[rank]
        clock = r["clock"] or {}
        out.write(f"rank {rank}: clock offset {clock.get('offset_ns', 0)} ns "
                  f"(+- {clock.get('uncertainty_ns', 0)} ns), "
                  f"{len(r['ops'])} ops, {len(r['collectives'])} "
                  "collectives\n")
        op_time = collections.Counter()
        for e in r["ops"]:
            op_time[e["name"]] += e["dur"]
        for name, us in op_time.most_common(8):
            out.write(f"  op {name:28s} {us / 1000:10.3f} ms\n")
        steps = collections.Counter(e["args"]["step"]
                                    for e in r["collectives"])
        busy = sum(e["dur"] for e in r["collectives"])
        waits = sum(e["dur"] for e in r["ops"] if e["name"] == "c_wait")
        out.write(f"  collectives: {dict(sorted(steps.items()))} per step, "
                  f"{busy / 1000:.3f} ms running; exposed waits "
                  f"{waits / 1000:.3f} ms\n")
        spans = collections.Counter()
        for e in r["spans"]:
            spans[e["name"]] += e["dur"]
        for name, us in sorted(spans.items()):
            out.write(f"  {name:30s} {us / 1000:10.3f} ms\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--check", type=int, metavar="STEPS")
    ap.add_argument("--max-offset-ms", type=float, default=1.0)
    args = ap.parse_args()
    notes = []
    try:
        trace = load(args.file, notes)
    except TimelineError as e:
        for note in notes:
            print(f"timeline_report: {note}", file=sys.stderr)
        print(f"timeline_report: error: {e}", file=sys.stderr)
        return 1
    for note in notes:
        print(f"timeline_report: {note}", file=sys.stderr)
    for part in trace.get("parts", []):
        print(f"(with {part}, left by a rank that wrote after rank 0)")
    report(trace, sys.stdout)
    if args.check is None:
        return 0
    problems = check(trace, args.check, args.max_offset_ms)
    for p in problems:
        print(f"FAIL: {p}")
    if not problems:
        print(f"ok: {world_size(trace)} rank(s), every collective of "
              f"{args.check} step(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
