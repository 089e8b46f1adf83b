#!/usr/bin/env python3
"""Checks who depends on whom against the table in docs/design.md
("## Libraries": folder | library | may depend on).

  check_layers.py --source-dir DIR [--links BUILD/fluid_links.txt]

Fails (exit 1, one line per violation) when a source file under a folder of
the table includes a header of a library its own may not depend on, when a
folder holding sources is missing from the table, or when a library links
one it may not (the links file is written by the top-level CMakeLists.txt).
A library may depend on those in its row and, through them, on theirs."""
import argparse
import os
import re
import sys

SOURCE_EXT = (".h", ".cc", ".cu", ".cuh", ".proto")
CHECKED_ROOTS = ("src", "ops", "transpiler", "bindings", "proto")


def read_table(design):
    rows = {}      # library -> set of libraries it names
    folders = {}   # folder -> library
    in_section = False
    for line in open(design, encoding="utf-8"):
        if line.startswith("## "):
            in_section = line.strip() == "## Libraries"
            continue
        if not in_section or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("folder", "") or set(cells[0]) <= set("-"):
            continue
        names = lambda cell: re.findall(r"`([^`]+)`", cell)
        library = names(cells[1])[0]
        rows[library] = set(names(cells[2]))
        for folder in names(cells[0]):
            folders[folder] = library
    if not rows:
        sys.exit(f"check_layers: no '## Libraries' table in {design}")
    return rows, folders


def closure(rows):
    allowed = {}
    def visit(lib, seen):
        for dep in rows.get(lib, ()):
            if dep not in seen:
                seen.add(dep)
                visit(dep, seen)
        return seen
    for lib in rows:
        allowed[lib] = visit(lib, set())
    return allowed


def library_of(path, folders):
    """The library whose folder holds `path` (the longest folder that does)."""
    best = None
    for folder, lib in folders.items():
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, lib)
    return best[1] if best else None


def check_includes(src, rows, folders, allowed):
    errors = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for root in CHECKED_ROOTS:
        for dirpath, _, files in os.walk(os.path.join(src, root)):
            rel_dir = os.path.relpath(dirpath, src)
            sources = [f for f in files if f.endswith(SOURCE_EXT)]
            if not sources:
                continue
            lib = library_of(rel_dir, folders)
            if lib is None:
                errors.append(f"{rel_dir}: holds sources but is not in the "
                              "table of docs/design.md (## Libraries)")
                continue
            for name in sorted(sources):
                path = os.path.join(rel_dir, name)
                with open(os.path.join(src, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = include.match(line)
                        if not m:
                            continue
                        dep = library_of(os.path.dirname(m.group(1)), folders)
                        if dep is None or dep == lib or dep in allowed[lib]:
                            continue
                        errors.append(f"{path}:{number}: includes {m.group(1)}"
                                      f": {lib} may not depend on {dep}")
    return errors


def check_links(links, rows, allowed):
    errors = []
    for line in open(links, encoding="utf-8"):
        if ":" not in line:
            continue
        lib, deps = line.split(":", 1)
        lib = lib.strip()
        if lib not in rows:
            errors.append(f"{links}: library {lib} is not in the table of "
                          "docs/design.md (## Libraries)")
            continue
        for dep in deps.split():
            if dep in rows and dep != lib and dep not in allowed[lib]:
                errors.append(f"{lib} links {dep}, which it may not "
                              "(docs/design.md, ## Libraries)")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--links")
    args = ap.parse_args()
    rows, folders = read_table(os.path.join(args.source_dir, "docs",
                                            "design.md"))
    allowed = closure(rows)
    errors = check_includes(args.source_dir, rows, folders, allowed)
    if args.links:
        errors += check_links(args.links, rows, allowed)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s)")
        return 1
    print(f"check_layers: {len(rows)} libraries, includes and links in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
