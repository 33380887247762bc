# SPDX-License-Identifier: Apache-2.0
"""scripts/supply's command line (SPEC47 §3), the pass record made from it and the
configuration, and the loop of --watch.

--watch SECONDS runs a pass, then the next one SECONDS later, or at once when a node asks
(its wants annotation appears or changes): between passes the Nodes are listed and then
watched through the API (GET /api/v1/nodes?watch=1 from the list's resourceVersion), or,
from a NodeList file, read again every ASK_POLL_S seconds.
"""
import argparse
import os
import signal
import sys
import tempfile
import time

import privkey
import repo_push
from supplylib import config, nodes, passes, plan, publish
from supplylib.executor import ExecutorError
from supplylib.local import Local

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ASK_POLL_S = 5.0
KUBE_JOBS = 4               # a Job's --jobs (and cpu request) unless the arguments after -- say


class Usage(Exception):
    """Bad usage: one line, exit 2."""


def parser(doc):
    ap = argparse.ArgumentParser(prog="supply", description=doc.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=doc.split("\n", 2)[2])
    ap.add_argument("--repo", required=True, help="the repository's directory")
    ap.add_argument("--repo-key", required=True, help="the repository's signing key (private)")
    ap.add_argument("--repository", help="the repository's name, recorded with its packages")
    ap.add_argument("--config", help="supply.json (docs/building-packages.md)")
    ap.add_argument("--fleet", action="append", default=[], metavar="FLEET.json",
                    help="a fleet file (more than one: give it again)")
    ap.add_argument("--nodes", metavar="in-cluster|NODELIST.json",
                    help="the Nodes: the API (in-cluster, or --kube-*) or a NodeList file")
    ap.add_argument("--kube-server", help="the API server's https:// URL")
    ap.add_argument("--kube-token-file", help="a bearer token's file")
    ap.add_argument("--kube-ca", help="the API server's CA certificate")
    ap.add_argument("--driver-version", action="append", default=[], metavar="V",
                    help="a version the DaemonSets pin (replaces the configuration's)")
    ap.add_argument("--flavour", action="append", default=[], choices=config.FLAVOURS,
                    help="a flavour to build (replaces the configuration's; default "
                    "proprietary)")
    ap.add_argument("--executor", choices=("local", "kubernetes"), default="local")
    ap.add_argument("--parallel", type=int, metavar="N",
                    help="builds at once (default: local, the cores / 2; kubernetes, the "
                    "configuration's kubernetes.parallel)")
    ap.add_argument("--work", help="work directory, kept between passes (default: a new one)")
    ap.add_argument("--dry-run", action="store_true", help="say what would be built")
    ap.add_argument("--json", metavar="FILE", help="write the pass's report there")
    ap.add_argument("--watch", type=float, metavar="SECONDS",
                    help="run passes in a loop, SECONDS apart, at once on a node's ask")
    ap.add_argument("--installer", help="nvidia-driver-installer (default: build/ of this tree)")
    ap.add_argument("--bdp", help="build-driver-package (default: this tree's)")
    ap.add_argument("--make-repo", help="make-repo (default: this tree's)")
    ap.add_argument("--publish-to", action="append", default=[],
                    metavar="oci://HOST/NAME[:TAG]", help="push each publish to this "
                    "registry repository (more than one: again; replaces the "
                    "configuration's publish.to)")
    return ap


def split_extra(argv):
    """(the command's own arguments, build-driver-package's: those after the first --), so
    that options and a file may come in any order before --."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def public_key(repo_key, work):
    """The public half of --repo-key (a PEM file or a pkcs11: URI: scripts/privkey.py),
    written into WORK for coverage to verify with; Usage when it cannot be read."""
    pub = os.path.join(work, "repo-pub.pem")
    try:
        pem = privkey.public_pem(privkey.parse(repo_key, "--repo-key"))
    except privkey.Refused as e:
        raise Usage(str(e)) from None
    with open(pub, "wb") as f:
        f.write(pem)
    return pub


def kube_client(a):
    from supplylib import kube
    given = [a.kube_server, a.kube_token_file, a.kube_ca]
    if any(given) and not all(given):
        raise Usage("--kube-server, --kube-token-file and --kube-ca go together")
    try:
        if a.kube_server:
            return kube.Client(a.kube_server, a.kube_token_file, a.kube_ca)
        return kube.Client.in_cluster()
    except ValueError as e:
        raise Usage(str(e)) from None


def nodes_api(a, client):
    """A callable giving the kube.Client the Nodes are read through, or None (a file)."""
    if a.nodes is None and not a.kube_server:
        return None
    return client if not a.nodes or a.nodes == "in-cluster" else None


def node_source(a, client):
    if a.nodes is None and not a.kube_server:
        return None
    if a.nodes and a.nodes != "in-cluster":
        path = a.nodes
        return lambda: nodes.from_file(path)
    return lambda: nodes.from_api(client())


def make_pass(a, conf, extra):
    """The pass record from the parsed options A and the configuration CONF."""
    work = os.path.realpath(a.work or tempfile.mkdtemp(prefix="supply-"))
    os.makedirs(work, exist_ok=True)
    a.work_lock = passes.lock_work(work)
    installer = a.installer or os.path.join(os.path.dirname(HERE), "build",
                                            "nvidia-driver-installer")
    if not os.access(installer, os.X_OK):
        raise Usage("no nvidia-driver-installer at %s (run make, or pass --installer)" %
                    installer)
    for v in a.driver_version:
        if not config.VERSION_RE.match(v):
            raise Usage("--driver-version '%s' is not a version (535.261.03): a tag or branch "
                        "names nothing to build" % v)
    client = _memo(lambda: kube_client(a))
    cores = os.cpu_count() or 1
    if a.executor == "local":
        parallel = a.parallel or max(1, cores // 2)
        executor = Local()
        guard = None
    else:
        try:
            from supplylib import jobs, lease
        except ImportError as e:
            raise Usage("--executor kubernetes: %s (scripts/supplylib/jobs.py and lease.py)" %
                        e) from None
        parallel = a.parallel or int(conf["kubernetes"].get("parallel", 4))
        try:
            executor = jobs.Executor(client(), conf["kubernetes"])
        except ExecutorError as e:
            raise Usage(str(e)) from None
        ns = conf["kubernetes"].get("namespace", client().namespace)
        guard = lambda: lease.Lease(client(), ns, "nvidia-supply-publish",  # noqa: E731
                                    os.environ.get("HOSTNAME", "supply-%d" % os.getpid()))
    if parallel < 1:
        raise Usage("--parallel must be at least 1")
    try:
        from supplylib import feeds as feeds_mod
        http_client = feeds_mod.Http()
    except ImportError:
        feeds_mod, http_client = None, None
    push = dict(conf["publish"])
    if a.publish_to:
        try:
            push["to"] = [repo_push.check_target(t) for t in a.publish_to]
        except repo_push.Usage as e:
            raise Usage(str(e).replace("--to ", "--publish-to ", 1)) from None
    os.makedirs(a.repo, exist_ok=True)
    return passes.Pass(
        repo=a.repo, repo_key=a.repo_key, pub=public_key(a.repo_key, work), installer=installer,
        bdp=a.bdp or os.path.join(HERE, "build-driver-package"),
        make_repo=a.make_repo or publish.MAKE_REPO, work=work, conf=conf,
        versions=a.driver_version or conf["driver_versions"],
        flavours=a.flavour or conf["flavours"] or ["proprietary"],
        fleet_files=conf["fleet_files"] + a.fleet, node_source=node_source(a, client),
        nodes_api=nodes_api(a, client),
        executor=executor, parallel=parallel, extra=extra,
        jobs=max(1, cores // parallel) if a.executor == "local" else KUBE_JOBS,
        dry_run=a.dry_run, json_path=a.json, repository=a.repository, guard=guard, push=push,
        feeds_mod=feeds_mod, http=http_client)


def _memo(f):
    box = []
    return lambda: box[0] if box else (box.append(f()) or box[0])


def wait_for_ask(p, seen, seconds):
    """Returns after SECONDS, or sooner with the new asks when a node asks what SEEN (the
    asks the last pass saw) lacks. Nodes from the API: listed, then watched from the list's
    resourceVersion (a watch ended or failed: listed again, after ASK_POLL_S when it
    failed); from a NodeList file: read again every ASK_POLL_S seconds."""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        try:
            if p.nodes_api is None:
                time.sleep(min(ASK_POLL_S, left))
                new = nodes.asks(p.node_source()) - seen
                if new:
                    return new
                continue
            client = p.nodes_api()
            items, rv = nodes.list_versioned(client)
            new = nodes.asks(items) - seen
            if new:
                return new
            for kind, n in nodes.watch(client, rv, left):
                if kind in ("ADDED", "MODIFIED"):
                    new = nodes.asks([n]) - seen
                    if new:
                        return new
        except nodes.NodesError as e:
            passes.say(str(e))
            time.sleep(min(ASK_POLL_S, max(0.0, end - time.monotonic())))


def watch(p, seconds):
    """Passes in a loop: the next one SECONDS after the last ended, or at once when the
    Nodes carry an ask the last pass did not see."""
    while True:
        seen = set()
        if p.node_source:
            try:
                seen = nodes.asks(p.node_source())
            except nodes.NodesError as e:
                passes.say(str(e))
        try:
            passes.run_pass(p)
        except (plan.PlanError, nodes.NodesError, ExecutorError) as e:
            if getattr(e, "exit", 1) == 2:
                raise
            passes.say("the pass failed: %s" % e)
        if not p.node_source:
            time.sleep(seconds)
            continue
        new = wait_for_ask(p, seen, seconds)
        if new:
            passes.say("a new ask: %s; a pass now" % ", ".join(sorted({n for n, _ in new})))


def main(argv, doc):
    own, extra = split_extra(argv)
    a = parser(doc).parse_args(own)
    # SIGTERM (a Job's or a Deployment's stop) unwinds like SIGINT: the executor stops the
    # builds it started before the pass exits.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        conf = config.load(a.config) if a.config else config.empty()
        p = make_pass(a, conf, extra)
        if a.watch is not None:
            if a.watch <= 0:
                raise Usage("--watch takes seconds, more than 0")
            watch(p, a.watch)
        return passes.run_pass(p)[0]
    except (Usage, config.ConfigError) as e:
        sys.stderr.write("supply: %s (try --help)\n" % e)
        return 2
    except (plan.PlanError, nodes.NodesError, ExecutorError, passes.Busy) as e:
        sys.stderr.write("supply: %s\n" % e)
        return getattr(e, "exit", 1)
