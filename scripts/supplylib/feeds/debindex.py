# SPDX-License-Identifier: Apache-2.0
"""A Debian-format archive's Packages index, as the Debian and Ubuntu feeds read it.

The layout (https://wiki.debian.org/DebianRepository/Format): MIRROR/dists/SUITE/Release
lists, in its SHA256 field, "DIGEST SIZE PATH" for every index, among them
COMPONENT/binary-ARCH/Packages.xz (or .gz); each Packages stanza names a package's Filename
(relative to MIRROR), Size and SHA256. The stanzas are Debian control files (Debian Policy
5.1, https://www.debian.org/doc/debian-policy/ch-controlfields.html#syntax-of-control-files:
"Field: value" lines, continuation lines begin with a space or a tab, stanzas are separated
by blank lines, field names are case-insensitive); versions compare as Debian Policy 5.6.12
says (https://www.debian.org/doc/debian-policy/ch-controlfields.html#version). The index
is checked against Release's size and SHA-256. Release itself is checked as apt checks it
(apt's gpgv method, methods/gpgv.cc) where the feed names a keyring: its detached
signature Release.gpg verified with gpgv against that keyring, at least one good signature
(VALIDSIG) and no bad one, and a Valid-Until in the past refused (a replayed or stale
mirror); without a keyring it is taken as the mirror serves it."""
import email.utils
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time

from .compressed import decompress
from .http import check, decode
from .image import FeedError, Input

FIELD_RE = re.compile(r"^([!-9;-~]+):[ \t]*(.*)$")      # Policy 5.1: no colon, no space
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
FILENAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.~_/-]*\.deb$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")          # Policy 5.6.1
VERSION_RE = re.compile(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
MAX_SIZE = 4 << 30


def stanzas(text, where):
    """The stanzas of control-file TEXT: a list of {lowercase field: value}."""
    out, cur, last = [], {}, None
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            if cur:
                out.append(cur)
            cur, last = {}, None
            continue
        if line[0] in " \t":
            if last is None:
                raise FeedError("%s line %d: a continuation line before any field: not a "
                                "Debian control file" % (where, n))
            cur[last] += "\n" + line.strip()
            continue
        m = FIELD_RE.match(line)
        if not m:
            raise FeedError("%s line %d: %r is not a \"Field: value\" line: not a Debian "
                            "control file" % (where, n, line[:60]))
        last = m.group(1).lower()
        if last in cur:
            raise FeedError("%s line %d: field %s twice in one stanza: refused" % (
                where, n, m.group(1)))
        cur[last] = m.group(2).strip()
    if cur:
        out.append(cur)
    return out


def release_digests(text, where):
    """Release's SHA256 field: {path: (sha256, size)}."""
    found = stanzas(text, where)
    if not found or "sha256" not in found[0]:
        raise FeedError("%s has no SHA256 field: not a Debian archive's Release file" % where)
    digests = {}
    for line in found[0]["sha256"].split("\n"):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or not SHA256_RE.match(parts[0]) or not parts[1].isdigit():
            raise FeedError("%s: SHA256 line %r is not \"DIGEST SIZE PATH\"" % (where, line[:80]))
        digests[parts[2]] = (parts[0], int(parts[1]))
    return digests


def verify_release(http, rel_url, data, keyring):
    """Release (DATA, read from REL_URL) signed by a key of KEYRING (Release.gpg, gpgv)."""
    if not os.path.isfile(keyring):
        raise FeedError("keyring %s does not exist: give the archive's keyring (Debian: "
                        "/usr/share/keyrings/debian-archive-keyring.gpg)" % keyring)
    if not shutil.which("gpgv"):
        raise FeedError("gpgv is missing, and the feed names a keyring: apt-get install gpgv")
    sig = http.get(rel_url + ".gpg", limit=1 << 20)
    with tempfile.TemporaryDirectory(prefix="feed-release-") as d:
        for name, body in (("Release", data), ("Release.gpg", sig)):
            with open(os.path.join(d, name), "wb") as f:
                f.write(body)
        p = subprocess.run(["gpgv", "--status-fd", "1", "--keyring", os.path.abspath(keyring),
                            os.path.join(d, "Release.gpg"), os.path.join(d, "Release")],
                           capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    status = [line.split()[1] for line in p.stdout.splitlines()
              if line.startswith("[GNUPG:] ") and len(line.split()) > 1]
    if "BADSIG" in status or "VALIDSIG" not in status:
        why = "a bad signature" if "BADSIG" in status else "no signature by a key of " + keyring
        raise FeedError("%s: %s: refused (an altered or foreign Release)" % (rel_url, why))


def check_valid_until(text, where, now=None):
    """Release's Valid-Until, where it has one, still ahead."""
    found = stanzas(text, where)
    until = found[0].get("valid-until") if found else None
    if not until:
        return
    try:
        t = email.utils.parsedate_to_datetime(until).timestamp()
    except (TypeError, ValueError):
        raise FeedError("%s: Valid-Until %r is not a date" % (where, until[:40])) from None
    if t < (now if now is not None else time.time()):
        raise FeedError("%s expired at %s (Valid-Until): refused (a replayed or stale mirror)"
                        % (where, until))


def packages(http, mirror, suite, component, arch, keyring=None):
    """The stanzas of MIRROR's SUITE/COMPONENT Packages index for ARCH (Debian's name),
    the index checked against Release's size and SHA-256, Release against KEYRING where
    given."""
    base = "%s/dists/%s" % (mirror.rstrip("/"), suite)
    rel_url = base + "/Release"
    raw = http.get(rel_url, limit=64 << 20)
    if keyring:
        verify_release(http, rel_url, raw, keyring)
    text = decode(raw, rel_url)
    check_valid_until(text, rel_url)
    digests = release_digests(text, rel_url)
    for suffix in (".xz", ".gz", ""):
        path = "%s/binary-%s/Packages%s" % (component, arch, suffix)
        if path in digests:
            break
    else:
        raise FeedError("%s lists no %s/binary-%s/Packages(.xz, .gz): check the feed's suite, "
                        "component and arch" % (rel_url, component, arch))
    sha, size = digests[path]
    url = "%s/%s" % (base, path)
    data = http.get(url, limit=size + 1 if size < MAX_SIZE else MAX_SIZE)
    check(url, Input(url, sha256=sha, size=size), len(data), hashlib.sha256(data).hexdigest(), None)
    return stanzas(decode(decompress(data, path, url), url), url)


def deb_input(mirror, st, where):
    """A Packages stanza's .deb as an Input: its Filename under MIRROR, Size and SHA256,
    each refused where it is not what an archive writes."""
    name = st.get("package", "?")
    fn, sha, size = st.get("filename"), st.get("sha256"), st.get("size", "")
    if not fn or not FILENAME_RE.match(fn) or ".." in fn.split("/") or "//" in fn:
        raise FeedError("%s: %s's Filename %r is not a path inside the archive: refused" % (
            where, name, (fn or "")[:80]))
    if not sha or not SHA256_RE.match(sha):
        raise FeedError("%s: %s has no SHA256 of 64 hex digits: refused" % (where, name))
    if not size.isdigit() or not 0 < int(size) <= MAX_SIZE:
        raise FeedError("%s: %s's Size %r is not a size up to %d bytes: refused" % (
            where, name, size[:20], MAX_SIZE))
    return Input("%s/%s" % (mirror.rstrip("/"), fn), sha256=sha, size=int(size))


def check_stanza(st, where):
    """Refuses a stanza whose Package or Version are not Debian's names (Policy 5.6.1,
    5.6.12)."""
    name, ver = st.get("package", ""), st.get("version", "")
    if not NAME_RE.match(name) or len(name) > 200:
        raise FeedError("%s: package name %r is not a Debian package name: refused" % (
            where, name[:80]))
    if not VERSION_RE.match(ver) or len(ver) > 200:
        raise FeedError("%s: %s's Version %r is not a Debian version: refused" % (
            where, name, ver[:80]))
    return name, ver


def depends(st):
    """Depends as [(name, op, version)], each group's first alternative, :ARCH dropped."""
    out = []
    for group in st.get("depends", "").split(","):
        alt = group.split("|")[0].strip()
        m = re.match(r"^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*(?:\(\s*(<<|<=|=|>=|>>)\s*"
                     r"([^\s)]+)\s*\))?", alt)
        if m:
            out.append((m.group(1), m.group(2), m.group(3)))
    return out


def newest(stanzas_of_one, satisfying=None):
    """The stanza of the highest Version among STANZAS_OF_ONE (one package's), that
    satisfies SATISFYING ((op, version) of a Depends, or None)."""
    best = None
    for st in stanzas_of_one:
        if satisfying and satisfying[0] and not satisfies(st["version"], *satisfying):
            continue
        if best is None or compare(st["version"], best["version"]) > 0:
            best = st
    return best


def satisfies(have, op, want):
    c = compare(have, want)
    return {"<<": c < 0, "<=": c <= 0, "=": c == 0, ">=": c >= 0, ">>": c > 0}[op]


def _order(c):
    # Policy 5.6.12: "~" sorts before everything, even the end; letters before the rest.
    if c == "~":
        return -1
    if c.isdigit():
        return 0
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _cmp_part(a, b):
    while a or b:
        na = re.match(r"^[^0-9]*", a).group(0)
        nb = re.match(r"^[^0-9]*", b).group(0)
        for i in range(max(len(na), len(nb))):
            ca = _order(na[i]) if i < len(na) else 0
            cb = _order(nb[i]) if i < len(nb) else 0
            if ca != cb:
                return -1 if ca < cb else 1
        a, b = a[len(na):], b[len(nb):]
        da = re.match(r"^[0-9]*", a).group(0)
        db = re.match(r"^[0-9]*", b).group(0)
        if int(da or 0) != int(db or 0):
            return -1 if int(da or 0) < int(db or 0) else 1
        a, b = a[len(da):], b[len(db):]
    return 0


def compare(a, b):
    """Debian version A against B: negative, 0 or positive (Policy 5.6.12)."""
    def split(v):
        epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
        upstream, _, rev = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, rev
    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)
