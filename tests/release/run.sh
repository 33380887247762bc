#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The release pushed to a real registry and pulled back (make image-test runs it after
# scripts/image-test.sh, which builds and tests LIST, the image index of both
# architectures). A registry of its own (tests/tools/oci-registry.py: Debian's
# docker-registry, distribution 2.8, with TLS, behind its token server); scripts/release,
# as make release runs it, with a repository key; then, read back from the registry with
# skopeo: the index under the release's tag, both platforms, its digest the one
# build/release/image names; each image's SBOM through the referrers tag of the image's
# digest (and both through the index's): the artifact's subject, its layer the SBOM
# written, valid against SPDX 2.3's schema, its Debian packages those the pulled image's
# record names, every file of the pulled image with its SHA-256, and the same bytes when
# made again from the pulled image; the release and commit in --version of the amd64 image
# (podman run, in a storage of the test's own) and of the arm64 image's binary (run from
# the pulled image's files under qemu-aarch64, this machine's arm64 libraries hidden);
# the fingerprint the released installer prints for the repository key (coverage) in both
# rendered DaemonSets, whose installer images are all the digest; a second release of the
# same image lists each SBOM once.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIST=${NDI_IMAGE_LIST:-localhost/nvidia-driver-installer:multi}
version=$(cat "$SRC/VERSION")
commit=${COMMIT:-$(git -C "$SRC" describe --always --dirty --exclude='*' 2>/dev/null || echo unknown)}
W=$(mktemp -d)
P=(podman --root "$W/podman" --runroot "$W/podman-run" --storage-driver vfs)
cleanup() {
    [ -f "$W/reg/env" ] && python3 "$SRC/tests/tools/oci-registry.py" stop --dir "$W/reg" >/dev/null 2>&1
    "${P[@]}" rmi -a -f >/dev/null 2>&1 || true
    rm -rf "$W"
}
trap cleanup EXIT
fail() {
    echo "release-test: FAIL: $*" >&2
    exit 1
}
t0=$(date +%s)

mkdir "$W/reg"
python3 "$SRC/tests/tools/oci-registry.py" start --dir "$W/reg" --mode token --owner $$ ||
    fail "the registry did not start"
. "$W/reg/env"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/key.pem" 2>/dev/null
openssl pkey -in "$W/key.pem" -pubout -out "$W/pub.pem"
export SOURCE_DATE_EPOCH=1700000000
registry=$OCI_HOST/ndi/release-test
rel=("$SRC/scripts/release" --registry "$registry" --version "$version" --commit "$commit"
    --list "$LIST" --key "$W/pub.pem" --cert-dir "$OCI_CERT_DIR" --authfile "$OCI_AUTH_FILE"
    --out "$W/out" --allow-dirty)
"${rel[@]}" >"$W/release.out" 2>"$W/release.log" || fail "scripts/release: $(tail -3 "$W/release.log")"
image=$(cat "$W/out/image")
repo=${image%@*}
digest=${image#*@}
[ "$repo" = "$registry/nvidia-driver-installer" ] || fail "the image is $image, not in $registry"
[ "$(cat "$W/release.out")" = "$image" ] || fail "scripts/release printed $(cat "$W/release.out")"

S=(--cert-dir "$OCI_CERT_DIR" --authfile "$OCI_AUTH_FILE")
CHECK=(python3 "$SRC/tests/release/check.py")
raw() { skopeo inspect --raw "${S[@]}" "docker://$1" >"$2" || fail "skopeo inspect $1"; }
raw "$repo:$version" "$W/index.json"
"${CHECK[@]}" index "$W/index.json" "$digest" || fail "the index under $version"
plat() { python3 -c 'import json,sys; print([m["digest"] for m in json.load(open(sys.argv[1]))["manifests"] if m["platform"]["architecture"] == sys.argv[2]][0])' "$W/index.json" "$1"; }
spdx_of() { python3 -c 'import json,sys; print(" ".join(m["digest"] for m in json.load(open(sys.argv[1]))["manifests"] if m.get("artifactType") == "application/spdx+json"))' "$1"; }
. /etc/os-release
raw "$repo:sha256-${digest#sha256:}" "$W/refs-index.json"
[ "$(spdx_of "$W/refs-index.json" | wc -w)" = 2 ] || fail "the index's referrers: $(cat "$W/refs-index.json")"
for arch in amd64 arm64; do
    pd=$(plat $arch)
    sbom=$W/out/sbom-linux-$arch.spdx.json
    # The image's SBOM, found from the image's digest through the referrers tag.
    raw "$repo:sha256-${pd#sha256:}" "$W/refs-$arch.json"
    art=$(spdx_of "$W/refs-$arch.json")
    [ "$(echo "$art" | wc -w)" = 1 ] || fail "linux/$arch's referrers: $(cat "$W/refs-$arch.json")"
    raw "$repo@$art" "$W/art-$arch.json"
    skopeo copy -q --src-cert-dir "$OCI_CERT_DIR" --src-authfile "$OCI_AUTH_FILE" \
        "docker://$repo@$art" "oci:$W/pulled-$arch:sbom" || fail "pulling $repo@$art"
    layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$W/art-$arch.json")
    cmp "$W/pulled-$arch/blobs/sha256/${layer#sha256:}" "$sbom" ||
        fail "the SBOM pulled for linux/$arch differs from $sbom"
    "${CHECK[@]}" referrer "$W/refs-$arch.json" "$W/art-$arch.json" "$pd" "$sbom" ||
        fail "linux/$arch's SBOM artifact"
    for a in $(spdx_of "$W/refs-index.json"); do raw "$repo@$a" "$W/art-index.json"
        grep -q "linux/$arch" "$W/art-index.json" && break; done
    "${CHECK[@]}" referrer "$W/refs-index.json" "$W/art-index.json" "$digest" "$sbom" ||
        fail "the index's SBOM artifact for linux/$arch"
    # The image itself, pulled: its files and its record against the SBOM, and the SBOM
    # made again from what was pulled.
    skopeo copy -q --src-cert-dir "$OCI_CERT_DIR" --src-authfile "$OCI_AUTH_FILE" \
        "docker://$repo@$pd" "oci:$W/img-$arch:x" || fail "pulling $repo@$pd"
    mkdir "$W/rootfs-$arch"
    for l in $(python3 -c 'import json,sys; [print(l["digest"][7:]) for l in json.load(open(sys.argv[1]))["layers"]]' "$W/img-$arch/blobs/sha256/${pd#sha256:}"); do
        tar -xf "$W/img-$arch/blobs/sha256/$l" -C "$W/rootfs-$arch"
    done
    "${CHECK[@]}" sbom "$sbom" "$SRC/tests/scripts/data/spdx-schema-2.3.json" "$W/rootfs-$arch" $arch ||
        fail "linux/$arch's SBOM against the image pulled"
    "$SRC/scripts/sbom" "$W/rootfs-$arch" --version "$version" --commit "$commit" --arch $arch \
        --image-ref "$repo@$pd" --distro "$ID-$VERSION_ID" -o "$W/again-$arch.json"
    cmp -s "$W/again-$arch.json" "$sbom" || fail "the SBOM made again from the pulled linux/$arch image differs"
done

# --version: the amd64 image run; the arm64 one's binary under qemu-user from its own files.
want="nvidia-driver-installer $version ($commit)"
"${P[@]}" pull -q "${S[@]}" "$image" >/dev/null || fail "podman pull $image"
R=("${P[@]}" run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --arch amd64)
got=$("${R[@]}" "$image" --version) || fail "podman run $image --version"
[ "$got" = "$want" ] || fail "the amd64 image's --version: '$got', not '$want'"
M=$W/rootfs-arm64
got=$(unshare -m sh -c 'mount -t tmpfs -o ro,size=4k none /usr/lib/aarch64-linux-gnu && exec "$@"' run64 \
    qemu-aarch64 -L "$M" "$M/usr/bin/nvidia-driver-installer" --version) || fail "the arm64 binary under qemu-aarch64"
[ "$got" = "$want" ] || fail "the arm64 image's --version: '$got', not '$want'"

# The key's fingerprint as the released installer prints it, in both DaemonSets.
"$SRC/scripts/make-standin-driver" 550.90.07 "$W/drv" 16 >/dev/null
"$SRC/scripts/make-repo" pack "$W/drv" "$W/pkg.tar.zst"
"$SRC/scripts/make-repo" add --repo "$W/repo" --key "$W/key.pem" --version 550.90.07 \
    --kernel 6.1.0-57-amd64 --tag default "$W/pkg.tar.zst" >/dev/null
"${R[@]}" -v "$W/repo:/repo:ro" -v "$W/pub.pem:/etc/nvidia-driver-installer/keys/repo.pem:ro" \
    "$image" coverage --repo file:///repo >"$W/coverage.out" 2>"$W/coverage.log" ||
    fail "coverage in the image: $(tail -3 "$W/coverage.log")"
fpr=$(sed -n 's/.*index signed by key \([0-9a-f]*\),.*/\1/p' "$W/coverage.out")
[ ${#fpr} = 16 ] || fail "no fingerprint in coverage: $(head -1 "$W/coverage.out")"
grep -q "\"repository_key_fingerprint\": \"$fpr\"" "$W/out/release.json" || fail "release.json's fingerprint is not $fpr"
for m in daemonset-generic.yaml daemonset-preloaded.yaml; do
    "${CHECK[@]}" manifest "$W/out/$m" "$SRC/$m" "$image" "$fpr" "$W/pub.pem" || fail "$m rendered"
done

# The same release again: the same digests, each SBOM listed once.
"${rel[@]}" >"$W/release.out" 2>"$W/release.log" || fail "scripts/release again: $(tail -3 "$W/release.log")"
[ "$(cat "$W/out/image")" = "$image" ] || fail "the second release is $(cat "$W/out/image")"
raw "$repo:sha256-${digest#sha256:}" "$W/refs-index.json"
[ "$(spdx_of "$W/refs-index.json" | wc -w)" = 2 ] || fail "after a second release the index's referrers are $(cat "$W/refs-index.json")"
echo "release-test: ok: $image pushed and pulled back, both SBOMs attached, $want in both, in $(($(date +%s) - t0)) s"
