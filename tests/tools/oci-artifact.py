#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks an OCI image layout's TAG against the repository it was made from.

Usage: oci-artifact.py LAYOUT TAG REPO KERNEL|all
The layout (image-spec image-layout.md: oci-layout, index.json, blobs/sha256) must tag one
manifest TAG (org.opencontainers.image.ref.name) that is the repository artifact of
docs/repository-format.md, "In an OCI registry": artifactType, the empty config, the index
and its signature, then each package of REPO's index.json (those for KERNEL, or all) in the
index's order, each digest once, titled by its path, every blob the file of REPO it names.
Prints what differs and exits 1, or prints nothing and exits 0.
"""
import hashlib
import json
import os
import sys

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
EMPTY = {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
         "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}
PACKAGE = "application/vnd.nvidia.driver-installer.package.v1.tar+zstd"
TITLE = "org.opencontainers.image.title"


class Mismatch(Exception):
    """What the layout has that the repository does not say."""


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


def blob(layout, digest):
    """The bytes of blob DIGEST, checked against it."""
    data = open(os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1]), "rb").read()
    expect("sha256:" + hashlib.sha256(data).hexdigest() == digest, "blob %s: other bytes" % digest)
    return data


def tagged(layout, tag):
    """The descriptor the layout's index.json tags TAG."""
    expect(json.load(open(layout + "/oci-layout")) == {"imageLayoutVersion": "1.0.0"},
           "oci-layout")
    index = json.load(open(layout + "/index.json"))
    expect(index["schemaVersion"] == 2, "index.json schemaVersion")
    expect(index.get("mediaType", "application/vnd.oci.image.index.v1+json")
           == "application/vnd.oci.image.index.v1+json", "index.json mediaType")
    descs = [m for m in index["manifests"]
             if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    expect(len(descs) == 1, "%d manifests tagged %s" % (len(descs), tag))
    return descs[0]


def wanted_layers(repo, kernel):
    """The layers the manifest should have, in order: (mediaType, title)."""
    idx = json.load(open(repo + "/index.json"))
    want = [("application/vnd.nvidia.driver-installer.index.v1+json", "index.json"),
            ("application/vnd.nvidia.driver-installer.index.signature.v1", "index.json.sig")]
    seen = set()
    for drv in idx["drivers"]:
        for p in drv["packages"]:
            if kernel in ("all", p["kernel"]) and p["sha256"] not in seen:
                seen.add(p["sha256"])
                want.append((PACKAGE, p["path"]))
    return idx, want


def check(layout, tag, repo, kernel):
    d = tagged(layout, tag)
    raw = blob(layout, d["digest"])
    expect(d["mediaType"] == MANIFEST and d["size"] == len(raw), "the manifest's descriptor")
    m = json.loads(raw)
    expect(m["schemaVersion"] == 2 and m["mediaType"] == MANIFEST, "the manifest's type")
    expect(m["artifactType"] == "application/vnd.nvidia.driver-installer.repository.v1",
           "artifactType %s" % m.get("artifactType"))
    expect(m["config"] == EMPTY, "config %s" % m["config"])
    expect(blob(layout, EMPTY["digest"]) == b"{}", "the empty config blob")
    idx, want = wanted_layers(repo, kernel)
    expect(m.get("annotations") == {"org.opencontainers.image.created": idx["generated"]},
           "annotations %s" % m.get("annotations"))
    got = [(l["mediaType"], l["annotations"][TITLE]) for l in m["layers"]]
    expect(got == want, "layers %s, the repository's %s" % (got, want))
    for l in m["layers"]:
        expect("urls" not in l, "urls on %s" % l["digest"])
        data = blob(layout, l["digest"])
        expect(len(data) == l["size"], "the size of %s" % l["annotations"][TITLE])
        path = os.path.join(repo, l["annotations"][TITLE])
        expect(data == open(path, "rb").read(), "%s: other bytes" % l["annotations"][TITLE])


def main():
    try:
        check(*sys.argv[1:5])
    except (Mismatch, KeyError, OSError, ValueError) as e:
        print("oci-artifact: %s:%s: %s: %s" % (sys.argv[1], sys.argv[2], type(e).__name__, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
