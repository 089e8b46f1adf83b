#!/usr/bin/env python3
"""Fails on a function longer than the limit in the product's sources.

  check_function_length.py --source-dir DIR [--max-lines 100]

Reads every C++ (.h .cc .cu .cuh) and Python function and method under
src/, transpiler/, bindings/ and ops/ with universal-ctags (its end lines)
and prints one line per function over --max-lines lines (first to last
line, both counted), longest first; exit status 1 when there is one, 0
otherwise. A long function is split where its steps are: each piece named
for what it does."""
import argparse
import os
import shutil
import subprocess
import sys

ROOTS = ("src", "transpiler", "bindings", "ops")


def functions(source_dir):
    """(lines, path, first line, name) of every function ctags finds."""
    ctags = shutil.which("ctags")
    if ctags is None:
        sys.exit("check_function_length: ctags not found "
                 "(apt-get install universal-ctags)")
    cmd = [ctags, "-R", "--languages=C++,Python", "--langmap=C++:+.cu.cuh",
           "--kinds-C++=f", "--kinds-Python=fm", "--fields=+ne",
           "--extras=-F", "-x",
           "--_xformat=%{end}\t%{line}\t%{input}\t%{name}"]
    roots = [r for r in ROOTS if os.path.isdir(os.path.join(source_dir, r))]
    run = subprocess.run(cmd + roots, cwd=source_dir, capture_output=True,
                         text=True)
    if run.returncode != 0 or "_xformat" in run.stderr:
        sys.exit("check_function_length: this ctags cannot report where a "
                 "function ends (universal-ctags can: apt-get install "
                 "universal-ctags): " + run.stderr.strip())
    out = []
    for line in run.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not parts[0].isdigit():
            continue  # a declaration: no end line
        end, first, path, name = int(parts[0]), int(parts[1]), parts[2], parts[3]
        out.append((end - first + 1, path, first, name))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", default=".")
    p.add_argument("--max-lines", type=int, default=100)
    args = p.parse_args()
    found = functions(args.source_dir)
    if not found:
        sys.exit("check_function_length: ctags found no function under "
                 + ", ".join(ROOTS))
    long = sorted((f for f in found if f[0] > args.max_lines), reverse=True)
    for lines, path, first, name in long:
        print(f"{path}:{first}: {name} is {lines} lines "
              f"(at most {args.max_lines})")
    print(f"check_function_length: {len(found)} functions, {len(long)} over "
          f"{args.max_lines} lines")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
