#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Dockerfile with buildah and runs the image's binary (make image-test):
# its size against the budget (NDI_IMAGE_BUDGET bytes, default 40 MB, as `buildah images`
# counts: uncompressed, 1000-based); what the image holds (no shell, package manager,
# compiler, locale data, ICU, libxml2 or private key); the release (VERSION) and commit as build
# arguments, in the image's labels and --version; the documents the binary names; and
# every command, run as the image runs it, with no shell: install (--skip-modules) into a
# scratch host root from a file:// repository with the key in the image's default key
# directory, status, list-versions, coverage, config, doctor, verify-module, mirror, the
# node agent with its /healthz, /readyz and /metrics, pause, uninstall, the CDI hook, the
# static ldconfig, and the launcher in front of the installed nvidia-smi. Then the arm64
# image and the manifest list of both (scripts/image-multiarch), the arm64 binary run from
# the image's own files under qemu-user: --version, the hook, the ld cache, an install
# (--skip-modules) of an arm64 package, status, uninstall. No container
# engine is needed: the build stage's base image is made from Debian's packages with
# mmdebstrap and imported with podman, as docs/testing.md says.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tests/tools/pipes.sh"
BASE=docker.io/library/debian:bookworm-slim
# The names it builds under (NDI_IMAGE, NDI_IMAGE_LIST): engineers sharing one machine's
# container storage give each run names of its own.
IMAGE=${NDI_IMAGE:-localhost/nvidia-driver-installer:test}
KERNEL=6.1.0-57-amd64
BUDGET=${NDI_IMAGE_BUDGET:-40000000}
# What the Makefile builds into the binary: the VERSION file, and the commit (COMMIT, as
# make passes it, else git's; the build stage gets no .git).
version=$(cat "$SRC/VERSION")
commit=${COMMIT:-$(git -C "$SRC" describe --always --dirty --exclude='*' 2>/dev/null || echo unknown)}
W=$(mktemp -d)
ctr=""
bg=""
bg_pat=""
prog=""
# cleanup: a background run still going (a check failed before bg_stop) ends before its
# container is unmounted and removed: the program under it is killed (SIGTERM to buildah
# alone could leave it running, the agent polling each second), buildah is sent SIGTERM
# (the program may not have started yet) and waited for (a minute at most; then killed).
cleanup() {
    local p deadline
    if [ -n "$bg" ]; then
        for p in $prog $(pgrep -f "$bg_pat"); do
            under_bg "$p" && kill -KILL "$p" 2>/dev/null
        done
        kill -TERM "$bg" 2>/dev/null || true
        deadline=$(($(date +%s) + 60))
        while kill -0 "$bg" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
            sleep 0.1
        done
        kill -0 "$bg" 2>/dev/null && echo "image-test: buildah run $bg outlived its program" >&2
        kill -KILL "$bg" 2>/dev/null || true
        wait "$bg" 2>/dev/null || true
    fi
    [ -n "$ctr" ] && { buildah umount "$ctr" >/dev/null 2>&1; buildah rm "$ctr" >/dev/null 2>&1; }
    rm -rf "$W"
}
trap cleanup EXIT
fail() {
    echo "image-test: FAIL: $*" >&2
    exit 1
}
run() { buildah run --isolation chroot "$ctr" -- "$@"; }
# The long-running commands (the agent, pause) in the background, and their end on SIGTERM.
# Every wait is for an event, with a deadline that turns a hang into a failure: 120 s, which
# a loaded machine does not reach (make check runs this at nice 19 beside the VM tests; at
# nice 19 beside two busy loops the agent took 16 s to start).
# bg_start LOG ARG...: as `run ARG...`, in the background, its output in LOG; buildah's pid
# in $bg, the program's command line as a pattern in $bg_pat.
bg_start() {
    bg_log=$1
    shift
    buildah run --isolation chroot "$ctr" -- "$@" >"$bg_log" 2>&1 &
    bg=$!
    bg_pat="^$*$"
    prog=""
}
# bg_wait WHAT CMD...: polls CMD until it succeeds; fails at once when the background run
# ended first, and after 120 s.
bg_wait() {
    local what=$1 deadline=$(($(date +%s) + 120)) rc=0
    shift
    until "$@"; do
        if ! kill -0 "$bg" 2>/dev/null; then
            wait "$bg" || rc=$?
            bg=""
            fail "waiting for $what: it ended first, exit $rc: $(tail -5 "$bg_log")"
        fi
        [ "$(date +%s)" -lt "$deadline" ] || fail "waited 120 s for $what: $(tail -5 "$bg_log")"
        sleep 0.1
    done
}
# under_bg PID: PID is a process under $bg (other image-tests on this machine run the same
# commands).
under_bg() {
    local q=$1
    while [ -n "$q" ] && [ "$q" -gt 1 ] && [ "$q" != "$bg" ]; do
        q=$(awk '$1 == "PPid:" { print $2 }' "/proc/$q/status" 2>/dev/null) || q=""
    done
    [ -n "$bg" ] && [ "$q" = "$bg" ]
}
# catches_term PATTERN: the program itself (the process under $bg, below buildah's chroot
# runtime, whose command line matches PATTERN; not a child it forked and that has not
# exec'd yet: same command line, its parent's handlers) catches SIGTERM (signal 15's bit
# of SigCgt, mask 0x4000); its pid in $prog. Signalled earlier, before main installs its
# handler (interrupt_setup), SIGTERM would kill it (exit 143).
catches_term() {
    local p k v all
    all=" $(pgrep -f "$1" | tr '\n' ' ' || true) "
    for p in $all; do
        under_bg "$p" || continue
        [[ $all == *" $(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null) "* ]] &&
            continue
        while read -r k v; do
            [ "$k" = SigCgt: ] && (((16#$v >> 14) & 1)) && prog=$p && return 0
        done 2>/dev/null <"/proc/$p/status"
    done
    return 1
}
# bg_stop WHAT: SIGTERM to $prog, then its end (120 s at most: one that goes on running
# fails the test instead of blocking it); its exit in $rc.
bg_stop() {
    local deadline=$(($(date +%s) + 120))
    kill -TERM "$prog" || fail "$1: no process to signal"
    while kill -0 "$bg" 2>/dev/null; do
        [ "$(date +%s)" -lt "$deadline" ] ||
            fail "$1 still runs 120 s after SIGTERM: $(tail -5 "$bg_log")"
        sleep 0.1
    done
    rc=0
    wait "$bg" || rc=$?
    bg=""
    prog=""
}

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
# The budget first: a grown image fails however well it works.
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
shown=$(buildah images --format '{{.Size}}' "$IMAGE" | sed -n 1p)
echo "image-test: $IMAGE is $size bytes ($shown as buildah images shows it); the budget is $BUDGET"
[ "$size" -le "$BUDGET" ] ||
    fail "the image is $size bytes, over its budget of $BUDGET: see what grew: make image-rootfs; du -ab build/rootfs | sort -n | tail"
ctr=$(buildah from --pull=never "$IMAGE")
M=$(buildah mount "$ctr")

# What is in it: no shell, package manager, compiler, locale data, ICU or libxml2. The
# record of its Debian packages (var/lib/dpkg/status.d, scripts/image-rootfs) is not dpkg's
# database: no status file, no info directory.
for f in bin/sh bin/bash bin/dash bin/busybox usr/bin/apt usr/bin/apt-get usr/bin/dpkg \
    var/lib/dpkg/status var/lib/dpkg/info \
    usr/bin/cc usr/bin/gcc usr/bin/make usr/bin/perl usr/bin/python3 usr/share/locale usr/lib/locale; do
    [ ! -e "$M/$f" ] && [ ! -L "$M/$f" ] || fail "the image has /$f"
done
extra=$(find "$M" \( -name 'libicu*' -o -name 'libxml2*' -o -name '*.a' -o -name '*.h' \) -printf '/%P\n')
[ -z "$extra" ] || fail "the image has $extra"
# Every shared object in it is something the binary, a library it loads or libtirpc needs:
# the loader's cache lists each (ldconfig, run in the image), and libarchive is the cut-down
# one (no libxml2 behind it).
run /usr/sbin/ldconfig -p >"$W/ldcache"
for so in libcurl.so.4 libkmod.so.2 libmount.so.1 libarchive.so.13 libtirpc.so.3 libjson-c.so.5 libcrypto.so.3; do
    grep -q "^[[:space:]]*$so " "$W/ldcache" || fail "the image's ld cache lacks $so"
done
! readelf -d "$M/usr/lib/$(gcc -print-multiarch)/libarchive.so.13" | grepq xml2 ||
    fail "the image's libarchive links libxml2"
[ -d "$M/var/run/" ] && [ -d "$M/tmp" ] || fail "/var/run or /tmp missing: the persistence daemon cannot start in the image"
[ -s "$M/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates in the image"
# No signing key or PIN: none in the image, and .dockerignore keeps the tree's out of the
# build stage too.
"$SRC/scripts/image-test-keys.sh" "$M" || fail "keys (scripts/image-test-keys.sh)"


run /usr/bin/nvidia-driver-installer --help | grepq "Commands:" || fail "--help"
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
docs=$(grep -aoE "/usr/share/doc/nvidia-driver-installer/[a-z-]+\.md" "$M/usr/bin/nvidia-driver-installer" | sort -u)
[ "$(echo "$docs" | wc -w)" -ge 4 ] || fail "the binary names too few documents: $docs"
for d in $docs; do
    [ -s "$M$d" ] || fail "the binary names $d, which the image lacks"
done
buildah inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$ctr" |
    grepq '\[/usr/bin/nvidia-driver-installer\] \[install\]' || fail "entrypoint and command"
# The CDI spec's hook and its ldconfig, where the installer looks for them, and runnable
# (the hook without a container's state refuses with its usage, exit 2).
[ -x "$M/usr/libexec/nvidia-driver-installer/ldconfig" ] || fail "no ldconfig beside the installer"
rc=0
run /usr/libexec/nvidia-driver-installer/nvidia-cdi-hook >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "the CDI hook in the image exits $rc without a container's state, not 2"

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
run /scratch/home/kubernetes/bin/nvidia/bin/nvidia-smi | grepq "Driver Version: 550.90.07" ||
    fail "the installed nvidia-smi does not run"
# The other commands, as the image runs them (no shell: each is argv).
I=(/usr/bin/nvidia-driver-installer --root /scratch)
run "${I[@]}" list-versions --repo file:///repo --kernel-release "$KERNEL" >"$W/list.out" ||
    fail "list-versions in the image: $(cat "$W/list.out")"
grep -q 550.90.07 "$W/list.out" || fail "list-versions: $(cat "$W/list.out")"
run "${I[@]}" coverage --repo file:///repo >"$W/coverage.out" || fail "coverage in the image"
grep -q "$KERNEL" "$W/coverage.out" || fail "coverage: $(cat "$W/coverage.out")"
run "${I[@]}" config --repo file:///repo >"$W/config.json" || fail "config in the image"
grep -q '"file:///repo"' "$W/config.json" || fail "config: $(cat "$W/config.json")"
# doctor: 0, or 9 for what a container without a GPU lacks; the report names the install.
rc=0
run "${I[@]}" doctor --repo file:///repo --kernel-release "$KERNEL" >"$W/doctor.out" 2>&1 || rc=$?
{ [ $rc = 0 ] || [ $rc = 9 ]; } && grep -q 550.90.07 "$W/doctor.out" ||
    fail "doctor in the image: exit $rc: $(tail -5 "$W/doctor.out")"
# verify-module: the stand-in's unsigned nvidia.ko, judged as the kernel would (exit 5).
buildah copy -q "$ctr" "$W/drv/kernel/nvidia.ko" /tmp/nvidia.ko >/dev/null
rc=0
run /usr/bin/nvidia-driver-installer verify-module --kernel-release "$KERNEL" /tmp/nvidia.ko \
    >"$W/verify.out" 2>&1 || rc=$?
[ $rc = 5 ] && grep -q "signed:   no" "$W/verify.out" ||
    fail "verify-module in the image: exit $rc: $(cat "$W/verify.out")"
run /usr/bin/nvidia-driver-installer mirror --repo file:///repo --driver-version 550.90.07 \
    --to /tmp/mirror >/dev/null 2>&1 || fail "mirror in the image"
[ -s "$M/tmp/mirror/index.json" ] || fail "mirror wrote no index"
# The node agent, in the background, with the probes the DaemonSet makes (HTTP, no shell):
# alive, not ready (no module is loaded here), metrics; SIGTERM ends it with 0. Its port is
# the kernel's pick, read from its log (a port chosen here could be another server's).
A=("${I[@]}" agent --listen 127.0.0.1:0 --upgrades off --interval 1)
bg_start "$W/agent.log" "${A[@]}"
agent_port() {
    port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$W/agent.log")
    [ -n "$port" ]
}
bg_wait "the agent's start (its port in its log)" agent_port
curl -fsm 120 "http://127.0.0.1:$port/healthz" >/dev/null ||
    fail "the agent's /healthz: $(tail -5 "$W/agent.log")"
code=$(curl -sm 120 -o "$W/readyz" -w '%{http_code}' "http://127.0.0.1:$port/readyz")
[ "$code" = 503 ] || fail "the agent's /readyz with no module loaded: HTTP $code, not 503"
curl -fsm 120 "http://127.0.0.1:$port/metrics" | grepq '^nvidia_driver_installer_agent_' ||
    fail "the agent's /metrics"
# It catches SIGTERM before it logs its port (main's interrupt_setup comes first); asked
# anyway, so that this does not rest on that order.
bg_wait "the agent to catch SIGTERM" catches_term "^${A[*]}$"
bg_stop "the agent"
[ $rc = 0 ] || fail "the agent exits $rc on SIGTERM: $(tail -5 "$W/agent.log")"
# pause: the holding container's command, ended by SIGTERM with 0.
A=(/usr/bin/nvidia-driver-installer pause)
bg_start "$W/pause.log" "${A[@]}"
bg_wait "pause to catch SIGTERM" catches_term "^${A[*]}$"
bg_stop pause
[ $rc = 0 ] || fail "pause exits $rc on SIGTERM: $(tail -5 "$W/pause.log")"
run "${I[@]}" uninstall >/dev/null 2>&1 || fail "uninstall in the image"
[ ! -e "$M/scratch/home/kubernetes/bin/nvidia/bin/nvidia-smi" ] || fail "uninstall left nvidia-smi"

buildah umount "$ctr" >/dev/null
buildah rm "$ctr" >/dev/null
ctr=""

# ---- The arm64 image and the manifest list (scripts/image-multiarch) ----
# Assembled from the cross build's file system (ARM64_ROOTFS, make ARCH=arm64
# image-rootfs) and run here under qemu-user, explicitly: no binfmt_misc handler is
# registered (that would change how the whole host runs arm64 files). The binary runs from
# the image's own files: in a mount namespace of its own, where this machine's arm64
# libraries (the :arm64 packages, /usr/lib/aarch64-linux-gnu) are hidden under an empty
# tmpfs, so that a library missing from the image fails here and not on a Grace node.
ARM64_ROOTFS=${ARM64_ROOTFS:-$SRC/build-arm64/rootfs}
LIST=${NDI_IMAGE_LIST:-localhost/nvidia-driver-installer:multi}
t2=$(date +%s)
arm64=$("$SRC/scripts/image-multiarch" "$IMAGE" "$ARM64_ROOTFS" "$LIST") || fail "image-multiarch"
buildah manifest inspect "$LIST" >"$W/list.json"
python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
got = sorted((e["platform"]["os"], e["platform"]["architecture"]) for e in m["manifests"])
assert got == [("linux", "amd64"), ("linux", "arm64")], got
' "$W/list.json" || fail "the manifest list: $(cat "$W/list.json")"
[ "$(podman image inspect --format '{{.Architecture}}/{{.Os}}' "$arm64")" = arm64/linux ] ||
    fail "$arm64 is not linux/arm64"
size64=$(podman image inspect --format '{{.Size}}' "$arm64")
[ "$size64" -le "$BUDGET" ] || fail "the arm64 image is $size64 bytes, over its budget of $BUDGET"
for k in Entrypoint Cmd Env Labels; do
    a=$(podman image inspect --format "{{.Config.$k}}" "$IMAGE")
    b=$(podman image inspect --format "{{.Config.$k}}" "$arm64")
    [ "$a" = "$b" ] || fail "the arm64 image's $k is $b, the amd64 one's $a"
done
ctr=$(buildah from --pull=never --arch arm64 "$arm64")
M=$(buildah mount "$ctr")
for f in bin/sh bin/bash bin/busybox usr/bin/apt usr/bin/dpkg usr/bin/gcc usr/share/locale; do
    [ ! -e "$M/$f" ] && [ ! -L "$M/$f" ] || fail "the arm64 image has /$f"
done
readelf -h "$M/usr/bin/nvidia-driver-installer" | grepq "Machine: *AArch64" ||
    fail "the arm64 image's binary is not arm64"
! readelf -d "$M/usr/lib/aarch64-linux-gnu/libarchive.so.13" | grepq xml2 ||
    fail "the arm64 image's libarchive links libxml2"
# run64 PROGRAM ARG...: the image's PROGRAM under qemu-aarch64, its absolute paths looked
# up in the image first (-L); paths outside it are given as this machine's ($W/...).
run64() {
    local p=$1
    shift
    unshare -m sh -c 'mount -t tmpfs -o ro,size=4k none /usr/lib/aarch64-linux-gnu && exec "$@"' run64 \
        qemu-aarch64 -L "$M" "$M$p" "$@"
}
got=$(run64 /usr/bin/nvidia-driver-installer --version)
[ "$got" = "nvidia-driver-installer $version ($commit)" ] ||
    fail "--version in the arm64 image: '$got', not 'nvidia-driver-installer $version ($commit)'"
rc=0
run64 /usr/libexec/nvidia-driver-installer/nvidia-cdi-hook >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "the arm64 image's CDI hook exits $rc without a container's state, not 2"
run64 /usr/sbin/ldconfig -p >"$W/ldcache64"
for so in libcurl.so.4 libkmod.so.2 libmount.so.1 libarchive.so.13 libtirpc.so.3; do
    grep -q "^[[:space:]]*$so .*AArch64" "$W/ldcache64" || fail "the arm64 image's ld cache lacks $so"
done
# An arm64 repository (the stand-in user space cross-compiled) and a scratch host root:
# the binary takes its architecture from uname -m, which qemu-user answers aarch64.
CC=aarch64-linux-gnu-gcc KERNEL_RELEASE=6.1.0-57-arm64 "$SRC/scripts/make-standin-driver" 550.90.07 \
    "$W/drv64" 16 >/dev/null
"$SRC/scripts/make-repo" pack "$W/drv64" "$W/pkg64.tar.zst"
"$SRC/scripts/make-repo" add --repo "$W/repo64" --key "$W/key.pem" --version 550.90.07 \
    --kernel 6.1.0-57-arm64 --arch aarch64 --tag default "$W/pkg64.tar.zst" >/dev/null
mkdir -p "$W/scratch64/etc"
printf 'ID=cos\nBUILD_ID=18244.151.14\n' >"$W/scratch64/etc/os-release"
cp "$W/pub.pem" "$M/etc/nvidia-driver-installer/keys/repo.pem"
I64=(/usr/bin/nvidia-driver-installer --root "$W/scratch64")
run64 "${I64[@]}" install --repo "file://$W/repo64" --skip-modules --kernel-release 6.1.0-57-arm64 \
    >"$W/install64.log" 2>&1 || fail "install in the arm64 image: $(tail -5 "$W/install64.log")"
grep -q "arch=aarch64" "$W/install64.log" ||
    fail "the arm64 install did not see aarch64: $(grep 'host probed' "$W/install64.log")"
run64 "${I64[@]}" status --json >"$W/status64.json" 2>/dev/null || true
grep -q '"driver_version": "550.90.07"' "$W/status64.json" ||
    fail "status in the arm64 image: $(cat "$W/status64.json")"
readelf -h "$W/scratch64/home/kubernetes/bin/nvidia/bin/nvidia-smi" | grepq "Machine: *AArch64" ||
    fail "the arm64 package's nvidia-smi was not installed"
run64 "${I64[@]}" uninstall >/dev/null 2>&1 || fail "uninstall in the arm64 image"
[ ! -e "$W/scratch64/home/kubernetes/bin/nvidia/bin/nvidia-smi" ] || fail "the arm64 uninstall left nvidia-smi"
echo "image-test: ok: $LIST holds linux/amd64 and linux/arm64; $arm64 is $size64 bytes, tested under qemu-user in $(($(date +%s) - t2)) s"

echo "image-test: ok: $IMAGE ($version, $commit) is $size bytes ($shown); built in $((t1 - t0)) s, tested in $((t2 - t1)) s"
