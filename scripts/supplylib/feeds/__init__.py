# SPDX-License-Identifier: Apache-2.0
"""The platforms' feeds of what is coming (issue 47; docs/building-packages.md, "Keeping
ahead of the fleet"): each reads the platform's own index from a configurable mirror and
says which node images (os, BUILD_ID, kernel, arch) are coming, and what a build for each
takes.

  read(conf, http, running=(), notes=None)
                                 the Images of one feed (CONF: its supply.json entry;
                                 RUNNING: the BUILD_IDs the fleet's COS nodes run, whose
                                 milestones the cos feed watches; NOTES: a list that gets a
                                 line per kernel left out because the index names it
                                 without all it depends on, not yet published)
  fetch_inputs(image, cache_dir, http)
                                 {name: local path} of the image's inputs, downloaded once
                                 into CACHE_DIR and checked against the index's digests

  image      Image, Input, FeedError: the records and the one error
  http       the HTTP client (timeouts, bounded answers, redirects, file:// for tests)
  conf       a feed's configuration fields, checked
  compressed indexes decompressed with a bound
  debindex   a Debian-format archive's Release and Packages
  cos        COS builds from the cos-tools bucket (Cloud Storage's JSON API)
  ubuntu     Canonical's linux-modules-nvidia-BRANCH-RELEASE in an Ubuntu archive
  rhel       kernel-devel in a repository's repodata
  debian     linux-headers-RELEASE in a Debian archive
"""
import os
import re
import urllib.parse

from . import cos, debian, rhel, ubuntu
from .http import Http, file_digest  # noqa: F401
from .image import FeedError, Image, Input  # noqa: F401

FEEDS = {"cos": cos, "ubuntu": ubuntu, "rhel": rhel, "debian": debian}
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.~_%-]{0,200}$")


def read(conf, http, running=(), notes=None):
    """The Images feed CONF says are coming. Raises FeedError (one line); a kernel whose
    index is half published is a line in NOTES (a list) where given, an error otherwise."""
    if not isinstance(conf, dict):
        raise FeedError("a feed is %r, not an object" % (conf,))
    mod = FEEDS.get(conf.get("type"))
    if mod is None:
        raise FeedError("feed %s: type %r: give one of %s" % (
            conf.get("name", "?"), conf.get("type"), ", ".join(sorted(FEEDS))))
    if mod is cos:
        return cos.read(conf, http, running)
    if mod is rhel:
        return rhel.read(conf, http)
    return mod.read(conf, http, notes)


def fetch_file(inp, cache_dir, http):
    """One "file" Input into CACHE_DIR/files/DIGEST/, under its own name (DIGEST: the first
    16 hex digits of the index's): downloaded once, then taken again only while its bytes
    still match the index's digest."""
    name = urllib.parse.unquote(inp.url.rstrip("/").rsplit("/", 1)[-1])
    if not SAFE_NAME_RE.match(name) or name.endswith(".part"):
        raise FeedError("%s: %r is not a file name to keep: refused" % (inp.url, name[:80]))
    if not inp.sha256 and not inp.md5:
        raise FeedError("%s: the index states no digest for it: refused" % inp.url)
    d = os.path.join(cache_dir, "files", (inp.sha256 or inp.md5)[:16].lower())
    os.makedirs(d, exist_ok=True)
    dest = os.path.join(d, name)
    if os.path.isfile(dest) and os.path.getsize(dest) == inp.size and (
            (inp.sha256 and file_digest(dest, "sha256") == inp.sha256) or
            (not inp.sha256 and inp.md5 and file_digest(dest, "md5") == inp.md5)):
        return dest
    http.download(inp.url, dest, inp)
    return dest


def fetch_inputs(image, cache_dir, http):
    """{input name: local path} for IMAGE: its files downloaded into CACHE_DIR once and
    checked against the digests its index states; what the platform adds (Debian's
    "headers" directory, COS's artifacts fetched by scripts/fetch-cos-artifacts)."""
    os.makedirs(cache_dir, exist_ok=True)

    def get(name):
        return fetch_file(image.inputs[name], cache_dir, http)
    mod = FEEDS.get(image.os)
    if hasattr(mod, "fetch"):
        return mod.fetch(image, cache_dir, http, get)
    return {n: get(n) for n, inp in image.inputs.items() if inp.kind == "file"}
