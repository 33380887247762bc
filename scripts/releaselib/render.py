# SPDX-License-Identifier: Apache-2.0
"""The DaemonSets as a release deploys them: every `image:` that names the installer's
image (any registry, tag or digest: `nvidia-driver-installer:latest` in the tree) set to
the release's image by digest, and, with the repository's public key, the ConfigMap's
repo.pem set to that key, its fingerprint beside it. The files are read as they are: only
those lines change, so comments, the other images (the device plugin) and every other
setting stay as the tree has them."""
import base64
import hashlib
import re

IMAGE_RE = re.compile(r"^(?P<lead>\s*(?:-\s+)?image:\s*)(?P<ref>(?:\S+/)?nvidia-driver-installer"
                      r"(?::[A-Za-z0-9_][A-Za-z0-9._-]*)?(?:@sha256:[0-9a-f]{64})?)"
                      r"(?P<tail>\s+#.*)?$")
PLACEHOLDER = "REPLACE-WITH-YOUR-REPOSITORY-PUBLIC-KEY"
KEY_RE = re.compile(r"^(?P<lead>\s*)repo\.pem:\s*\|\s*$")
PEM_RE = re.compile(r"-----BEGIN PUBLIC KEY-----\s+([A-Za-z0-9+/=\s]+?)\s*"
                    r"-----END PUBLIC KEY-----")


class RenderError(Exception):
    """A manifest or key that cannot be rendered (exit 1)."""


def key_fingerprint(pem):
    """The installer's fingerprint of a public key (installer/source/verify.c,
    key_fingerprint): the first 8 bytes of SHA-256 over the DER SubjectPublicKeyInfo, in
    hex. A PEM "PUBLIC KEY" block is that DER in base64 (RFC 7468, section 13)."""
    m = PEM_RE.search(pem)
    if not m:
        raise RenderError("the repository key is not a PEM public key (openssl pkey -pubout)")
    der = base64.b64decode("".join(m.group(1).split()), validate=True)
    return hashlib.sha256(der).hexdigest()[:16], m.group(0)


def render(text, image, note, key_pem=None, source="manifest"):
    """TEXT with the installer's image set to IMAGE (REGISTRY/PATH@sha256:HEX), NOTE its
    comment, and, given KEY_PEM, the repository key; (text, number of images set)."""
    out, n, lines = [], 0, text.split("\n")
    fpr, block = key_fingerprint(key_pem) if key_pem else (None, None)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = IMAGE_RE.match(line)
        if m:
            out.append("%s%s # %s" % (m.group("lead"), image, note))
            n += 1
        elif block and KEY_RE.match(line):
            lead = KEY_RE.match(line).group("lead")
            out.append("%s# the repository index key: fingerprint %s (status --json's "
                       "key_fingerprint)" % (lead, fpr))
            out.append(line)
            i += 1
            while i < len(lines) and lines[i].startswith(lead + " "):
                i += 1  # the placeholder block
            out += [lead + "  " + k for k in block.split("\n")]
            continue
        elif PLACEHOLDER in line and block:
            raise RenderError("%s: a key placeholder outside the ConfigMap's repo.pem" % source)
        else:
            out.append(line)
        i += 1
    if n == 0:
        raise RenderError("%s names no nvidia-driver-installer image to pin" % source)
    if block and not any("fingerprint " + fpr in line for line in out):
        raise RenderError("%s has no ConfigMap repo.pem for the repository key" % source)
    return "\n".join(out), n
