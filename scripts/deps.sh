#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages a profile needs: deps.sh [demo|check] (default check).
#   demo   what `make demo` runs: the build, the repository tools, the stand-in driver and
#          the VM step (Debian's kernel and headers, qemu, busybox); nothing of the CI
#          toolchain (no buildah, podman, clang, cppcheck, valgrind, prometheus, Node.js)
#   check  everything `make check`, `make fuzz` and `make bench` run
# Idempotent and silent when everything is present; as root it installs what is
# missing, otherwise it names the packages and fails.
set -euo pipefail

profile=${1:-check}
case $profile in
demo | check) ;;
*)
    echo "deps: unknown profile '$profile': give demo or check" >&2
    exit 2
    ;;
esac

# The demo (scripts/demo.sh, then tests/vm/run.sh demo, which also packages one of
# Debian's signed modules with build-driver-package --prebuilt-modules).
packages=(
    # build (make all); the stand-in driver's libraries and nvidia-smi are compiled too
    build-essential pkg-config
    libcurl4-openssl-dev libssl-dev libkmod-dev libmount-dev libarchive-dev libjson-c-dev
    libzstd-dev liblzma-dev zlib1g-dev
    # the repository tools (make-repo, build-driver-package), the demo's HTTP server and keys
    python3 openssl zstd xz-utils binutils
    # the VM step: sign-file, depmod and modinfo, Debian's kernel under qemu, its headers
    # to build the stand-in modules against, busybox and cpio for the initramfs, mkfs.ext4
    # for the defer scenario's disk (two boots of one stateful partition)
    linux-kbuild-6.1 kmod linux-image-amd64 linux-headers-amd64 qemu-system-x86
    busybox-static cpio e2fsprogs
)

# What make check, make fuzz and make bench add.
check_packages=(
    # unit tests, the index schema test, build-driver-package --patch, bzip2 archives
    libcmocka-dev python3-jsonschema bzip2 patch
    # the release test: the SBOM's licence expressions parsed as SPDX's (tests/release)
    node-spdx-expression-parse
    # build-driver-package --debian: apt with a state of its own, checked with this keyring
    debian-archive-keyring
    ca-certificates
    # make image-test: the Dockerfile built without a container engine
    buildah podman mmdebstrap
    # make check-real's real-agent VM scenario: Debian's nvidia-persistenced links it (the
    # image has it too), copied into the VM's initramfs
    libtirpc3
    # t_cdi_podman: our CDI spec in podman, with runc as its runtime (crun refuses
    # hybrid cgroup hierarchies); unshare and mknod for its private /dev are util-linux's
    runc
    # make check-real's video and graphics (tests/real/graphics.sh): Debian's Vulkan loader
    # and vulkaninfo find the package's ICD and load NVIDIA's libGLX_nvidia
    libvulkan1 vulkan-tools
    # t_ima: getfattr/setfattr read back the security.ima the installer sets on firmware
    attr
    # t_pkcs11: keys on a PKCS#11 token (scripts/privkey.py): SoftHSM2 is the token, and
    # OpenSSL's pkcs11 engine signs through it (a builder that signs with a token needs
    # the engine too, and the token's own PKCS#11 module)
    softhsm2 libengine-pkcs11-openssl
    # build-driver-package --kernel-devel-rpm (rpm2cpio); tests/packaging's stand-in
    # kernel-devel RPM (rpmbuild)
    rpm2cpio rpm
    # tests/vm selinux: Debian's reference policy (stock), its source for the container
    # module and the headers and tools it builds with; semodule builds the test policy
    selinux-policy-default selinux-policy-src selinux-policy-dev policycoreutils checkpolicy m4 gawk
    # make format-check, make lint
    clang-format cppcheck
    # make fuzz, make fuzz-replay (libFuzzer is clang's); the memcheck integration test
    clang libclang-rt-14-dev valgrind
    # tests/packaging (make packaging): LLVM=1 module builds link with ld.lld, llvm-ar, llvm-nm
    lld llvm
    # make check-real's clang-built kernel (tests/real/clang-kernel.sh): Debian's source of
    # the 6.1 kernel and what its build needs besides clang
    linux-source-6.1 flex bison libelf-dev
    # the OCI registry tests (tests/tools/oci-registry.py): Debian's docker-registry (the CNCF
    # distribution server, 2.8) as the registry; skopeo pushes and pulls beside our own tools
    docker-registry skopeo
    # make bench: the shell pipeline it is compared with, and its chart
    curl gnuplot-nox
    # the metrics textfile's real consumers (t_metrics_consumers): promtool (package
    # prometheus) checks and lints it, node-exporter's textfile collector serves it
    prometheus prometheus-node-exporter
    # t_runbooks: its stand-in cluster reads the DaemonSets that docs/operations.md derives
    python3-yaml
    # make ARCH=arm64 (the arm64-unit phase): Debian's cross compiler, the :arm64
    # development packages beside the host's (multiarch: dpkg --add-architecture arm64,
    # done below when missing), and qemu-user, which runs the arm64 unit tests one by one
    # (qemu-user-static is not used: its package registers binfmt_misc handlers host-wide)
    gcc-aarch64-linux-gnu qemu-user libc6-dev:arm64
    # the arm64 VM scenarios (make vm): qemu-system-aarch64; Debian's arm64 kernel, its
    # headers and busybox-static:arm64 are fetched, not installed (scripts/fetch-debian-kernel)
    qemu-system-arm
    libcurl4-openssl-dev:arm64 libssl-dev:arm64 libkmod-dev:arm64 libmount-dev:arm64
    libarchive-dev:arm64 libjson-c-dev:arm64 libzstd-dev:arm64 libcmocka-dev:arm64
    # the arm64 image (make image-multiarch): the cut-down libarchive links these
    # statically, and libtirpc goes in beside the persistence daemon, as on amd64
    liblzma-dev:arm64 zlib1g-dev:arm64 libtirpc3:arm64
)

if [ "$profile" = check ]; then
    packages+=("${check_packages[@]}")
    # The manifest test runs on Node.js; a node already on PATH (another packaging) will do.
    command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
    # The manifest test runs `kubectl apply --dry-run=client` on both DaemonSets (against a
    # local discovery stub, no cluster), t_runbooks the runbooks' kubectl commands against a
    # stand-in cluster. Debian's kubectl is kubernetes-client (1.20.2): older than the
    # runbooks' 1.30, and t_runbooks carries out what it lacks as 1.30 does
    # (docs/testing.md). A kubectl already on PATH (Google Cloud SDK's package, a release
    # binary) will do and is not replaced.
    command -v kubectl >/dev/null || packages+=(kubernetes-client)
fi

# A name without an architecture is the host's (or an Architecture: all package); with
# multiarch, dpkg-query lists every architecture installed under it.
native=$(dpkg --print-architecture)
missing=()
for p in "${packages[@]}"; do
    case $p in
    *:*) want="[a-z0-9]+" ;;
    *) want="($native|all)" ;;
    esac
    grep -qE "^$want install ok installed$" \
        <(dpkg-query -W -f='${Architecture} ${Status}\n' "$p" 2>/dev/null) || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "deps: missing Debian packages ($profile): ${missing[*]}" >&2
    echo "deps: install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
case " ${missing[*]}" in
*:arm64*) grep -qx arm64 <(dpkg --print-foreign-architectures) || dpkg --add-architecture arm64 ;;
esac
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
