# SPDX-License-Identifier: Apache-2.0
"""The SPDX 2.3 document of one image (https://spdx.github.io/spdx-spec/v2.3/, its JSON
schema schemas/spdx-schema.json of tag v2.3 in github.com/spdx/spdx-spec).

The image is a package (primaryPackagePurpose CONTAINER) the document DESCRIBES; it CONTAINS
the installer (this project's files, with the commit it was built from), each Debian
package its record names, and each file of the image; each package CONTAINS its files in
the image. Every file carries its SHA-1 (the spec's one mandatory checksum) and SHA-256.
The same image gives the same bytes: everything is sorted, the namespace is a name-based
UUID of the rest of the document, and the creation time is SOURCE_DATE_EPOCH when set
(https://reproducible-builds.org/specs/source-date-epoch/)."""
import hashlib
import json
import os
import re
import time
import urllib.parse
import uuid

from sbomlib import licences

# This project's files in the image (scripts/image-rootfs), other than those a Debian
# package's record names (the ldconfig it ships is libc-bin's).
PROJECT_PREFIXES = ("usr/bin/nvidia-driver-installer", "usr/libexec/nvidia-driver-installer/",
                    "usr/share/doc/nvidia-driver-installer/")
# The cut-down libarchive the image carries is built here (the Makefile's IMAGE_ARCHIVE).
PROJECT_LIBARCHIVE = re.compile(r"^usr/lib/[a-z0-9_-]+-linux-gnu[a-z]*/libarchive\.so\.13$")
ID_RE = re.compile(r"[^A-Za-z0-9.-]+")
PURPOSE = {"libs": "LIBRARY"}


def is_project_file(path):
    return path.startswith(PROJECT_PREFIXES) or bool(PROJECT_LIBARCHIVE.match(path))


def file_digests(path):
    sha1, sha256 = hashlib.sha1(), hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            sha1.update(chunk)
            sha256.update(chunk)
    return sha1.hexdigest(), sha256.hexdigest()


def image_files(rootfs):
    """Every regular file of the image, its path without the leading '/', sorted."""
    out = []
    for d, dirs, files in os.walk(rootfs):
        dirs.sort()
        for f in files:
            full = os.path.join(d, f)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(os.path.relpath(full, rootfs))
    return sorted(out)


def file_type(rootfs, path):
    with open(os.path.join(rootfs, path), "rb") as f:
        if f.read(4) == b"\x7fELF":
            return "BINARY"
    return "DOCUMENTATION" if path.startswith("usr/share/doc/") else "TEXT"


def spdx_id(kind, name, taken):
    base = "SPDXRef-%s-%s" % (kind, ID_RE.sub("-", name).strip("-"))
    sid, n = base, 1
    while sid in taken:
        n += 1
        sid = "%s-%d" % (base, n)
    taken.add(sid)
    return sid


def deb_purl(pkg, distro):
    """purl-spec's deb type (github.com/package-url/purl-spec, PURL-TYPES.rst, "deb")."""
    q = {"arch": pkg.arch}
    if distro:
        q["distro"] = distro
    if pkg.source != pkg.name or pkg.source_version != pkg.version:
        q["upstream"] = "%s@%s" % (pkg.source, pkg.source_version)
    return "pkg:deb/debian/%s@%s?%s" % (pkg.name, urllib.parse.quote(pkg.version, safe=""),
                                        urllib.parse.urlencode(sorted(q.items())))


def oci_purl(name, arch, image_ref):
    """purl-spec's oci type: pkg:oci/NAME@DIGEST?arch=...&repository_url=REGISTRY/PATH."""
    repo, _, digest = image_ref.partition("@")
    q = urllib.parse.urlencode([("arch", arch), ("repository_url", repo)])
    return "pkg:oci/%s@%s?%s" % (name, urllib.parse.quote(digest, safe=""), q)


def package(sid, name, version, purpose, licence="NOASSERTION", **extra):
    p = {"SPDXID": sid, "name": name, "versionInfo": version,
         "downloadLocation": extra.pop("download", "NOASSERTION"), "filesAnalyzed": False,
         "licenseConcluded": "NOASSERTION", "licenseDeclared": licence,
         "copyrightText": "NOASSERTION", "primaryPackagePurpose": purpose}
    p.update(extra)
    return p


def document(rootfs, debs, name, version, commit, arch, image_ref="", distro="", created=None):
    """The SPDX document (a dict) of the image at ROOTFS whose Debian packages are DEBS
    (sbomlib.debian.read_packages)."""
    taken = {"SPDXRef-DOCUMENT"}
    rels = []
    image_id = spdx_id("Image", "%s-%s" % (name, arch), taken)
    image = package(image_id, name, version, "CONTAINER",
                    comment="The %s image for linux/%s." % (name, arch))
    if image_ref:
        image["externalRefs"] = [{"referenceCategory": "PACKAGE-MANAGER",
                                  "referenceType": "purl",
                                  "referenceLocator": oci_purl(name, arch, image_ref)}]
    rels.append(("SPDXRef-DOCUMENT", "DESCRIBES", image_id))
    own_id = spdx_id("Package", name, taken)
    own = package(own_id, name, version, "APPLICATION", "Apache-2.0",
                  sourceInfo="built from commit %s of %s" % (commit, name),
                  comment="The installer, its helpers and reference documents, and the "
                  "libarchive it loads (cut down from Debian's libarchive.a).")
    packages, extracted, owner = [image, own], {}, {}
    rels.append((image_id, "CONTAINS", own_id))
    for d in debs:
        sid = spdx_id("Package-deb", "%s-%s" % (d.name, d.arch), taken)
        expr, refs = licences.declared(d.name, d.copyright)
        for ref, (debian_name, text) in refs.items():
            extracted[ref] = {"licenseId": ref, "name": debian_name,
                              "extractedText": text or "The licence Debian's copyright file "
                              "of %s calls %s: /usr/share/doc/%s/copyright in the image."
                              % (d.name, debian_name, d.name)}
        packages.append(package(
            sid, d.name, d.version, PURPOSE.get(d.section, "OPERATING_SYSTEM"), expr,
            supplier="Organization: Debian",
            download="https://snapshot.debian.org/package/%s/%s/"
            % (d.source, urllib.parse.quote(d.source_version, safe="")),
            sourceInfo="built from Debian's source package %s %s" % (d.source, d.source_version),
            externalRefs=[{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                           "referenceLocator": deb_purl(d, distro)}],
            **({"homepage": d.homepage} if d.homepage else {})))
        rels.append((image_id, "CONTAINS", sid))
        for f in d.files:
            owner.setdefault(f, sid)
    files = []
    for path in image_files(rootfs):
        sid = spdx_id("File", path, taken)
        sha1, sha256 = file_digests(os.path.join(rootfs, path))
        files.append({"SPDXID": sid, "fileName": "./" + path,
                      "fileTypes": [file_type(rootfs, path)],
                      "checksums": [{"algorithm": "SHA1", "checksumValue": sha1},
                                    {"algorithm": "SHA256", "checksumValue": sha256}],
                      "licenseConcluded": "NOASSERTION", "copyrightText": "NOASSERTION"})
        holder = owner.get(path) or (own_id if is_project_file(path) else image_id)
        rels.append((holder, "CONTAINS", sid))
        if holder != image_id:
            rels.append((image_id, "CONTAINS", sid))
    when = created if created is not None else int(os.environ.get("SOURCE_DATE_EPOCH",
                                                                  time.time()))
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": "%s-%s-linux-%s" % (name, version, arch),
        "documentNamespace": "",
        "creationInfo": {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
                         "creators": ["Tool: %s-sbom-%s" % (name, version)]},
        "packages": packages,
        "files": files,
        "hasExtractedLicensingInfos": [extracted[k] for k in sorted(extracted)],
        "relationships": [{"spdxElementId": a, "relationshipType": t, "relatedSpdxElement": b}
                          for a, t, b in rels],
    }
    # A namespace unique to the content (the spec asks a unique absolute URI, 6.5): a
    # name-based UUID (RFC 4122, 4.3) of the document without its namespace and time.
    body = dict(doc, creationInfo=None)
    doc["documentNamespace"] = "urn:uuid:%s" % uuid.uuid5(uuid.NAMESPACE_URL, dumps(body))
    return doc


def dumps(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
