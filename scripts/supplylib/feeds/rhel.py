# SPDX-License-Identifier: Apache-2.0
"""RHEL's (and its rebuilds': Rocky, Alma) kernels that are coming: kernel-devel in a
repository's repodata, what build-driver-package --kernel-devel-rpm takes.

The format (createrepo_c's, which writes the repodata RHEL, Rocky and Alma serve:
github.com/rpm-software-management/createrepo_c, src/xml_dump_repomd.c and
src/xml_dump_primary.c write it, src/xml_parser_repomd.c and src/xml_parser_primary.c read
it): REPO/repodata/repomd.xml, namespace
http://linux.duke.edu/metadata/repo, has one <data type="primary"> with <location
href="repodata/...-primary.xml.gz"/> (.xz, .zst, .bz2 as the repository chose), its
<checksum type="sha256"> and <size>; primary.xml, namespace
http://linux.duke.edu/metadata/common, has a <package type="rpm"> per RPM with <name>,
<arch>, <version epoch= ver= rel=/>, <checksum type="sha256">, <size package=/> and
<location href=/> (relative to REPO). The kernel's release (uname -r) is VER-REL.ARCH.

Config: {"type": "rhel", "name": N, "url": REPO (e.g.
https://dl.rockylinux.org/pub/rocky/9/AppStream/x86_64/os), "arch": "x86_64",
"package": "kernel-devel", "newest": 3}. REPO must be https:// (or file://): repomd.xml's
signature (repomd.xml.asc) is not checked, so TLS is what vouches for the index."""
import hashlib
import re
import xml.etree.ElementTree as ET
from io import BytesIO

from . import conf as C
from .compressed import decompress
from .http import check
from .image import FeedError, Image, Input, check_kernel

REPO = "{http://linux.duke.edu/metadata/repo}"
COMMON = "{http://linux.duke.edu/metadata/common}"
HREF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.~_/%-]*$")
HEX_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_RPM = 2 << 30


def parse_xml(data, where):
    """DATA's elements as iterparse gives them; a document type declaration (entities: the
    "billion laughs") or malformed XML refused in one line."""
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise FeedError("%s declares a document type or entities, which repodata never does: "
                        "refused" % where)
    try:
        for _, el in ET.iterparse(BytesIO(data), events=("end",)):
            yield el
    except ET.ParseError as e:
        raise FeedError("%s is not well-formed XML (%s): refused" % (where, e)) from None


def href(el, base, where):
    """<location href=...>: a path inside the repository, refused where it is not."""
    h = el.get("href") if el is not None else None
    if el is not None and el.get("{http://www.w3.org/XML/1998/namespace}base"):
        raise FeedError("%s: a location with xml:base (another server): refused" % where)
    if not h or not HREF_RE.match(h) or ".." in h.split("/") or "//" in h:
        raise FeedError("%s: location %r is not a path inside the repository: refused" % (
            where, (h or "")[:80]))
    return "%s/%s" % (base, h)


def primary(http, base):
    """The primary data's bytes, checked against repomd.xml's size and digest."""
    where = base + "/repodata/repomd.xml"
    for el in parse_xml(http.get(where, limit=16 << 20), where):
        if el.tag == REPO + "data" and el.get("type") == "primary":
            url = href(el.find(REPO + "location"), base, where)
            ck = el.find(REPO + "checksum")
            size = el.findtext(REPO + "size")
            if ck is None or ck.get("type") not in ("sha256", "sha512") or not ck.text:
                raise FeedError("%s: the primary data has no sha256 or sha512 checksum: "
                                "refused" % where)
            if size is not None and not size.strip().isdigit():
                raise FeedError("%s: the primary data's size %r is not a number" % (
                    where, size[:20]))
            size = int(size) if size is not None else None
            data = http.get(url, limit=(size + 1) if size else None)
            got = hashlib.new(ck.get("type"), data).hexdigest()
            check(url, Input(url, size=size), len(data), None, None)
            if got != ck.text.strip().lower():
                raise FeedError("%s: %s mismatch (repomd.xml says %s, the bytes hash to %s): "
                                "refused" % (url, ck.get("type"), ck.text.strip(), got))
            return url, data
    raise FeedError("%s has no <data type=\"primary\">: not a repository's repomd.xml" % where)


def rpm_version_key(v):
    """An RPM version or release as rpmvercmp orders its parts: numbers as numbers, before
    letters (enough for kernel releases: 427.13.1.el9_4)."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[A-Za-z]+", v)]


def read(conf, http):
    arch = C.arch(conf)
    base = C.https_url(conf)
    want = C.text(conf, "package", "kernel-devel")
    newest = C.count(conf, "newest", 3)
    url, data = primary(http, base)
    found = {}
    for el in parse_xml(decompress(data, url.split("?")[0], url), url):
        if el.tag != COMMON + "package":
            continue
        if el.get("type") == "rpm" and el.findtext(COMMON + "name") == want and \
                el.findtext(COMMON + "arch") == arch:
            found_one(found, el, base, url, arch)
        el.clear()
    keep = sorted(found.values(), key=lambda f: (rpm_version_key(f[0]), rpm_version_key(f[1])),
                  reverse=True)[:newest]
    return [Image("rhel", None, release, arch, "feed %s: %s %s-%s" % (
        C.name(conf), base, want, release), {"kernel_devel_rpm": inp})
        for _, _, release, inp in keep]


def found_one(found, el, base, where, arch):
    v = el.find(COMMON + "version")
    ver, rel = (v.get("ver"), v.get("rel")) if v is not None else (None, None)
    if not ver or not rel:
        raise FeedError("%s: a kernel-devel without version and release: refused" % where)
    release = check_kernel("%s-%s.%s" % (ver, rel, arch), where)
    ck = el.find(COMMON + "checksum")
    if ck is None or ck.get("type") != "sha256" or not HEX_RE.match((ck.text or "").strip()):
        raise FeedError("%s: kernel-devel-%s has no sha256 checksum (64 hex digits): refused"
                        % (where, release))
    size = el.find(COMMON + "size")
    size = size.get("package") if size is not None else None
    if not size or not size.isdigit() or not 0 < int(size) <= MAX_RPM:
        raise FeedError("%s: kernel-devel-%s's size %r is not a size up to %d bytes: refused"
                        % (where, release, (size or "")[:20], MAX_RPM))
    loc = href(el.find(COMMON + "location"), base, where)
    if not loc.endswith(".rpm"):
        raise FeedError("%s: kernel-devel-%s's location is not an .rpm: refused" % (
            where, release))
    found[release] = (ver, rel, release, Input(loc, sha256=ck.text.strip(), size=int(size)))
