#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stand-in for a COS kernel: a small Linux 6.1 from Debian's linux-source, built with
# clang and LLVM (LLVM=1: clang, ld.lld, llvm-ar, llvm-nm, llvm-objcopy), release "V+"
# as COS names its kernels, with module signing and the built-in trusted key KEY.pem
# (sign-file's key and certificate in one PEM), and its headers laid out as COS's
# kernel-headers.tgz (usr/src/linux-headers-R/).
#
#   tests/real/clang-kernel.sh OUTDIR KEY.pem
#
# Writes OUTDIR/bzImage, OUTDIR/release, OUTDIR/config, OUTDIR/kernel-headers.tgz and
# OUTDIR/build.log. Cached: nothing is rebuilt while Debian's source, this script and the
# key are the ones OUTDIR/inputs records. About 12 minutes on 2 cores the first time, 1.6 GB of
# build tree (OUTDIR/tree, kept: a changed script rebuilds only what changed).
#
# The configuration: tinyconfig, then EXPERT off so that everything a normal userspace
# needs comes back at its default, then what the test VM and NVIDIA's modules need
# (below). Debian's kernel stays the gcc-built one every other VM test boots.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"
OUT=${1:?usage: clang-kernel.sh OUTDIR KEY.pem}
KEY=${2:?usage: clang-kernel.sh OUTDIR KEY.pem}
TARBALL=$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null) ||
    { echo "clang-kernel: no /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)" >&2; exit 1; }
for t in clang ld.lld llvm-ar llvm-nm llvm-objcopy flex bison; do
    command -v $t >/dev/null || { echo "clang-kernel: no $t (make deps installs it)" >&2; exit 1; }
done
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
inputs=$( (dpkg-query -W -f '${Version}' linux-source-6.1; sha256sum "$0" "$KEY" | cut -d' ' -f1) | sha256sum | cut -d' ' -f1)
if [ -s "$OUT/kernel-headers.tgz" ] && [ -s "$OUT/bzImage" ] && [ "$(cat "$OUT/inputs" 2>/dev/null)" = "$inputs" ]; then
    echo "clang-kernel: cached $(cat "$OUT/release") in $OUT"
    exit 0
fi
rm -f "$OUT/inputs" "$OUT/bzImage" "$OUT/kernel-headers.tgz"
t0=$(date +%s)
T=$OUT/tree
src_version=$(dpkg-query -W -f '${Version}' linux-source-6.1)
# The tree of the same source is built again in place (kbuild rebuilds what the new
# configuration changes); another source is unpacked afresh.
if [ "$(cat "$T/.ndi-source" 2>/dev/null)" != "$src_version" ]; then
    rm -rf "$T"
    mkdir -p "$T"
    tar -C "$T" --strip-components=1 -xf "$TARBALL"
    echo "$src_version" >"$T/.ndi-source"
fi
K=(make -C "$T" ARCH=x86_64 LLVM=1 -j"$(nproc)")
"${K[@]}" tinyconfig >"$OUT/build.log" 2>&1
c() { "$T/scripts/config" --file "$T/.config" "$@"; }
# Everything EXPERT hides (multiuser, futex, epoll, signalfd, timerfd, eventfd, shmem,
# file locking, printk, ...) back at its default: tinyconfig's EMBEDDED selects EXPERT.
c -d EMBEDDED -d EXPERT
# The VM: the serial console, the gzip initramfs, /init as a busybox script, the file
# systems /init mounts, and kernel.org's release suffix off in favour of COS's "+".
c -e TTY -e SERIAL_8250 -e SERIAL_8250_CONSOLE -e BLK_DEV_INITRD -e RD_GZIP -e ACPI \
    -e BINFMT_ELF -e BINFMT_SCRIPT -e DEVTMPFS -e PROC_FS -e SYSFS -e TMPFS -e SECURITYFS \
    -d LOCALVERSION_AUTO --set-str LOCALVERSION "+"
# Modules as COS has them: unloadable, versioned symbols, signed (sha256), the signing
# key built in; enforcement from module.sig_enforce=1 on the command line.
# The key by an absolute path: kbuild makes certs/signing_key.pem anew (a random key) when
# it is the default one.
cp "$KEY" "$OUT/signing_key.pem"
c -e MODULES -e MODULE_UNLOAD -e MODVERSIONS -e MODULE_SIG -e MODULE_SIG_SHA256 \
    --set-str MODULE_SIG_KEY "$OUT/signing_key.pem" -d MODULE_SIG_ALL -d MODULE_SIG_FORCE
# The installer's own sockets (AF_UNIX), as every node has them.
c -e NET -e UNIX
# What NVIDIA's modules look for: PCI and MSI, the MMU notifiers the open nvidia-uvm
# registers (selected by KVM, which GPU nodes' kernels have), and the multiprocessor
# kernel every GPU node runs.
c -e PCI -e PCI_MSI -e SMP -e X86_PAT -e MTRR -e HIGH_RES_TIMERS -e VIRTUALIZATION -e KVM \
    -e KVM_INTEL
"${K[@]}" olddefconfig >>"$OUT/build.log" 2>&1
for want in CONFIG_CC_IS_CLANG=y CONFIG_MODULE_SIG=y CONFIG_MODVERSIONS=y CONFIG_PCI=y \
    CONFIG_64BIT=y CONFIG_BLK_DEV_INITRD=y CONFIG_SERIAL_8250_CONSOLE=y CONFIG_ACPI=y \
    CONFIG_FILE_LOCKING=y CONFIG_MMU_NOTIFIER=y CONFIG_FUTEX=y CONFIG_MULTIUSER=y CONFIG_UNIX=y; do
    grep -qx "$want" "$T/.config" || { echo "clang-kernel: the configuration lost $want" >&2; exit 1; }
done
! grep -qx CONFIG_EXPERT=y "$T/.config" || { echo "clang-kernel: EXPERT is still on" >&2; exit 1; }
echo "clang-kernel: building ($(grep -c '=y$' "$T/.config") options on; log $OUT/build.log)"
"${K[@]}" bzImage modules_prepare >>"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; echo "clang-kernel: the build failed" >&2; exit 1; }
# Module.symvers: an empty module build writes it (no modules of its own).
"${K[@]}" modules >>"$OUT/build.log" 2>&1
R=$(cat "$T/include/config/kernel.release")
# The certificate built in is KEY's.
openssl x509 -in "$KEY" -outform DER | cmp -s - "$T/certs/signing_key.x509" ||
    { echo "clang-kernel: the kernel's built-in certificate is not KEY's" >&2; exit 1; }
cp "$T/arch/x86/boot/bzImage" "$OUT/bzImage"
cp "$T/.config" "$OUT/config"
echo "$R" >"$OUT/release"

# The headers an external module build reads, as COS ships them: the Makefiles, include/,
# scripts/ with its built host programs and module.lds, the architecture's include and
# Makefiles, objtool, Module.symvers and the configuration.
H=$OUT/headers/usr/src/linux-headers-$R
rm -rf "$OUT/headers"
mkdir -p "$H"
(
    cd "$T"
    {
        find . arch/x86 -maxdepth 1 -name 'Makefile*'
        find include scripts arch/x86/include -type f -o -type l
        find arch/x86 -name 'Kbuild*' -o -name 'Platform'
        find arch/x86 -type d -name scripts -exec find {} -type f \;
        echo tools/objtool/objtool
        echo Module.symvers
        echo .config
    } | grep -v '\.o$\|\.cmd$' | sort -u >"$OUT/headers.list"
    tar -cf - -T "$OUT/headers.list" | tar -C "$H" -xf -
)
tar -C "$OUT/headers" -czf "$OUT/kernel-headers.tgz" usr
rm -rf "$OUT/headers" "$OUT/headers.list"
echo "$inputs" >"$OUT/inputs"
echo "clang-kernel: $R built with $(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*\)"/\1/p' "$OUT/config") in $(($(date +%s) - t0)) s;" \
    "headers $(du -h "$OUT/kernel-headers.tgz" | cut -f1)"
