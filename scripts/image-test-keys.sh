#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No signing key or PIN of the tree can enter an image (docs/building-packages.md, "Keys
# where builds run"): image-test-keys.sh [ROOTFS] (make image-test runs it on the image's
# file system; alone, ROOTFS defaults to build/rootfs, make image-rootfs's).
#   context  the Dockerfile's `COPY . /src` under .dockerignore, built by buildah as the
#            image build is: a scratch context holding this tree's .dockerignore and keys
#            where an operator might keep them (mod.key, keys/repo.pem, a PIN file, a
#            PKCS#12 bundle, at the top and deeper) gets none of them into the image, and
#            its other files in (so that the check can fail)
#   rootfs   no file of ROOTFS holds a PEM private key (a "-----BEGIN ... PRIVATE KEY-----"
#            line and its base64: every PEM label of one, RFC 7468 sections 10 and 11,
#            OpenSSL's traditional RSA and EC ones), and none is named as a key, a PIN or a PKCS#12/PKCS#8 bundle is (the
#            CA certificates' *.pem are public and stay)
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROOTFS=${1:-$SRC/build/rootfs}
KEY_NAMES=(-name '*.key' -o -name '*.p8' -o -name '*.p12' -o -name '*.pfx' -o -name '*.pin'
    -o -name 'pin')
fail() {
    echo "image-test-keys: FAIL: $*" >&2
    exit 1
}

W=$(mktemp -d)
ctr=""
cleanup() {
    [ -n "$ctr" ] && { buildah umount "$ctr" >/dev/null 2>&1; buildah rm "$ctr" >/dev/null 2>&1; }
    buildah rmi -f localhost/image-test-keys:context >/dev/null 2>&1 || true
    rm -rf "$W"
}
trap cleanup EXIT

# The context: this tree's .dockerignore, the decoys, and files that must get in.
C=$W/context
mkdir -p "$C/keys" "$C/deploy/secret" "$C/scripts"
cp "$SRC/.dockerignore" "$C/"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$C/mod.key" 2>/dev/null
cp "$C/mod.key" "$C/keys/repo.pem"
cp "$C/mod.key" "$C/deploy/secret/index.pem"
cp "$C/mod.key" "$C/scripts/signing.key"
echo 1234 >"$C/keys/pin"
echo 1234 >"$C/deploy/token.pin"
echo bundle >"$C/deploy/secret/mod.p12"
echo kept >"$C/Makefile"
echo kept >"$C/scripts/make-repo"
mkdir -p "$C/tests/fuzz/corpus/proc"
echo kept >"$C/tests/fuzz/corpus/proc/keys" # a corpus file, not a directory of keys
printf 'FROM scratch\nCOPY . /src\n' >"$W/Containerfile"
buildah bud --isolation chroot --pull=never -q -f "$W/Containerfile" \
    -t localhost/image-test-keys:context "$C" >"$W/build.log" 2>&1 ||
    { tail -20 "$W/build.log"; fail "buildah bud of the scratch context"; }
ctr=$(buildah from --pull=never localhost/image-test-keys:context)
M=$(buildah mount "$ctr")
for f in Makefile scripts/make-repo tests/fuzz/corpus/proc/keys; do
    [ -f "$M/src/$f" ] || fail "the context check is broken: /src/$f did not get in"
done
leaked=$(cd "$M/src" && find . -type f \( "${KEY_NAMES[@]}" -o -name '*.pem' \) | sort)
[ -z "$leaked" ] || fail "the Dockerfile's COPY takes keys into the build stage: $(echo $leaked); .dockerignore must leave them out"
echo "image-test-keys: .dockerignore leaves keys, PINs and bundles out of the build context"

# The image's file system.
[ -d "$ROOTFS" ] || fail "no $ROOTFS: make image-rootfs first, or give the image's file system"
# A PEM block: its label line, then base64 (or the Proc-Type header of an encrypted
# traditional one), in a file that is not an ELF object: libraries that parse PEM hold
# the label alone, and GnuTLS holds its FIPS self-test keys (gnutls_pk_self_test), which
# are public test vectors; a key of the tree would be a file of its own.
found=$(python3 - "$ROOTFS" <<'PY'
import os, re, sys
pem = re.compile(rb"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----\r?\n(Proc-Type:|[A-Za-z0-9+/]{40})")
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(d, f)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as fh:
                data = fh.read()
            if not data.startswith(b"\x7fELF") and pem.search(data):
                print(p)
PY
)
[ -z "$found" ] || fail "private keys in the image: $found"
named=$(find "$ROOTFS" \( "${KEY_NAMES[@]}" \) -printf '/%P\n')
[ -z "$named" ] || fail "files named as keys or PINs in the image: $named"
echo "image-test-keys: no private key or PIN file in $ROOTFS ($(find "$ROOTFS" -type f | wc -l) files)"
