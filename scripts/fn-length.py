#!/usr/bin/env python3
"""Function length check (make test): a function of the library (src/, Rust) or of the kernels
(kernels/*.cu and *.cuh, CUDA) over LIMIT lines, or one of the tools and the CLI (tools/src,
cli/src) over OUTSIDE lines, fails it, named with its file and line. A function is counted from
its signature's first line to its closing brace, both included; tests in src/ count too.
Usage: scripts/fn-length.py [LIMIT [OUTSIDE]]  (defaults 100 and 150)."""
import os
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 100
OUTSIDE = int(sys.argv[2]) if len(sys.argv) > 2 else 150
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

RUST_FN = re.compile(
    r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')


def rust_functions(path):
    """(first line, lines, name) of each Rust function with a body: from `fn` to the `}` at the
    signature's indent."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = RUST_FN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, name = len(m.group(1)), m.group(8)
        j = i
        while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
            j += 1
        if j == len(lines) or "{" not in lines[j]:
            i += 1  # a declaration without a body (in a trait or an extern block)
            continue
        if lines[j].rstrip().endswith("}") and lines[j].count("{") == lines[j].count("}"):
            i = j + 1  # a body on one line
            continue
        close = " " * indent + "}"
        k = j + 1
        while k < len(lines) and not (
                lines[k].startswith(close) and lines[k][indent + 1:indent + 2] in ("", " ", ";", ")", ",")):
            k += 1
        yield i + 1, k - i + 1, name
        i += 1


C_NAME = re.compile(r'(\w+)\s*\(')


def cuda_functions(path):
    """(first line, lines, name) of each function defined at the top level of a .cu file: its
    signature ends on a line before a `{` alone at column 0, and its body at the next `}` at
    column 0 (this project's layout)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    for j, line in enumerate(lines):
        if line != "{":
            continue
        i = j - 1
        while i > 0 and lines[i - 1].strip() and not lines[i - 1].startswith(("//", "#", "}")) \
                and not lines[i - 1].rstrip().endswith((";", "}", "{")):
            i -= 1
        m = C_NAME.search(lines[i])
        k = j + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        yield i + 1, k - i + 1, m.group(1) if m else lines[i].strip()


def main():
    found = []
    for top, ext, scan, limit in (("src", ".rs", rust_functions, LIMIT),
                                  ("kernels", (".cu", ".cuh"), cuda_functions, LIMIT),
                                  ("tools/src", ".rs", rust_functions, OUTSIDE),
                                  ("cli/src", ".rs", rust_functions, OUTSIDE)):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith(ext):
                    path = os.path.join(dirpath, f)
                    for line, n, name in scan(path):
                        if n > limit:
                            found.append((n, os.path.relpath(path, ROOT), line, name, limit))
    for n, path, line, name, limit in sorted(found, reverse=True):
        print(f"{path}:{line}: {name} is {n} lines (limit {limit}): split it into named steps",
              file=sys.stderr)
    if found:
        sys.exit(1)
    print(f"fn-length: no function over {LIMIT} lines in src/ and kernels/, "
          f"none over {OUTSIDE} in tools/ and cli/")


if __name__ == "__main__":
    main()
