# SPDX-License-Identifier: Apache-2.0
"""What the supply pass builds for: a target, (os, os_build, kernel, arch, driver_version,
flavour), and where it was learnt.

A target is what one build-driver-package run makes one package of: the node image (os-release
ID, BUILD_ID or None, uname -r, uname -m) a driver version and a flavour are wanted on. Two
sources that name the same target are one target with two origins; the pass builds it once.
"""
import dataclasses
import datetime
import hashlib
import re

ARCHES = ("x86_64", "aarch64")
FLAVOURS = ("proprietary", "open")

# The order a missing target is built in (plan.py): a node waiting for it first, then what a
# node runs, then fleet files, then feeds. Lower is sooner.
RANK = {"asked": 0, "running": 1, "fleet": 2, "feed": 3}
NEVER = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)


def since_time(v):
    """The datetime of an RFC 3339 time V (section 5.6: a 'T' and an offset or 'Z'), or
    None: what orders the asks, not the string (offsets and fractions differ)."""
    if not isinstance(v, str) or not re.match(
            r"^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d:\d\d)$", v):
        return None
    try:
        return datetime.datetime.fromisoformat(v.upper().replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclasses.dataclass
class Origin:
    """Where a target was learnt: KIND one of RANK's keys, WHAT the words for the report
    ("node gpu-1 asked since 2026-12-06T18:00:00Z", "fleet fleet.json row 2", "feed bookworm"),
    SINCE the ask's time (RFC 3339, asked only), BUILD_ARGS what the source says builds it
    (a fleet row's or the platform's, placeholders still in), INPUTS a feed's inputs
    (name -> URL or {"url", "sha256"}), IMAGE the feed's Image (for fetch_inputs) or None."""
    kind: str
    what: str
    since: str = None
    build_args: list = None
    inputs: dict = None
    image: object = None

    def as_json(self):
        d = {"kind": self.kind, "what": self.what}
        if self.since:
            d["since"] = self.since
        return d


@dataclasses.dataclass
class Target:
    os: str
    os_build: str
    kernel: str
    arch: str
    driver_version: str
    flavour: str
    origins: list = dataclasses.field(default_factory=list)

    def key(self):
        return (self.os, self.os_build or "", self.kernel, self.arch, self.driver_version,
                self.flavour)

    def rank(self):
        """(best origin's rank, oldest ask's time) for ordering: asked targets oldest ask
        first, by the times (since_time), not their strings."""
        best = min(RANK[o.kind] for o in self.origins) if self.origins else len(RANK)
        asks = [since_time(o.since) for o in self.origins if o.kind == "asked"]
        return (best, min([t for t in asks if t] or [NEVER]))

    def build_id(self):
        """A name for the target's files and Jobs: lower case, [a-z0-9-], at most 52
        characters (a Job's name and its pods' must stay under 63), unique by a digest."""
        digest = hashlib.sha256("\0".join(self.key()).encode()).hexdigest()[:10]
        words = "-".join([self.os, self.kernel, self.driver_version, self.flavour[:4]])
        words = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")[:40].rstrip("-")
        return "%s-%s" % (words, digest)

    def label(self):
        return "%s%s %s %s" % (self.os, " " + self.os_build if self.os_build else "",
                               self.kernel, self.arch)

    def as_json(self):
        return {"os": self.os, "os_build": self.os_build, "kernel": self.kernel,
                "arch": self.arch, "driver_version": self.driver_version,
                "flavour": self.flavour, "origins": [o.as_json() for o in self.origins]}


def merge(targets):
    """TARGETS with equal keys made one (origins joined, first seen first)."""
    out = {}
    for t in targets:
        if t.key() in out:
            out[t.key()].origins += t.origins
        else:
            out[t.key()] = t
    return list(out.values())
