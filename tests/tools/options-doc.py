#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Holds docs/configuration.md and docs/command-line.md to the installer's option table.

Usage: options-doc.py HELP_OPTIONS_TSV CONFIGURATION_MD COMMAND_LINE_MD
The TSV is `nvidia-driver-installer --help-options`: name, argument, variable, default
(as the docs write it), kind, commands, help, and what an empty value of the variable does
(refused, unset). Prints each disagreement and exits 1, or prints nothing and exits 0.
"""
import re
import sys

NO_DEFAULT = {"count", "help", "version"}


def load_table(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        name, arg, env, default, kind, cmds, helptext, empty = line.rstrip("\n").split("\t")
        rows.append(dict(name=name, arg=arg, env=env, default=default, kind=kind,
                         cmds=set(cmds.split(",")), help=helptext, empty=empty))
    return rows


def cells(line):
    """The cells of a markdown table row, `\\|` kept inside a cell."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def tables_in(text, heading):
    """The rows of the tables under the '## heading' section (first cell, ... )."""
    m = re.search(r"^## " + re.escape(heading) + r"\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return None
    return [cells(l) for l in m.group(1).splitlines()
            if l.startswith("|") and not re.match(r"^\|[-| ]+\|$", l)][1:]


def option_cell(row):
    short = {"verbose": "v", "help": "h"}.get(row["name"])
    if short:
        return "`-%s`, `--%s`" % (short, row["name"])
    arg = (" " + row["arg"].replace("|", "\\|")) if row["arg"] else ""
    return "`--%s%s`" % (row["name"], arg)


def first_option(cell):
    m = re.search(r"--([a-z][a-z0-9-]*)", cell)
    return m.group(1) if m else None


def find(rows, name, cmd):
    for r in rows:
        if r["name"] == name and cmd in r["cmds"]:
            return r
    return None


def check_reference(rows, text, bad):
    for heading, cmd in (("Global", "global"), ("install, list-versions", "install")):
        doc = tables_in(text, heading)
        if doc is None:
            bad.append("configuration.md: no section '## %s'" % heading)
            continue
        seen = set()
        for c in doc:
            name = first_option(c[0])
            row = find(rows, name, cmd)
            if not row:
                bad.append("configuration.md %s: %s is not an option of %s" % (heading, c[0], cmd))
                continue
            seen.add(name)
            want = [option_cell(row), "`%s`" % row["env"] if row["env"] else "",
                    "" if row["kind"] in NO_DEFAULT else row["default"]]
            for what, got, exp in zip(("option", "environment", "default"), c[:3], want):
                if got != exp:
                    bad.append("configuration.md %s: --%s: %s is '%s', the table says '%s'"
                               % (heading, name, what, got, exp))
        for r in rows:
            owned = "global" in r["cmds"] if cmd == "global" else (
                "install" in r["cmds"] and "global" not in r["cmds"])
            if owned and r["name"] not in seen:
                bad.append("configuration.md %s: --%s is missing" % (heading, r["name"]))
    # Commands with a table of their own: every option they take, and no other.
    for cmd in ("mirror", "coverage", "agent"):
        doc = tables_in(text, cmd) or []
        for c in doc:
            for name in re.findall(r"--([a-z][a-z0-9-]*)", c[0]):
                if not find(rows, name, cmd):
                    bad.append("configuration.md %s: --%s is not an option of %s"
                               % (cmd, name, cmd))
        for r in rows:
            if r["cmds"] & {cmd, "global"} == {cmd} and not any(
                    r["name"] in re.findall(r"--([a-z][a-z0-9-]*)", c[0]) for c in doc):
                bad.append("configuration.md %s: --%s is missing" % (cmd, r["name"]))
    # "`status` takes ..." sentences: the same options as the table gives the command.
    for cmd, pattern in (("list-versions", r"`list-versions` takes"), ("status", r"`status` takes"),
                         ("uninstall", r"`uninstall` takes"),
                         ("verify-module", r"`verify-module FILE\.ko\.\.\.` takes")):
        m = re.search(pattern + r"(.*?)\.(?:\s|$)", text, re.S)
        if not m:
            bad.append("configuration.md: no sentence saying what %s takes" % cmd)
            continue
        said = set(re.findall(r"`--([a-z][a-z0-9-]*)`", m.group(1)))
        table = {r["name"] for r in rows if cmd in r["cmds"] and "global" not in r["cmds"]}
        if said != table:
            bad.append("configuration.md: %s takes %s by the docs, %s by the table"
                       % (cmd, sorted(said), sorted(table)))


def check_empty_rule(rows, text, bad):
    """The "Empty values" rule names exactly the variables whose empty value is refused."""
    m = re.search(r"^\* \*\*Empty values\*\*:(.*?)(?=^\* |^$)", text, re.S | re.M)
    if not m:
        bad.append("configuration.md: no '**Empty values**' rule")
        return
    said = set(re.findall(r"`([A-Z][A-Z0-9_]*)`", m.group(1)))
    table = {r["env"] for r in rows if r["empty"] == "refused"}
    for v in sorted(table - said):
        bad.append("configuration.md: the empty-value rule does not name %s, "
                   "which the table refuses empty" % v)
    for v in sorted(said - table):
        bad.append("configuration.md: the empty-value rule names %s, "
                   "which the table takes empty as unset" % v)


def check_command_line(rows, text, bad):
    m = re.search(r"^\| option \| environment \| default \|\n\|[-|]+\|\n((?:\|.*\n)+)", text, re.M)
    if not m:
        bad.append("command-line.md: no option table")
        return
    seen = set()
    for line in m.group(1).splitlines():
        c = cells(line)
        name = first_option(c[0])
        row = (find(rows, name, "install") or find(rows, name, "global")
               or find(rows, name, "agent"))
        if not row:
            bad.append("command-line.md: %s is not an option of install or agent" % c[0])
            continue
        seen.add(name)
        env = "`%s`" % row["env"] if row["env"] else ""
        for what, got, exp in (("option", c[0], option_cell(row)), ("environment", c[1], env),
                               ("default", c[2], row["default"])):
            if not (got == exp or (exp and got.startswith(exp) and got[len(exp)] in " :;(")):
                bad.append("command-line.md: --%s: %s is '%s', the table says '%s'"
                           % (name, what, got, exp))
    for r in rows:
        if r["env"] and r["name"] not in seen:
            bad.append("command-line.md: --%s (%s) is missing" % (r["name"], r["env"]))


def main():
    rows = load_table(sys.argv[1])
    bad = []
    reference = open(sys.argv[2], encoding="utf-8").read()
    check_reference(rows, reference, bad)
    check_empty_rule(rows, reference, bad)
    check_command_line(rows, open(sys.argv[3], encoding="utf-8").read(), bad)
    for b in bad:
        print("options-doc: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
