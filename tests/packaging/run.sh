#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/build-driver-package's COS and Ubuntu paths against stand-ins of the same layout
# as Google's and Canonical's artifacts (docs/platforms/cos.md, docs/platforms/ubuntu.md):
#   cos-headers   COS-style kernel-headers.tgz; a missing one is named the COS way
#   toolchain     --llvm/--cc reach the module build (ld.lld links Debian's stand-ins),
#                 clang for gcc-built Debian's kernel is refused up front
#   detached      a module linked twice is byte-identical, the detached signature made for
#                 the first attaches to the second and verify-module passes, a differing
#                 link is refused; so are signatures that are truncated, empty, doubled,
#                 made with another key or for another module, and a bundle holding one
#                 twice, each with its own cause
#   ubuntu        Canonical's packages as shipped: for the proprietary flavour the objects,
#                 bits/BUILD and detached signatures (linux-objects-nvidia-535-server-R,
#                 linux-signatures-nvidia-R), linked here byte-identical to the modules the
#                 stand-in Canonical signed and verified with its certificate; a link that
#                 differs, missing signatures, BUILD lines that are not a module link or
#                 write outside bits/ refused by name; the open flavour's signed .ko kept,
#                 its unsigned objects package refused alone or beside it
#   cos_fetch     scripts/fetch-cos-artifacts against a local server laid out as Google's
#                 bucket (stand-in artifacts): complete, resumed after a cut, nothing
#                 fetched twice, a missing build and an MD5 mismatch refused; the
#                 precompiled modules at BUILD_ID/BOARD/ as the installer reads them, a
#                 build only in the flat layout, an arm64 board from a node's lsb-release
#   fleet         scripts/build-fleet from one fleet file (a Debian pool, a COS build from
#                 its kernel-headers.tgz, an image with nothing to build from): built,
#                 failed with why; a second run builds nothing; coverage --fleet answers
#                 every row and exits 3 naming the one not served
#   fabricmanager NVIDIA's Fabric Manager archive packed (bin/, the config, topologies);
#                 one of another version than the driver, or without its binary, refused
#                 before anything is built; with it, an nvlsm .deb of NVIDIA's layout
#                 (opt/nvidia/nvlsm/sbin/nvlsm, usr/share/nvidia/nvlsm/nvlsm.conf) packed
#                 into bin/ and share/; one without the binary, one built for another
#                 architecture, and --nvlsm alone refused before anything is built
#   imex          NVIDIA's nvidia-imex .deb (make-imex-deb) packed for amd64 and arm64 into
#                 bin/ and share/nvidia/imex/, the index's imex from the content; driver
#                 535, another version, no nvidia-imex-ctl, another architecture refused
#                 before anything is built; the stand-ins (arm64 under qemu-aarch64) run as
#                 the compute-domain daemon runs them. With it NVIDIA's libnvsdm .deb
#                 (make-nvsdm-deb) packed into lib64/ with its soname link, found there by
#                 DCGM's lookup restated
#                 (tests/standin/dcgm-load.c); 535, another version, arm64's refused
#   hostile       a build machine's inputs are hostile too (scripts/unpack_confined.py): a
#                 kernel-devel RPM with a link out of the work directory and a file
#                 through it, a world-writable device node, a setuid-root file; .debs whose
#                 GSP firmware is a link (absolute, or climbing out) to a private key of
#                 the build machine; tar archives with every hostile member of
#                 tests/tools/evil-tar.py: each refused with one line, nothing written
#                 outside, no device node or set-id bit left, the key in no output
#   gpudirect     --gdrcopy and --gds on the stand-ins of NVIDIA's trees (tests/standin/):
#                 gdrdrv and nvidia-fs built against Debian's headers and the stand-in
#                 nvidia.ko's Module.symvers, depending on nvidia, signed (OpenSSL verifies
#                 the trailer), libgdrapi with its soname link, build-info and the index's
#                 gpudirect; another tree, no version, prebuilt modules refused before the
#                 build; a tampered gdrdrv.ko refused by verify-module
# Usage: tests/packaging/run.sh BIN [SCENARIO...]. Needs Debian's linux-headers-R, clang/lld,
# linux-kbuild (sign-file), dpkg-deb, openssl. Work files under build/packaging.
set -euo pipefail
BIN=$(realpath "${1:?usage: run.sh BIN [SCENARIO...]}")
shift
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tools/pipes.sh"
W=$SRC/build/packaging
BDP=$SRC/scripts/build-driver-package
R=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -1)
V=535.261.03
SIGN_FILE=$(ls /usr/lib/linux-kbuild-*/scripts/sign-file | tail -1)
failed=0
fail() { echo "FAIL: $*"; exit 1; }
# wait_port FILE PID WHAT
. "$SRC/tests/tools/wait-port.sh"
ok() { echo "ok: $*"; }
rm -rf "$W"
mkdir -p "$W/keys"
"$SRC/tests/tools/make-module-key" "Stand-in vendor" "$W/keys/vendor" >/dev/null 2>&1
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/keys/repo.pem" 2>/dev/null

# A driver source in .run --extract-only layout: the stand-in user space of
# make-standin-driver and tests/kmod as kernel/, with a Makefile that takes NVIDIA's variables.
"$SRC/scripts/make-standin-driver" "$V" "$W/standin" >/dev/null
mkdir -p "$W/src/kernel"
cp -L "$W/standin/lib64/"*.so."$V" "$W/standin/bin/nvidia-smi" "$W/src/"
cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$W/src/kernel/"
cat >"$W/src/kernel/Makefile" <<MK
# Stand-in for NVIDIA's kernel/Makefile: SYSOUT, and CC/LLVM as given on the command line.
modules:
	\$(MAKE) -C \$(SYSOUT) M=\$(CURDIR) NV_VERSION=$V V=1 modules
MK
bdp() { "$BDP" --kernel "$R" --installer "$BIN" --repo "$W/repo" --repo-key "$W/keys/repo.pem" \
    --jobs 2 "$@"; }
# rc EXPECTED LOG CMD...: runs CMD, its output to LOG, and checks the exit status.
rc() {
    local want=$1 log=$2 got=0
    shift 2
    "$@" >"$log" 2>&1 || got=$?
    [ "$got" = "$want" ] || { tail -20 "$log"; fail "$* exited $got, not $want"; }
}
has() { grep -qF -- "$2" "$1" || { tail -5 "$1"; fail "$1 lacks: $2"; }; }
pkg_of() { ls "$1"/nvidia-"$V"-*.tar.zst; }

t_cos_headers() {
    local w=$W/cos-headers
    mkdir -p "$w/tgz/usr/src"
    rc 1 "$w/none.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --headers "$w/nowhere"
    has "$w/none.log" "pass --kernel-headers kernel-headers.tgz (COS: from the COS build's artifacts"
    # COS's kernel-headers.tgz holds usr/src/linux-headers-R/ (one tree; Debian's -amd64 tree
    # here, whose Makefile includes the -common tree by its absolute path).
    cp -rL "/usr/src/linux-headers-$R" "$w/tgz/usr/src/"
    tar -C "$w/tgz" -czf "$w/kernel-headers.tgz" usr
    rc 1 "$w/wrong.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-headers "$w/kernel-headers.tgz" \
        --kernel 6.1.100+
    has "$w/wrong.log" "has no usr/src/linux-headers-6.1.100+ (it has: linux-headers-$R)"
    rc 0 "$w/ok.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-headers "$w/kernel-headers.tgz"
    has "$w/ok.log" "added packages/$R/"
    # The compiled modules are reused for the same headers, not for another build of the
    # same release (its Makefile's time unchanged, its configuration not).
    rc 0 "$w/again.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-headers "$w/kernel-headers.tgz"
    has "$w/again.log" "modules for $R already built"
    echo "# another build of the same release" >>"$w/tgz/usr/src/linux-headers-$R/.config"
    tar -C "$w/tgz" -czf "$w/kernel-headers.tgz" usr
    rc 0 "$w/other.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-headers "$w/kernel-headers.tgz"
    grep -q "already built" "$w/other.log" && fail "modules of other headers reused"
    ok "COS kernel-headers.tgz: built from it; missing and wrong headers named; reused only for the same headers"
}

t_toolchain() {
    local w=$W/toolchain
    rc 0 "$w.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w" --llvm
    local blog
    blog=$(ls "$w"/build/*/build.log)
    # LLVM=1 reached kbuild: LLVM's linker linked the modules (Debian's headers pin CC=gcc-12).
    has "$blog" "ld.lld -r -m elf_x86_64"
    has "$w.log" "note: kernel $R was built with gcc"
    tar -C "$w" -xf "$(pkg_of "$w")" share/nvidia/build-info.json
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["toolchain"]; assert t["llvm"]=="1", t' \
        "$w/share/nvidia/build-info.json"
    rc 1 "$w-clang.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w-clang" --cc clang
    has "$w-clang.log" "kernel $R was built with gcc ("
    # The refusal is true: clang itself refuses the gcc kernel's flags.
    mkdir -p "$w/raw" && cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$w/raw/"
    rc 2 "$w/raw.log" make -C "/lib/modules/$R/build" M="$w/raw" NV_VERSION=$V CC=clang modules
    has "$w/raw.log" "clang: error: unknown argument"
    ok "toolchain: LLVM=1 links with ld.lld, recorded; clang for a gcc kernel refused"
}

t_detached() {
    local w=$W/detached args
    args=(--source "$W/src" --work "$w/work")
    # The first link, as the signer linked it (the run stops: no signature for it yet).
    mkdir -p "$w/empty"
    cp "$W/keys/vendor.crt" "$w/empty/gpu-driver-cert.pem"
    rc 1 "$w/first.log" bdp "${args[@]}" --detached-signatures "$w/empty"
    has "$w/first.log" "has no nvidia.ko.sig"
    mkdir -p "$w/first" "$w/bundle"
    cp "$w/work/build/"*/*.ko "$w/first/"
    # Google's part, stood in: detached signatures of the first link, and the certificate.
    for ko in "$w/first/"*.ko; do
        "$SIGN_FILE" -d sha256 "$W/keys/vendor.pem" "$W/keys/vendor.crt" "$ko"
        mv "$ko.p7s" "$w/bundle/$(basename "$ko").sig"
    done
    cp "$W/keys/vendor.crt" "$w/bundle/gpu-driver-cert.pem"
    tar -C "$w/bundle" -czf "$w/gpu-driver-signature.tar.gz" .
    # The second link from the same inputs, attached, checked by verify-module.
    rm -rf "$w/work/build"
    rc 0 "$w/second.log" bdp "${args[@]}" --detached-signatures "$w/gpu-driver-signature.tar.gz"
    has "$w/second.log" "nvidia: Google's detached signature attached"
    for ko in "$w/first/"*.ko; do
        cmp "$ko" "$w/work/build/"*/"$(basename "$ko")" || fail "the second link of $(basename "$ko") differs"
    done
    mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$(pkg_of "$w/work")"
    for ko in "$w/first/"*.ko; do
        local n size
        n=$(basename "$ko")
        size=$(stat -c %s "$ko")
        cmp -n "$size" "$ko" "$w/pkg/kernel/$n" || fail "packed $n is not the link"
    done
    rc 0 "$w/verify.log" "$BIN" verify-module --kernel-release "$R" --module-cert \
        "$W/keys/vendor.crt" "$w/pkg/kernel/"*.ko
    has "$w/verify.log" "signer:   Stand-in vendor"
    # Bundles that cannot be attached, each refused with its own cause (the build is cached:
    # no relink). bundle_with NAME: the good bundle as a directory, for NAME to spoil.
    bundle_with() { rm -rf "$w/$1" && cp -a "$w/bundle" "$w/$1"; }
    bundle_with truncated
    head -c 200 "$w/bundle/nvidia.ko.sig" >"$w/truncated/nvidia.ko.sig"
    rc 1 "$w/truncated.log" bdp "${args[@]}" --detached-signatures "$w/truncated"
    has "$w/truncated.log" "nvidia.ko.sig in $w/truncated is truncated (200 of the $(stat -c %s "$w/bundle/nvidia.ko.sig") bytes its header announces)"
    bundle_with empty-sig
    : >"$w/empty-sig/nvidia.ko.sig"
    rc 1 "$w/empty-sig.log" bdp "${args[@]}" --detached-signatures "$w/empty-sig"
    has "$w/empty-sig.log" "nvidia.ko.sig in $w/empty-sig is not a detached signature (0 bytes, not a DER PKCS#7 message)"
    bundle_with twice
    cat "$w/bundle/nvidia.ko.sig" >>"$w/twice/nvidia.ko.sig"
    rc 1 "$w/twice.log" bdp "${args[@]}" --detached-signatures "$w/twice"
    has "$w/twice.log" "nvidia.ko.sig in $w/twice has $(stat -c %s "$w/bundle/nvidia.ko.sig") bytes after its signature (two signatures, or another file, in one)"
    # Made with another key: named as such, with the signer the signature names.
    "$SRC/tests/tools/make-module-key" "Foreign vendor" "$W/keys/foreign" >/dev/null 2>&1
    bundle_with foreign
    cp "$w/first/nvidia.ko" "$w/foreign.ko"
    "$SIGN_FILE" -d sha256 "$W/keys/foreign.pem" "$W/keys/foreign.crt" "$w/foreign.ko"
    mv "$w/foreign.ko.p7s" "$w/foreign/nvidia.ko.sig"
    rc 1 "$w/foreign.log" bdp "${args[@]}" --detached-signatures "$w/foreign"
    has "$w/foreign.log" "nvidia.ko.sig in $w/foreign was not made with the key of $w/foreign/gpu-driver-cert.pem (it names the signer issuer 'O=nvidia-driver-installer tests, CN=Foreign vendor', serial 0x"
    # The vendor's signature of another module: made for other bytes, the link differs.
    bundle_with swapped
    cp "$w/bundle/nvidia-uvm.ko.sig" "$w/swapped/nvidia.ko.sig"
    rc 1 "$w/swapped.log" bdp "${args[@]}" --detached-signatures "$w/swapped"
    has "$w/swapped.log" "is not the module nvidia.ko.sig was made for: the link differs"
    # A tarball that holds one signature twice would unpack to the last one, silently.
    cp "$w/gpu-driver-signature.tar.gz" "$w/dup.tar.gz" && gunzip -f "$w/dup.tar.gz"
    tar -C "$w/swapped" -rf "$w/dup.tar" ./nvidia.ko.sig
    rc 1 "$w/dup.log" bdp "${args[@]}" --detached-signatures "$w/dup.tar"
    has "$w/dup.log" "$w/dup.tar holds nvidia.ko.sig twice"
    # A link that differs (another source byte) is refused before anything is attached.
    printf '%s\n' '--- a/nvidia.c' '+++ b/nvidia.c' '@@ -1,2 +1,3 @@' \
        ' // SPDX-License-Identifier: GPL-2.0' '+/* another link */' ' /*' >"$w/differ.patch"
    rc 1 "$w/differ.log" bdp "${args[@]}" --detached-signatures "$w/gpu-driver-signature.tar.gz" \
        --patch "$w/differ.patch"
    has "$w/differ.log" "nvidia.ko as linked here (sha256 "
    has "$w/differ.log" "is not the module nvidia.ko.sig was made for: the link differs"
    ok "detached: relink byte-identical, signature attached and verified, differing link refused"
}

# deb NAME ROOT OUT [DEPENDS [VERSION]]: a .deb of ROOT (control written here) for the
# stand-ins of Canonical's.
deb() {
    mkdir -p "$2/DEBIAN"
    {
        printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: stand-in\n' \
            "$1" "${5:-${R%%-*}-0ubuntu1}"
        [ -z "${4:-}" ] || printf 'Depends: %s\n' "$4"
        echo 'Description: stand-in'
    } >"$2/DEBIAN/control"
    dpkg-deb -Zxz --build "$2" "$3" >/dev/null
}

# Canonical's packages for the proprietary flavour, made the way Ubuntu's kernel packaging
# makes them (debian/scripts/dkms-build--nvidia-N, docs/platforms/ubuntu.md cites it): the
# DKMS build's objects and .mod response files in bits/, the kernel's module.lds as
# bits/scripts/module.lds, and bits/BUILD holding the build log's ld.bfd lines (paths
# made relative) and the steps that check and sign; the kernel build runs `BUILD unsigned
# nocheck`, signs each .ko with sign-file sha512 and keeps only the appended bytes
# (NAME.ko.sig) and the unsigned .ko's sha256 (SHA256SUMS). nvidia.ko is composite here,
# as NVIDIA's is (ld -r @nvidia.mod). Writes $w/debs/{objects,signatures,modules}.deb and
# $w/reference/NAME.ko, the signed modules as Canonical's build has them.
canonical_debs() {
    local dk=$w/dkms base=lib/modules/$R/kernel bits m
    mkdir -p "$dk" "$w/reference" "$w/debs"
    cp "$W/src/kernel/"*.[ch] "$dk/"
    mv "$dk/nvidia.c" "$dk/nv.c"
    printf '// SPDX-License-Identifier: GPL-2.0\nint nv_extra(void);\nint nv_extra(void) { return 42; }\n' >"$dk/nv-extra.c"
    printf 'obj-m := nvidia.o nvidia-modeset.o nvidia-uvm.o nvidia-drm.o\nnvidia-y := nv.o nv-extra.o\nccflags-y := -DNV_VERSION=\\"%s\\"\n' "$V" >"$dk/Kbuild"
    make -C "/lib/modules/$R/build" M="$dk" LD=/usr/bin/ld.bfd V=1 modules >"$w/make.log" 2>&1 ||
        { tail "$w/make.log"; fail "the DKMS stand-in build"; }
    bits=$w/objects/$base/nvidia-535srv/bits
    mkdir -p "$bits/scripts"
    (cd "$dk" && find . -name '*.o' -o -name '*.mod' | cpio -pdm --quiet "$bits")
    sed -i "s@$dk/@@g" "$bits/"*.mod
    cp "/lib/modules/$R/build/$(grep -o -- '-T [^ ]*module.lds' "$w/make.log" | sed -n 1p | cut -d' ' -f2)" \
        "$bits/scripts/module.lds"
    {
        echo '[ "$1" = "unsigned" ] && { signed_only=:; shift; }'
        echo '[ "$1" = "nocheck" ] && { check_only=:; shift; }'
        echo "export ELF_PACKAGE_METADATA='{\"type\":\"deb\",\"os\":\"ubuntu\"}'"
        grep /usr/bin/ld.bfd "$w/make.log" | grep -v genksyms |
            sed -e "s@$dk/@@g" -e 's@-T [^ ]*module.lds@-T scripts/module.lds@'
        echo '$check_only sha256sum -c SHA256SUMS || exit 1'
        for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do
            echo "\$signed_only cat '$m.ko' '$m.ko.sig' >'../$m.ko'"
            echo "\$signed_only rm -f '$m.ko'"
        done
    } >"$bits/BUILD"
    (cd "$bits" && sh ./BUILD unsigned nocheck) || fail "BUILD unsigned nocheck"
    : >"$bits/SHA256SUMS"
    mkdir -p "$w/signatures/$base/nvidia-535srv/bits" "$w/signatures/$base/nvidia-390/bits"
    for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do
        (cd "$bits" && sha256sum -b "$m.ko" >>SHA256SUMS)
        "$SIGN_FILE" sha512 "$W/keys/vendor.pem" "$W/keys/vendor.crt" "$bits/$m.ko" "$w/reference/$m.ko"
        dd if="$w/reference/$m.ko" of="$w/signatures/$base/nvidia-535srv/bits/$m.ko.sig" bs=1 \
            skip="$(stat -c %s "$bits/$m.ko")" 2>/dev/null
        # Another branch's signatures, as linux-signatures-nvidia-R carries every branch's.
        cp "$w/signatures/$base/nvidia-535srv/bits/$m.ko.sig" "$w/signatures/$base/nvidia-390/bits/"
        rm -f "$bits/$m.ko"
    done
    # CLEAN, as dkms-build writes it, and what it leaves: every -o output gone, and the
    # ../NAME.ko that BUILD's redirection made even where `unsigned` skipped the cat.
    {
        sed -n 's/.*-o  *\([^ ]*\) .*/rm -f \1/p' "$bits/BUILD"
        for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do echo "rm -f '../$m.ko'"; done
    } >"$bits/CLEAN"
    (cd "$bits" && sh ./CLEAN)
    [ ! -e "$bits/nvidia.o" ] && [ ! -e "$bits/../nvidia.ko" ] || fail "CLEAN left outputs"
    mkdir -p "$w/modules/$base/nvidia-535srv"
    deb "linux-objects-nvidia-535-server-$R" "$w/objects" "$w/debs/objects.deb"
    deb "linux-signatures-nvidia-$R" "$w/signatures" "$w/debs/signatures.deb"
    # The modules package pins the objects and signatures to its own version, as
    # Canonical's does (Depends: ... (= VERSION)).
    local v=${R%%-*}-0ubuntu1
    deb "linux-modules-nvidia-535-server-$R" "$w/modules" "$w/debs/modules.deb" \
        "linux-objects-nvidia-535-server-$R (= $v), linux-signatures-nvidia-$R (= $v)"
    # The signatures of another version (a later upload of linux-restricted-signatures).
    rm -rf "$w/signatures/DEBIAN"
    deb "linux-signatures-nvidia-$R" "$w/signatures" "$w/debs/signatures-other.deb" "" "$v+1"
}

# objects_with NAME SED: the objects package with its BUILD edited by SED.
objects_with() {
    rm -rf "$w/objects-$1" && cp -a "$w/objects" "$w/objects-$1"
    rm -rf "$w/objects-$1/DEBIAN"
    sed -i "$2" "$w/objects-$1/lib/modules/$R/kernel/nvidia-535srv/bits/BUILD"
    deb "linux-objects-nvidia-535-server-$R" "$w/objects-$1" "$w/debs/objects-$1.deb"
}

t_ubuntu() {
    local w=$W/ubuntu d m
    mkdir -p "$w/user"
    canonical_debs
    # libnvidia-compute-535-server and nvidia-utils-535-server: the user space.
    for p in libnvidia-compute-535-server:usr/lib/x86_64-linux-gnu nvidia-utils-535-server:usr/bin; do
        local name=${p%%:*} dir=${p#*:}
        local root=$w/$name
        mkdir -p "$root/$dir" "$root/DEBIAN"
        if [ "$name" = nvidia-utils-535-server ]; then cp "$W/src/nvidia-smi" "$root/$dir/"
        else cp "$W/src/"*.so."$V" "$root/$dir/"; fi
        printf 'Package: %s\nVersion: %s-0ubuntu1\nArchitecture: amd64\nMaintainer: stand-in\nDescription: stand-in\n' \
            "$name" "$V" >"$root/DEBIAN/control"
        dpkg-deb --build "$root" "$w/user/${name}_$V-0ubuntu1_amd64.deb" >/dev/null
    done
    local debs=(--ubuntu-modules-deb "$w/debs/modules.deb" --ubuntu-modules-deb "$w/debs/objects.deb"
        --ubuntu-modules-deb "$w/debs/signatures.deb")
    ubdp() { bdp --work "$w/work" --userspace-debs "$w/user" --vendor-cert "$W/keys/vendor.crt" "$@"; }
    rc 1 "$w/wrong.log" ubdp --kernel 6.8.0-86-generic "${debs[@]}"
    has "$w/wrong.log" "carries modules for kernel $R, not 6.8.0-86-generic"
    rc 1 "$w/nocert.log" bdp --work "$w/work" "${debs[@]}" --userspace-debs "$w/user"
    has "$w/nocert.log" "--ubuntu-modules-deb needs --vendor-cert FILE"
    # The proprietary flavour: linked here as the package's BUILD links it, byte for byte
    # the modules Canonical signed, its signatures attached.
    rc 0 "$w/ok.log" ubdp "${debs[@]}"
    has "$w/ok.log" "linked from linux-objects-nvidia (nvidia-535srv), signatures attached"
    has "$w/ok.log" "nvidia: linked (sha256 "
    mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$(pkg_of "$w/work")"
    for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do
        cmp "$w/reference/$m.ko" "$w/pkg/kernel/$m.ko" || fail "$m.ko is not the module Canonical signed"
    done
    [ -e "$w/pkg/lib64/libnvidia-ml.so.$V" ] && [ -e "$w/pkg/bin/nvidia-smi" ] || fail "no user space"
    rc 0 "$w/verify.log" "$BIN" verify-module --kernel-release "$R" --module-cert \
        "$W/keys/vendor.crt" "$w/pkg/kernel/"*.ko
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["module_signatures"].startswith("Canonical'"'"'s: linked from linux-objects-nvidia"), i' \
        "$w/pkg/share/nvidia/build-info.json" || fail "build-info.json: module_signatures"
    # A link that differs from Canonical's (another build id than the log's), refused by
    # name before any signature is attached; the signatures missing; BUILD lines that are
    # not a module link, or write outside bits/.
    objects_with differ 's/--build-id=sha1/--build-id=md5/'
    rc 1 "$w/differ.log" ubdp --ubuntu-modules-deb "$w/debs/modules.deb" \
        --ubuntu-modules-deb "$w/debs/objects-differ.deb" --ubuntu-modules-deb "$w/debs/signatures.deb"
    has "$w/differ.log" "nvidia.ko as linked here (sha256 "
    has "$w/differ.log" "is not the module Canonical signed (SHA256SUMS: "
    rc 1 "$w/nosig.log" ubdp --ubuntu-modules-deb "$w/debs/objects.deb"
    has "$w/nosig.log" "no nvidia.ko.sig in "
    has "$w/nosig.log" "add linux-signatures-nvidia-$R.deb"
    # The modules package's version pins: the one it names missing, or of another version.
    local v=${R%%-*}-0ubuntu1
    rc 1 "$w/pin.log" ubdp --ubuntu-modules-deb "$w/debs/modules.deb" --ubuntu-modules-deb "$w/debs/objects.deb"
    has "$w/pin.log" "linux-modules-nvidia-535-server-$R $v depends on linux-signatures-nvidia-$R (= $v): add it to --ubuntu-modules-deb"
    rc 1 "$w/alone.log" ubdp --ubuntu-modules-deb "$w/debs/modules.deb"
    has "$w/alone.log" "depends on linux-objects-nvidia-535-server-$R (= $v) and linux-signatures-nvidia-$R (= $v): add them"
    # arm64: Canonical publishes no linux-signatures-nvidia there; said plainly.
    rc 1 "$w/arm64.log" ubdp --arch arm64 --ubuntu-modules-deb "$w/debs/modules.deb" "$w/debs/objects.deb"
    has "$w/arm64.log" "linux-objects-nvidia-535-server-$R is the proprietary flavour's late link, and Canonical publishes no linux-signatures-nvidia for arm64"
    rc 1 "$w/other.log" ubdp "${debs[@]:0:4}" --ubuntu-modules-deb "$w/debs/signatures-other.deb"
    has "$w/other.log" "signatures-other.deb is linux-signatures-nvidia-$R $v+1, but linux-modules-nvidia-535-server-$R $v depends on linux-signatures-nvidia-$R (= $v)"
    objects_with shell '4i rm -rf /tmp/ndi-canonical-was-here'
    rc 1 "$w/shell.log" ubdp --ubuntu-modules-deb "$w/debs/objects-shell.deb" --ubuntu-modules-deb "$w/debs/signatures.deb"
    has "$w/shell.log" "BUILD line 4 of "
    has "$w/shell.log" "runs 'rm -rf /tmp/ndi-canonical-was-here': only its ld.bfd links"
    objects_with outside 's@-o nvidia-drm.ko@-o ../../../../../../../tmp/ndi-x.ko@'
    rc 1 "$w/outside.log" ubdp --ubuntu-modules-deb "$w/debs/objects-outside.deb" --ubuntu-modules-deb "$w/debs/signatures.deb"
    has "$w/outside.log" "names '../../../../../../../tmp/ndi-x.ko', a path outside bits/: refused"
    [ ! -e /tmp/ndi-x.ko ] || fail "a BUILD line wrote outside bits/"
    ok "ubuntu: Canonical's late link made as its BUILD makes it, byte-identical to the signed reference, verified; a differing link, missing signatures and foreign BUILD lines refused"

    # The Ubuntu row of docs/building-packages.md's fleet example, as written (one
    # --ubuntu-modules-deb with the three packages: a fleet row lists no argument twice),
    # through build-fleet --dry-run and a build, with the example's signing key for every
    # build after --, which the row's build does not use (Canonical's signatures are kept).
    local fd=$w/fleet
    mkdir -p "$fd/ubuntu" "$fd/keys"
    python3 - "$SRC/docs/building-packages.md" "$R" "$V" >"$fd/fleet.json" <<'PY'
import json, re, sys
block = re.search(r"## A fleet\n.*?```json\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1)
row = [r for r in json.loads(block)["images"] if r["os"] == "ubuntu"][0]
row.update(kernel=sys.argv[2], driver_versions=[sys.argv[3]])
print(json.dumps({"fleet": 1, "images": [row]}))
PY
    ln -sf "$w/debs/modules.deb" "$fd/ubuntu/linux-modules-nvidia-535-server-$R.deb"
    ln -sf "$w/debs/objects.deb" "$fd/ubuntu/linux-objects-nvidia-535-server-$R.deb"
    ln -sf "$w/debs/signatures.deb" "$fd/ubuntu/linux-signatures-nvidia-$R.deb"
    ln -sfn "$w/user" "$fd/ubuntu/user-$V"
    ln -sf "$W/keys/vendor.crt" "$fd/keys/canonical.pem"
    local bf=("$SRC/scripts/build-fleet" --repo "$fd/repo" --repo-key "$W/keys/repo.pem"
        --installer "$BIN" --work "$fd/work")
    local common=(-- --sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt" --jobs 2)
    (cd "$fd" && rc 0 "$fd/dry.log" "${bf[@]}" --dry-run fleet.json "${common[@]}")
    has "$fd/dry.log" "to build  --kernel $R --os ubuntu"
    has "$fd/dry.log" "--ubuntu-modules-deb ubuntu/linux-modules-nvidia-535-server-$R.deb ubuntu/linux-objects-nvidia-535-server-$R.deb ubuntu/linux-signatures-nvidia-$R.deb"
    (cd "$fd" && rc 0 "$fd/build.log" "${bf[@]}" fleet.json "${common[@]}")
    grep -q "^ubuntu-2204  *$V  *auto  *built  *in " "$fd/build.log" || { cat "$fd/build.log"; fail "the docs' Ubuntu fleet row not built"; }
    has "$fd/build.log" "build-fleet: 1 built"
    ok "ubuntu: the fleet example's Ubuntu row (one --ubuntu-modules-deb, three packages) built by build-fleet"

    # The open flavour, as Canonical ships it (prelinked, no bits/):
    # linux-modules-nvidia-535-server-open-R carries the signed .ko files under
    # kernel/nvidia-535srv-open/, kept byte for byte; linux-objects-nvidia-*-open carries
    # the unsigned ones at the same paths, and the two together are refused by name. Its
    # nvidia.ko carries the open modules' license, as NVIDIA's kernel-open does
    # (MODULE_LICENSE("Dual MIT/GPL")): the stand-ins are built again with it.
    local dk=$w/dkms-open
    mkdir -p "$dk" "$w/open-ref"
    cp "$W/src/kernel/"*.[ch] "$SRC/tests/kmod/Kbuild" "$dk/"
    sed -i 's@^MODULE_LICENSE("GPL");@MODULE_LICENSE("Dual MIT/GPL");@' "$dk/nvidia.c"
    make -C "/lib/modules/$R/build" M="$dk" NV_VERSION="$V" modules >"$w/make-open.log" 2>&1 ||
        { tail "$w/make-open.log"; fail "the open stand-in build"; }
    d=$w/ready/lib/modules/$R/kernel/nvidia-535srv-open
    mkdir -p "$d" "$w/unsigned/lib/modules/$R/kernel/nvidia-535srv-open"
    for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do
        cp "$dk/$m.ko" "$w/unsigned/lib/modules/$R/kernel/nvidia-535srv-open/$m.ko"
        "$SIGN_FILE" sha512 "$W/keys/vendor.pem" "$W/keys/vendor.crt" "$dk/$m.ko" "$w/open-ref/$m.ko"
        cp "$w/open-ref/$m.ko" "$d/"
    done
    deb "linux-modules-nvidia-535-server-open-$R" "$w/ready" "$w/debs/ready.deb"
    deb "linux-objects-nvidia-535-server-open-$R" "$w/unsigned" "$w/debs/unsigned.deb"
    # The GPUs the open modules drive: NVIDIA's supported-gpus.json of the release (--pci-ids).
    printf '{"chips": [{"devid": "0x2330", "name": "H100", "features": ["kernelopen"]}]}\n' \
        >"$w/supported-gpus.json"
    local ids=(--pci-ids open="$w/supported-gpus.json")
    rc 1 "$w/both.log" ubdp --ubuntu-modules-deb "$w/debs/unsigned.deb" --ubuntu-modules-deb "$w/debs/ready.deb" "${ids[@]}"
    has "$w/both.log" "unsigned.deb and ready.deb both ship /lib/modules/$R/kernel/nvidia-535srv-open/nvidia"
    rc 1 "$w/unsigned.log" ubdp --ubuntu-modules-deb "$w/debs/unsigned.deb" "${ids[@]}"
    has "$w/unsigned.log" "has no appended signature: Canonical signs the modules of linux-modules-nvidia packages"
    # The documented command: the -open package alone, no --flavour.
    rc 0 "$w/ready.log" ubdp --ubuntu-modules-deb "$w/debs/ready.deb" "${ids[@]}"
    has "$w/ready.log" "signed modules as shipped (nvidia-535srv-open)"
    has "$w/ready.log" "open flavour: 1 supported GPUs (--pci-ids)"
    rm -rf "$w/pkg" && mkdir -p "$w/pkg"
    # Packed as the open flavour (the proprietary build above left its own package there).
    tar -C "$w/pkg" -xf "$(ls "$w/work"/nvidia-"$V"-open-*.tar.zst)" || fail "no open package"
    for m in nvidia nvidia-drm nvidia-modeset nvidia-uvm; do
        cmp "$w/open-ref/$m.ko" "$w/pkg/kernel/$m.ko" || fail "$m.ko lost its bytes"
    done
    # Each refusal's suggested fix is one the tool takes: the open package under
    # --flavour proprietary names --flavour open; without the GPU list, --pci-ids open=FILE.
    rc 1 "$w/asprop.log" ubdp --ubuntu-modules-deb "$w/debs/ready.deb" --flavour proprietary
    has "$w/asprop.log" "linux-modules-nvidia-535-server-open-$R is the open flavour's package: build it with --flavour open (or leave --flavour out)"
    rc 1 "$w/noids.log" ubdp --ubuntu-modules-deb "$w/debs/ready.deb" --flavour open
    has "$w/noids.log" "pass --pci-ids open=FILE"
    ok "ubuntu: the open flavour's signed modules packed byte for byte; its unsigned objects package refused, alone or beside it"
}

t_cos_fetch() {
    local w=$W/cos-fetch b=18244.151.14 port log
    local bkt=$w/www/cos-tools/$b/lakitu sdk=$w/www/chromiumos-sdk/2025/10/x86_64-cros-linux-gnu
    mkdir -p "$bkt/extensions/gpu" "$sdk" "$w/www/nvidia/tesla/$V" "$w/tc/bin"
    # Stand-ins in the bucket's layout (scripts/fetch-cos-artifacts cites GKE's installer for
    # it): headers, the toolchain named by toolchain_url in the SDK bucket, the build's
    # default driver, Google's signature bundle of it, and NVIDIA's .run in NVIDIA's bucket.
    head -c 300000 /dev/urandom >"$w/tc/bin/x86_64-cros-linux-gnu-clang"
    tar -C "$w/tc" -cJf "$sdk/toolchain.tar.xz" .
    echo "2025/10/x86_64-cros-linux-gnu/toolchain.tar.xz" >"$bkt/toolchain_url"
    printf 'CC=x86_64-cros-linux-gnu-clang\nCXX=x86_64-cros-linux-gnu-clang++\n' >"$bkt/toolchain_env"
    head -c 2000000 /dev/urandom >"$w/headers.bin"
    tar -C "$w" -czf "$bkt/kernel-headers.tgz" headers.bin
    echo "$V" >"$bkt/gpu_default_version"
    tar -C "$W/keys" -czf "$bkt/extensions/gpu/nvidia-drivers-$V-signature.tar.gz" vendor.crt
    # Google's precompiled (open) modules where cos-gpu-installer v2 reads them:
    # BUILD_ID/BOARD/nvidia-drivers-V.tgz, beside the headers (not under extensions/gpu/).
    head -c 50000 /dev/urandom >"$w/open.bin"
    tar -C "$w" -czf "$bkt/nvidia-drivers-$V.tgz" open.bin
    # A build in the flat layout of Google's public sources page (BUILD_ID/NAME, no board),
    # and an arm64 build (board lakitu-arm64) found through a node's /etc/lsb-release.
    local b2=18244.151.15 b3=18244.151.16
    mkdir -p "$w/www/cos-tools/$b2/extensions/gpu" "$w/www/cos-tools/$b3/lakitu-arm64"
    for f in kernel-headers.tgz toolchain_url toolchain_env gpu_default_version "nvidia-drivers-$V.tgz"; do
        cp "$bkt/$f" "$w/www/cos-tools/$b2/"
        cp "$bkt/$f" "$w/www/cos-tools/$b3/lakitu-arm64/"
    done
    cp "$bkt/extensions/gpu/"* "$w/www/cos-tools/$b2/extensions/gpu/"
    printf 'CHROMEOS_RELEASE_BOARD=lakitu-arm64\nCHROMEOS_RELEASE_VERSION=%s\n' "$b3" >"$w/lsb-release"
    head -c 100000 /dev/urandom >"$w/www/nvidia/tesla/$V/NVIDIA-Linux-x86_64-$V.run"
    echo '[]' >"$w/faults.json"
    python3 "$SRC/tests/tools/httpd.py" --dir "$w/www" --port-file "$w/port" --log "$w/http.log" \
        --faults "$w/faults.json" --lifetime 1800 --goog-hash &
    wait_port "$w/port" $! "cos_fetch: the bucket's stand-in (httpd.py)"
    port=$(cat "$w/port")
    fca() { "$SRC/scripts/fetch-cos-artifacts" --base-url "http://127.0.0.1:$port/cos-tools" \
        --sdk-base-url "http://127.0.0.1:$port/chromiumos-sdk" \
        --driver-base-url "http://127.0.0.1:$port/nvidia" --retries 0 --timeout 10 "$@"; }
    # A cut transfer: the first run fails naming it, the second resumes where it stopped.
    echo '[{"path": "/cos-tools/'"$b"'/lakitu/kernel-headers.tgz", "action": "truncate", "at": 700000, "times": 1}]' >"$w/faults.json"
    rc 1 "$w/cut.log" fca "$b" --out "$w/out" --driver-run
    has "$w/cut.log" "kernel-headers.tgz: http://127.0.0.1:$port/cos-tools/$b/lakitu/kernel-headers.tgz failed after 1 attempts"
    [ "$(stat -c %s "$w/out/kernel-headers.tgz.part")" = 700000 ] || fail "no partial file kept"
    rc 0 "$w/ok.log" fca "$b" --out "$w/out" --driver-run
    has "$w/ok.log" "kernel-headers.tgz: resuming at byte 700000"
    grep -q '"path": "/cos-tools/'"$b"'/lakitu/kernel-headers.tgz", "range": "bytes=700000-"' "$w/http.log" ||
        fail "no Range request"
    has "$w/ok.log" "toolchain.tar.xz: "
    has "$w/ok.log" "driver $V: Google's signatures, Google's precompiled open modules"
    grep '"path": "/cos-tools/'"$b"'/lakitu/nvidia-drivers-'"$V"'.tgz"' "$w/http.log" | grepq '"status": 200' ||
        fail "the precompiled modules not fetched where the installer reads them"
    for f in kernel-headers.tgz toolchain_env toolchain.tar.xz "nvidia-drivers-$V-signature.tar.gz" \
        "nvidia-drivers-$V.tgz" "NVIDIA-Linux-x86_64-$V.run"; do
        [ -s "$w/out/$f" ] || fail "no $f"
    done
    cmp "$w/out/kernel-headers.tgz" "$bkt/kernel-headers.tgz" || fail "the resumed file differs"
    cmp "$w/out/toolchain/bin/x86_64-cros-linux-gnu-clang" "$w/tc/bin/x86_64-cros-linux-gnu-clang" ||
        fail "toolchain/ unpacked wrong"
    (cd "$w/out" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not match"
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["artifacts"]; assert all(r["md5_checked"] for r in a), a' \
        "$w/out/artifacts.json" || fail "the server's MD5 was not checked"
    # A second run fetches nothing.
    local before
    before=$(grep -c '"status": 20[06]' "$w/http.log")
    rc 0 "$w/again.log" fca "$b" --out "$w/out" --driver-run
    [ "$(grep -c '"status": 20[06]' "$w/http.log")" = "$before" ] || fail "a complete fetch fetched again"
    # A build with nothing there, a driver version Google has no signatures for, and an
    # object whose bytes are not what the server's x-goog-hash says.
    rc 3 "$w/none.log" fca 18244.999.1 --out "$w/none"
    has "$w/none.log" "COS build 18244.999.1 has no artifacts at http://127.0.0.1:$port/cos-tools/18244.999.1/lakitu/ (board lakitu) nor http://127.0.0.1:$port/cos-tools/18244.999.1/ (the flat layout)"
    rc 0 "$w/nosig.log" fca "$b" --out "$w/out" --driver-version 550.90.07
    has "$w/nosig.log" "driver 550.90.07: no signatures (Google signs only the versions it ships for this build"
    echo '[{"path": "/cos-tools/'"$b"'/lakitu/toolchain_env", "headers": {"x-goog-hash": "crc32c=AAAAAA==,md5=1B2M2Y8AsgTpgAmY7PhCfg=="}}]' >"$w/faults.json"
    rc 1 "$w/md5.log" fca "$b" --out "$w/md5"
    has "$w/md5.log" "toolchain_env: the server's MD5 for http://127.0.0.1:$port/cos-tools/$b/lakitu/toolchain_env is d41d8cd98f00b204e9800998ecf8427e, the bytes received hash to"
    [ ! -e "$w/md5/toolchain_env" ] && [ ! -e "$w/md5/toolchain_env.part" ] || fail "a refused file was kept"
    # The flat layout, tried after the board's and said so; the board from a node's
    # /etc/lsb-release (CHROMEOS_RELEASE_BOARD, as the installer's EnvReader reads it).
    echo '[]' >"$w/faults.json"
    rc 0 "$w/flat.log" fca "$b2" --out "$w/flat"
    has "$w/flat.log" "COS $b2: no kernel-headers.tgz at http://127.0.0.1:$port/cos-tools/$b2/lakitu/ (the board layout, cos-gpu-installer's), trying the flat layout http://127.0.0.1:$port/cos-tools/$b2/"
    has "$w/flat.log" "COS $b2 (flat layout, no board) in $w/flat"
    has "$w/flat.log" "driver $V: Google's signatures, Google's precompiled open modules"
    cmp "$w/flat/nvidia-drivers-$V.tgz" "$bkt/nvidia-drivers-$V.tgz" || fail "flat: precompiled modules"
    rc 0 "$w/arm.log" fca "$b3" --out "$w/arm" --lsb-release "$w/lsb-release"
    has "$w/arm.log" "board lakitu-arm64 (CHROMEOS_RELEASE_BOARD of $w/lsb-release)"
    has "$w/arm.log" "COS $b3 (lakitu-arm64) in $w/arm"
    rc 2 "$w/armboth.log" fca "$b3" --out "$w/arm" --lsb-release "$w/lsb-release" --board lakitu
    has "$w/armboth.log" "--board lakitu and $w/lsb-release's CHROMEOS_RELEASE_BOARD=lakitu-arm64 disagree"
    ok "cos-fetch: the bucket's layout fetched, resumed after a cut, nothing fetched twice; a missing build, unsigned version and MD5 mismatch named; precompiled modules at BUILD_ID/BOARD/, the flat layout as fallback, the board from lsb-release"
}

t_fleet() {
    local w=$W/fleet b=18244.151.14
    mkdir -p "$w/tgz/usr/src"
    cp -rL "/usr/src/linux-headers-$R" "$w/tgz/usr/src/"
    tar -C "$w/tgz" -czf "$w/kernel-headers.tgz" usr && rm -rf "$w/tgz"
    # A mixed fleet: a Debian pool built from a driver source, a COS build from its
    # kernel-headers.tgz, and an image nobody can build for here (no build_args).
    cat >"$w/fleet.json" <<EOF
{"fleet": 1, "images": [
  {"name": "debian-pool", "os": "debian", "kernel": "$R", "driver_versions": ["$V"],
   "flavours": ["proprietary"], "build_args": ["--source", "$W/src"]},
  {"os": "cos", "build": "$b", "kernel": "$R", "driver_versions": ["$V"],
   "build_args": ["--source", "$W/src", "--kernel-headers", "$w/kernel-headers.tgz"]},
  {"name": "next-image", "os": "debian", "kernel": "6.1.0-99-amd64", "driver_versions": ["$V"]}
]}
EOF
    local bf=("$SRC/scripts/build-fleet" --repo "$w/repo" --repo-key "$W/keys/repo.pem"
        --installer "$BIN" --work "$w/work")
    local common=(-- --sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt" --jobs 2)
    rc 1 "$w/first.log" "${bf[@]}" "$w/fleet.json" "${common[@]}"
    grep -q "^debian-pool  *$V  *proprietary  *built  *in " "$w/first.log" || { cat "$w/first.log"; fail "debian-pool not built"; }
    grep -q "^cos $b $R  *$V  *auto  *built " "$w/first.log" || { cat "$w/first.log"; fail "the COS row not built"; }
    grep -q "^next-image  *$V  *auto  *failed  *not served (.*) and the row has no build_args" "$w/first.log" ||
        { cat "$w/first.log"; fail "next-image not failed with its reason"; }
    has "$w/first.log" "build-fleet: 2 built, 1 failed"
    # A second run builds nothing.
    rc 1 "$w/second.log" "${bf[@]}" "$w/fleet.json" "${common[@]}"
    grep -q "build-fleet: building" "$w/second.log" && fail "the second run built again"
    has "$w/second.log" "build-fleet: 1 failed, 2 skipped"
    grep -q "^cos $b $R  *$V  *auto  *skipped  *served: driver $V, packages/$R/x86_64/nvidia-$V-cos-$b-proprietary.tar.zst" "$w/second.log" ||
        { cat "$w/second.log"; fail "the COS row not skipped as served"; }
    # coverage answers every row from the same file: exit 3 naming the one not served.
    openssl pkey -in "$W/keys/repo.pem" -pubout -out "$w/repo-pub.pem"
    local cov=("$BIN" coverage --repo "file://$w/repo" --repo-key "$w/repo-pub.pem")
    rc 3 "$w/cov.log" "${cov[@]}" --fleet "$w/fleet.json"
    has "$w/cov.log" "served: debian-pool: '$V' (proprietary) is driver $V, package packages/$R/x86_64/nvidia-$V-debian-proprietary.tar.zst"
    has "$w/cov.log" "served: cos build $b kernel $R (x86_64): '$V' (auto) is driver $V"
    has "$w/cov.log" "not served: next-image: '$V' (auto): "
    has "$w/cov.log" "1 of the fleet's 3 questions are not served, first next-image: '$V' (auto)"
    python3 - "$w/fleet.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
f["images"] = f["images"][:2]
json.dump(f, open(sys.argv[1] + ".served", "w"))
PY
    "${cov[@]}" --fleet "$w/fleet.json.served" --json >"$w/cov-ok.json" 2>"$w/cov-ok.log" ||
        fail "coverage --fleet of the served rows exited $?"
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["asked"] == 2 and o["not_served"] == 0 and all(a["served"] for a in o["answers"]), o' \
        "$w/cov-ok.json" || fail "coverage --json"

    # A pool that enforces signatures and trusts only Google's key: our build is not it.
    python3 - "$w/fleet.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
f["images"] = [dict(f["images"][1], module_signer="sha256:" + "0" * 64)]
json.dump(f, open(sys.argv[1] + ".google", "w"))
PY
    rc 3 "$w/cov-google.log" "${cov[@]}" --fleet "$w/fleet.json.google"
    has "$w/cov-google.log" "not served: cos build $b kernel $R (x86_64): '$V' (auto): its kernel loads only modules signed by the certificate sha256:$(printf '0%.0s' $(seq 64)); driver $V's package is signed by 'Stand-in vendor' (key "
    has "$w/cov-google.log" "; fix: Google signs only the driver versions it ships for each COS build"
    "${cov[@]}" --fleet "$w/fleet.json.google" --json >"$w/cov-google.json" 2>/dev/null && fail "exit 0 for the Google pool"
    for j in cov-ok cov-google; do
        python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`coverage --fleet FILE --json`' "$w/$j.json" ||
            fail "coverage --fleet --json ($j) disagrees with docs/json.md"
    done
    ok "fleet: a mixed list fills the repository, a second run builds nothing, coverage answers every row, the missing one exits 3 by name"
}

t_fabricmanager() {
    local w=$W/fabricmanager a
    # NVIDIA's archive layout: bin/, etc/fabricmanager.cfg, share/nvidia/nvswitch/ topologies.
    for v in "$V" 550.90.07; do
        a=$w/fabricmanager-linux-x86_64-$v-archive
        mkdir -p "$a/bin" "$a/etc" "$a/share/nvidia/nvswitch"
        cc -O1 -DSTANDIN_FABRIC -DSTANDIN_VERSION="\"$v\"" -o "$a/bin/nv-fabricmanager" \
            "$SRC/tests/standin/daemon.c"
        printf 'LOG_LEVEL=4\nDAEMONIZE=1\n' >"$a/etc/fabricmanager.cfg"
        echo topology >"$a/share/nvidia/nvswitch/dgxh100_hgxh100_topology"
        tar -C "$w" -cJf "$a.tar.xz" "$(basename "$a")"
    done
    rc 1 "$w/other.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" \
        --fabricmanager "$w/fabricmanager-linux-x86_64-550.90.07-archive.tar.xz"
    has "$w/other.log" "is Fabric Manager 550.90.07, the driver is $V: Fabric Manager must be the driver's own version"
    grep -q "compiling\|signing" "$w/other.log" && fail "built before the version was checked"
    mkdir -p "$w/empty"
    rc 1 "$w/empty.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --fabricmanager "$w/empty"
    has "$w/empty.log" "has no bin/nv-fabricmanager: not a Fabric Manager archive"
    rc 0 "$w/ok.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" \
        --fabricmanager "$w/fabricmanager-linux-x86_64-$V-archive.tar.xz"
    has "$w/ok.log" "Fabric Manager $V packed: bin/nv-fabricmanager, share/nvidia/nvswitch/ (fabricmanager.cfg, dgxh100_hgxh100_topology)"
    mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$(pkg_of "$w/work")"
    [ -x "$w/pkg/bin/nv-fabricmanager" ] || fail "no bin/nv-fabricmanager in the package"
    "$w/pkg/bin/nv-fabricmanager" --version | grepq -x "Fabric Manager version is : $V" ||
        fail "another nv-fabricmanager"
    cmp "$w/pkg/share/nvidia/nvswitch/fabricmanager.cfg" "$w/fabricmanager-linux-x86_64-$V-archive/etc/fabricmanager.cfg" ||
        fail "the config"
    [ -f "$w/pkg/share/nvidia/nvswitch/dgxh100_hgxh100_topology" ] || fail "the topology"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["fabricmanager"]["version"] == sys.argv[2], i' \
        "$w/pkg/share/nvidia/build-info.json" "$V" || fail "build-info.json"
    ok "fabricmanager: NVIDIA's archive packed; another version and no binary refused before the build"

    # NVLSM, as NVIDIA's nvlsm .deb lays it out (date-versioned, its own package).
    local d=$w/nvlsm-deb
    mkdir -p "$d/DEBIAN" "$d/opt/nvidia/nvlsm/sbin" "$d/usr/share/nvidia/nvlsm"
    printf 'Package: nvlsm\nVersion: 2025.10.14-1\nArchitecture: amd64\nMaintainer: test\nDescription: stand-in\n' \
        >"$d/DEBIAN/control"
    cc -O1 -DSTANDIN_NVLSM -o "$d/opt/nvidia/nvlsm/sbin/nvlsm" "$SRC/tests/standin/daemon.c"
    echo "log_flags 0x03" >"$d/usr/share/nvidia/nvlsm/nvlsm.conf"
    dpkg-deb -b -Zgzip "$d" "$w/nvlsm_2025.10.14-1_amd64.deb" >/dev/null
    fm=(--fabricmanager "$w/fabricmanager-linux-x86_64-$V-archive.tar.xz")
    rc 1 "$w/nvlsm-alone.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --nvlsm "$w/nvlsm_2025.10.14-1_amd64.deb"
    has "$w/nvlsm-alone.log" "--nvlsm without --fabricmanager: NVLSM only serves Fabric Manager"
    rc 1 "$w/nvlsm-empty.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" "${fm[@]}" --nvlsm "$w/empty"
    has "$w/nvlsm-empty.log" "has no nvlsm executable (looked for opt/nvidia/nvlsm/sbin/nvlsm"
    mkdir -p "$w/nvlsm-arm/bin"
    printf '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00' >"$w/nvlsm-arm/bin/nvlsm"
    rc 1 "$w/nvlsm-arm.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" "${fm[@]}" --nvlsm "$w/nvlsm-arm"
    has "$w/nvlsm-arm.log" "bin/nvlsm is not an ELF executable for x86_64"
    grep -q "compiling\|signing" "$w/nvlsm-empty.log" "$w/nvlsm-arm.log" && fail "built before NVLSM was checked"
    rc 0 "$w/nvlsm.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" "${fm[@]}" --nvlsm "$w/nvlsm_2025.10.14-1_amd64.deb"
    has "$w/nvlsm.log" "NVLSM 2025.10.14-1 packed: bin/nvlsm, share/nvidia/nvlsm/nvlsm.conf"
    rm -rf "$w/pkg" && mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$(pkg_of "$w/work")"
    cmp "$w/pkg/bin/nvlsm" "$d/opt/nvidia/nvlsm/sbin/nvlsm" || fail "bin/nvlsm is not the package's"
    cmp "$w/pkg/share/nvidia/nvlsm/nvlsm.conf" "$d/usr/share/nvidia/nvlsm/nvlsm.conf" || fail "nvlsm.conf"
    [ -x "$w/pkg/bin/nv-fabricmanager" ] || fail "Fabric Manager left out beside NVLSM"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["nvlsm"] == {"version": "2025.10.14-1", "config": True}, i' \
        "$w/pkg/share/nvidia/build-info.json" || fail "build-info.json: nvlsm"
    ok "fabricmanager: NVIDIA's nvlsm .deb packed beside Fabric Manager; no binary, another architecture and --nvlsm alone refused before the build"
}

# imex_run DIR CFG LOG: the packaged nvidia-imex of DIR started as the compute-domain daemon
# starts it (NVIDIA/k8s-dra-driver-gpu cmd/compute-domain-daemon/main.go:286: "nvidia-imex
# -c CFG", in the foreground), its pid in $imex_pid once nvidia-imex-ctl -q says READY.
# Each program runs under "${imex_exec[@]}" (empty: directly; qemu-aarch64 for the arm64
# package's programs, whose signals qemu's user mode hands to the program's own handlers).
imex_exec=()
imex_run() {
    "${imex_exec[@]}" "$1/bin/nvidia-imex" -c "$2" 2>"$3" &
    imex_pid=$!
    for _ in $(seq 300); do
        [ "$("${imex_exec[@]}" "$1/bin/nvidia-imex-ctl" -c "$2" -q 2>/dev/null)" = READY ] && return 0
        kill -0 $imex_pid 2>/dev/null || { cat "$3"; fail "nvidia-imex exited"; }
        sleep 0.1
    done
    kill $imex_pid; fail "nvidia-imex never READY: $(cat "$3")"
}

# imex_config FILE NODES PORT [LINE...]: the compute-domain daemon's config as it renders
# templates/compute-domain-daemon-config.tmpl.cfg (its keys; the pod IP 127.0.0.1), then
# the lines given.
imex_config() {
    local f=$1 nodes=$2 port=$3
    shift 3
    printf '%s\n' "# rendered" LOG_LEVEL=4 LOG_FILE_NAME= DAEMONIZE=0 BIND_INTERFACE_IP= \
        SERVER_PORT=50000 "IMEX_NODE_CONFIG_FILE=$nodes" IMEX_WAIT_FOR_QUORUM=RECOVERY \
        IMEX_CMD_ENABLED=1 IMEX_CMD_BIND_INTERFACE_IP=127.0.0.1 "IMEX_CMD_PORT=$port" \
        IMEX_CMD_UNIX_DOMAIN_PATH= "$@" >"$f"
}

# wait_log FILE TEXT: until FILE has TEXT (30 s at most: the event, not the time, is awaited).
wait_log() {
    for _ in $(seq 300); do grep -q -- "$2" "$1" && return 0; sleep 0.1; done
    fail "$1 never said: $2"
}

# The packaged stand-ins of PKG as the compute-domain daemon runs them (its config's keys,
# its nodes file of IPs or DNS names; main.go:433-456: exactly "READY\n" and exit 0),
# SIGUSR1 re-reading the nodes, SIGTERM exit 0, and each bad config one line and exit 1.
# imex_programs PKG W [RUNNER...]: RUNNER (qemu-aarch64) runs each program (imex_run).
imex_programs() {
    local pkg=$1 w=$2 port st=0 n=0 line cause
    imex_exec=("${@:3}")
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '10.0.0.1\ncompute-domain-daemon-0\n' >"$w/nodes.cfg"
    imex_config "$w/imexd.cfg" "$w/nodes.cfg" "$port"
    imex_run "$pkg" "$w/imexd.cfg" "$w/imexd.log"
    [ "$("${imex_exec[@]}" "$pkg/bin/nvidia-imex-ctl" -c "$w/imexd.cfg" -q | od -An -c | tr -s ' ')" = " R E A D Y \n" ] ||
        { kill $imex_pid; fail "nvidia-imex-ctl -q: not exactly READY"; }
    # A client gone before the answer (a probe killed by its timeout: a reset, so the answer's
    # write fails with EPIPE) does not take the daemon down; it serves the next one in turn.
    python3 -c 'import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()' "$port"
    [ "$("${imex_exec[@]}" "$pkg/bin/nvidia-imex-ctl" -c "$w/imexd.cfg" -q)" = READY ] ||
        { cat "$w/imexd.log"; fail "nvidia-imex gone after a client reset its connection"; }
    echo 'not a node!' >>"$w/nodes.cfg"
    kill -USR1 $imex_pid
    wait_log "$w/imexd.log" "state UNAVAILABLE"
    rc 1 "$w/ctl-bad.log" "${imex_exec[@]}" "$pkg/bin/nvidia-imex-ctl" -c "$w/imexd.cfg" -q
    has "$w/ctl-bad.log" "UNAVAILABLE nodes file '$w/nodes.cfg' line 3: 'not a node!' is not an IP address or a DNS name"
    printf '10.0.0.2\n' >"$w/nodes.cfg"
    kill -USR1 $imex_pid
    wait_log "$w/imexd.log" "nodes: 10.0.0.2$"
    [ "$("${imex_exec[@]}" "$pkg/bin/nvidia-imex-ctl" -c "$w/imexd.cfg" -N)" = 10.0.0.2 ] ||
        { kill $imex_pid; fail "nodes not re-read on SIGUSR1"; }
    kill -TERM $imex_pid
    wait $imex_pid || st=$?
    [ $st = 0 ] || fail "nvidia-imex exited $st on SIGTERM"
    rc 1 "$w/ctl-gone.log" "${imex_exec[@]}" "$pkg/bin/nvidia-imex-ctl" -c "$w/imexd.cfg" -q
    has "$w/ctl-gone.log" "nvidia-imex-ctl: cannot reach the IMEX daemon's command service at 127.0.0.1 port $port"
    while IFS='|' read -r line cause; do
        n=$((n + 1))
        imex_config "$w/bad$n.cfg" "$w/nodes.cfg" "$port" "$line"
        # Bounded: a config taken by mistake starts a daemon that never exits.
        rc 1 "$w/bad$n.log" timeout 20 "${imex_exec[@]}" "$pkg/bin/nvidia-imex" -c "$w/bad$n.cfg"
        has "$w/bad$n.log" "$cause"
        [ "$(wc -l <"$w/bad$n.log")" = 1 ] || fail "bad config $n: not one line"
    done <<BAD
IMEX_CMD_ENABLED=0|IMEX_CMD_ENABLED is 0: give IMEX_CMD_ENABLED=1
IMEX_CMD_PORT=65536|line 13: IMEX_CMD_PORT=65536 is not a port (1 to 65535)
SERVER_PORT=x|line 13: SERVER_PORT=x is not a port
IMEX_CMD_BIND_INTERFACE_IP=pod-ip|IMEX_CMD_BIND_INTERFACE_IP=pod-ip is not an IPv4 or IPv6 address
IMEX_CMD_BIND_INTERFACE_IP=|IMEX_CMD_BIND_INTERFACE_IP is missing or empty
IMEX_NODE_CONFIG_FILE=$w/none.cfg|cannot read the nodes file '$w/none.cfg': No such file or directory
IMEX_NODE_CONFIG_FILE=|IMEX_NODE_CONFIG_FILE is missing or empty
DAEMONIZE=yes|line 13: DAEMONIZE=yes: give 0 or 1
IMEX_CMD_PORT|line 13: 'IMEX_CMD_PORT' is not KEY=VALUE
BAD
}

# IMEX (build-driver-package --imex) with a stand-in driver of the 570 branch: NVIDIA's
# nvidia-imex .deb (tests/packaging/make-imex-deb) packed for amd64 and arm64 into
# bin/nvidia-imex, bin/nvidia-imex-ctl and share/nvidia/imex/, build-info.json's "imex",
# the index's packages[].imex from the package's content (make-repo add); refused before
# anything is built: driver 535 (no IMEX), a package of another version, one without
# nvidia-imex-ctl, one for another architecture. The packaged stand-ins then run as the
# compute-domain daemon runs them (imex_programs): the amd64 package's directly, the arm64
# package's under qemu-aarch64.
t_imex() {
    local w=$W/imex v=570.172.08 ar h d pkg kind
    rm -rf "$w" && mkdir -p "$w/src/kernel" "$w/debs"
    "$SRC/scripts/make-standin-driver" "$v" "$w/standin" >/dev/null
    cp -L "$w/standin/lib64/"*.so."$v" "$w/standin/bin/nvidia-smi" "$w/src/"
    cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$w/src/kernel/"
    sed "s/NV_VERSION=$V/NV_VERSION=$v/" "$W/src/kernel/Makefile" >"$w/src/kernel/Makefile"
    local deb=$w/debs/nvidia-imex-570_$v-1_amd64.deb deb64=$w/debs/nvidia-imex-570_$v-1_arm64.deb
    local other=nvidia-imex-570_570.133.20-1_amd64
    "$SRC/tests/packaging/make-imex-deb" amd64 "$v" "$w/debs" >/dev/null
    "$SRC/tests/packaging/make-imex-deb" arm64 "$v" "$w/debs" >/dev/null
    "$SRC/tests/packaging/make-imex-deb" amd64 570.133.20 "$w/debs" >/dev/null
    local ndeb=$w/debs/libnvsdm-570_$v-1_amd64.deb
    "$SRC/tests/packaging/make-nvsdm-deb" amd64 "$v" "$w/debs" >/dev/null
    "$SRC/tests/packaging/make-nvsdm-deb" arm64 "$v" "$w/debs" >/dev/null
    "$SRC/tests/packaging/make-nvsdm-deb" amd64 570.133.20 "$w/debs" >/dev/null
    local sign=(--sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt")
    ibdp() { bdp --source "$w/src" "${sign[@]}" --work "$w/work" --repo "$w/repo" "$@"; }
    # Refused before anything is built, each by name: a tar archive of the other version's
    # package, a directory of one without nvidia-imex-ctl, the arm64 .deb for x86_64.
    rc 1 "$w/535.log" bdp --source "$W/src" "${sign[@]}" --work "$w/work-535" --repo "$w/repo" \
        --imex "$deb"
    has "$w/535.log" "--imex: driver $V is of the 535 branch, which has no IMEX (NVIDIA ships nvidia-imex from the 550 branch)"
    mkdir -p "$w/other" && dpkg-deb -x "$w/debs/$other.deb" "$w/other"
    tar -C "$w/other" -cf "$w/debs/$other.tar" .
    rc 1 "$w/other.log" ibdp --imex "$w/debs/$other.tar"
    has "$w/other.log" "is IMEX 570.133.20, the driver is $v: IMEX must be the driver's own version; take nvidia-imex-570_$v-1_amd64.deb"
    d=$w/nvidia-imex-570_$v-1_amd64
    dpkg-deb -x "$deb" "$d" && rm "$d/usr/bin/nvidia-imex-ctl"
    rc 1 "$w/noctl.log" ibdp --imex "$d"
    has "$w/noctl.log" "has no nvidia-imex-ctl (looked for usr/bin/nvidia-imex-ctl, usr/sbin/nvidia-imex-ctl, bin/nvidia-imex-ctl): not NVIDIA's nvidia-imex package"
    rc 1 "$w/arch.log" ibdp --imex "$deb64"
    has "$w/arch.log" "usr/bin/nvidia-imex is not an ELF executable for x86_64: take the nvidia-imex package of the node's architecture (amd64)"
    # --nvsdm (scripts/bdp/nvsdm.py): the same, before anything is built.
    rc 1 "$w/n535.log" bdp --source "$W/src" "${sign[@]}" --work "$w/work-535" --repo "$w/repo" \
        --nvsdm "$ndeb"
    has "$w/n535.log" "--nvsdm: driver $V is of the 535 branch, for which NVIDIA ships no libnvsdm (it comes with the 560 branch)"
    rc 1 "$w/nother.log" ibdp --nvsdm "$w/debs/libnvsdm-570_570.133.20-1_amd64.deb"
    has "$w/nother.log" "is libnvsdm 570.133.20, the driver is $v: libnvsdm must be the driver's own version; take libnvsdm-570_$v-1_amd64.deb"
    rc 1 "$w/narch.log" ibdp --nvsdm "$w/debs/libnvsdm-570_$v-1_arm64.deb"
    has "$w/narch.log" "usr/lib/aarch64-linux-gnu/libnvsdm.so.1 is built for aarch64, not an ELF file for x86_64 (--arch): give the x86_64 build's files"
    ! grep -q "compiling\|signing" "$w/535.log" "$w/other.log" "$w/noctl.log" "$w/arch.log" \
        "$w/n535.log" "$w/nother.log" "$w/narch.log" || fail "built before IMEX or libnvsdm was checked"
    [ ! -e "$w/repo/index.json" ] || fail "a refused build published"
    # Without --imex the index says nothing of IMEX; with it, imex: true (the modules
    # compiled once, reused by the second build).
    rc 0 "$w/none.log" ibdp
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["drivers"][0]["packages"]; assert len(p) == 1 and "imex" not in p[0], p' \
        "$w/repo/index.json" || fail "imex in the index of a package without it"
    rc 0 "$w/ok.log" ibdp --imex "$deb" --nvsdm "$ndeb"
    has "$w/ok.log" "libnvsdm $v packed: lib64/libnvsdm.so.1"
    has "$w/ok.log" "IMEX $v packed: bin/nvidia-imex, bin/nvidia-imex-ctl, share/nvidia/imex/ (config.cfg, nodes_config.cfg)"
    pkg=$w/pkg && mkdir -p "$pkg" "$w/deb"
    tar -C "$pkg" -xf "$w/work/nvidia-$v-proprietary-$R.tar.zst"
    dpkg-deb -x "$deb" "$w/deb"
    cmp "$pkg/bin/nvidia-imex" "$w/deb/usr/bin/nvidia-imex" || fail "bin/nvidia-imex is not the package's"
    cmp "$pkg/bin/nvidia-imex-ctl" "$w/deb/usr/bin/nvidia-imex-ctl" || fail "bin/nvidia-imex-ctl is not the package's"
    cmp "$pkg/share/nvidia/imex/config.cfg" "$w/deb/etc/nvidia-imex/config.cfg" || fail "config.cfg"
    cmp "$pkg/share/nvidia/imex/nodes_config.cfg" "$w/deb/etc/nvidia-imex/nodes_config.cfg" ||
        fail "nodes_config.cfg"
    [ -z "$(find "$pkg" -name '*.service')" ] || fail "the systemd unit packed"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["imex"] == {"version": sys.argv[2]}, i' \
        "$pkg/share/nvidia/build-info.json" "$v" || fail "build-info.json: imex"
    # libnvsdm: NVIDIA's file and its linker name in lib64/, nothing else of its package.
    dpkg-deb -x "$ndeb" "$w/deb"
    cmp "$pkg/lib64/libnvsdm.so.1" "$w/deb/usr/lib/x86_64-linux-gnu/libnvsdm.so.1" ||
        fail "lib64/libnvsdm.so.1 is not the package's"
    [ "$(readlink "$pkg/lib64/libnvsdm.so")" = libnvsdm.so.1 ] || fail "lib64/libnvsdm.so"
    [ -z "$(find "$pkg" -name nvsdm_cli -o -name nvsdm.h)" ] || fail "nvsdm_cli or nvsdm.h packed"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["nvsdm"] == {"version": sys.argv[2], "library": "libnvsdm.so.1", "file": "libnvsdm.so.1", "needs": []}, i' \
        "$pkg/share/nvidia/build-info.json" "$v" || fail "build-info.json: nvsdm"
    cc -O1 -o "$w/dcgm-load" "$SRC/tests/standin/dcgm-load.c" -ldl
    env -u LD_PRELOAD LD_LIBRARY_PATH="$pkg/lib64" "$w/dcgm-load" >"$w/load.log" ||
        fail "DCGM's lookup in lib64/: $(cat "$w/load.log")"
    grep -qx "nvsdm: loaded $pkg/lib64/libnvsdm.so.1" "$w/load.log" || fail "DCGM's lookup: $(cat "$w/load.log")"
    imex_programs "$pkg" "$w"

    # arm64: the same driver cross-built against Debian's arm64 headers, NVIDIA's arm64
    # package given as the directory it unpacks to, into the same repository.
    ar=$("$SRC/scripts/fetch-debian-kernel" arm64 "$SRC/build/kernels") || fail "fetch-debian-kernel arm64"
    h=$SRC/build/kernels/$ar/root/usr/src/linux-headers-$ar
    CC=aarch64-linux-gnu-gcc KERNEL_RELEASE=$ar "$SRC/scripts/make-standin-driver" "$v" "$w/standin64" >/dev/null
    mkdir -p "$w/src64" && cp -r "$w/src/kernel" "$w/src64/"
    cp -L "$w/standin64/lib64/"*.so."$v" "$w/standin64/bin/nvidia-smi" "$w/src64/"
    d=$w/nvidia-imex-570_$v-1_arm64
    dpkg-deb -x "$deb64" "$d"
    rc 0 "$w/arm64.log" "$BDP" --kernel "$ar" --arch arm64 --headers "$h" --installer "$BIN" \
        --repo "$w/repo" --repo-key "$W/keys/repo.pem" --jobs 2 --source "$w/src64" "${sign[@]}" \
        --work "$w/work64" --imex "$d"
    has "$w/arm64.log" "IMEX $v packed: bin/nvidia-imex, bin/nvidia-imex-ctl, share/nvidia/imex/"
    mkdir -p "$w/pkg64" "$w/run64"
    tar -C "$w/pkg64" -xf "$w/work64/nvidia-$v-proprietary-$ar.tar.zst"
    for kind in nvidia-imex nvidia-imex-ctl; do
        readelf -h "$w/pkg64/bin/$kind" | grepq "Machine: *AArch64" || fail "bin/$kind is not aarch64"
        cmp "$w/pkg64/bin/$kind" "$d/usr/bin/$kind" || fail "arm64 bin/$kind is not the package's"
    done
    # GB200 and A4X nodes are arm64: the packed arm64 programs run as the compute-domain
    # daemon runs them, each under qemu-aarch64 (user mode), from the unpacked package's
    # bin/: the files the installer hard-links into usr/bin/ (installer/stage/locate.c,
    # link_programs), static programs with no launcher in front of them.
    imex_programs "$w/pkg64" "$w/run64" qemu-aarch64
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["drivers"]
got = sorted((p["arch"], p.get("imex"), p.get("nvsdm")) for v in d for p in v["packages"])
assert got == [("aarch64", True, None), ("x86_64", True, True)], got' "$w/repo/index.json" ||
        fail "the index's packages[].imex and packages[].nvsdm"

    # make-repo add: from the package's content, both programs or nothing.
    mkdir -p "$w/half/bin" "$w/both/bin"
    cp "$pkg/bin/nvidia-imex" "$w/half/bin/" && cp "$pkg/bin/nvidia-imex"* "$w/both/bin/"
    for kind in half both; do
        "$SRC/scripts/make-repo" pack "$w/$kind" "$w/$kind.tar.zst" >/dev/null
        "$SRC/scripts/make-repo" add --repo "$w/repo-$kind" --key "$W/keys/repo.pem" \
            --version "$v" --kernel "$R" --arch x86_64 "$w/$kind.tar.zst" >/dev/null
    done
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]; assert "imex" not in p, p' \
        "$w/repo-half/index.json" || fail "imex set for a package with nvidia-imex alone"
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]; assert p["imex"] is True, p' \
        "$w/repo-both/index.json" || fail "imex not set for a package with both programs"
    ok "imex: NVIDIA's nvidia-imex .deb packed for amd64 and arm64 (bin/, share/nvidia/imex/, build-info.json, the index's imex from the content); 535, another version, no nvidia-imex-ctl, another architecture refused before the build; the stand-ins of both architectures (arm64 under qemu-aarch64) run as the compute-domain daemon runs them; libnvsdm packed into lib64/ and found there by DCGM's lookup, its 535, another version, arm64 refused"
}

# arm64: Debian's arm64 kernel fetched and unpacked (scripts/fetch-debian-kernel, cached
# in build/kernels), the stand-in driver cross-built for it (the user space with
# aarch64-linux-gnu-gcc, the modules by build-driver-package --arch arm64 through Debian's
# cross toolchain) into the same repository as the amd64 package of the same version: one
# index serves both, and the installer's coverage answers each architecture with its own.
# Refused by name: the amd64 headers for --arch arm64 (and the other way round), amd64
# user space in an arm64 package, an architecture the index does not know.
t_arm64() {
    local w=$W/arm64 ar h k
    rm -rf "$w" && mkdir -p "$w/src/kernel"
    ar=$("$SRC/scripts/fetch-debian-kernel" arm64 "$SRC/build/kernels") || fail "fetch-debian-kernel arm64"
    h=$SRC/build/kernels/$ar/root/usr/src/linux-headers-$ar
    CC=aarch64-linux-gnu-gcc KERNEL_RELEASE=$ar "$SRC/scripts/make-standin-driver" "$V" "$w/standin" >/dev/null
    cp -L "$w/standin/lib64/"*.so."$V" "$w/standin/bin/nvidia-smi" "$w/src/"
    cp "$W/src/kernel/"* "$w/src/kernel/"
    local sign=(--sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt")
    a64() { "$BDP" --kernel "$ar" --installer "$BIN" --repo "$w/repo" --repo-key "$W/keys/repo.pem" \
        --jobs 2 "$@"; }
    rc 1 "$w/arch.log" a64 --arch sparc64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work"
    has "$w/arch.log" "--arch sparc64: give the node's uname -m, x86_64 or aarch64 (or amd64 or arm64)"
    rc 1 "$w/amd64-headers.log" a64 --arch arm64 --headers "/lib/modules/$R/build" --source "$w/src" \
        "${sign[@]}" --work "$w/work"
    has "$w/amd64-headers.log" "are an x86_64 kernel's (CONFIG_X86_64=y), not an aarch64 one's (--arch aarch64)"
    rc 1 "$w/arm64-headers.log" a64 --arch x86_64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work"
    has "$w/arm64-headers.log" "are an aarch64 kernel's (CONFIG_ARM64=y), not an x86_64 one's (--arch x86_64)"
    rm -rf "$w/mixed" && cp -r "$w/src" "$w/mixed" && cp -L "$W/standin/lib64/libcuda.so.$V" "$w/mixed/"
    rc 1 "$w/mixed.log" a64 --arch arm64 --headers "$h" --source "$w/mixed" "${sign[@]}" --work "$w/work"
    has "$w/mixed.log" "libcuda.so.$V is built for x86_64, not an ELF file for aarch64 (--arch)"
    [ ! -e "$w/repo/index.json" ] || fail "a refused build published"
    rc 1 "$w/param.log" a64 --arch arm64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work" \
        --module-param "nvidia.NVreg_X=a b"
    has "$w/param.log" "--module-param nvidia.NVreg_X=a b: give MODULE.KEY=VALUE"
    rc 0 "$w/arm64.log" a64 --arch arm64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work" --tag default \
        --module-param nvidia-drm.modeset=1 --module-param nvidia.NVreg_DeviceFileMode=432 \
        --module-param nvidia-drm.fbdev=1
    has "$w/arm64.log" "added packages/$ar/aarch64/nvidia-$V-proprietary.tar.zst"
    grep -q "aarch64-linux-gnu-gcc" "$w/work/build/$V-proprietary-$ar/build.log" ||
        fail "the arm64 modules were not built with the cross toolchain"
    rm -rf "$w/pkg" && mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$w/work/nvidia-$V-proprietary-$ar.tar.zst"
    for k in "$w/pkg/kernel/"*.ko; do
        [ "$(modinfo -F vermagic "$k")" = "$ar SMP mod_unload modversions aarch64" ] ||
            fail "$(basename "$k"): vermagic $(modinfo -F vermagic "$k")"
    done
    for k in "$w/pkg/kernel/"*.ko "$w/pkg/lib64/libcuda.so.1" "$w/pkg/bin/nvidia-smi"; do
        readelf -h "$k" | grepq "Machine: *AArch64" || fail "$k is not an aarch64 object"
    done
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["arch"] == "aarch64" and i["toolchain"]["cross_compile"] == "aarch64-linux-gnu-" and i["module_params"] == ["nvidia-drm.modeset=1", "nvidia.NVreg_DeviceFileMode=432", "nvidia-drm.fbdev=1", "nvidia.NVreg_CoherentGPUMemoryMode=driver"] and i["platform_params"] == ["nvidia.NVreg_CoherentGPUMemoryMode=driver"], i' \
        "$w/pkg/share/nvidia/build-info.json" || fail "build-info.json: arch, cross_compile, module_params"
    # The defaults as the installer reads them: one options line per module; on arm64 the
    # Grace default too, as the stand-in nvidia.ko takes NVreg_CoherentGPUMemoryMode.
    [ "$(grep -v '^#' "$w/pkg/kernel/module-params.conf")" = "$(printf 'options nvidia_drm modeset=1 fbdev=1\noptions nvidia NVreg_DeviceFileMode=432 NVreg_CoherentGPUMemoryMode=driver')" ] ||
        fail "kernel/module-params.conf: $(cat "$w/pkg/kernel/module-params.conf")"
    has "$w/arm64.log" "the platform's defaults (aarch64): nvidia.NVreg_CoherentGPUMemoryMode=driver"
    # Left out on request, and replaced by the operator's own value.
    rc 0 "$w/noplat.log" a64 --arch arm64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work" \
        --repo "$w/repo-noplat" --no-platform-params
    ! tar -tf "$w/work/nvidia-$V-proprietary-$ar.tar.zst" | grepq module-params.conf ||
        fail "--no-platform-params: the package still has module-params.conf"
    rc 0 "$w/ownplat.log" a64 --arch arm64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work" \
        --repo "$w/repo-noplat" --module-param nvidia.NVreg_CoherentGPUMemoryMode=numa
    [ "$(tar -xOf "$w/work/nvidia-$V-proprietary-$ar.tar.zst" kernel/module-params.conf | grep -v '^#')" = \
        "options nvidia NVreg_CoherentGPUMemoryMode=numa" ] || fail "the operator's own NVreg_CoherentGPUMemoryMode"
    # The build is cached by what went into it, the sources' bytes among them: the same
    # tree is not compiled again, one changed in place under the same version is.
    has "$w/ownplat.log" "modules for $ar already built"
    echo "/* changed in place */" >>"$w/src/kernel/nvidia.c"
    rc 0 "$w/changed.log" a64 --arch arm64 --headers "$h" --source "$w/src" "${sign[@]}" --work "$w/work" \
        --repo "$w/repo-noplat"
    has "$w/changed.log" "compiling the proprietary modules of $V for $ar"
    # The amd64 package of the same version into the same repository.
    rc 0 "$w/amd64.log" a64 --kernel "$R" --source "$W/src" "${sign[@]}" --work "$w/work-amd64" --tag default
    # No Grace default on x86, where it would not apply.
    ! tar -tf "$w/work-amd64/nvidia-$V-proprietary-$R.tar.zst" | grepq module-params.conf ||
        fail "the amd64 package has module-params.conf"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["drivers"]
got = sorted((p["arch"], p["kernel"]) for v in d for p in v["packages"])
assert [v["version"] for v in d] == [sys.argv[2]] and got == sorted(
    [("aarch64", sys.argv[3]), ("x86_64", sys.argv[4])]), got' "$w/repo/index.json" "$V" "$ar" "$R" ||
        fail "one index does not list both architectures' packages"
    local cov=("$BIN" coverage --repo "file://$w/repo" --repo-key "$W/keys/repo-pub.pem" --os debian)
    openssl pkey -in "$W/keys/repo.pem" -pubout -out "$W/keys/repo-pub.pem" 2>/dev/null
    rc 0 "$w/cov-arm64.log" "${cov[@]}" --kernel "$ar" --arch arm64
    rc 0 "$w/cov-amd64.log" "${cov[@]}" --kernel "$R" --arch x86_64
    rc 3 "$w/cov-cross.log" "${cov[@]}" --kernel "$ar" --arch x86_64
    ok "arm64: stand-ins cross-built against Debian's arm64 headers ($ar), aarch64 throughout; one index for both architectures, coverage answers each; wrong headers, mixed user space, an unknown --arch refused"
}

# RHEL's kernel-devel RPM: a stand-in built with Debian's rpm tools from Debian's headers of
# this kernel, laid out as Red Hat lays the build tree out (tests/tools/make-kernel-devel-rpm).
# build-driver-package unpacks it with rpm2cpio, no RPM database, builds the modules against
# it, and names an RPM of another release.
t_rhel() {
    local w=$W/rhel rpm pkg
    mkdir -p "$w"
    rpm=$("$SRC/tests/tools/make-kernel-devel-rpm" "$R" "$w") || fail "the stand-in kernel-devel RPM"
    rc 1 "$w/wrong.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-devel-rpm "$rpm" \
        --kernel 5.14.0-427.13.1.el9_4.x86_64 --os rhel
    has "$w/wrong.log" "is the kernel-devel of $R, not of 5.14.0-427.13.1.el9_4.x86_64: take the kernel-devel RPM of the node's kernel"
    rc 0 "$w/ok.log" bdp --source "$W/src" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --kernel-devel-rpm "$rpm" --os rhel
    has "$w/ok.log" "added packages/$R/"
    [ -d "$w/work/kernel-devel/usr/src/kernels/$R" ] || fail "not unpacked into the work directory"
    pkg=$(python3 - "$W/repo/index.json" "$R" <<'PY2'
import json, sys
idx = json.load(open(sys.argv[1]))
print(next(p["path"] for d in idx["drivers"] for p in d["packages"]
           if p.get("os") == "rhel" and p["kernel"] == sys.argv[2]))
PY2
    ) || fail "the index lacks the rhel package"
    mkdir -p "$w/pkg"
    tar -C "$w/pkg" -xf "$W/repo/$pkg"
    [ "$(modinfo -F vermagic "$w/pkg/kernel/nvidia.ko")" = "$R SMP preempt mod_unload modversions " ] ||
        fail "vermagic: $(modinfo -F vermagic "$w/pkg/kernel/nvidia.ko")"
    ok "RHEL kernel-devel RPM: unpacked with rpm2cpio, the modules built against it ($R), an RPM of another release named"
}

# hostile_rpm NAME SPEC-LINES: a kernel-devel RPM of $hr (usr/src/kernels/$hr/Makefile and
# the %files lines SPEC-LINES, made in $w/br-NAME beforehand), built by rpmbuild.
hostile_rpm() {
    cat >"$w/$1.spec" <<SPEC
Name: kernel-devel
Version: 6.1.0
Release: $1
Summary: hostile stand-in
License: GPL-2.0-only
AutoReqProv: no
%define __os_install_post %{nil}
%define debug_package %{nil}
%define _build_id_links none
%description
A kernel-devel RPM crafted to reach outside the directory it is unpacked in.
%files
/usr/src/kernels/$hr/Makefile
$2
SPEC
    rpmbuild --quiet -bb --buildroot "$w/br-$1" --define "_topdir $w/rpm-$1" "$w/$1.spec" \
        >"$w/$1.rpmbuild.log" 2>&1 || { cat "$w/$1.rpmbuild.log"; fail "rpmbuild of $1"; }
    ls "$w/rpm-$1"/RPMS/*/kernel-devel-*.rpm
}

# nothing_left WHERE: no device node and no set-id file under WHERE, nothing in $w/outside.
nothing_left() {
    local found
    found=$(find "$1" \( -type b -o -type c -o -type p -o \( -type f -perm /6000 \) \) -print 2>/dev/null)
    [ -z "$found" ] || fail "left under $1: $found"
    [ -z "$(ls -A "$w/outside")" ] || fail "written outside the work directory: $(ls -A "$w/outside")"
}

# hdeb NAME ROOT: NAME_${V}-1_amd64.deb of ROOT into $w/debs-$variant.
hdeb() {
    mkdir -p "$2/DEBIAN" "$w/debs-$variant"
    printf 'Package: %s\nVersion: %s-1\nArchitecture: amd64\nMaintainer: stand-in\nDescription: stand-in\n' \
        "$1" "$V" >"$2/DEBIAN/control"
    dpkg-deb -Zxz --build "$2" "$w/debs-$variant/$1_$V-1_amd64.deb" >/dev/null
}

t_hostile() {
    local w=$W/hostile hr=6.1.0-0hostile rpm k variant kind log secret
    local rpm_args=(--source "$W/src" --sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt"
        --os rhel --repo "$W/hostile/repo")
    mkdir -p "$w/outside" "$w/secret"
    for b in escape device suid; do
        k=$w/br-$b/usr/src/kernels/$hr
        mkdir -p "$k"
        echo "all:" >"$k/Makefile"
        echo "setuid root" >"$k/a-suid"
    done
    # A link out (absolute, as cpio --no-absolute-filenames leaves it) and a file through
    # it: rpmbuild reads the file through the link, so it is there while the RPM is built.
    ln -s "$w/outside" "$w/br-escape/usr/src/kernels/$hr/esc"
    echo "written through a link" >"$w/outside/pwned"
    rpm=$(hostile_rpm escape "%attr(4755, root, root) /usr/src/kernels/$hr/a-suid
/usr/src/kernels/$hr/esc
/usr/src/kernels/$hr/esc/pwned")
    rm -f "$w/outside/pwned"
    rc 1 "$w/escape.log" bdp "${rpm_args[@]}" --work "$w/work" --kernel-devel-rpm "$rpm"
    has "$w/escape.log" "member usr/src/kernels/$hr/esc/pwned lies under usr/src/kernels/$hr/esc, which is a link or not a directory: nothing is written through it; refused"
    nothing_left "$w/work"
    [ ! -e "$w/work/kernel-devel" ] || fail "a refused RPM left $w/work/kernel-devel"
    rpm=$(hostile_rpm device "%attr(4755, root, root) /usr/src/kernels/$hr/a-suid
%dev(c, 1, 3) %attr(0666, root, root) /usr/src/kernels/$hr/null")
    rc 1 "$w/device.log" bdp "${rpm_args[@]}" --work "$w/work" --kernel-devel-rpm "$rpm"
    has "$w/device.log" "member usr/src/kernels/$hr/null is a character device: refused"
    nothing_left "$w/work"
    # Unpacked (the set-id bit dropped), then refused as another release's.
    rpm=$(hostile_rpm suid "%attr(4755, root, root) /usr/src/kernels/$hr/a-suid")
    rc 1 "$w/suid.log" bdp "${rpm_args[@]}" --work "$w/work" --kernel-devel-rpm "$rpm"
    has "$w/suid.log" "is the kernel-devel of $hr, not of $R"
    [ -f "$w/work/kernel-devel/usr/src/kernels/$hr/a-suid" ] || fail "the RPM was not unpacked"
    nothing_left "$w/work"
    for log in escape device suid; do
        ! grep -q Traceback "$w/$log.log" || fail "$log: a traceback, not one line"
    done

    # Debian's packages (--debs) with modules built elsewhere (--prebuilt-modules): the GSP
    # firmware a link to the build machine's private key, absolute or climbing out of the
    # directory the packages are unpacked in ($w/work-rel/debroot).
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$w/secret/key.pem" 2>/dev/null
    secret=$(sed -n 2p "$w/secret/key.pem")
    mkdir -p "$w/kmod"
    cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$w/kmod/"
    make -C "/lib/modules/$R/build" M="$w/kmod" NV_VERSION=$V modules >"$w/kmod.log" 2>&1 ||
        { tail "$w/kmod.log"; fail "the stand-in modules"; }
    for variant in abs rel; do
        local r=$w/deb-$variant fw=lib/firmware/nvidia/$V
        mkdir -p "$r/ml/usr/lib/x86_64-linux-gnu/nvidia/current" "$r/cuda/usr/lib/x86_64-linux-gnu/nvidia/current" \
            "$r/smi/usr/lib/nvidia/current" "$r/gsp/$fw"
        cp "$W/src/libnvidia-ml.so.$V" "$r/ml/usr/lib/x86_64-linux-gnu/nvidia/current/"
        cp "$W/src/libcuda.so.$V" "$r/cuda/usr/lib/x86_64-linux-gnu/nvidia/current/"
        cp "$W/src/nvidia-smi" "$r/smi/usr/lib/nvidia/current/"
        echo "GSP firmware stand-in" >"$r/gsp/$fw/gsp_tu10x.bin"
        if [ $variant = abs ]; then
            ln -s "$w/secret/key.pem" "$r/gsp/$fw/gsp_ga10x.bin"
        else
            ln -s ../../../../../../secret/key.pem "$r/gsp/$fw/gsp_ga10x.bin"
        fi
        hdeb libnvidia-ml1 "$r/ml"
        hdeb libcuda1 "$r/cuda"
        hdeb nvidia-smi "$r/smi"
        hdeb firmware-nvidia-gsp "$r/gsp"
        rc 1 "$w/deb-$variant.log" bdp --debs "$w/debs-$variant" --prebuilt-modules "$w/kmod" \
            --sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt" \
            --work "$w/work-$variant" --repo "$w/repo"
        ! grep -q Traceback "$w/deb-$variant.log" || fail "deb-$variant: a traceback, not one line"
    done
    has "$w/deb-abs.log" "$fw/gsp_ga10x.bin in the packages of $w/debs-abs is a link to $w/secret/key.pem, which is not in it: refused"
    has "$w/deb-rel.log" "firmware-nvidia-gsp_$V-1_amd64.deb: member $fw/gsp_ga10x.bin is a link out of the archive (to ../../../../../../secret/key.pem): refused"
    # The key's bytes are in no output: the repository, its packages, the work directories.
    ! grep -rqsF -- "$secret" "$w/repo" "$w/work-abs" "$w/work-rel" || fail "the key's bytes are in an output"
    for p in $(find "$w/repo" "$w/work-abs" "$w/work-rel" -name '*.tar.zst' 2>/dev/null); do
        ! zstd -dc "$p" | grepq -aF -- "$secret" || fail "the key's bytes are in $p"
    done
    nothing_left "$w/work-abs"

    # The helper itself, on every hostile tar member tests/tools/evil-tar.py makes: refused,
    # or (a set-id or world-writable mode, an absolute link) made harmless.
    for kind in traversal absolute symlink-escape through-link device fifo; do
        python3 "$SRC/tests/tools/evil-tar.py" "$kind" >"$w/evil-$kind.tar"
        rc 1 "$w/evil-$kind.log" python3 "$SRC/scripts/unpack_confined.py" tar "$w/evil-$kind.tar" "$w/evil-$kind"
        [ "$(wc -l <"$w/evil-$kind.log")" = 1 ] || fail "evil-tar $kind: not one line: $(cat "$w/evil-$kind.log")"
        [ ! -e "$w/evil-$kind" ] || fail "evil-tar $kind: a refused archive left $w/evil-$kind"
    done
    for kind in setuid setgid world-writable symlink-abs hardlink valid; do
        python3 "$SRC/tests/tools/evil-tar.py" "$kind" >"$w/evil-$kind.tar"
        rc 0 "$w/evil-$kind.log" python3 "$SRC/scripts/unpack_confined.py" tar "$w/evil-$kind.tar" "$w/evil-$kind"
        [ -z "$(find "$w/evil-$kind" -type f -perm /7022)" ] || fail "evil-tar $kind: a mode kept"
    done
    [ "$(realpath -m "$w/evil-symlink-abs/lib64/passwd")" = "$w/evil-symlink-abs/etc/passwd" ] ||
        fail "an absolute link does not resolve inside: $(readlink "$w/evil-symlink-abs/lib64/passwd")"
    ok "hostile inputs: an RPM's link out, device node and setuid file, a .deb's firmware link to a key, evil tar members: refused with one line or made harmless, nothing outside, the key in no output"
}

# The gpudirect scenario's inputs: the stand-in driver source with the stand-in nv-p2p.h
# beside its nvidia.c (as NVIDIA's kernel/nvidia/nv-p2p.h; $W/src has it, nvidia.c includes
# it), the same without it (src-nop2p), gdrcopy's stand-in as a GitHub-style archive (one
# top directory), gds-nvidia-fs's as a directory.
gpudirect_inputs() {
    local w=$1
    rm -rf "$w" && mkdir -p "$w"
    cp -r "$W/src" "$w/src"
    cp -r "$W/src" "$w/src-nop2p" && rm "$w/src-nop2p/kernel/nv-p2p.h"
    cp -r "$SRC/tests/standin/gdrcopy" "$w/gdrcopy-2.5"
    tar -C "$w" -czf "$w/gdrcopy-2.5.tar.gz" gdrcopy-2.5
    cp -r "$SRC/tests/standin/gds-nvidia-fs" "$w/gds"
}

# sig_verifies KO CERT: KO's appended signature checked as the kernel checks it, with
# OpenSSL rather than our verifier: the PKCS#7 of the trailer (module_signature's sig_len,
# big-endian, before the 28-byte magic) over the bytes before it, by CERT's key.
sig_verifies() {
    python3 - "$1" "$1.p7" "$1.body" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
magic = b"~Module signature appended~\n"
assert d.endswith(magic), "no signature trailer"
info = d[-len(magic) - 12:-len(magic)]
assert info[2] == 2, "id_type is not PKCS#7"
n = int.from_bytes(info[8:12], "big")
end = len(d) - len(magic) - 12
open(sys.argv[2], "wb").write(d[end - n:end])
open(sys.argv[3], "wb").write(d[:end - n])
PY
    openssl cms -verify -binary -inform DER -in "$1.p7" -content "$1.body" -certfile "$2" \
        -nointern -noverify -out /dev/null 2>"$1.verify" || { cat "$1.verify"; return 1; }
}

t_gpudirect() {
    local w=$W/gpudirect p ko
    gpudirect_inputs "$w"
    local sign=(--source "$w/src" --sign-key "$W/keys/vendor.pem" --sign-cert "$W/keys/vendor.crt"
        --work "$w/work")
    # Refused before anything is built: another tree, a version that cannot be told,
    # prebuilt modules (no Module.symvers of nvidia.ko to build against).
    rc 1 "$w/not-gdrcopy.log" bdp "${sign[@]}" --gdrcopy "$w/gds"
    has "$w/not-gdrcopy.log" "--gdrcopy $w/gds is not NVIDIA's gdrcopy source: it has no Makefile"
    rc 1 "$w/not-gds.log" bdp "${sign[@]}" --gds "$w/gdrcopy-2.5.tar.gz"
    has "$w/not-gds.log" "is not NVIDIA's gds-nvidia-fs source: it has no src/Makefile"
    cp -r "$w/gdrcopy-2.5" "$w/gdrcopy-nover"
    sed -i '/GDR_API_MINOR_VERSION/d' "$w/gdrcopy-nover/include/gdrapi.h"
    rc 1 "$w/nover.log" bdp "${sign[@]}" --gdrcopy "$w/gdrcopy-nover"
    has "$w/nover.log" "its version cannot be told (include/gdrapi.h has no GDR_API_MAJOR_VERSION and GDR_API_MINOR_VERSION)"
    mkdir -p "$w/prebuilt"
    rc 1 "$w/prebuilt.log" bdp "${sign[@]}" --prebuilt-modules "$w/prebuilt" --gds "$w/gds"
    has "$w/prebuilt.log" "--gds compiles against the nvidia.ko this build compiles (its Module.symvers): --prebuilt-modules has none"
    # A driver source without nv-p2p.h: refused before the driver is built.
    rc 1 "$w/nop2p.log" bdp --source "$w/src-nop2p" --sign-key "$W/keys/vendor.pem" \
        --sign-cert "$W/keys/vendor.crt" --work "$w/work" --gdrcopy "$w/gdrcopy-2.5.tar.gz"
    has "$w/nop2p.log" "has no nv-p2p.h: give a driver source with its kernel modules' sources"
    grep -q "compiling\|signing" "$w/not-gdrcopy.log" "$w/not-gds.log" "$w/nover.log" \
        "$w/prebuilt.log" "$w/nop2p.log" && fail "gpudirect: built before the sources were checked"

    rc 0 "$w/ok.log" bdp "${sign[@]}" --gdrcopy "$w/gdrcopy-2.5.tar.gz" --gds "$w/gds"
    has "$w/ok.log" "GPUDirect: kernel/gdrdrv.ko, kernel/nvidia-fs.ko signed and packed, lib64/libgdrapi.so.2"
    p=$w/pkg && mkdir -p "$p"
    tar -C "$p" -xf "$(pkg_of "$w/work")"
    for ko in gdrdrv nvidia-fs; do
        [ -f "$p/kernel/$ko.ko" ] || fail "gpudirect: no kernel/$ko.ko"
        [ "$(modinfo -F vermagic "$p/kernel/$ko.ko" | cut -d' ' -f1)" = "$R" ] || fail "$ko: vermagic"
        [ "$(modinfo -F depends "$p/kernel/$ko.ko")" = nvidia ] ||
            fail "$ko depends on '$(modinfo -F depends "$p/kernel/$ko.ko")', not nvidia"
        modinfo "$p/kernel/$ko.ko" | grepq "^signer: *Stand-in vendor" || fail "$ko: modinfo's signer"
        modinfo -F sig_id "$p/kernel/$ko.ko" | grepq -x "PKCS#7" || fail "$ko: sig_id"
        sig_verifies "$p/kernel/$ko.ko" "$W/keys/vendor.crt" || fail "$ko: the signature does not verify"
        nm -u "$p/kernel/$ko.ko" | grepq ' nvidia_p2p_get_pages$' || fail "$ko: takes no nvidia_p2p_get_pages"
    done
    [ "$(modinfo -F name "$p/kernel/nvidia-fs.ko")" = nvidia_fs ] || fail "nvidia-fs's module name"
    [ "$(readlink "$p/lib64/libgdrapi.so.2")" = libgdrapi.so.2.5 ] || fail "the soname link"
    [ "$(readlink "$p/lib64/libgdrapi.so")" = libgdrapi.so.2 ] || fail "the linker name's link"
    # gdrcopy's HAVE_* probes answered for the tree built against (6.1: proc_ops, no
    # vm_flags_set), passed on make's command line.
    [ "$(modinfo -F have_proc_ops "$p/kernel/gdrdrv.ko")" = y ] || fail "gdrdrv: HAVE_PROC_OPS"
    [ "$(modinfo -F have_vm_flags_set "$p/kernel/gdrdrv.ko")" = n ] || fail "gdrdrv: HAVE_VM_FLAGS_SET"
    # nv_symbols' CRC of a stray driver (the stand-in script's 0x0badc0de) never reaches
    # modpost: nvidia-fs takes the CRC of this build's nvidia.ko.
    /sbin/modprobe --dump-modversions "$p/kernel/nvidia-fs.ko" | grepq '0x0badc0de' &&
        fail "nvidia-fs took nv.symvers' CRC"
    readelf -d "$p/lib64/libgdrapi.so.2.5" | grepq 'Library soname: \[libgdrapi.so.2\]' ||
        fail "libgdrapi's soname"
    python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["gdrcopy"] == {"version": "2.5", "library": "libgdrapi.so.2"} and i["gds"] == {"version": "2.27.3"}, i; assert {"gdrdrv.ko", "nvidia-fs.ko"} <= set(i["modules"]), i["modules"]' \
        "$p/share/nvidia/build-info.json" || fail "build-info.json: gdrcopy, gds"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ps=[p for dr in d["drivers"] for p in dr["packages"]]; assert any(p.get("gpudirect") == ["gdrcopy", "gds"] for p in ps), ps' \
        "$W/repo/index.json" || fail "index.json: packages[].gpudirect"
    ok "gpudirect: gdrdrv and nvidia-fs built by build-driver-package against this kernel's headers and the stand-in nvidia.ko's Module.symvers, signed (OpenSSL verifies), libgdrapi with its soname link; other trees, no version and prebuilt modules refused before the build"

    # A tampered gdrdrv.ko: the installer's verification refuses it (the check a node runs
    # before finit_module), naming the module; the untouched nvidia-fs.ko passes.
    cp "$p/kernel/gdrdrv.ko" "$w/tampered.ko"
    printf 'X' | dd of="$w/tampered.ko" bs=1 seek=200 conv=notrunc 2>/dev/null
    rc 0 "$w/verify-ok.log" "$BIN" verify-module --module-cert "$W/keys/vendor.crt" \
        --kernel-release "$R" "$p/kernel/nvidia-fs.ko"
    rc 5 "$w/verify-bad.log" "$BIN" verify-module --module-cert "$W/keys/vendor.crt" \
        --kernel-release "$R" "$w/tampered.ko"
    has "$w/verify-bad.log" "tampered.ko"
    ok "gpudirect: a tampered gdrdrv.ko refused by the installer's verification"
}

scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(cos_headers toolchain detached ubuntu cos_fetch fleet fabricmanager imex arm64 rhel hostile gpudirect)
for s in "${scenarios[@]}"; do
    ( "t_$s" ) || failed=1
done
exit $failed
