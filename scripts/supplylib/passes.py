# SPDX-License-Identifier: Apache-2.0
"""One supply pass: learn the targets (nodes, fleet files, feeds), ask the repository what it
serves, build what is missing in order, publish the builds once, ask again, report.

The pass's record (Pass) is made by cli.py from the command line and the configuration; it
names the tools (installer, build-driver-package, make-repo), the repository and its keys,
the sources, the executor and where the work goes.
"""
import dataclasses
import fcntl
import os
import sys
import time

from supplylib import nodes, plan, publish, report, targets
from supplylib.executor import Build

BDP_PREFIX = "build-driver-package: "


@dataclasses.dataclass
class Pass:
    repo: str
    repo_key: str
    pub: str                  # the repository's public key (from repo_key), for coverage
    installer: str
    bdp: str
    make_repo: str
    work: str
    conf: dict
    versions: list
    flavours: list
    fleet_files: list
    node_source: object       # a callable giving the Nodes, or None
    executor: object
    parallel: int
    jobs: int                 # --jobs each build gets unless EXTRA names its own
    extra: list
    dry_run: bool = False
    json_path: str = None
    repository: str = None
    guard: object = None      # publish's guard (a Lease in a cluster), or None
    push: dict = None         # config's publish section: registries pushed to, or None
    nodes_api: object = None  # a callable giving the kube.Client of the Nodes, or None
    feeds_mod: object = None
    http: object = None
    out: object = sys.stdout


class Busy(Exception):
    """Another pass works in the same directory (one line)."""


def lock_work(work):
    """WORK/.supply.lock held (flock) for as long as the returned file stays open: two passes
    in one work directory would empty each other's stage dirs."""
    f = open(os.path.join(work, ".supply.lock"), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "?"
        f.close()
        raise Busy("another pass (pid %s) works in %s: wait for it, or give another --work" % (
            holder, work)) from None
    f.truncate(0)
    f.write("%d\n" % os.getpid())
    f.flush()
    return f


def say(msg):
    print("supply: %s" % msg, file=sys.stderr, flush=True)


def learn(p, notes):
    """Every source's targets, made one list (one target per key, origins joined)."""
    found = []
    if p.node_source:
        found += nodes.targets(p.node_source(), p.versions, p.flavours, notes)
    root = os.path.join(p.work, "root")
    os.makedirs(root, exist_ok=True)
    for f in p.fleet_files:
        plan.judge_fleet(p.installer, f, p.pub, root)
        found += plan.fleet_targets(f, notes)
    if p.conf["feeds"]:
        if p.feeds_mod is None:
            raise plan.PlanError("the configuration has feeds and scripts/supplylib/feeds/ "
                                 "is not in this tree", 2)
        running = sorted({t.os_build for t in found if t.os == "cos" and t.os_build})
        found += plan.feed_targets(p.feeds_mod, p.conf["feeds"], p.http, p.versions,
                                   p.flavours, notes, running)
    return targets.merge(found)


def extra_jobs(extra):
    """The --jobs the arguments after -- give every build, or None."""
    for i, a in enumerate(extra):
        v = a[len("--jobs="):] if a.startswith("--jobs=") else (
            extra[i + 1] if a == "--jobs" and i + 1 < len(extra) else None)
        if v is not None:
            return int(v) if v.isdigit() and int(v) > 0 else 1
    return None


def builds_for(p, missing, entries):
    """The Build records of MISSING (in order); a target nothing says how to build is an
    Entry skipped, with why."""
    builds = []
    for t in missing:
        bid = t.build_id()
        inputs = {}
        feed = next((o for o in t.origins if o.image is not None), None)
        try:
            if feed and p.feeds_mod is not None and not p.dry_run:   # a dry run fetches none
                inputs = p.feeds_mod.fetch_inputs(feed.image, os.path.join(p.work, "inputs"),
                                                  p.http)
        except Exception as e:  # one target's inputs, never the pass
            entries.append(report.Entry(t, "failed", "%s's inputs: %s" % (feed.what, e)))
            continue
        try:
            args = plan.build_args(t, p.conf["platforms"], inputs, p.dry_run)
        except plan.PlanError as e:
            entries.append(report.Entry(t, "failed", str(e)))
            continue
        if args is None:
            entries.append(report.Entry(t, "skipped", "no fleet row's build_args and no "
                                        "platforms.%s.build_args in the configuration" % t.os))
            continue
        extra, jobs = list(p.extra), extra_jobs(p.extra)
        if jobs is None:
            jobs = p.jobs
            extra += ["--jobs", str(jobs)]
        stage = os.path.join(p.work, "stage", bid)
        work = os.path.join(p.work, "build", bid)
        builds.append(Build(bid, t, plan.argv(p.bdp, t, args, stage, work, extra), work,
                            stage, os.path.join(p.work, "log", bid + ".log"), jobs))
    return builds


def build_missing(p, missing, before, entries):
    """Builds MISSING (in order) through the executor, publishes the ok ones at once, asks
    coverage again; an Entry per target into ENTRIES. Returns (coverage's answers after,
    the publish's record)."""
    builds = builds_for(p, missing, entries)
    pub = {"stages": 0, "seconds": None, "error": None,
           "to": list((p.push or {}).get("to") or [])}
    if p.dry_run:
        entries += [report.Entry(b.target, "to build", " ".join(b.argv[1:])) for b in builds]
        return before, pub
    if not builds:
        publish_stages(p, [], pub)      # the registries given what they lack
        return before, pub
    results = p.executor.run(builds, p.parallel)
    stages = [r.stage for r in results if r.ok]
    refused = {}
    try:
        refused = publish.check(stages, p.make_repo, p.repository)
    except publish.PublishError as e:
        pub["error"] = str(e)
    else:
        publish_stages(p, [s for s in stages if s not in refused], pub)
    after = dict(before)
    after.update(plan.coverage(p.installer, p.repo, p.pub, p.work, [b.target for b in builds]))
    for b, r in zip(builds, results):
        a = after.get(b.target.key()) or {}
        if not r.ok:
            last = r.last or "see the log"
            if last.startswith(BDP_PREFIX):
                last = last[len(BDP_PREFIX):]
            why = "build-driver-package exit %s: %s (log %s)" % (r.exit_code, last, b.log)
            entries.append(report.Entry(b.target, "failed", why, r.seconds, b.log))
        elif r.stage in refused:
            entries.append(report.Entry(b.target, "failed", "its stage, not published: %s" % (
                refused[r.stage]), r.seconds, b.log))
        elif pub["error"]:
            entries.append(report.Entry(b.target, "failed", pub["error"], r.seconds, b.log))
        elif not a.get("served"):
            entries.append(report.Entry(b.target, "failed", "still not served: %s" % (
                a.get("reason") or "no answer"), r.seconds, b.log))
        else:
            entries.append(report.Entry(b.target, "built", "in %d s" % r.seconds, r.seconds,
                                        b.log))
    return after, pub


def publish_stages(p, stages, pub):
    """STAGES published (and pushed, with registries); the record PUB filled."""
    pub["stages"] = len(stages)
    try:
        pub["seconds"] = round(publish.publish(
            stages, p.repo, p.repo_key, p.make_repo, p.repository, guard=p.guard,
            log=os.path.join(p.work, "log", "publish.log"), push=p.push,
            installer=p.installer), 1)
    except publish.PublishError as e:
        pub["error"] = str(e)


def run_pass(p):
    """One pass; returns (exit status, the report's document or None)."""
    started = time.time()
    notes = []
    found = learn(p, notes)
    before = plan.coverage(p.installer, p.repo, p.pub, p.work, found)
    entries, missing = [], []
    for t in found:
        a = before.get(t.key()) or {"served": False, "reason": "coverage gave no answer"}
        if a["served"]:
            entries.append(report.Entry(t, "served", "driver %s, %s" % (
                a["driver_version"], a["package"]["path"])))
        else:
            missing.append(t)
    missing = plan.order(missing)
    if missing and not p.dry_run:
        say("%d to build, at most %d at once; first %s %s" % (
            len(missing), p.parallel, missing[0].label(), missing[0].driver_version))
    after, pub = build_missing(p, missing, before, entries)
    rank = {t.key(): i for i, t in enumerate(missing)}
    entries.sort(key=lambda e: (e.result != "served", rank.get(e.target.key(), -1)))
    report.print_table(entries, p.out)
    for n in notes:
        say(n)
    say(report.counts(entries) or "no targets")
    doc = None
    if p.json_path:
        doc = report.write_json(p.json_path, entries, notes, after, started, pub)
    failed = any(e.result == "failed" for e in entries) or pub["error"]
    return (1 if failed else 0), doc
