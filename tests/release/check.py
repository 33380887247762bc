#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The release test's checks of what it pulled back (tests/release/run.sh):

  check.py index INDEX.json DIGEST            both platforms, the bytes hashing to DIGEST
  check.py referrer REFERRERS.json ARTIFACT.json SUBJECT SBOM.json
      the referrers tag's index lists the artifact (artifactType application/spdx+json),
      whose subject is SUBJECT and whose one layer is SBOM.json's bytes
  check.py sbom SBOM.json SCHEMA.json ROOTFS ARCH
      valid against SPDX 2.3's schema; its Debian packages those ROOTFS's status.d names
      (name, version, architecture), libc6 among them; every file of ROOTFS listed with its
      SHA-256, the installer's among them; no file listed that ROOTFS lacks; each licence
      expression parsed by Debian's node-spdx-expression-parse (SPDX 2.3 Annex D, against
      the SPDX licence list's identifiers), each LicenseRef- it uses defined in the document
  check.py manifest RENDERED SOURCE IMAGE FINGERPRINT PUBKEY.pem
      every image line naming the installer is IMAGE, the other lines as SOURCE has them
      but the ConfigMap's key (PUBKEY, its FINGERPRINT beside), and the YAML parses
Each prints what is wrong and exits 1."""
import hashlib
import json
import os
import re
import subprocess
import sys

import jsonschema
import yaml


def fail(msg):
    print("check.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path, "rb") as f:
        return f.read()


def index(path, digest):
    raw = load(path)
    if "sha256:" + hashlib.sha256(raw).hexdigest() != digest:
        fail("the index pulled back does not hash to %s" % digest)
    got = sorted((m["platform"]["os"], m["platform"]["architecture"])
                 for m in json.loads(raw)["manifests"])
    if got != [("linux", "amd64"), ("linux", "arm64")]:
        fail("the index holds %s" % got)


def referrer(refs_path, art_path, subject, sbom_path):
    refs, raw = json.loads(load(refs_path)), load(art_path)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    listed = [m for m in refs.get("manifests", []) if m["digest"] == digest]
    if refs.get("mediaType") != "application/vnd.oci.image.index.v1+json" or len(listed) != 1:
        fail("the referrers tag's index lists %s %d times" % (digest, len(listed)))
    if listed[0].get("artifactType") != "application/spdx+json":
        fail("the referrers index's descriptor has artifactType %r"
             % listed[0].get("artifactType"))
    art = json.loads(raw)
    if art.get("subject", {}).get("digest") != subject:
        fail("the artifact's subject is %s, not %s" % (art.get("subject"), subject))
    sbom = load(sbom_path)
    layer = art["layers"][0]
    if len(art["layers"]) != 1 or layer["digest"] != "sha256:" + hashlib.sha256(sbom).hexdigest():
        fail("the artifact's layer is not the SBOM written to build/release")
    if art.get("artifactType") != "application/spdx+json" or layer["mediaType"] != \
            "application/spdx+json":
        fail("the artifact is %s / %s" % (art.get("artifactType"), layer["mediaType"]))


def sbom(path, schema_path, rootfs, arch):
    doc = json.loads(load(path))
    jsonschema.Draft7Validator(json.loads(load(schema_path))).validate(doc)
    held = set()
    d = os.path.join(rootfs, "var/lib/dpkg/status.d")
    if not os.path.isdir(d):
        fail("the %s image pulled has no /var/lib/dpkg/status.d (scripts/image-rootfs)" % arch)
    for n in os.listdir(d):
        if n.endswith(".md5sums"):
            continue
        st = dict(re.findall(r"^([A-Za-z-]+): (.*)$", load(os.path.join(d, n)).decode(), re.M))
        held.add((st["Package"], st["Version"], st["Architecture"]))
    debs = set()
    for p in doc["packages"]:
        for r in p.get("externalRefs", []):
            if r["referenceLocator"].startswith("pkg:deb/"):
                debs.add((p["name"], p["versionInfo"],
                          re.search(r"[?&]arch=([a-z0-9]+)", r["referenceLocator"]).group(1)))
    if debs != held:
        fail("the SBOM's packages differ from the image's: only in the SBOM %s, only in the "
             "image %s" % (sorted(debs - held)[:5], sorted(held - debs)[:5]))
    if not any(n == "libc6" and a == arch for n, _, a in held):
        fail("the %s image holds no libc6:%s: %s" % (arch, arch, sorted(held)[:5]))
    files = {f["fileName"][2:]: [c["checksumValue"] for c in f["checksums"]
                                 if c["algorithm"] == "SHA256"][0] for f in doc["files"]}
    real = {}
    for top, _, names in os.walk(rootfs):
        for n in names:
            p = os.path.join(top, n)
            if os.path.isfile(p) and not os.path.islink(p):
                real[os.path.relpath(p, rootfs)] = hashlib.sha256(load(p)).hexdigest()
    if files != real:
        diff = sorted(set(files.items()) ^ set(real.items()))[:5]
        fail("the SBOM's files and digests differ from the image's: %s" % diff)
    if "usr/bin/nvidia-driver-installer" not in files:
        fail("the SBOM does not list the installer")
    # Every shared library and the ldconfig are a package's (the cut-down libarchive ours).
    ids = {f["SPDXID"]: f["fileName"][2:] for f in doc["files"]}
    kinds = {p["SPDXID"]: p for p in doc["packages"]}
    held_by = {ids[r["relatedSpdxElement"]]: kinds[r["spdxElementId"]]
               for r in doc["relationships"] if r["relationshipType"] == "CONTAINS" and
               r["relatedSpdxElement"] in ids and
               kinds.get(r["spdxElementId"], {}).get("primaryPackagePurpose") != "CONTAINER"}
    for path in files:
        if re.search(r"\.so(\.[0-9]+)*$", path) or path.endswith("bin/ldconfig"):
            want = "APPLICATION" if path.endswith("/libarchive.so.13") else "deb"
            p = held_by.get(path)
            got = p and ("deb" if p["SPDXID"].startswith("SPDXRef-Package-deb-") else
                         p["primaryPackagePurpose"])
            if got != want:
                fail("the SBOM gives /%s to %s, not a %s package" % (path, p and p["name"],
                                                                     want))
    licences(doc)


# The expressions, one a line on stdin; those spdx-expression-parse refuses, on stdout.
PARSE_JS = """
const parse = require('spdx-expression-parse');
const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(Boolean);
for (const e of lines) { try { parse(e); } catch (x) { console.log(e + ': ' + x.message); } }
"""


def licences(doc):
    exprs = sorted({p["licenseDeclared"] for p in doc["packages"]} - {"NOASSERTION"})
    if len(exprs) < 5:
        fail("the SBOM states licences for too few packages: %s" % exprs)
    p = subprocess.run(["node", "-e", PARSE_JS], input="\n".join(exprs), text=True,
                       capture_output=True, env=dict(os.environ, NODE_PATH="/usr/share/nodejs"))
    if p.returncode != 0 or p.stdout:
        fail("licence expressions refused by spdx-expression-parse: %s %s"
             % (p.stdout[:500], p.stderr[-300:]))
    defined = {e["licenseId"] for e in doc.get("hasExtractedLicensingInfos", [])}
    used = {r for e in exprs for r in re.findall(r"LicenseRef-[A-Za-z0-9.-]+", e)}
    if used - defined:
        fail("LicenseRefs used but not defined: %s" % sorted(used - defined)[:5])


IMAGE_LINE = re.compile(r"^\s*(?:-\s+)?image:\s*(\S+)")


def manifest(rendered_path, source_path, image, fpr, pub):
    rendered = load(rendered_path).decode().split("\n")
    source = load(source_path).decode().split("\n")
    key = [line.strip() for line in load(pub).decode().strip().split("\n")]
    pinned = 0
    for line in rendered:
        m = IMAGE_LINE.match(line)
        if m and "nvidia-driver-installer" in m.group(1):
            if m.group(1) != image:
                fail("%s names the image %s" % (rendered_path, m.group(1)))
            pinned += 1
    want = sum(1 for line in source if IMAGE_LINE.match(line) and
               "nvidia-driver-installer" in IMAGE_LINE.match(line).group(1))
    if pinned != want or not want:
        fail("%s pins %d of the %d installer images" % (rendered_path, pinned, want))
    text = "\n".join(rendered)
    if "fingerprint " + fpr not in text or "REPLACE-WITH" in text:
        fail("%s does not carry the key with fingerprint %s" % (rendered_path, fpr))
    # Everything else as the tree has it.
    rest = [line for line in rendered if not (IMAGE_LINE.match(line) and image in line)
            and "fingerprint " + fpr not in line and line.strip() not in key]
    orig = [line for line in source if not (IMAGE_LINE.match(line) and
            "nvidia-driver-installer" in IMAGE_LINE.match(line).group(1))
            and "REPLACE-WITH-YOUR-REPOSITORY-PUBLIC-KEY" not in line
            and line.strip() not in key]
    if rest != orig:
        fail("%s changed lines other than the image and the key" % rendered_path)
    docs = list(yaml.safe_load_all(text))
    cm = [d for d in docs if d and d.get("kind") == "ConfigMap" and
          d["metadata"]["name"] == "nvidia-driver-installer-keys"]
    if not cm or cm[0]["data"]["repo.pem"].strip() != "\n".join(key):
        fail("%s's ConfigMap repo.pem is not the key" % rendered_path)


if __name__ == "__main__":
    cmds = {"index": index, "referrer": referrer, "sbom": sbom, "manifest": manifest}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        fail("usage: check.py index|referrer|sbom|manifest ARGS")
    cmds[sys.argv[1]](*sys.argv[2:])
