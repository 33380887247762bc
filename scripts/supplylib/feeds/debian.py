# SPDX-License-Identifier: Apache-2.0
"""Debian's kernels that are coming: linux-headers-RELEASE in a Debian archive's Packages
index (debindex.py: the format, cited there), each with the -common headers and the
linux-kbuild it depends on, the three a build for a kernel this machine never installed
takes (build-driver-package --headers-debs, scripts/fetch-debian-kernel for why three).

Config: {"type": "debian", "name": N, "url": MIRROR, "suite": "bookworm" (or "suites":
[...], e.g. bookworm and bookworm-updates; MIRROR-security's bookworm-security is a feed
of its own), "component": "main", "arch": "amd64", "kernel_flavours": ["amd64"] (the part
after the ABI: 6.1.0-28-cloud-amd64 is cloud-amd64), "newest": 2 (ABIs per flavour),
"keyring": "/usr/share/keyrings/debian-archive-keyring.gpg" (Release's signature checked:
debindex.py; required for an http:// MIRROR, where it is the default if installed:
conf.keyring)}."""
import os
import re
import shutil
import tempfile

from . import conf as C
from . import debindex
from .image import FeedError, Image, Incomplete, check_kernel

# 6.1.0-28-amd64: the upstream version, the ABI number, the flavour.
RELEASE_RE = re.compile(r"^([0-9]+\.[0-9]+\.[0-9]+-[0-9]+)-([a-z0-9][a-z0-9-]*)$")


def archive(http, conf, component):
    """Every stanza of the feed's suites' Packages indexes, by package name, and where
    they came from (for Image.origin)."""
    mirror = C.url(conf)
    suites = C.words(conf, "suites", None) if "suites" in conf else [C.text(conf, "suite")]
    comp = C.text(conf, "component", component)
    deb_arch = C.DEB_ARCH[C.arch(conf)]
    keyring = C.keyring(conf, mirror)
    by_name = {}
    for suite in suites:
        where = "%s %s/%s binary-%s" % (mirror, suite, comp, deb_arch)
        for st in debindex.packages(http, mirror, suite, comp, deb_arch, keyring):
            name, _ = debindex.check_stanza(st, where)
            st["_where"] = where
            by_name.setdefault(name, []).append(st)
    return mirror, by_name


def resolve(by_name, dep, owner, where):
    """The stanza that satisfies DEP (name, op, version) of OWNER's Depends."""
    st = debindex.newest(by_name.get(dep[0], []), dep[1:])
    if st is None:
        raise Incomplete("%s: %s depends on %s%s, which the index does not have (yet): left "
                         "out (if another suite has it, add that to \"suites\")" % (
                            where, owner, dep[0], " (%s %s)" % dep[1:] if dep[1] else ""))
    return st


def newest_per_flavour(found, newest):
    """FOUND [(kernel flavour, version, ...)] -> the NEWEST of each flavour."""
    keep = []
    for fl in sorted(set(f[0] for f in found)):
        mine = [f for f in found if f[0] == fl]
        for i in range(len(mine)):
            for j in range(i + 1, len(mine)):
                if debindex.compare(mine[j][1], mine[i][1]) > 0:
                    mine[i], mine[j] = mine[j], mine[i]
        keep += mine[:newest]
    return keep


def images_of(found, newest, notes, make):
    """MAKE(release, version, stanza) for the NEWEST of each flavour in FOUND; a kernel its
    index lists without what it depends on (Incomplete) is a line of NOTES, or raised when
    NOTES is None."""
    images = []
    for _, version, release, st in newest_per_flavour(found, newest):
        try:
            images.append(make(release, version, st))
        except Incomplete as e:
            if notes is None:
                raise
            notes.append(str(e))
    return images


def read(conf, http, notes=None):
    arch = C.arch(conf)
    flavours = C.words(conf, "kernel_flavours", [C.DEB_ARCH[arch]])
    newest = C.count(conf, "newest", 2)
    mirror, by_name = archive(http, conf, "main")
    found = []
    for name, sts in by_name.items():
        if not name.startswith("linux-headers-") or not name[14:15].isdigit():
            continue
        release = name[len("linux-headers-"):]
        m = RELEASE_RE.match(release)
        if not m or m.group(2).startswith("common") or m.group(2) not in flavours:
            continue
        check_kernel(release, sts[0]["_where"])
        st = debindex.newest(sts)
        found.append((m.group(2), st["version"], release, st))
    return images_of(found, newest, notes,
                     lambda release, version, st: image(conf, arch, mirror, by_name, release,
                                                        version, st))


def image(conf, arch, mirror, by_name, release, version, st):
    """The Image of linux-headers-RELEASE (ST, its stanza) and the two it depends on."""
    where = st["_where"]
    deps = debindex.depends(st)
    common = [d for d in deps if re.match(r"^linux-headers-.*-common(-rt)?$", d[0])]
    kbuild = [d for d in deps if d[0].startswith("linux-kbuild-")]
    if not common or not kbuild:
        raise FeedError("%s: linux-headers-%s %s depends on no %s: not Debian's split "
                        "headers" % (where, release, version, "-common headers package"
                                     if not common else "linux-kbuild"))
    cst = resolve(by_name, common[0], "linux-headers-" + release, where)
    kst = resolve(by_name, kbuild[0], "linux-headers-" + release, where)
    return Image(
        "debian", None, release, arch,
        "feed %s: %s linux-headers-%s %s" % (C.name(conf), where, release, version),
        {"headers_deb": debindex.deb_input(mirror, st, where),
         "headers_common_deb": debindex.deb_input(mirror, cst, where),
         "kbuild_deb": debindex.deb_input(mirror, kst, where)})


def fetch(image, cache_dir, http, get):
    """The three .debs (GET: the shared download of one input), and "headers": a directory
    holding them, what build-driver-package --headers-debs takes."""
    paths = {n: get(n) for n in ("headers_deb", "headers_common_deb", "kbuild_deb")}
    # Made aside and renamed into place: a build reading the directory never sees it half
    # made, and another pass making the same one meanwhile is not disturbed.
    d = os.path.join(cache_dir, "debian-headers-" + image.kernel)
    tmp = tempfile.mkdtemp(prefix=".debian-headers-", dir=cache_dir)
    for p in paths.values():
        os.link(p, os.path.join(tmp, os.path.basename(p)))
    want = sorted(os.listdir(tmp))
    if os.path.isdir(d) and sorted(os.listdir(d)) == want:
        shutil.rmtree(tmp)
    else:
        shutil.rmtree(d, ignore_errors=True)
        try:
            os.rename(tmp, d)
        except OSError:
            shutil.rmtree(tmp)
            if not os.path.isdir(d) or sorted(os.listdir(d)) != want:
                raise FeedError("%s: made by another pass with other packages meanwhile: run "
                                "again" % d) from None
    paths["headers"] = d
    return paths
