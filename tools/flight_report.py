#!/usr/bin/python3
"""Reads the flight recorder files of a multi-rank job that aborted
(flight-rank-<R>.txt, one per rank, written to --flight-dir) and prints, per
rank, the last collective it entered and the last it finished, then the
rank(s) behind: those that had not entered the collective the others were
in. The mismatch is the diagnosis; when the stall watchdog ended the job,
the rank it named (in the reporting rank's file) comes first.

    tools/flight_report.py DIR            (or the files themselves)
"""
import argparse
import glob
import os
import re
import sys


def parse(path):
    """One rank's file: its header fields and its records, oldest first."""
    info = {"path": path, "records": [], "reason": "", "note": ""}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            if key in ("reason", "note"):
                info[key] = rest
            elif key in ("rank", "issued", "seq"):
                words = line.split()
                fields = dict(zip(words[0::2], words[1::2]))
                if key == "seq":
                    info["records"].append(fields)
                else:
                    info.update({k: int(v) for k, v in fields.items()})
    if "rank" not in info:
        raise ValueError(f"{path}: not a flight recorder file")
    return info


def find_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += glob.glob(os.path.join(p, "flight-rank-*.txt"))
        else:
            files.append(p)
    return sorted(files)


def describe(info, seq):
    """'collective 12 (allreduce, 4096 bytes, #2 of step 3, running)'."""
    for r in info["records"]:
        if int(r["seq"]) == seq:
            step = int(r["step"])
            where = f"#{r['index']} of step {step}" if step > 0 else \
                f"#{r['index']} before the first step"
            text = f"collective {seq} ({r['op']}, {r['bytes']} bytes, " \
                f"{where}, {r['state']}"
            started = int(r["started_ms_ago"])
            if r["state"] == "running" and started >= 0:
                text += f" for {started / 1000:.1f} s"
            return text + ")"
    return f"collective {seq}" if seq > 0 else "none"


def rank_list(ranks):
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + \
        ", ".join(str(r) for r in ranks)


def report(infos, out):
    size = max(i.get("size", 1) for i in infos.values())
    out.write(f"flight recorder of {len(infos)} of {size} rank(s)\n")
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
    if verdict or behind:
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
    args = parser.parse_args()
    files = find_files(args.paths)
    if not files:
        sys.exit(f"flight_report: no flight-rank-*.txt in {args.paths}")
    infos = {}
    for path in files:
        info = parse(path)
        infos[info["rank"]] = info
    report(infos, sys.stdout)


if __name__ == "__main__":
    main()
