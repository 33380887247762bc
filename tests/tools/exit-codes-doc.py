#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that docs/exit-codes.md renders every exit code of the source as a table row.

    exit-codes-doc.py DOC ERR_H

A Markdown table is a header row, a delimiter row (|---|...), then rows up to the first
line that does not start with '|': a row after a blank line or a paragraph is not part of
it and renders as text. The codes of the table's rows must be exactly the EXIT_* values of
ERR_H's enum, each once, in increasing order. Exit 1 with the differences.
"""
import re
import sys


def table_codes(lines):
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            codes = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                m = re.match(r"\|\s*(\d+)\s*\|", row)
                codes.append(int(m.group(1)) if m else row)
            return codes
    return []


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    doc = open(sys.argv[1], encoding="utf-8").read().splitlines()
    src = open(sys.argv[2], encoding="utf-8").read()
    enum = sorted(int(v) for v in re.findall(r"^\s*EXIT_[A-Z_]+\s*=\s*(\d+)\s*,", src, re.M))
    if not enum:
        sys.exit("exit-codes-doc: no EXIT_* values in %s" % sys.argv[2])
    rows = table_codes(doc)
    problems = []
    for r in rows:
        if not isinstance(r, int):
            problems.append("a row without a code: %s" % r[:60])
    codes = [r for r in rows if isinstance(r, int)]
    for c in sorted(set(enum) - set(codes)):
        problems.append("exit code %d has no row in the table" % c)
    for c in sorted(set(codes) - set(enum)):
        problems.append("the table has a row for %d, which the source does not define" % c)
    if codes != sorted(set(codes)):
        problems.append("rows out of order or repeated: %s" % codes)
    for p in problems:
        print("%s: %s" % (sys.argv[1], p), file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
