#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a JSON document against its key table in docs/json.md.

    json-contract.py DOC SECTION FILE      FILE: a JSON document, or '-' for stdin;
                                           with --lines, one JSON object per line

SECTION is the heading's text without '## ' (e.g. "`status --json`"). Each table row
`| \`a.b[].c\` | TYPE | meaning |` documents a key path. TYPE: string, integer, boolean,
object or "array of T", then ", sorted", ", sorted by `KEY`" or ", in ... order", and
" or null" where null may appear. Every object in FILE must carry exactly the keys
documented for its path; values must have the documented type; sorted arrays must be
sorted; the text must be UTF-8, without a lone surrogate escape. Exit 1 with one line per
violation.
"""
import json
import re
import sys

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|")


def parse_doc(path, section):
    lines = open(path, encoding="utf-8").read().splitlines()
    try:
        start = lines.index("## " + section)
    except ValueError:
        sys.exit("json-contract: no section '## %s' in %s" % (section, path))
    spec = {}
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        m = ROW.match(line)
        if m:
            spec[m.group(1)] = parse_type(m.group(1), m.group(2))
    if not spec:
        sys.exit("json-contract: section '%s' has no key table" % section)
    return spec


def parse_type(key, text):
    t = {"nullable": text.endswith(" or null"), "sorted": None}
    text = text[: -len(" or null")] if t["nullable"] else text
    base, _, order = text.partition(",")
    order = order.strip()
    m = re.fullmatch(r"array of (string|integer|object)", base.strip())
    if m:
        t["type"], t["elem"] = "array", m.group(1)
        if order.startswith("sorted"):
            by = re.fullmatch(r"sorted(?: by `([^`]+)`)?", order)
            if not by:
                sys.exit("json-contract: %s: bad order '%s'" % (key, order))
            t["sorted"] = by.group(1) or ""
        elif not re.fullmatch(r"in .+ order", order):
            sys.exit("json-contract: %s: an array needs its order ('%s')" % (key, text))
    elif base.strip() in ("string", "integer", "boolean", "object"):
        t["type"] = base.strip()
    else:
        sys.exit("json-contract: %s: unknown type '%s'" % (key, text))
    return t


def type_ok(value, name):
    return {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }[name]


def check(spec, doc, what):
    problems = []

    def children(prefix):
        n = len(prefix)
        return {k[n:] for k in spec if k.startswith(prefix) and "." not in k[n:]}

    def walk(obj, path):
        prefix = path + "." if path else ""
        want, have = children(prefix), set(obj)
        for k in sorted(have - want):
            problems.append("%s: undocumented key '%s%s'" % (what, prefix, k))
        for k in sorted(want - have):
            problems.append("%s: missing key '%s%s'" % (what, prefix, k))
        for k in sorted(want & have):
            key, v, t = prefix + k, obj[k], spec[prefix + k]
            if v is None:
                if not t["nullable"]:
                    problems.append("%s: '%s' is null" % (what, key))
                continue
            if not type_ok(v, t["type"]):
                problems.append("%s: '%s' is not %s: %r" % (what, key, t["type"], v))
                continue
            if t["type"] == "object":
                walk(v, key)
            elif t["type"] == "array":
                for i, e in enumerate(v):
                    if not type_ok(e, t["elem"]):
                        problems.append("%s: '%s[%d]' is not %s" % (what, key, i, t["elem"]))
                    elif t["elem"] == "object":
                        walk(e, key + "[]")
                if t["sorted"] is not None:
                    keys = [e.get(t["sorted"]) if t["sorted"] else e for e in v]
                    if keys != sorted(keys):
                        problems.append("%s: '%s' is not sorted: %r" % (what, key, keys))

    if not isinstance(doc, dict):
        problems.append("%s: not a JSON object" % what)
    else:
        walk(doc, "")
    return problems


def strict_text(v):
    """Raises ValueError (UnicodeEncodeError) for a string or key that is not Unicode text."""
    if isinstance(v, str):
        v.encode("utf-8")
    elif isinstance(v, dict):
        for k, x in v.items():
            strict_text(k)
            strict_text(x)
    elif isinstance(v, list):
        for x in v:
            strict_text(x)


def main():
    args = sys.argv[1:]
    lines = "--lines" in args
    args = [a for a in args if a != "--lines"]
    if len(args) != 3:
        sys.exit(__doc__)
    spec = parse_doc(args[0], args[1])
    raw = sys.stdin.buffer.read() if args[2] == "-" else open(args[2], "rb").read()
    problems = []
    try:
        # Strictly: the bytes UTF-8, and no escape of a lone surrogate in a string.
        text = raw.decode("utf-8")
        docs = ([json.loads(l) for l in text.splitlines() if l.strip()] if lines
                else [json.loads(text)])
        for d in docs:
            strict_text(d)
    except ValueError as e:
        sys.exit("json-contract: %s: not JSON: %s" % (args[2], e))
    if not docs:
        problems.append("%s: empty" % args[2])
    for i, d in enumerate(docs):
        problems += check(spec, d, "%s%s" % (args[2], ":%d" % (i + 1) if lines else ""))
    for p in problems:
        print(p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
