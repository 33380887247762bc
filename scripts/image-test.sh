#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Dockerfile with buildah and runs the image's binary (make image-test):
# the release (VERSION) and commit as build arguments, in the image's labels and --version,
# --help and the documents it names, no compiler or package cache in the image, and an install with --skip-modules
# into a scratch host root from a file:// repository, with the repository key in the
# image's default key directory. No container engine is needed: the base image is made
# from Debian's packages with mmdebstrap and imported with podman, as docs/testing.md says.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

SRC=$(cd "$(dirname "$0")/.." && pwd)
BASE=docker.io/library/debian:bookworm-slim
IMAGE=localhost/nvidia-driver-installer:test
KERNEL=6.1.0-57-amd64
# What the Makefile builds into the binary: the VERSION file, and the commit (COMMIT, as
# make passes it, else git's; the build stage gets no .git).
version=$(cat "$SRC/VERSION")
commit=${COMMIT:-$(git -C "$SRC" describe --always --dirty --exclude='*' 2>/dev/null || echo unknown)}
W=$(mktemp -d)
ctr=""
cleanup() {
    [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
    rm -rf "$W"
}
trap cleanup EXIT
fail() {
    echo "image-test: FAIL: $*" >&2
    exit 1
}
run() { buildah run --isolation chroot "$ctr" -- "$@"; }

t0=$(date +%s)
if ! podman image exists "$BASE"; then
    # Close to Debian's own slim image: no documentation, manuals or locales (the
    # exclusions stay in the image's dpkg configuration for later installs), no lists.
    echo "image-test: making $BASE with mmdebstrap"
    mmdebstrap --variant=minbase --quiet \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
        bookworm "$W/rootfs.tar"
    podman import -q "$W/rootfs.tar" "$BASE" >/dev/null
    rm -f "$W/rootfs.tar"
fi
echo "image-test: building $IMAGE"
buildah bud --isolation chroot --pull=never --layers -q -t "$IMAGE" \
    --build-arg VERSION="$version" --build-arg COMMIT="$commit" "$SRC" >"$W/build.log" 2>&1 ||
    { tail -30 "$W/build.log"; fail "buildah bud"; }
t1=$(date +%s)
ctr=$(buildah from --pull=never "$IMAGE")

run /usr/bin/nvidia-driver-installer --help | grep -q "Commands:" || fail "--help"
# The release and the commit: in the binary (built without .git) and on the image.
got=$(run /usr/bin/nvidia-driver-installer --version)
[ "$got" = "nvidia-driver-installer $version ($commit)" ] ||
    fail "--version in the image: '$got', not 'nvidia-driver-installer $version ($commit)'"
label() { buildah inspect --format "{{index .OCIv1.Config.Labels \"$1\"}}" "$IMAGE"; }
[ "$(label org.opencontainers.image.version)" = "$version" ] ||
    fail "label org.opencontainers.image.version: '$(label org.opencontainers.image.version)', not '$version'"
[ "$(label org.opencontainers.image.revision)" = "$commit" ] ||
    fail "label org.opencontainers.image.revision: '$(label org.opencontainers.image.revision)', not '$commit'"
# Every document the binary's messages and --help name is in the image, where they say.
docs=$(run sh -c 'grep -aoE "/usr/share/doc/nvidia-driver-installer/[a-z-]+\.md" \
    /usr/bin/nvidia-driver-installer | sort -u')
[ "$(echo "$docs" | wc -w)" -ge 4 ] || fail "the binary names too few documents: $docs"
for d in $docs; do
    run test -s "$d" || fail "the binary names $d, which the image lacks"
done
buildah inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$ctr" |
    grep -q '\[/usr/bin/nvidia-driver-installer\] \[install\]' || fail "entrypoint and command"
run sh -c '! command -v cc && ! command -v gcc && ! command -v make' >/dev/null || fail "a compiler in the image"
# What the driver's daemons the node agent starts here link beyond the driver's own
# libraries (Debian's nvidia-persistenced: libtirpc.so.3), found by the image's loader;
# and /var/run, where the persistence daemon makes its directory.
run sh -c 'ldconfig -p | grep -q "libtirpc.so.3 " && test -d /var/run/' ||
    fail "libtirpc.so.3 or /var/run missing: the persistence daemon cannot start in the image"
# The CDI spec's hook and its ldconfig, where the installer looks for them, and runnable
# (the hook without a container's state refuses with its usage, exit 2).
run sh -c 'test -x /usr/libexec/nvidia-driver-installer/ldconfig &&
    /usr/libexec/nvidia-driver-installer/nvidia-cdi-hook; test $? = 2' 2>/dev/null ||
    fail "the CDI hook helpers are not in the image"
run sh -c 'test -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e ^lock -e ^partial)" &&
    test -z "$(ls /var/cache/apt/*.bin 2>/dev/null)"' || fail "package caches in the image"

# A repository and a scratch host root, into the container.
"$SRC/scripts/make-standin-driver" 550.90.07 "$W/drv" 16 >/dev/null
"$SRC/scripts/make-repo" pack "$W/drv" "$W/pkg.tar.zst"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/key.pem" 2>/dev/null
openssl pkey -in "$W/key.pem" -pubout -out "$W/pub.pem"
"$SRC/scripts/make-repo" add --repo "$W/repo" --key "$W/key.pem" --version 550.90.07 \
    --kernel "$KERNEL" --tag default "$W/pkg.tar.zst" >/dev/null
mkdir -p "$W/scratch/etc"
printf 'ID=cos\nBUILD_ID=17800.66.78\n' >"$W/scratch/etc/os-release"
buildah copy -q "$ctr" "$W/repo" /repo >/dev/null
buildah copy -q "$ctr" "$W/scratch" /scratch >/dev/null
buildah copy -q "$ctr" "$W/pub.pem" /etc/nvidia-driver-installer/keys/repo.pem >/dev/null
run /usr/bin/nvidia-driver-installer --root /scratch install --repo file:///repo --skip-modules \
    --kernel-release "$KERNEL" || fail "install in the image"
run /usr/bin/nvidia-driver-installer --root /scratch status --json >"$W/status.json"
grep -q '"driver_version": "550.90.07"' "$W/status.json" || fail "status: $(cat "$W/status.json")"
run /scratch/home/kubernetes/bin/nvidia/bin/nvidia-smi | grep -q "Driver Version: 550.90.07" ||
    fail "the installed nvidia-smi does not run"

size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "image-test: ok: $IMAGE ($version, $commit) is $((size / 1024 / 1024)) MiB; built in $((t1 - t0)) s, tested in $(($(date +%s) - t1)) s"
