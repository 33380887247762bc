# SPDX-License-Identifier: Apache-2.0
"""Publishing a pass's builds: `make-repo publish` once for every stage dir the pass's builds
left (SPEC47 §2, docs/repository-format.md): the packages first, then one signed index update
under the lock, re-read and merged there if another pass published meanwhile. With registry
targets (supply.json's publish.to, --publish-to) the same command pushes the repository to
each (make-repo publish --to oci://...), and a pass with nothing to publish pushes it as it
is, so that a push that failed is made good by the next pass.

In a cluster two passes may run on two machines, where a lock file does not reach: GUARD, a
context manager factory, is held around the command (the Kubernetes mode gives lease.py's
Lease; a local pass none, the command's own flock on DIR/.publish.lock is enough).
"""
import contextlib
import json
import os
import subprocess
import time

import privkey

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MAKE_REPO = os.path.join(HERE, "make-repo")


class PublishError(Exception):
    """make-repo publish failed (one line: its last line and its exit status)."""


def check(stages, make_repo=None, repository=None):
    """{stage dir: why} of STAGES that `make-repo check-stage` refuses (a record or file
    publish would refuse): those are left out of the publish, each failed on its own,
    instead of one bad build failing the others'."""
    if not stages:
        return {}
    cmd = [make_repo or MAKE_REPO, "check-stage"] + (
        ["--repository", repository] if repository else []) + list(stages)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as e:
        raise PublishError("cannot run %s: %s" % (cmd[0], e.strerror)) from None
    try:
        got = {j["stage"]: j["refused"] for j in map(json.loads, p.stdout.splitlines())}
    except (ValueError, KeyError, TypeError):
        got = {}
    if p.returncode not in (0, 1) or set(got) != set(stages):
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        raise PublishError("make-repo check-stage exit %d: %s" % (
            p.returncode, lines[-1] if lines else "no answer for every stage"))
    return {d: why for d, why in got.items() if why}


def push_args(push, installer=None):
    """make-repo's --to, --installer, --ca-file and --registry-auth for PUSH (the
    configuration's publish section; None: no push)."""
    if not push or not push.get("to"):
        return []
    out = [a for t in push["to"] for a in ("--to", t)]
    out += (["--installer", installer] if installer else []) + (
        ["--ca-file", push["ca_file"]] if push.get("ca_file") else [])
    return out + [a for f in push.get("registry_auth") or () for a in ("--registry-auth", f)]


def publish(stages, repo, key, make_repo=None, repository=None, lock=None, guard=None,
            log=None, push=None, installer=None):
    """Publishes STAGES (dirs) into REPO signed with KEY, then pushes it to PUSH's
    registries with INSTALLER (none: the repository pushed as it is); returns seconds
    taken."""
    pushing = push_args(push, installer)
    if not stages and not pushing:
        return 0.0
    cmd = [make_repo or MAKE_REPO, "publish"] + pushing + ["--repo", repo, "--key", key]
    cmd += (["--repository", repository] if repository else []) + (
        ["--lock", lock] if lock else []) + list(stages)
    t0 = time.monotonic()
    try:
        with (guard() if guard else contextlib.nullcontext()):
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               env=privkey.child_env())
    except OSError as e:
        raise PublishError("cannot run %s: %s" % (cmd[0], e.strerror)) from None
    except Exception as e:  # the guard's: its Lease not taken, or lost while publishing
        raise PublishError("make-repo publish under its lease: %s" % e) from None
    if log:
        os.makedirs(os.path.dirname(log), exist_ok=True)    # a pass that built nothing
        with open(log, "w") as f:
            f.write(p.stdout + p.stderr)
    if p.returncode:
        lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
        raise PublishError("make-repo publish exit %d: %s" % (
            p.returncode, lines[-1] if lines else "no message"))
    return time.monotonic() - t0
