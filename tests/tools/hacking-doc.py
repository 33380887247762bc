#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/hacking.md's folder table and layer order, held to the tree and to check-layers.

  hacking-doc.py HACKING_MD INSTALLER_DIR CHECK_LAYERS

Fails (one line on stderr per problem, exit 1) when:
  - a folder of INSTALLER_DIR has no row in the table (| `X/` | face | files |), or a row
    names a folder that is not there;
  - a .c or .h file of a folder is not named in its row, in backquotes: a header whose .c
    of the same stem is named counts as named (the two are one module, as check-layers
    counts them), any other header must be named itself;
  - the rows of the folders check-layers orders are not in its ORDER, lowest first;
  - the order the rules state ("The folders are ordered util < host < ... < cmd") is not
    check-layers' ORDER.
"""
import ast
import os
import re
import sys

ROW = re.compile(r"^\| `([a-z_]+)/` \|")
TICKED = re.compile(r"`([^`]+)`")
STATED = re.compile(r"The folders are ordered ((?:[a-z_]+ < )+[a-z_]+)\.")


def check_layers_order(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ORDER" for t in node.targets):
            return ast.literal_eval(node.value)
    sys.exit(f"hacking-doc: no ORDER in {path}")


def named(row, name):
    spans = TICKED.findall(row)
    return any(s == name or s.endswith("/" + name) for s in spans)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    doc, src, layers = sys.argv[1:]
    order = check_layers_order(layers)
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    rows = {}
    for line in text.split("\n"):
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = line
    bad = []
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for folder in folders:
        row = rows.get(folder)
        if row is None:
            bad.append(f"installer/{folder}/ has no row in the folder table")
            continue
        names = sorted(n for n in os.listdir(os.path.join(src, folder))
                       if n.endswith((".c", ".h")))
        for name in names:
            stem, ext = os.path.splitext(name)
            if named(row, name):
                continue
            if ext == ".h" and stem + ".c" in names and named(row, stem + ".c"):
                continue
            bad.append(f"installer/{folder}/{name} is not named in the `{folder}/` row")
    for folder in rows:
        if folder not in folders:
            bad.append(f"the table has a row for {folder}/, which installer/ does not have")
    in_table = [f for f in rows if f in order]
    if in_table != [f for f in order if f in rows]:
        bad.append(f"the table's rows are in the order {' < '.join(in_table)}; "
                   f"check-layers' ORDER is {' < '.join(order)}")
    stated = STATED.search(" ".join(text.split()))
    if not stated:
        bad.append('the rules state no order ("The folders are ordered util < ... < cmd.")')
    elif stated.group(1).split(" < ") != order:
        bad.append(f"the rules state the order {stated.group(1)}; "
                   f"check-layers' ORDER is {' < '.join(order)}")
    for line in bad:
        print(f"hacking-doc: {doc}: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
