# SPDX-License-Identifier: Apache-2.0
"""COS builds that are coming: the builds of the milestones in use, listed from the
cos-tools bucket (or a mirror) through Cloud Storage's JSON API, each build's kernel
release read from the head of its kernel-headers.tgz; what a build for it takes is what
scripts/fetch-cos-artifacts fetches (fetch, below, runs it).

The listing (https://cloud.google.com/storage/docs/json_api/v1/objects/list): GET
URL/storage/v1/b/BUCKET/o?prefix=P&delimiter=/ answers {"prefixes": [...], "items":
[{"name", "size", "md5Hash" (base64), ...}], "nextPageToken"}, the next page asked with
pageToken=; objects are read at URL/BUCKET/NAME (the path-style endpoint,
https://cloud.google.com/storage/docs/request-endpoints). The bucket holds a folder per
build, BUILD_ID/ (https://cloud.google.com/container-optimized-os/docs/resources/sources:
"gs://cos-tools/<build-number>/", e.g. 17228.0.0 for the image cos-dev-105-17228-0-0), and
in it, per board, BOARD/kernel-headers.tgz (lakitu on x86_64, lakitu-arm64 on arm64: the
layout fetch-cos-artifacts reads, cited there).

A milestone's builds share BUILD_ID's first number (cos-113-18244-151-14 is milestone 113,
build 18244.151.14: the image names GoogleCloudPlatform/cos-tools' toolbox/cos-kernel
reads milestone and build from, get_milestone_family); the feed names milestones by that
number. The kernel release is the name of the one directory kernel-headers.tgz holds,
usr/src/linux-headers-RELEASE/ (GKE's installer copies usr/src/linux-headers-$(uname -r)
out of it: cos-tools, src/cmd/cos_gpu_installer_v1/cos-gpu-installer-docker/entrypoint.sh,
download_kernel_headers; the driver builder globs usr/src/linux-headers-*:
src/cmd/cos_gpu_driver_builder/internal/builder/builder.go), read from the archive's first
HEAD_BYTES (a Range request), not the whole archive.

Config: {"type": "cos", "name": N, "url": "https://storage.googleapis.com", "bucket":
"cos-tools", "milestones": ["18244"] (a first number, or any BUILD_ID of the milestone),
"arch": "x86_64" (or "arches": [...]), "newest": 3 (builds per milestone), "sdk_url": the
ChromiumOS SDK bucket's mirror (optional), "head_bytes": 262144}. read() also takes the
BUILD_IDs the fleet runs (RUNNING): their milestones are watched too."""
import base64
import binascii
import json
import os
import re
import subprocess
import tarfile
import urllib.parse
import zlib
from io import BytesIO

from . import conf as C
from .http import decode, file_digest
from .image import FeedError, Image, Input, check_kernel

BOARDS = {"x86_64": "lakitu", "aarch64": "lakitu-arm64"}
BUILD_RE = re.compile(r"^([0-9]{1,6})\.[0-9]{1,6}\.[0-9]{1,6}$")
MAX_PAGES = 100
FETCHER = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..",
                       "fetch-cos-artifacts")


def milestone_of(value, where):
    """The milestone (BUILD_ID's first number) VALUE names: a number or a BUILD_ID."""
    v = str(value)
    if v.isdigit() and len(v) <= 6:
        return v
    m = BUILD_RE.match(v)
    if not m:
        raise FeedError("%s: %r is neither a COS milestone's first build number (18244) nor a "
                        "BUILD_ID (18244.151.14)" % (where, v))
    return m.group(1)


def listing(http, base, bucket, prefix):
    """objects.list of PREFIX with delimiter /, every page: (prefixes, {name: item})."""
    prefixes, items, token = [], {}, None
    for _ in range(MAX_PAGES):
        q = {"prefix": prefix, "delimiter": "/"}
        if token:
            q["pageToken"] = token
        url = "%s/storage/v1/b/%s/o?%s" % (base, urllib.parse.quote(bucket, safe=""),
                                          urllib.parse.urlencode(q))
        try:
            page = json.loads(decode(http.get(url, limit=32 << 20), url))
        except ValueError as e:
            raise FeedError("%s is not JSON (%s): not Cloud Storage's object listing" % (
                url, e)) from None
        if not isinstance(page, dict) or not isinstance(page.get("prefixes", []), list) or \
                not isinstance(page.get("items", []), list):
            raise FeedError("%s is not Cloud Storage's object listing (no prefixes and items "
                            "lists)" % url)
        prefixes += [p for p in page.get("prefixes", []) if isinstance(p, str)]
        for it in page.get("items", []):
            if isinstance(it, dict) and isinstance(it.get("name"), str):
                items[it["name"]] = it
        token = page.get("nextPageToken")
        if not token:
            return prefixes, items
        if not isinstance(token, str):
            raise FeedError("%s: nextPageToken is not a string" % url)
    raise FeedError("%s/storage/v1/b/%s/o?prefix=%s: more than %d pages: refused" % (
        base, bucket, prefix, MAX_PAGES))


def object_input(base, bucket, item, where):
    """A listed object as an Input: its URL, size and MD5 (base64 in the listing)."""
    url = "%s/%s/%s" % (base, bucket, urllib.parse.quote(item["name"]))
    size, md5 = item.get("size"), item.get("md5Hash")
    if not isinstance(size, str) or not size.isdigit() or not 0 < int(size) <= 4 << 30:
        raise FeedError("%s: %s's size %r is not a size up to 4 GiB: refused" % (
            where, item["name"], size))
    try:
        md5 = base64.b64decode(md5, validate=True).hex() if md5 else None
    except (binascii.Error, TypeError, ValueError):
        md5 = ""
    if md5 is not None and len(md5) != 32:
        raise FeedError("%s: %s's md5Hash is not base64 of 16 bytes: refused" % (
            where, item["name"]))
    return Input(url, md5=md5, size=int(size))


def kernel_release(http, url, head, where):
    """The RELEASE of usr/src/linux-headers-RELEASE/ in the first HEAD bytes of the
    kernel-headers.tgz at URL."""
    data = http.get(url, head=head)
    try:
        tar = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, 64 << 20)
    except zlib.error as e:
        raise FeedError("%s is not gzip data (%s): not a COS build's kernel-headers.tgz" % (
            url, e)) from None
    names = set()
    try:
        with tarfile.open(fileobj=BytesIO(tar), mode="r:") as tf:
            while True:
                m = tf.next()
                if m is None:
                    break
                hit = re.match(r"^(?:\./)?usr/src/linux-headers-([^/]+)(?:/|$)", m.name)
                if hit:
                    names.add(hit.group(1))
                    break
    except (tarfile.TarError, EOFError):
        pass    # the head ends inside a member: what was read is what counts
    if len(names) != 1:
        raise FeedError("the first %d bytes of %s name no usr/src/linux-headers-RELEASE/: not "
                        "a COS build's kernel headers" % (head, url))
    return check_kernel(names.pop(), where)


def read(conf, http, running=()):
    base = C.https_url(conf, "https://storage.googleapis.com")
    bucket = C.text(conf, "bucket", "cos-tools")
    arches = [C.arch({"arch": a, "name": C.name(conf)}) for a in C.words(
        conf, "arches", [C.arch(conf)])]
    newest = C.count(conf, "newest", 3)
    head = conf.get("head_bytes", 1 << 18)
    if not isinstance(head, int) or isinstance(head, bool) or not 4096 <= head <= 16 << 20:
        raise FeedError("feed %s: \"head_bytes\" is %r, not a number from 4096 to %d" % (
            C.name(conf), head, 16 << 20))
    feed = "feed %s" % C.name(conf)
    milestones = {milestone_of(m, feed) for m in C.words(conf, "milestones", [])}
    milestones |= {milestone_of(b, feed + " (a build the fleet runs)") for b in running if b}
    images = []
    for ms in sorted(milestones):
        prefixes, _ = listing(http, base, bucket, ms + ".")
        builds = [p[:-1] for p in prefixes if p.endswith("/") and BUILD_RE.match(p[:-1])
                  and BUILD_RE.match(p[:-1]).group(1) == ms]
        builds.sort(key=lambda b: [int(x) for x in b.split(".")], reverse=True)
        taken = 0
        for build in builds:
            if taken == newest:
                break
            # A build whose artifacts are not all uploaded yet is not counted.
            mine = build_images(conf, http, base, bucket, build, arches, head, ms)
            images += mine
            taken += 1 if mine else 0
    return images


def build_images(conf, http, base, bucket, build, arches, head, ms):
    """The images of one BUILD_ID, one per architecture whose board folder it has."""
    boards, _ = listing(http, base, bucket, build + "/")
    out = []
    for arch in arches:
        board = BOARDS[arch]
        if "%s/%s/" % (build, board) not in boards:
            continue
        where = "%s/storage/v1/b/%s/o?prefix=%s/%s/" % (base, bucket, build, board)
        _, items = listing(http, base, bucket, "%s/%s/" % (build, board))
        item = items.get("%s/%s/kernel-headers.tgz" % (build, board))
        if item is None:
            continue    # a build whose artifacts are not (yet) all there
        headers = object_input(base, bucket, item, where)
        kernel = kernel_release(http, headers.url, head, where)
        inputs = {"cos_artifacts": Input("%s/%s/%s/%s" % (base, bucket, build, board),
                                         kind="cos-artifacts"),
                  "kernel_headers": headers}
        if conf.get("sdk_url"):
            sdk = C.https_url(conf, key="sdk_url")
            inputs["sdk"] = Input(sdk, kind="base")
        out.append(Image("cos", build, kernel, arch, "feed %s: gs://%s/%s/%s/kernel-headers"
                         ".tgz (milestone %s)" % (C.name(conf), bucket, build, board, ms),
                         inputs))
    return out


def fetch(image, cache_dir, http, get):
    """scripts/fetch-cos-artifacts for the image's build and board, into the cache; its
    kernel-headers.tgz checked against the listing's size and MD5. Returns cos_artifacts
    (the directory), kernel_headers, toolchain (unpacked) and toolchain_env."""
    art = image.inputs["cos_artifacts"].url
    base, build, board = art.rsplit("/", 2)
    if build != image.os_build or board not in BOARDS.values():
        raise FeedError("%s is not the artifacts of COS build %s" % (art, image.os_build))
    out = os.path.join(cache_dir, "cos-%s-%s" % (build, board))
    cmd = [FETCHER, build, "--board", board, "--base-url", base, "--out", out]
    if "sdk" in image.inputs:
        cmd += ["--sdk-base-url", image.inputs["sdk"].url]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        raise FeedError("fetching COS %s's artifacts: %s" % (build, last))
    got = os.path.join(out, "kernel-headers.tgz")
    want = image.inputs["kernel_headers"]
    size = os.path.getsize(got)
    if size != want.size or (want.md5 and file_digest(got, "md5") != want.md5):
        raise FeedError("%s: %d bytes, md5 %s; the listing says %d bytes, md5 %s: refused" % (
            got, size, file_digest(got, "md5"), want.size, want.md5))
    paths = {"cos_artifacts": out, "kernel_headers": got, "toolchain": os.path.join(out,
                                                                                    "toolchain")}
    if os.path.isfile(os.path.join(out, "toolchain_env")):
        paths["toolchain_env"] = os.path.join(out, "toolchain_env")
    return paths
