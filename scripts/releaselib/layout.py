# SPDX-License-Identifier: Apache-2.0
"""The release as an OCI image layout (image-spec v1.1, image-layout.md: oci-layout,
index.json, blobs/sha256/HEX), which buildah writes the image index into and skopeo copies
to the registry byte for byte (--preserve-digests).

An SBOM is an artifact manifest (image-spec v1.1, manifest.md, "Guidelines for Artifact
Usage"): artifactType application/spdx+json, the empty config, one layer (the document)
and a subject, the image manifest it describes. A registry with the referrers API (the
distribution spec v1.1, spec.md, "Listing Referrers") lists it from the subject field; for
one without it (distribution 2.8) the client keeps the list itself under the referrers tag
schema (spec.md, "Referrers Tag Schema"): an image index tagged `sha256-HEX` (the subject's
digest, ':' as '-') whose manifests are the referrers' descriptors with their artifactType
and annotations, updated by pull, add, push."""
import hashlib
import json
import os

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
SPDX = "application/spdx+json"
REF_NAME = "org.opencontainers.image.ref.name"
TITLE = "org.opencontainers.image.title"
CREATED = "org.opencontainers.image.created"


class LayoutError(Exception):
    """A layout that is not what it should be (exit 1)."""


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True).encode() + b"\n"


def descriptor(media_type, data, **extra):
    d = {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
         "size": len(data)}
    d.update(extra)
    return d


def referrers_tag(digest):
    """The referrers tag schema's tag of DIGEST: sha256:HEX -> sha256-HEX."""
    alg, _, hex_ = digest.partition(":")
    return "%s-%s" % (alg, hex_)


class Layout:
    def __init__(self, path):
        self.path = path
        if not os.path.isfile(os.path.join(path, "oci-layout")):
            raise LayoutError("%s is not an OCI image layout (no oci-layout file)" % path)

    def blob_path(self, digest):
        alg, _, hex_ = digest.partition(":")
        return os.path.join(self.path, "blobs", alg, hex_)

    def read(self, digest):
        """A blob's bytes, checked against its digest."""
        with open(self.blob_path(digest), "rb") as f:
            data = f.read()
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise LayoutError("blob %s of %s does not hash to its name" % (digest, self.path))
        return data

    def read_json(self, digest):
        return json.loads(self.read(digest))

    def write(self, data):
        """Stores DATA as a blob; its digest."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        p = self.blob_path(digest)
        if not os.path.exists(p):
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p + ".tmp", "wb") as f:
                f.write(data)
            os.replace(p + ".tmp", p)
        return digest

    def index(self):
        with open(os.path.join(self.path, "index.json"), "rb") as f:
            return json.load(f)

    def resolve(self, ref):
        """The descriptor index.json names REF by."""
        for m in self.index().get("manifests", []):
            if m.get("annotations", {}).get(REF_NAME) == ref:
                return m
        raise LayoutError("%s has no manifest tagged %s" % (self.path, ref))

    def tag(self, desc, ref):
        """index.json names DESC by REF (replacing what it named so)."""
        idx = self.index()
        keep = [m for m in idx.get("manifests", [])
                if m.get("annotations", {}).get(REF_NAME) != ref]
        d = dict(desc, annotations=dict(desc.get("annotations", {}), **{REF_NAME: ref}))
        idx["manifests"] = keep + [d]
        p = os.path.join(self.path, "index.json")
        with open(p + ".tmp", "wb") as f:
            f.write(dumps(idx))
        os.replace(p + ".tmp", p)

    def platforms(self, index_digest):
        """{(os, architecture): manifest descriptor} of an image index."""
        idx = self.read_json(index_digest)
        return {(m["platform"]["os"], m["platform"]["architecture"]): m
                for m in idx.get("manifests", []) if "platform" in m}

    def attach(self, subject, data, title, created, annotations=None):
        """Stores DATA (an SPDX document) as an artifact whose subject is SUBJECT (a
        descriptor); the artifact manifest's descriptor, as a referrers index lists it."""
        empty = self.write(b"{}")
        layer = descriptor(SPDX, data, annotations={TITLE: title})
        self.write(data)
        ann = dict(annotations or {}, **{CREATED: created})
        manifest = {
            "schemaVersion": 2, "mediaType": MANIFEST, "artifactType": SPDX,
            "config": {"mediaType": EMPTY, "digest": empty, "size": 2},
            "layers": [layer],
            "subject": {k: subject[k] for k in ("mediaType", "digest", "size")},
            "annotations": ann,
        }
        raw = dumps(manifest)
        self.write(raw)
        return descriptor(MANIFEST, raw, artifactType=SPDX, annotations=ann)

    def referrers(self, subject_digest, descs, existing=None):
        """The referrers tag's image index for SUBJECT_DIGEST: EXISTING's manifests (the
        index the registry holds, if any) and DESCS, each digest once; tagged in index.json
        by the schema's tag. Its tag."""
        manifests = list((existing or {}).get("manifests", []))
        seen = {m["digest"] for m in manifests}
        manifests += [d for d in descs if d["digest"] not in seen]
        raw = dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests})
        self.write(raw)
        tag = referrers_tag(subject_digest)
        self.tag(descriptor(INDEX, raw), tag)
        return tag
