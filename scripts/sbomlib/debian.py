# SPDX-License-Identifier: Apache-2.0
"""The Debian packages an image holds, as scripts/image-rootfs records them (the distroless
layout): /var/lib/dpkg/status.d/PACKAGE, the package's stanza of dpkg's status file
(deb822, Debian Policy 5.1), PACKAGE.md5sums, its files in the image ("MD5  PATH" as
dpkg's info/*.md5sums), and /usr/share/doc/PACKAGE/copyright."""
import hashlib
import os
import re
from dataclasses import dataclass, field

STATUS_D = "var/lib/dpkg/status.d"
# The Source field: "NAME" or "NAME (VERSION)" when the source's version differs
# (Debian Policy 5.6.1).
SOURCE_RE = re.compile(r"^([a-z0-9][a-z0-9+.-]+)(?: \(([^()\s]+)\))?$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


class RootfsError(Exception):
    """What the image holds disagrees with its own record of it (exit 1)."""


@dataclass
class Package:
    name: str
    version: str
    arch: str
    source: str
    source_version: str
    section: str
    homepage: str
    files: list = field(default_factory=list)  # image paths, no leading '/'
    copyright: str = ""  # the copyright file's text, "" when the image has none


def parse_stanza(text):
    """One deb822 paragraph as {field: value}; continuation lines joined with newlines."""
    out, last = {}, None
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        if line[0] in " \t":
            if last is None:
                raise ValueError("a continuation line before any field")
            out[last] += "\n" + line[1:]
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or " " in name:
            raise ValueError("not a field: %r" % line[:60])
        last = name
        out[name] = value.strip()
    return out


def paragraphs(text):
    """Every deb822 paragraph of TEXT (a copyright file), in order."""
    return [parse_stanza(p) for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def md5_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def image_path(rootfs, path):
    """PATH (as its package ships it: /lib/... under merged /usr) where the image holds it:
    its directory resolved through the image's own links (lib -> usr/lib), which must stay
    in the image; None when they lead out."""
    top = os.path.realpath(rootfs)
    d = os.path.realpath(os.path.join(top, os.path.dirname(path)))
    if d != top and not d.startswith(top + os.sep):
        return None
    return os.path.join(d, os.path.basename(path))


def read_package(rootfs, name):
    """The record of package NAME in the image at ROOTFS, its files checked against their
    MD5 (a file the record names that the image lacks or holds changed: RootfsError)."""
    base = os.path.join(rootfs, STATUS_D, name)
    with open(base, encoding="utf-8") as f:
        st = parse_stanza(f.read())
    for k in ("Package", "Version", "Architecture"):
        if not st.get(k):
            raise RootfsError("%s/%s: no %s field" % (STATUS_D, name, k))
    if st["Package"] != name:
        raise RootfsError("%s/%s: names package %s" % (STATUS_D, name, st["Package"]))
    m = SOURCE_RE.match(st.get("Source", name))
    if not m:
        raise RootfsError("%s/%s: Source %r" % (STATUS_D, name, st["Source"]))
    pkg = Package(name, st["Version"], st["Architecture"], m.group(1),
                  m.group(2) or st["Version"], st.get("Section", ""), st.get("Homepage", ""))
    sums = base + ".md5sums"
    if os.path.exists(sums):
        with open(sums, encoding="utf-8") as f:
            for line in f:
                digest, _, path = line.rstrip("\n").partition("  ")
                full = image_path(rootfs, path)
                if not full or not os.path.isfile(full) or os.path.islink(full):
                    raise RootfsError("%s.md5sums names /%s, which the image lacks" % (name, path))
                if md5_file(full) != digest:
                    raise RootfsError("/%s differs from package %s's (MD5)" % (path, name))
                pkg.files.append(os.path.relpath(full, os.path.realpath(rootfs)))
    cr = os.path.join(rootfs, "usr/share/doc", name, "copyright")
    if os.path.isfile(cr):
        with open(cr, encoding="utf-8", errors="replace") as f:
            pkg.copyright = f.read()
    return pkg


def read_packages(rootfs):
    """Every package the image records, by name."""
    d = os.path.join(rootfs, STATUS_D)
    if not os.path.isdir(d):
        return []
    names = sorted(n for n in os.listdir(d) if NAME_RE.match(n) and not n.endswith(".md5sums"))
    return [read_package(rootfs, n) for n in names]
