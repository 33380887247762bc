# SPDX-License-Identifier: Apache-2.0
"""What a pass did, said twice: a table on stdout (build-fleet's columns: IMAGE VERSION
FLAVOUR RESULT, FROM for the supply pass, WHY last) and a JSON report file (--json) for
machines, its keys in docs/building-packages.md ("Keeping ahead of the fleet").

Results: served (the repository had it), built (and published), failed (the build, the
publish, or served still not after them), skipped (nothing says how to build it), to build
(--dry-run).
"""
import json
import os
import time


class Entry:
    """One target's line: RESULT and WHY, SECONDS its build's, LOG its build's log."""

    def __init__(self, target, result, why, seconds=None, log=None):
        self.target, self.result, self.why = target, result, why
        self.seconds, self.log = seconds, log

    def as_json(self):
        d = self.target.as_json()
        d.update(result=self.result, why=self.why, build_id=self.target.build_id())
        if self.seconds is not None:
            d["seconds"] = round(self.seconds, 1)
        if self.log:
            d["log"] = self.log
        return d


def table(rows, heads, out):
    """ROWS (tuples of strings) under HEADS, each column as wide as its widest cell, the
    last one unpadded."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads[:-1])]
    for r in [heads] + rows:
        cells = ["%-*s" % (w, c) for w, c in zip(widths, r[:-1])] + [r[-1]]
        out.write("  ".join(cells).rstrip() + "\n")


def counts(entries):
    c = {}
    for e in entries:
        c[e.result] = c.get(e.result, 0) + 1
    return ", ".join("%d %s" % (n, k) for k, n in sorted(c.items()))


def print_table(entries, out):
    rows = [(e.target.label(), e.target.driver_version, e.target.flavour, e.result,
             "; ".join(o.what for o in e.target.origins), e.why) for e in entries]
    table(rows, ("IMAGE", "VERSION", "FLAVOUR", "RESULT", "FROM", "WHY"), out)


def asks(entries, after):
    """Each ask (a node's wants) and whether the repository serves it now."""
    out = []
    for e in entries:
        for o in e.target.origins:
            if o.kind == "asked":
                out.append({"node": o.what.split(" ")[1], "since": o.since,
                            "kernel": e.target.kernel, "os": e.target.os,
                            "driver_version": e.target.driver_version,
                            "flavour": e.target.flavour,
                            "answered": bool((after.get(e.target.key()) or {}).get("served"))})
    return out


def write_json(path, entries, notes, after, started, publish):
    """The report file, written whole then renamed into place."""
    doc = {"supply": 1, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "seconds": round(time.time() - started, 1), "notes": notes,
           "targets": [e.as_json() for e in entries], "asks": asks(entries, after),
           "publish": publish,
           "counts": {k: sum(1 for e in entries if e.result == k)
                      for k in ("served", "built", "failed", "skipped", "to build")}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return doc
