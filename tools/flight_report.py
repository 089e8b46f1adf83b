#!/usr/bin/python3
"""Reads the flight recorder files of a multi-rank job that aborted
(flight-rank-<R>.txt, one per rank, written to --flight-dir) and prints, per
rank, the last collective it entered and the last it finished, then the
first collective that differs across ranks (a mismatch: ranks that issued
different collectives), then the rank(s) behind: those that had not entered
the collective the others were in. When the stall watchdog ended the job,
the rank it named (in the reporting rank's file) comes first.

Only the files of one job are read: each file names its job ("job <id>",
the launcher's job id), and files of other jobs left in the same directory
(an earlier run's) are left out with a warning. The job is the one of the
newest file, unless --job names another.

    tools/flight_report.py DIR            (or the files themselves)
    tools/flight_report.py --job ID DIR
"""
import argparse
import glob
import os
import re
import sys


def parse(path):
    """One rank's file: its header fields and its records, oldest first."""
    info = {"path": path, "records": [], "reason": "", "note": "",
            "job": None}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key in ("reason", "note"):
                info[key] = rest
            elif key == "job":
                info["job"] = rest.strip() or None
            elif key in ("rank", "issued", "seq"):
                words = line.split()
                fields = dict(zip(words[0::2], words[1::2]))
                if key == "seq":
                    info["records"].append(fields)
                else:
                    try:
                        info.update({k: int(v) for k, v in fields.items()})
                    except ValueError:
                        raise ValueError(f"{path}: bad line: {line!r}")
    if "rank" not in info:
        raise ValueError(f"{path}: not a flight recorder file")
    for key in ("size", "started", "finished", "step", "unix_ms"):
        info.setdefault(key, 0)
    return info


def find_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += glob.glob(os.path.join(p, "flight-rank-*.txt"))
        else:
            files.append(p)
    return sorted(files)


def job_name(job):
    return f"job {job}" if job is not None else "no job id (an older build)"


def select_job(infos, job, warn):
    """The files of `job` (default: the newest file's job), one per rank;
    the others are named through `warn`. Returns (job, {rank: info})."""
    if job is None:
        newest = max(infos, key=lambda i: (i["unix_ms"],
                                          os.path.getmtime(i["path"])))
        job = newest["job"]
    newest_ms = max((i["unix_ms"] for i in infos if i["job"] == job),
                    default=0)
    chosen = {}
    for i in sorted(infos, key=lambda i: i["unix_ms"]):
        if i["job"] != job:
            age = (newest_ms - i["unix_ms"]) / 1000
            when = f", written {age:.0f} s before" if age > 0 else ""
            warn(f"ignoring {i['path']}: {job_name(i['job'])}{when}, not "
                 f"{job_name(job)} (a file of another job)")
            continue
        old = chosen.get(i["rank"])
        if old is not None:
            warn(f"ignoring {old['path']}: rank {i['rank']} of "
                 f"{job_name(job)} has a newer file, {i['path']}")
        chosen[i["rank"]] = i
    return job, chosen


def record(info, seq):
    for r in info["records"]:
        if int(r["seq"]) == seq:
            return r
    return None


def what(r):
    """'allreduce(avg) float32 x 4096', as the ranks compare it; for files
    of older builds (no element type), 'allreduce, 16384 bytes'."""
    text = r["op"]
    if "reduce" in r:
        text += f"({r['reduce']})"
    if "dtype" not in r:
        return text if r["op"] == "barrier" else f"{text}, {r['bytes']} bytes"
    if r["op"] == "sparse_allreduce":
        text += f" {r['dtype']} rows of a table of {r['count']}"
    else:
        text += f" {r['dtype']} x {r['count']}"
    if "root" in r:
        text += f" from rank {r['root']}"
    if "wire" in r:
        text += f" as {r['wire']}"
    if r.get("device") == "1":
        text += " on the device transport"
    return text


def describe(info, seq):
    """'collective 12 (allreduce(avg) float32 x 1024, 4096 bytes, #2 of step
    3, running for 2.0 s)': collective `seq` as this rank issued it."""
    r = record(info, seq)
    if r is None:
        return f"collective {seq}" if seq > 0 else "none"
    step = int(r["step"])
    where = f"#{r['index']} of step {step}" if step > 0 else \
        f"#{r['index']} before the first step"
    kind = what(r)
    if "dtype" in r:
        kind += f", {r['bytes']} bytes"
    text = f"collective {seq} ({kind}, {where}, {r['state']}"
    started = int(r["started_ms_ago"])
    if r["state"] == "running" and started >= 0:
        text += f" for {started / 1000:.1f} s"
    return text + ")"


def rank_list(ranks):
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + \
        ", ".join(str(r) for r in ranks)


def first_mismatch(infos):
    """The first collective that two ranks both recorded as different
    collectives: (seq, [(ranks, what)]), or None."""
    seqs = sorted({int(r["seq"]) for i in infos.values()
                   for r in i["records"]})
    for seq in seqs:
        groups = {}
        for rank, info in sorted(infos.items()):
            r = record(info, seq)
            if r is not None:
                groups.setdefault(what(r), []).append(rank)
        if len(groups) > 1:
            return seq, sorted(((ranks, w) for w, ranks in groups.items()),
                               key=lambda g: g[0][0])
    return None


def report(infos, out):
    size = max(i.get("size", 1) for i in infos.values())
    job = next(iter(infos.values()))["job"]
    of_job = f" of job {job}" if job is not None else ""
    out.write(f"flight recorder of {len(infos)} of {size} rank(s){of_job}\n")
    for rank in range(size):
        info = infos.get(rank)
        if info is None:
            out.write(f"rank {rank}: no file (it could not write one: "
                      "killed, frozen, or its files are on another host)\n")
            continue
        out.write(f"rank {rank}: entered "
                  f"{describe(info, info['started'])}; finished "
                  f"{describe(info, info['finished'])}; step {info['step']}; "
                  f"ended by: {info['reason']}\n")
    mismatch = first_mismatch(infos)
    if mismatch:
        seq, groups = mismatch
        out.write(f"mismatch: collective {seq} differs across ranks: " +
                  ", ".join(f"{rank_list(ranks)} {w}" for ranks, w in groups)
                  + "\n")
    front = max(i["started"] for i in infos.values())
    ahead = [r for r, i in infos.items() if i["started"] == front]
    behind = [r for r, i in infos.items() if i["started"] < front]
    missing = [r for r in range(size) if r not in infos]
    any_info = infos[ahead[0]]
    # The watchdog's verdict, made while the job stood still, comes first:
    # a stopped rank that the launcher continues before ending it may run
    # on a little and write a file that looks ahead of the others.
    verdict = None
    for i in infos.values():
        m = re.match(r"stall: (ranks? [0-9, -]+) holds? up", i["reason"])
        if m:
            verdict = (m.group(1), i)
            break
    if verdict:
        who, i = verdict
        out.write(f"behind: {who}: named by rank {i['rank']}'s watchdog: "
                  f"{i['reason'][len('stall: '):]}\n")
    for r in sorted(behind):
        i = infos[r]
        out.write(f"{'files: ' if verdict else 'behind: '}rank {r}: last "
                  f"entered {describe(i, i['started'])}, while "
                  f"{rank_list(ahead)} entered {describe(any_info, front)}\n")
    if verdict or behind or mismatch:
        return
    if missing:
        out.write(f"behind: {rank_list(missing)}: wrote no file, while "
                  f"{rank_list(ahead)} entered {describe(any_info, front)}\n")
        return
    out.write(f"no rank behind: every rank entered "
              f"{describe(any_info, front)}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+",
                        help="a --flight-dir, or flight-rank-*.txt files")
    parser.add_argument("--job", help="read the files of this job id "
                        "(default: the job of the newest file)")
    args = parser.parse_args()
    files = find_files(args.paths)
    if not files:
        sys.exit(f"flight_report: no flight-rank-*.txt in {args.paths}")
    infos = []
    for path in files:
        try:
            infos.append(parse(path))
        except (OSError, ValueError) as e:
            sys.exit(f"flight_report: {e}")

    def warn(line):
        sys.stderr.write(f"flight_report: {line}\n")

    job, chosen = select_job(infos, args.job, warn)
    if not chosen:
        sys.exit(f"flight_report: no file of job {args.job} in "
                 f"{args.paths}; the files are of: " +
                 ", ".join(sorted({job_name(i['job']) for i in infos})))
    report(chosen, sys.stdout)


if __name__ == "__main__":
    main()
