#!/usr/bin/env python3
"""Copies a CUDA source (.cu or .cuh) to a file a C++ compiler accepts under
the CUDA emulation: every launch

    Kernel<TArgs><<<grid, block, shared, stream>>>(args...)

becomes

    ::cuda_emu::Launch(grid, block, shared, stream).Run(
        "file:line", "Kernel<TArgs>",
        [](auto... a) { Kernel<TArgs>(a...); }, args...)

Line breaks are kept, and a #line directive names the original file, so
diagnostics and __FILE__/__LINE__ point at the original source.

    rewrite_launches.py SRC OUT [--display NAME]

OUT is written only when its contents change (no needless rebuilds).
"""
import argparse
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z0-9_:]")
OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def code_mask(s):
    """mask[i] is True where s[i] is code (not a comment or literal)."""
    mask = [True] * len(s)
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith("//", i):
            j = s.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                mask[k] = False
            i = j
        elif s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                mask[k] = False
            i = j
        elif c == '"' or c == "'":
            m = re.match(r'R"([^(\s]*)\(', s[i - 1:i + 20]) if i > 0 and s[i - 1] == "R" and c == '"' else None
            if m:
                end = s.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
            else:
                j = i + 1
                while j < n and s[j] != c:
                    j += 2 if s[j] == "\\" else 1
                j += 1
            for k in range(i, min(j, n)):
                mask[k] = False
            i = j
        else:
            i += 1
    return mask


class ParseError(Exception):
    pass


def line_of(s, i):
    return s.count("\n", 0, i) + 1


def kernel_name_start(s, mask, p):
    """Start of the kernel expression that ends before s[p] ('<<<')."""
    j = p - 1
    while j >= 0 and s[j].isspace():
        j -= 1
    if j >= 0 and s[j] == ">":
        depth = 0
        while j >= 0:
            if mask[j]:
                if s[j] in ">)]}":
                    depth += 1
                elif s[j] in "<([{":
                    depth -= 1
                    if depth == 0:
                        break
            j -= 1
        if j < 0:
            raise ParseError("unbalanced template arguments")
        j -= 1
        while j >= 0 and s[j].isspace():
            j -= 1
    end = j + 1
    while j >= 0 and IDENT.match(s[j]):
        j -= 1
    start = j + 1
    if start == end:
        raise ParseError("no kernel name before <<<")
    return start


def matching(s, mask, i, close):
    """Index of the `close` that ends the group opened just before s[i]."""
    stack = []
    n = len(s)
    while i < n:
        if mask[i]:
            c = s[i]
            if c in OPEN:
                stack.append(OPEN[c])
            elif c in CLOSE:
                if not stack:
                    if c == close:
                        return i
                    raise ParseError("unbalanced %r" % c)
                if stack.pop() != c:
                    raise ParseError("unbalanced %r" % c)
        i += 1
    raise ParseError("missing %r" % close)


def config_end(s, mask, i):
    """Index of the '>>>' that closes a launch configuration."""
    depth = 0
    n = len(s)
    while i < n:
        if mask[i]:
            c = s[i]
            if c in OPEN:
                depth += 1
            elif c in CLOSE:
                depth -= 1
            elif depth == 0 and s.startswith(">>>", i):
                return i
        i += 1
    raise ParseError("missing >>>")


def rewrite(s, display):
    mask = code_mask(s)
    out = []
    pos = 0
    launches = 0
    i = 0
    while True:
        p = s.find("<<<", i)
        if p < 0:
            break
        if not mask[p]:
            i = p + 3
            continue
        try:
            start = kernel_name_start(s, mask, p)
            if start < pos:
                raise ParseError("overlapping launches")
            q = config_end(s, mask, p + 3)
            t = q + 3
            while t < len(s) and s[t].isspace():
                t += 1
            if t >= len(s) or s[t] != "(":
                raise ParseError("no argument list after >>>")
            u = matching(s, mask, t + 1, ")")
        except ParseError as e:
            raise ParseError("%s:%d: cannot rewrite launch: %s"
                             % (display, line_of(s, p), e))
        name_text = s[start:p]
        name = " ".join(name_text.split())
        config = s[p + 3:q]
        args = s[t + 1:u]
        gap = s[q + 3:t]
        site = "%s:%d" % (display, line_of(s, start))
        repl = ("::cuda_emu::Launch(%s)%s.Run(\"%s\", \"%s\", "
                "[](auto... cuda_emu_a) { %s(cuda_emu_a...); }%s%s)"
                % (config, "\n" * name_text.count("\n"), site, name, name,
                   "\n" * gap.count("\n"),
                   (", " + args) if args.strip() else ""))
        out.append(s[pos:start])
        out.append(repl)
        pos = u + 1
        i = pos
        launches += 1
    out.append(s[pos:])
    return "".join(out), launches


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--display", help="name used in launch sites")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    src = os.path.abspath(a.src)
    with open(src, encoding="utf-8") as f:
        text = f.read()
    try:
        body, launches = rewrite(text, a.display or src)
    except ParseError as e:
        sys.exit("rewrite_launches: %s" % e)
    result = '#line 1 "%s"\n%s' % (src, body)
    if body.count("\n") != text.count("\n"):
        sys.exit("rewrite_launches: %s: line count changed" % src)
    old = None
    if os.path.exists(a.out):
        with open(a.out, encoding="utf-8") as f:
            old = f.read()
    if old != result:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        tmp = a.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(result)
        os.replace(tmp, a.out)
    if a.verbose:
        print("%s: %d launch(es)" % (a.display or src, launches))


if __name__ == "__main__":
    main()
