#!/usr/bin/env python3
"""Checks that every distribution setting stays in few product files.

  check_setting_names.py --source-dir DIR [--max-files N]

A setting of proto/distributed_strategy.proto is meant to be read where
its pass reads it and written where a front end writes it: the proto, its
pass, the trainer's flag table, Python's fluid.DistributedStrategy (the
rest reach it by reflection). This fails (exit 1, one line per setting)
when the name of a leaf field made of several words (bucket_bytes,
overlap_gather, ...) appears as a word in the code (comments and file
paths aside) of more than N files under src/, transpiler/, bindings/ and
ops/ (default 4), listing them; and when a
retired setting name (RETIRED) appears anywhere there but where it is
still accepted for old scripts."""
import argparse
import os
import re
import sys

ROOTS = ("src", "transpiler", "bindings", "ops")
EXTENSIONS = (".h", ".cc", ".cu", ".cuh", ".py")

# Names settings had before the strategy, and the only files that may still
# name them (they accept them from old scripts).
RETIRED = {
    "shard_optimizer": {"bindings/python/fluid/distributed_strategy.py"},
    "shard_overlap_gather": set(),
    "allreduce_algorithm_mode": set(),
}


def leaf_fields(proto_text):
    """Field names of every message but the option extension."""
    text = re.sub(r"//[^\n]*", "", proto_text)
    text = re.sub(r"extend\s+[\w.]+\s*\{[^}]*\}", "", text)
    fields = []
    for m in re.finditer(r"\b(?:optional|required|repeated)\s+([\w.]+)\s+"
                         r"(\w+)\s*=", text):
        type_name, name = m.groups()
        if type_name[0].isupper():  # a group of settings (a message)
            continue
        fields.append(name)
    return fields


# What is no use of a setting: C++ and Python comments, and file paths
# (transpiler/gradient_merge.h names a file, not the setting).
COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|(?m:^\s*#(?!include)[^\n]*)",
                      re.S)
PATHS = re.compile(r"[\w./-]+\.(?:h|cc|cu|cuh|py|proto|md)\b")


def code_of(text):
    """`text` without its comments and file paths."""
    return PATHS.sub("", COMMENTS.sub("", text))


def product_files(src):
    for root in ROOTS:
        for dirpath, _, files in os.walk(os.path.join(src, root)):
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, src), code_of(open(
                        path, encoding="utf-8", errors="replace").read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--max-files", type=int, default=4)
    args = parser.parse_args()
    proto = os.path.join(args.source_dir, "proto",
                         "distributed_strategy.proto")
    names = [n for n in leaf_fields(open(proto, encoding="utf-8").read())
             if "_" in n]
    if not names:
        sys.exit(f"check_setting_names: no fields found in {proto}")
    files = list(product_files(args.source_dir))
    errors = []
    for name in names + sorted(RETIRED):
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        where = sorted(path for path, text in files if word.search(text))
        if name in RETIRED:
            extra = [p for p in where if p not in RETIRED[name]]
            if extra:
                errors.append(f"retired setting name '{name}' is back in: "
                              f"{', '.join(extra)}")
        elif len(where) > args.max_files:
            errors.append(f"setting '{name}' is named in {len(where)} "
                          f"product files (at most {args.max_files}): "
                          f"{', '.join(where)}")
    for e in errors:
        print(e)
    if errors:
        print("check_setting_names: read the setting through the strategy "
              "(transpiler/strategy.h) or a pass instead of by name; see "
              "docs/design.md, 'Adding a setting'")
        return 1
    print(f"check_setting_names: {len(names)} settings, each in at most "
          f"{args.max_files} product files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
