#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-real: NVIDIA's real driver 535.261.03, from Debian's non-free packages, built
# by scripts/build-driver-package for the installed Debian kernel in both flavours into ONE
# signed repository, checked on the host, then inserted into that kernel under qemu
# (tests/vm/run.sh real-proprietary real-open real-flavours), and its user space run by the
# node agent over stand-in modules of its version (real-agent); the install timed up to
# the kernel's refusal, from a repository served over HTTP (real-timing, the runs make
# bench measures). The same driver built with
# --llvm for a clang-built kernel (tests/real/clang-kernel.sh, the stand-in for COS) and
# inserted into that kernel, with and without sig_enforce (tests/vm/run.sh clang
# clang-enforce). And NVIDIA's arm64 535.261.03 cross-built for Debian's arm64 kernel, both
# flavours, inserted into it under qemu-system-aarch64 (arm64-real-proprietary,
# arm64-real-open).
#
#   tests/real/run.sh BINARY
#
# Work files stay in build/real and are reused: the Debian packages are fetched and each
# flavour is compiled once (minutes), later runs only repack.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

BIN=$(realpath "${1:?usage: run.sh BINARY}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tools/pipes.sh"
W=${NDI_REAL_DIR:-$SRC/build/real}
V=535.261.03
BDP=$SRC/scripts/build-driver-package
pass=0
failed=0

ok() {
    echo "real: ok   $1"
    pass=$((pass + 1))
}
bad() {
    echo "real: FAIL $1: $2"
    failed=$((failed + 1))
}
# check NAME COMMAND...: the command's success is the verdict.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name" "$*"; fi
}
secs() { echo $(($(date +%s) - $1)); }

R=""
for d in /lib/modules/*/; do
    r=$(basename "$d")
    [ -e "/lib/modules/$r/build/Makefile" ] && [ -e "/boot/vmlinuz-$r" ] && R=$r
done
[ -n "$R" ] || { echo "real: no kernel with headers and image" >&2; exit 1; }

mkdir -p "$W/keys"
if [ ! -s "$W/keys/mod.pem" ]; then
    "$SRC/tests/tools/make-module-key" "nvidia-driver-installer real-driver test key" "$W/keys/mod"
    "$SRC/tests/tools/make-module-key" "nvidia-driver-installer other test key" "$W/keys/other"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/keys/repo.pem" 2>/dev/null
    openssl pkey -in "$W/keys/repo.pem" -pubout -out "$W/keys/repo-pub.pem"
fi
common=(--sign-key "$W/keys/mod.pem" --sign-cert "$W/keys/mod.crt" --repo-key "$W/keys/repo.pem"
    --installer "$BIN" --work "$W/work")

# ---- both flavours, one call, one repository ------------------------------------------
# NVIDIA's open 535.261.03 sources predate the four-argument pci_resize_resource() of
# newer 6.1 kernels (tests/real/patches says more): patched only where the headers need it.
open_patch=()
if grep -A1 "int __must_check pci_resize_resource(" "/lib/modules/$R/source/include/linux/pci.h" |
    grepq exclude_bars; then
    open_patch=(--patch "open=$SRC/tests/real/patches/pci-resize-resource-exclude-bars.patch")
fi
t0=$(date +%s)
rm -rf "$W/repo" "$W/repo-proprietary" "$W/repo-open"
if ! "$BDP" --kernel "$R" --debian "$V" --flavour proprietary,open --repo "$W/repo" --tag default \
    "${open_patch[@]}" "${common[@]}" 2>&1 | tee "$W/build.log"; then
    echo "real: the packages did not build" >&2
    exit 1
fi
echo "real: both flavours for $R built in $(secs "$t0") s"

# ---- the packages, on the host --------------------------------------------------------
# index [REPO] EXPR: a Python expression over the index (i); REPO defaults to $W/repo.
index() {
    local r=$W/repo
    [ $# = 2 ] && { r=$1; shift; }
    python3 -c 'import json,sys; print(eval(sys.argv[2], {"i": json.load(open(sys.argv[1]))}))' "$r/index.json" "$1"
}
pkg() { echo "$W/repo/$(index "[p['path'] for p in i['drivers'][0]['packages'] if p.get('module_type') == '$1'][0]")"; }
# NVIDIA's license of each flavour's nvidia.ko: what says which file a node got.
declare -A license=([proprietary]="NVIDIA" [open]="Dual MIT/GPL")
for f in proprietary open; do
    u=$W/unpacked-$f
    rm -rf "$u"
    mkdir -p "$u"
    tar -C "$u" --zstd -xf "$(pkg $f)"
    check "$f-modules" [ "$(cd "$u/kernel" && ls | tr '\n' ' ')" = \
        "nvidia-drm.ko nvidia-modeset.ko nvidia-peermem.ko nvidia-uvm.ko nvidia.ko " ]
    check "$f-stripped" [ "$(stat -c %s "$u/kernel/nvidia.ko")" -lt 80000000 ]
    check "$f-signed" "$BIN" verify-module --kernel-release "$R" --module-cert "$W/keys/mod.crt" "$u"/kernel/*.ko
    "$BIN" verify-module --kernel-release "$R" --module-cert "$W/keys/other.crt" "$u/kernel/nvidia.ko" \
        >/dev/null 2>&1 && bad "$f-other-key" "a certificate that did not sign passed" || ok "$f-other-key"
    check "$f-vermagic" [ "$(modinfo -F vermagic "$u/kernel/nvidia.ko" | cut -d' ' -f1)" = "$R" ]
    check "$f-version" [ "$(modinfo -F version "$u/kernel/nvidia.ko")" = "$V" ]
    check "$f-deps" [ "$(modinfo -F depends "$u/kernel/nvidia-modeset.ko")" = "nvidia,video" ]
    check "$f-soname" [ "$(readlink "$u/lib64/libcuda.so.1")" = "libcuda.so.$V" ]
    check "$f-nvml" [ "$(readlink "$u/lib64/libnvidia-ml.so.1")" = "libnvidia-ml.so.$V" ]
    check "$f-linker-name" [ "$(readlink "$u/lib64/libcuda.so")" = libcuda.so.1 ]
    check "$f-ptxjit" [ -f "$u/lib64/libnvidia-ptxjitcompiler.so.$V" ]
    for t in nvidia-smi nvidia-debugdump nvidia-persistenced nvidia-cuda-mps-control; do
        check "$f-$t" [ -x "$u/bin/$t" ]
    done
    check "$f-gsp" [ -s "$u/firmware/nvidia/$V/gsp_ga10x.bin" ] && [ -s "$u/firmware/nvidia/$V/gsp_tu10x.bin" ]
    check "$f-build-info" grep -q "\"flavour\": \"$f\"" "$u/share/nvidia/build-info.json"
    check "$f-license" [ "$(modinfo -F license "$u/kernel/nvidia.ko")" = "${license[$f]}" ]
    LD_LIBRARY_PATH=$u/lib64 "$u/bin/nvidia-smi" >"$W/smi.out" 2>&1 && smi=0 || smi=$?
    check "$f-smi-runs" grep -q "couldn't communicate with the NVIDIA driver" "$W/smi.out"
    echo "real: $f package $(($(stat -c %s "$(pkg $f)") >> 20)) MiB, nvidia.ko $(($(stat -c %s "$u/kernel/nvidia.ko") >> 20)) MiB, nvidia-smi exit $smi"
done
check index-signed openssl dgst -sha256 -verify "$W/keys/repo-pub.pem" -signature "$W/repo/index.json.sig" "$W/repo/index.json"
# One driver entry, proprietary first (an older installer takes the first package).
check one-entry [ "$(index 'len(i["drivers"])')" = 1 ]
check flavours-listed [ "$(index '[p["module_type"] for p in i["drivers"][0]["packages"]]')" = "['proprietary', 'open']" ]
# Each flavour's GPUs are nvidia-detect's lists of the same version, read here from the
# .deb itself; for 535.261.03 the open list has 23 GPUs and not the H100 (10de:2330).
nd=$(ls "$W/work/debs/"nvidia-detect_"$V"-*.deb)
deb_ids() { dpkg-deb --fsys-tarfile "$nd" | tar -xO "./usr/share/nvidia/$1" | tr 'A-F' 'a-f' |
    sed -n 's/^\(10de\)\([0-9a-f]\{4\}\)$/\1:\2/p' | sort -u | tr '\n' ' '; }
mt_ids() { index "' '.join(sorted(i['drivers'][0]['module_types']['$1']['supported_pci_ids'])) + ' '"; }
check proprietary-ids-debian [ "$(mt_ids proprietary)" = "$(deb_ids nvidia.ids)" ]
check open-ids-debian [ "$(mt_ids open)" = "$(deb_ids nvidia-open.ids)" ]
check legacy-ids-proprietary [ "$(index '" ".join(i["drivers"][0]["supported_pci_ids"]) + " "')" = "$(mt_ids proprietary)" ]
echo "real: supported GPUs: proprietary $(mt_ids proprietary | wc -w), open $(mt_ids open | wc -w) (nvidia-detect $V)"
check open-ids-23 [ "$(mt_ids open | wc -w)" = 23 ]
check open-ids-no-h100 [ "$(index '"10de:2330" in i["drivers"][0]["module_types"]["open"]["supported_pci_ids"]')" = False ]
check proprietary-ids-h100 [ "$(index '"10de:2330" in i["drivers"][0]["module_types"]["proprietary"]["supported_pci_ids"]')" = True ]

# ---- NVIDIA's nvidia-smi in a workload, as GKE's device plugin presents it ---------------
# The install dir bind-mounted at /usr/local/nvidia, no CDI and no environment of ours (the
# image's own LD_LIBRARY_PATH is /opt/conda/lib): nvidia-smi must find libnvidia-ml.so.1
# and fail only for want of a driver, as on a node before the modules load.
. "$SRC/tests/tools/probe-image.sh"
pw=$(mktemp -d /tmp/ndi-real-podman.XXXXXX)
mkdir -p "$pw/root/etc"
printf 'ID=cos\nBUILD_ID=17800.66.78\n' >"$pw/root/etc/os-release"
"$BIN" --root "$pw/root" install --repo "file://$W/repo" --repo-key "$W/keys/repo-pub.pem" \
    --kernel-module-type proprietary --skip-modules --kernel-release "$R" >"$pw/install.out" 2>&1 &&
    ok podman-install || bad podman-install "$(tail -3 "$pw/install.out")"
probe_image_tar "$pw/img" "$pw/img.tar"
probe_image_import "$pw" "$pw/img.tar"
# shellcheck disable=SC2046
probe_podman "$pw" run --rm $(probe_run_flags) -v "$pw/root/home/kubernetes/bin/nvidia:/usr/local/nvidia:ro" \
    "$PROBE_IMAGE" /usr/local/nvidia/bin/nvidia-smi >"$pw/smi.out" 2>&1 && smi=0 || smi=$?
grep -q "couldn't communicate with the NVIDIA driver" "$pw/smi.out" && ! grep -q "couldn't find" "$pw/smi.out" &&
    ok podman-gke-nvidia-smi || bad podman-gke-nvidia-smi "exit $smi: $(head -3 "$pw/smi.out")"
echo "real: nvidia-smi under /usr/local/nvidia in a container: exit $smi: $(head -1 "$pw/smi.out")"
# As NVIDIA's device plugin presents it: the spec its nvcdi would write for the install dir
# as driver root (tests/tools/nvcdi-shape.py), every program mounted alone at /usr/bin, the
# libraries at their resolved paths, our hook for NVIDIA's (no toolkit on this host). In a
# private mount namespace holding the install dir and /var/run/cdi where the host's would
# be, and a /dev with the nodes the spec names (no driver behind them): NVIDIA's nvidia-smi
# must find libnvidia-ml.so.1 through the hooks' ld cache and fail only for want of a driver.
inst=/home/kubernetes/bin/nvidia
for t in nvidia-smi nvidia-debugdump nvidia-persistenced nvidia-cuda-mps-control nvidia-cuda-mps-server; do
    check "usr-bin-$t" [ "$(stat -c %i "$pw/root$inst/usr/bin/$t")" = "$(stat -c %i "$pw/root$inst/bin/.real/$t")" ]
done
mkdir -p "$pw/root/var/run/cdi"
# The hook the installer ships into .helpers/ once a driver is loaded (here none is): the
# build's own, with its ldconfig beside it.
hook=$(dirname "$BIN")/libexec/nvidia-driver-installer/nvidia-cdi-hook
python3 "$SRC/tests/tools/nvcdi-shape.py" --fs "$pw/root" --driver-root "$inst" --hook "$hook" \
    --gpus 1 --out "$pw/root/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json" 2>"$pw/shape.err" &&
    ok nvidia-shape-spec || bad nvidia-shape-spec "$(cat "$pw/shape.err")"
cat >"$pw/ns.sh" <<NSEND
set -eu
SRC='$SRC'
. "\$SRC/tests/tools/probe-image.sh"
probe_node_ns "$pw/root" "$pw" 1
probe_podman "$pw" run --rm \$(probe_run_flags) --device k8s.device-plugin.nvidia.com/gpu=0 "\$PROBE_IMAGE" \
    sh -c 'probe libcuda.so.1 libnvidia-ml.so.1; nvidia-smi; echo smi=\$?'
NSEND
probe_cdi_dirs_take
unshare -m --propagation private bash "$pw/ns.sh" >"$pw/nsmi.out" 2>&1 || true
probe_cdi_dirs_release
grep -qx "dlopen libcuda.so.1: ok" "$pw/nsmi.out" && grep -qx "dlopen libnvidia-ml.so.1: ok" "$pw/nsmi.out" &&
    grep -q "couldn't communicate with the NVIDIA driver" "$pw/nsmi.out" && ! grep -q "couldn't find\|is missing" "$pw/nsmi.out" &&
    ok podman-nvidia-shape-nvidia-smi || bad podman-nvidia-shape-nvidia-smi "$(head -5 "$pw/nsmi.out")"
echo "real: nvidia-smi at /usr/bin in a container from NVIDIA's spec shape: $(grep -m1 "smi=" "$pw/nsmi.out")"
rm -rf "$pw"

# ---- video and graphics: Debian's real libraries, the Vulkan loader (tests/real/graphics.sh)
if "$SRC/tests/real/graphics.sh" "$BIN" "$W" "$R" -- "${common[@]}"; then
    ok graphics
else
    bad graphics "tests/real/graphics.sh: its FAIL lines above"
fi

# ---- the tool's other ways in -----------------------------------------------------------
# Re-running for another target adds a package to the same repository (another os here:
# one kernel's headers are installed), reusing the compiled modules.
t0=$(date +%s)
"$BDP" --kernel "$R" --debian "$V" --repo "$W/repo" --os debian "${common[@]}" \
    >"$W/rerun.log" 2>&1 || { cat "$W/rerun.log"; bad rerun "exit $?"; }
check rerun-reuses grep -q "modules for $R already built" "$W/rerun.log"
check rerun-adds [ "$(index 'len(i["drivers"][0]["packages"])')" = 3 ]
check rerun-keeps-tag [ "$(index 'i["drivers"][0]["tags"]')" = "['default']" ]
check rerun-keeps-open [ "$(index 'len(i["drivers"][0]["module_types"]["open"]["supported_pci_ids"])')" = "$(mt_ids open | wc -w)" ]
"$BIN" list-versions --repo "file://$W/repo" --repo-key "$W/keys/repo-pub.pem" \
    --kernel-release "$R" >"$W/list.out" 2>&1
check rerun-lists grep -q "$V" "$W/list.out"
echo "real: second package into the same repository in $(secs "$t0") s"

# A source directory in the .run layout (as scripts/gpu-check.sh assembles from a GPU
# machine), with NVIDIA's supported-gpus.json, and modules built elsewhere (a
# distribution's, a node's own): compressed, already signed by someone else; their
# signatures are replaced with the operator's.
u=$W/unpacked-proprietary
rm -rf "$W/prebuilt" "$W/prebuilt-open" "$W/runsrc"
mkdir -p "$W/prebuilt" "$W/prebuilt-open" "$W/runsrc/firmware" "$W/runsrc/supported-gpus"
for m in "$u/kernel/"*.ko; do
    xz -T0 -0 -c "$m" >"$W/prebuilt/$(basename "$m").xz"
done
cp "$W/unpacked-open/kernel/"*.ko "$W/prebuilt-open/"
find "$u/lib64" -type f -exec cp {} "$W/runsrc/" \;
cp "$u/bin/"* "$W/runsrc/"
cp "$u/firmware/nvidia/$V/"*.bin "$W/runsrc/firmware/"
cat >"$W/runsrc/supported-gpus/supported-gpus.json" <<'EOF'
{"chips": [
 {"name": "NVIDIA H100 80GB HBM3", "devid": "0x2330", "features": ["kernelopen", "gsp_proprietary_supported"]},
 {"name": "Quadro GV100", "devid": "0x1DBA", "features": []},
 {"name": "GeForce GTX 680", "devid": "0x1180", "features": [], "legacybranch": "470.xx"}
]}
EOF
rm -rf "$W/repo-prebuilt"
"$BDP" --kernel "$R" --source "$W/runsrc" --flavour both --prebuilt-modules "proprietary=$W/prebuilt" \
    --prebuilt-modules "open=$W/prebuilt-open" --repo "$W/repo-prebuilt" --sign-key "$W/keys/other.pem" --sign-cert "$W/keys/other.crt" \
    --repo-key "$W/keys/repo.pem" --installer "$BIN" --work "$W/work-prebuilt" >"$W/prebuilt.log" 2>&1 ||
    { cat "$W/prebuilt.log"; bad prebuilt "exit $?"; }
check prebuilt-resigned grep -q "nvidia: its previous signature is replaced with ours" "$W/prebuilt.log"
check runsrc-pci-ids [ "$(index "$W/repo-prebuilt" 'i["drivers"][0]["supported_pci_ids"]')" = "['10de:1dba', '10de:2330']" ]
# NVIDIA's own data: the open flavour's GPUs are those marked "kernelopen", named.
check runsrc-open-ids [ "$(index "$W/repo-prebuilt" 'i["drivers"][0]["module_types"]["open"]["supported_pci_ids"]')" = "['10de:2330']" ]
check runsrc-names [ "$(index "$W/repo-prebuilt" 'i["drivers"][0]["gpu_names"]["10de:2330"]')" = "NVIDIA H100 80GB HBM3" ]
rm -rf "$W/unpacked-prebuilt" && mkdir -p "$W/unpacked-prebuilt"
tar -C "$W/unpacked-prebuilt" --zstd -xf "$W/repo-prebuilt/$(index "$W/repo-prebuilt" 'i["drivers"][0]["packages"][0]["path"]')"
check prebuilt-other-signer "$BIN" verify-module --kernel-release "$R" --module-cert "$W/keys/other.crt" \
    "$W/unpacked-prebuilt"/kernel/*.ko
"$BIN" verify-module --kernel-release "$R" --module-cert "$W/keys/mod.crt" \
    "$W/unpacked-prebuilt/kernel/nvidia.ko" >/dev/null 2>&1 &&
    bad prebuilt-old-signer "the replaced signature still verifies" || ok prebuilt-old-signer

# Failures name their cause: headers not installed, modules for another kernel.
expect_fail() { # NAME MESSAGE COMMAND...
    local name=$1 msg=$2
    shift 2
    if "$@" >"$W/fail.out" 2>&1; then
        bad "$name" "succeeded"
    elif grep -qF -- "$msg" "$W/fail.out"; then
        ok "$name"
    else
        bad "$name" "$(tail -2 "$W/fail.out")"
    fi
}
rm -rf "$W/repo-x"
expect_fail no-headers "no kernel headers for 6.1.0-99-amd64 at /lib/modules/6.1.0-99-amd64/build: install linux-headers-6.1.0-99-amd64" \
    "$BDP" --kernel 6.1.0-99-amd64 --debs "$W/work/debs" --repo "$W/repo-x" "${common[@]}"
expect_fail wrong-kernel "nvidia.ko is built for kernel $R, not 6.1.0-99-amd64" \
    "$BDP" --kernel 6.1.0-99-amd64 --debs "$W/work/debs" --prebuilt-modules "$W/prebuilt" \
    --repo "$W/repo-x" "${common[@]}"
expect_fail no-such-version "Debian has no nvidia-kernel-source 535.1.1" \
    "$BDP" --kernel "$R" --debian 535.1.1 --repo "$W/repo-x" "${common[@]}"
# The proprietary nvidia.ko offered as the open flavour: its license says otherwise.
expect_fail license-flavour "nvidia.ko carries license 'NVIDIA': it is the proprietary flavour's module, not the open one" \
    "$BDP" --kernel "$R" --source "$W/runsrc" --flavour open --prebuilt-modules "$W/prebuilt" --repo "$W/repo-x" "${common[@]}"
# An open package whose GPUs nobody states is refused before anything is built.
mv "$W/runsrc/supported-gpus" "$W/runsrc-gpus.off"
expect_fail open-unknown-gpus "the source does not say which GPUs the open modules of $V support" \
    "$BDP" --kernel "$R" --source "$W/runsrc" --flavour both --prebuilt-modules "proprietary=$W/prebuilt" \
    --prebuilt-modules "open=$W/prebuilt-open" --repo "$W/repo-x" "${common[@]}"
mv "$W/runsrc-gpus.off" "$W/runsrc/supported-gpus"
expect_fail prebuilt-whose "--prebuilt-modules $W/prebuilt: two flavours are built; say whose" \
    "$BDP" --kernel "$R" --source "$W/runsrc" --flavour both --prebuilt-modules "$W/prebuilt" --repo "$W/repo-x" "${common[@]}"
[ ! -e "$W/repo-x/index.json" ] && ok failures-add-nothing || bad failures-add-nothing "repo-x has an index"

echo "real: host checks: $pass passed, $failed failed"

# ---- a clang-built kernel: the stand-in for COS ------------------------------------------
# tests/real/clang-kernel.sh: Linux 6.1 from Debian's linux-source, built with clang and
# LLVM, the real-driver test key built in, its headers in COS's kernel-headers.tgz layout
# (cached). NVIDIA's 535.261.03, both flavours, built against it with --llvm.
t0=$(date +%s)
if "$SRC/tests/real/clang-kernel.sh" "$W/clang-kernel" "$W/keys/mod.pem"; then
    CR=$(cat "$W/clang-kernel/release")
    CH=$W/clang-kernel/kernel-headers.tgz
    echo "real: clang-built kernel $CR ready in $(secs "$t0") s"
    t0=$(date +%s)
    rm -rf "$W/clang-repo"
    if "$BDP" --kernel "$CR" --debs "$W/work/debs" --kernel-headers "$CH" --llvm \
        --flavour proprietary,open "${open_patch[@]}" --repo "$W/clang-repo" --os cos --tag default \
        "${common[@]}" --work "$W/clang-work" >"$W/clang-build.log" 2>&1; then
        ok clang-nvidia-built
    else
        bad clang-nvidia-built "$(tail -3 "$W/clang-build.log")"
    fi
    echo "real: NVIDIA's $V for $CR, both flavours, --llvm, in $(secs "$t0") s"
    # What compiled the modules, as they say themselves (.comment): clang. No object this
    # build compiled from a source names gcc; gcc is only in the cores that come compiled
    # (the open flavour's nv-kernel.o_binary and nv-modeset-kernel.o_binary, which Debian's
    # nvidia-open-kernel-source builds from NVIDIA's src/ with its gcc; the proprietary
    # blobs carry no .comment), which the link takes as they are.
    for f in proprietary open; do
        b=$W/clang-work/build/$V-$f-$CR
        readelf -p .comment "$b/nvidia.ko" >"$W/clang-$f.comment" 2>&1
        check "clang-$f-compiled-by-clang" grep -q "clang version" "$W/clang-$f.comment"
        find "$b" -name '*.o' -type f ! -name '*.o_binary' >"$W/clang-$f.objects"
        : >"$W/clang-$f.gcc-objects"
        : >"$W/clang-$f.compiled"
        while read -r o; do
            # compiled here: from a source beside it (nvidia.o and the like are links)
            [ -e "${o%.o}.c" ] || [ -e "${o%.o}.S" ] || [ -e "${o%.mod.o}.mod.c" ] || continue
            echo "$o" >>"$W/clang-$f.compiled"
            readelf -p .comment "$o" 2>/dev/null | grepq 'GCC:' && echo "$o" >>"$W/clang-$f.gcc-objects"
        done <"$W/clang-$f.objects"
        echo "real: $f for $CR: $(wc -l <"$W/clang-$f.compiled") objects compiled, by gcc: $(cat "$W/clang-$f.gcc-objects")"
        check "clang-$f-no-gcc-object" test -s "$W/clang-$f.compiled" -a ! -s "$W/clang-$f.gcc-objects"
    done
    # The compiler-family check, this way round: gcc for a clang-built kernel is refused up
    # front, and the refusal is true (kbuild with gcc on these headers fails).
    expect_fail clang-refuses-gcc "kernel $CR was built with clang (" \
        "$BDP" --kernel "$CR" --debs "$W/work/debs" --kernel-headers "$CH" --repo "$W/repo-x" \
        "${common[@]}" --work "$W/clang-work-gcc"
    rm -rf "$W/clang-raw" && mkdir -p "$W/clang-raw" && cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$W/clang-raw/"
    make -C "$W/clang-work/kernel-headers/usr/src/linux-headers-$CR" M="$W/clang-raw" NV_VERSION=$V \
        CC=gcc modules >"$W/clang-raw.log" 2>&1 && bad clang-gcc-fails "gcc built modules for $CR" ||
        ok clang-gcc-fails
    echo "real: gcc on the clang kernel's headers: $(grep -m1 -i 'error' "$W/clang-raw.log" | cut -c1-160)"
    t0=$(date +%s)
    NDI_REAL_DIR=$W "$SRC/tests/vm/run.sh" "$BIN" clang clang-enforce && ok clang-vm ||
        bad clang-vm "tests/vm/run.sh clang clang-enforce"
    echo "real: clang VM scenarios in $(secs "$t0") s"
else
    bad clang-kernel "tests/real/clang-kernel.sh failed"
fi

# ---- into the kernel, under qemu --------------------------------------------------------
t0=$(date +%s)
NDI_REAL_DIR=$W "$SRC/tests/vm/run.sh" "$BIN" real-proprietary real-open real-flavours real-agent real-timing real-supply ||
    failed=$((failed + 1))
echo "real: VM scenarios in $(secs "$t0") s"
# ---- arm64: NVIDIA's arm64 535.261.03 for Debian's arm64 kernel -------------------------
# Debian's current arm64 kernel (scripts/fetch-debian-kernel, kept in $W/kernels so that
# the modules' build stays cached between checkouts), the driver's arm64 packages fetched
# from non-free and cross-compiled by build-driver-package --arch arm64 (Debian's
# aarch64-linux-gnu toolchain), both flavours into one repository; checked here, the real
# arm64 nvidia-smi run under qemu-user, then inserted into that kernel under
# qemu-system-aarch64 (tests/vm/run.sh arm64-real-proprietary arm64-real-open).
t0=$(date +%s)
AR=$("$SRC/scripts/fetch-debian-kernel" arm64 "$W/kernels")
AK=$W/kernels/$AR/root
a64_patch=()
if grep -A1 "int __must_check pci_resize_resource(" "$AK"/usr/src/linux-headers-*-common/include/linux/pci.h |
    grepq exclude_bars; then
    a64_patch=(--patch "open=$SRC/tests/real/patches/pci-resize-resource-exclude-bars.patch")
fi
rm -rf "$W/arm64/repo"
if "$BDP" --kernel "$AR" --arch arm64 --headers "$AK/usr/src/linux-headers-$AR" --debian "$V" \
    --flavour proprietary,open --repo "$W/arm64/repo" --tag default "${a64_patch[@]}" "${common[@]}" \
    --work "$W/work-arm64" >"$W/arm64-build.log" 2>&1; then
    echo "real: both arm64 flavours for $AR built in $(secs "$t0") s"
    for f in proprietary open; do
        u=$W/arm64/unpacked-$f
        rm -rf "$u" && mkdir -p "$u"
        tar -C "$u" --zstd -xf "$W/arm64/repo/$(index "$W/arm64/repo" \
            "[p['path'] for p in i['drivers'][0]['packages'] if p.get('module_type') == '$f'][0]")"
        aarch64=1
        for e in "$u"/kernel/*.ko "$u/lib64/libcuda.so.$V" "$u/lib64/libnvidia-ml.so.$V" "$u/bin/nvidia-smi"; do
            readelf -h "$e" | grepq "Machine: *AArch64" || aarch64=0
        done
        check "arm64-$f-aarch64" [ $aarch64 = 1 ]
        check "arm64-$f-vermagic" [ "$(modinfo -F vermagic "$u/kernel/nvidia.ko")" = "$AR SMP mod_unload modversions aarch64" ]
        check "arm64-$f-signed" "$BIN" verify-module --kernel-release "$AR" --module-cert "$W/keys/mod.crt" "$u"/kernel/*.ko
        check "arm64-$f-license" [ "$(modinfo -F license "$u/kernel/nvidia.ko")" = "${license[$f]}" ]
        check "arm64-$f-gsp" [ -s "$u/firmware/nvidia/$V/gsp_ga10x.bin" ]
        check "arm64-$f-nvml" [ "$(readlink "$u/lib64/libnvidia-ml.so.1")" = "libnvidia-ml.so.$V" ]
        qemu-aarch64 -L / -E "LD_LIBRARY_PATH=$u/lib64" "$u/bin/nvidia-smi" >"$W/smi-arm64.out" 2>&1 && smi=0 || smi=$?
        check "arm64-$f-smi-runs" grep -q "couldn't communicate with the NVIDIA driver" "$W/smi-arm64.out"
        echo "real: arm64 $f package: nvidia.ko $(($(stat -c %s "$u/kernel/nvidia.ko") >> 20)) MiB, nvidia-smi (qemu-user) exit $smi"
    done
    check arm64-index-arch [ "$(index "$W/arm64/repo" 'sorted(set(p["arch"] for p in i["drivers"][0]["packages"]))')" = "['aarch64']" ]
    check arm64-index-flavours [ "$(index "$W/arm64/repo" '[p["module_type"] for p in i["drivers"][0]["packages"]]')" = "['proprietary', 'open']" ]
    t0=$(date +%s)
    NDI_REAL_DIR=$W "$SRC/tests/vm/run.sh" "$BIN" arm64-real-proprietary arm64-real-open && ok arm64-vm ||
        bad arm64-vm "tests/vm/run.sh arm64-real-proprietary arm64-real-open"
    echo "real: arm64 VM scenarios in $(secs "$t0") s"
else
    tail -20 "$W/arm64-build.log"
    bad arm64-build "build-driver-package --arch arm64 --debian $V failed (log $W/arm64-build.log)"
fi
[ $failed = 0 ]
