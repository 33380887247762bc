#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A metrics document's table against textfiles the program really wrote, both ways.

Usage: metrics-doc.py DOC HEADING FILE...

The table under '## HEADING' (or '### HEADING') in DOC (metric | type | labels | meaning;
labels `k`, `k` or `k`, `k` = `v1`, `v2`, the values the last key's) must list exactly the
metrics the FILEs hold, with their label names, and
for a label whose values it enumerates, exactly the values written. Exit 1 and one line
per difference otherwise.
"""
import re, sys
doc, heading, files = sys.argv[1], sys.argv[2], sys.argv[3:]
written = {}
for f in files:
    for line in open(f):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$', line.rstrip("\n"))
        assert m, "%s: not a sample line: %r" % (f, line)
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        w = written.setdefault(m.group(1), {})
        for k, v in labels.items():
            w.setdefault(k, set()).add(v)
documented = {}
text = open(doc).read()
# The section under a heading of any level, up to the next heading of any level.
parts = re.split(r"\n##+ %s\n" % re.escape(heading), text, maxsplit=1)
if len(parts) != 2:
    sys.exit("%s: no section '## %s'" % (doc, heading))
section = re.split(r"\n##+ ", parts[1], maxsplit=1)[0]
for row in section.splitlines():
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) < 4 or not cells[0].startswith("`nvidia_"):
        continue
    name = cells[0].strip("`")
    labels = {}
    if cells[2] != "none":
        # `key`, `key` or `key`, `key` = `v1`, `v2`: the values are the last key's.
        key, _, values = cells[2].partition("=")
        keys = re.findall(r"`([^`]+)`", key)
        for k in keys:
            labels[k] = None
        if keys and values:
            labels[keys[-1]] = set(re.findall(r"`([^`]+)`", values))
    documented[name] = labels
errors = []
for name in sorted(set(written) - set(documented)):
    errors.append("written but not in %s: %s" % (doc, name))
for name in sorted(set(documented) - set(written)):
    errors.append("in %s but never written: %s" % (doc, name))
for name in sorted(set(written) & set(documented)):
    w, d = written[name], documented[name]
    if set(w) != set(d):
        errors.append("%s: labels written %s, documented %s" % (name, sorted(w), sorted(d)))
        continue
    for k, values in d.items():
        if values is not None and w[k] != values:
            errors.append("%s: %s values written but not documented: %s; documented but "
                          "never written: %s" % (name, k, sorted(w[k] - values),
                                                 sorted(values - w[k])))
if errors:
    print("\n".join(errors))
    sys.exit(1)
print("%d metrics, as documented" % len(documented))
