# SPDX-License-Identifier: Apache-2.0
"""The pass's plan: the targets of every source made one list, what the repository already
serves asked the way a node asks it, and what is missing put in build order with the
command line that builds each.

What is served is `nvidia-driver-installer coverage --fleet FILE --json` (docs/json.md) of
one fleet file generated here, a row per target: the installer's own parser and selection
decide, so that "served" means "a node of this image would install it". A missing target is
built asked-first (the oldest ask first), then what nodes run, then fleet rows, then feeds
(targets.RANK); within a rank in the order the sources gave them.
"""
import json
import os
import subprocess

from supplylib import config
from supplylib.targets import Origin, Target

FLEET_MAX = 4096              # the installer's bound on a fleet file's rows


class PlanError(Exception):
    """The plan cannot be made (one line); EXIT the command's status (2 usage, 1 else)."""

    def __init__(self, msg, exit=1):
        super().__init__(msg)
        self.exit = exit


def judge_fleet(installer, path, pub, root):
    """The installer's parser judges the fleet file PATH (unknown keys, types), as
    build-fleet does: coverage --fleet against no repository; exit 2 is a refusal."""
    p = subprocess.run([installer, "coverage", "--fleet", path, "--repo", "file:///nonexistent",
                        "--repo-key", pub, "--fetch-timeout", "1", "--root", root,
                        "--cache-dir", "/cache-none"], capture_output=True, text=True)
    if p.returncode == 2:
        err = p.stderr.strip()
        raise PlanError(err.splitlines()[-1] if err else "%s is refused" % path, 2)


def fleet_targets(path, notes):
    """The targets of a fleet file's rows (already judged): each exact version times each
    flavour (auto: proprietary, the flavour every driver has); a tag is noted, not built."""
    with open(path) as f:
        rows = json.load(f)["images"]
    out = []
    for i, r in enumerate(rows):
        fls = ["proprietary" if fl == "auto" else fl for fl in r.get("flavours", ["auto"])]
        for v in r["driver_versions"]:
            if not config.VERSION_RE.match(v):
                notes.append("fleet %s row %d: '%s' names no version to build" % (path, i, v))
                continue
            for fl in dict.fromkeys(fls):
                out.append(Target(r["os"], r.get("build") or None, r["kernel"],
                                  r.get("arch", "x86_64"), v, fl,
                                  [Origin("fleet", "fleet %s row %d" % (path, i),
                                          build_args=r.get("build_args"))]))
    return out


def feed_targets(feeds_mod, confs, http, versions, flavours, notes, running=()):
    """The targets of the feeds' images times VERSIONS and FLAVOURS; a feed that cannot be
    read is noted and the pass goes on with the others. RUNNING: the COS builds the nodes
    run (the cos feed watches their milestones)."""
    out = []
    for conf in confs:
        try:
            images = feeds_mod.read(conf, http, running)
        except Exception as e:  # a feed's failure is its own, never the pass's
            notes.append("feed %s: %s" % (conf["name"], e))
            continue
        for im in images:
            for v in versions:
                for fl in flavours:
                    out.append(Target(im.os, im.os_build, im.kernel, im.arch, v, fl,
                                      [Origin("feed", "feed %s" % conf["name"],
                                              inputs=im.inputs, image=im)]))
    return out


def ask(installer, fleet, repo, pub, root):
    """coverage --fleet FLEET --json's answers (docs/json.md) against the repository REPO."""
    p = subprocess.run([installer, "coverage", "--fleet", fleet, "--json",
                        "--repo", "file://" + os.path.realpath(repo), "--repo-key", pub,
                        "--cache-dir", "/cache", "--root", root], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        raise PlanError("coverage --fleet failed (exit %d): %s" % (
            p.returncode, p.stderr.strip()[-400:]), 2 if p.returncode == 2 else 1)
    return json.loads(p.stdout)["answers"]


def coverage(installer, repo, pub, work, targets):
    """key -> coverage's answer for each of TARGETS (served false, reason said, when the
    repository has no index yet)."""
    if not os.path.exists(os.path.join(repo, "index.json")):
        return {t.key(): {"served": False, "reason": "the repository has no index yet"}
                for t in targets}
    out = {}
    root = os.path.join(work, "root")
    os.makedirs(root, exist_ok=True)
    for n in range(0, len(targets), FLEET_MAX):
        part = targets[n:n + FLEET_MAX]
        fleet = os.path.join(work, "coverage-fleet.json")
        rows = [{"name": t.build_id(), "os": t.os, "kernel": t.kernel, "arch": t.arch,
                 "driver_versions": [t.driver_version], "flavours": [t.flavour]}
                for t in part]
        for row, t in zip(rows, part):
            if t.os_build:
                row["build"] = t.os_build
        with open(fleet, "w") as f:
            json.dump({"fleet": 1, "images": rows}, f)
        for a in ask(installer, fleet, repo, pub, root):
            out[part[a["row"]].key()] = a
    return out


def order(missing):
    """MISSING in build order (stable: equal ranks keep the sources' order)."""
    return sorted(missing, key=lambda t: t.rank())


class _Said(dict):
    """A dry run's placeholders: a feed's input not fetched is said by name."""

    def __missing__(self, key):
        if key.startswith("input_"):
            return "<%s: the feed's, not fetched>" % key[len("input_"):]
        raise KeyError(key)


def build_args(t, platforms, inputs, dry_run=False):
    """The target's build-driver-package options: its fleet row's, else its platform's
    (the configuration's platforms.OS), placeholders replaced; None when neither has any.
    DRY_RUN: the inputs were not fetched, their placeholders are said by name."""
    args = next((o.build_args for o in t.origins if o.build_args), None)
    if args is None:
        args = (platforms.get(t.os) or {}).get("build_args") or None
    if args is None:
        return None
    subst = {"version": t.driver_version, "kernel": t.kernel, "build": t.os_build or "",
             "os": t.os, "arch": t.arch, "flavour": t.flavour}
    subst.update(("input_" + k, v) for k, v in (inputs or {}).items())
    if dry_run and any(o.kind == "feed" for o in t.origins):
        subst = _Said(subst)
    try:
        return [a.format_map(subst) for a in args]
    except KeyError as e:
        name = e.args[0]
        if str(name).startswith("input_"):
            raise PlanError("build_args: {%s}: no feed that names this image has an input "
                            "'%s' (add the feed, or give the file in the row's build_args)" % (
                                name, name[len("input_"):])) from None
        raise PlanError("build_args: {%s} is not one of {%s}" % (
            name, "}, {".join(sorted(subst)))) from None
    except (IndexError, ValueError) as e:
        raise PlanError("build_args: %s" % e) from None


def argv(bdp, t, args, stage, work, extra):
    """build-driver-package's whole command line for T (SPEC47 §3)."""
    cmd = [bdp, "--kernel", t.kernel, "--os", t.os]
    cmd += (["--os-build", t.os_build] if t.os_build else [])
    cmd += ["--arch", t.arch, "--flavour", t.flavour] + list(args)
    return cmd + ["--stage-to", stage, "--work", work, "--quiet"] + list(extra)
