#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Boots Debian's kernel under qemu with the installer in the initramfs and runs scenarios
# against the real kernel (tests/vm/test.sh): run.sh BINARY [SCENARIO...]
#
#   main      install, order, parameters, nodes, re-run, a parameter dropped (loaded again
#             without it), a value the kernel refuses (exit 6, the recorded set restored),
#             in use (exit 7), upgrade, IMEX's channel0 (--imex-channel0: the major the
#             kernel gives 550's nvidia-caps-imex-channels), uninstall
#   defer     --when-busy defer over two boots (defer-1, defer-2) of one disk made anew per
#             run (build/vm/stateful.img, ext4, qemu's virtio drive; /init loads virtio_blk
#             and ext4 from the initramfs and binds the disk's home/, var/ and etc/kubernetes/
#             as a COS node's stateful partition): boot 1 installs the old version, a holder
#             of /dev/nvidiactl makes fail exit 7 with nothing changed and defer exit 0 with
#             the old driver serving byte for byte and the new one pending (record, status,
#             label, metric); the kernel itself refuses delete_module while a node is open;
#             the holder gone, a re-run switches through delete_module and finit_module;
#             held again, the old version is asked for and left pending at poweroff (disk
#             unmounted first). Boot 2 finds nothing loaded and no package anywhere but the
#             staged copy: the pending version is the one that loads, then the published
#             state is checked whole
#   enforce   module.sig_enforce=1: the kernel rejects the test key (exit 6, nothing loaded)
#   rhel      a node that says it is Rocky Linux (ID_LIKE rhel): the package built by
#             build-driver-package --kernel-devel-rpm from a stand-in of Red Hat's
#             kernel-devel RPM of this kernel (os rhel) is chosen, verified and loaded;
#             a node that says it is Debian has no package there
#   selinux   SELinux on (security=selinux), Debian's reference policy with its container
#             module (built here from selinux-policy-src, with a test-only module that makes
#             kernel_t, the domain /init and the installer run in, permissive): the installer
#             labels what containers read (permissive, then enforcing), the labels read back
#             with coreutils' stat (libselinux); a process in container_t with its own
#             categories, chrooted into a container rootfs labelled as an engine labels one,
#             with the install dir's lib64/ and bin/ bound at /usr/local/nvidia as the CDI
#             spec binds them, runs nvidia-smi; relabelled tmpfs_t (the label the install
#             dir's tmpfs gives files) it is refused, the kernel's AVC denial naming
#             container_t, and doctor fails naming the entries; a re-run puts the labels
#             back; Debian's stock policy (no container module) makes the installer label
#             nothing and say why
#   mig       GPU partitions: the pool's gpu_config.json made through the NVML stand-in, the
#             stand-in nvidia.ko making the instances' capabilities, their nvidia-caps
#             nodes with the kernel's major, CDI, labels, a busy refusal, undo, uninstall
#   lockdown  lockdown=integrity: the kernel refuses (exit 6, nothing loaded)
#   vendor-sig  module.sig_enforce=1: one of Debian's own signed modules, packaged with
#             build-driver-package --keep-signatures and verified with Debian's certificate
#             (extracted from the kernel image), loads; the same module re-signed with the
#             test key is refused (EKEYREJECTED)
#   agent-upgrade
#             the node agent finishes a pending upgrade by itself: a holder of
#             /dev/nvidiactl leaves the new version pending, the agent (upgrades on, against
#             tests/tools/kube-api.py on the host's 127.0.0.1, which the guest reaches at
#             10.0.2.2 through qemu's user network) cordons the node and waits, the holder
#             ends, the agent activates the version in place through the real kernel and
#             validates it, one process throughout; the node it leaves on the stand-in is
#             checked here (done, uncordoned, slot given back, an Event per state)
#   supply    a kernel the repository has no package for, end to end with no person: the
#             repository served by the host (tests/tools/httpd.py) has the driver for
#             another kernel only; the installer waits and asks on its Node (the API
#             stand-in, as agent-upgrade's); the host's supply_boot sees the ask, runs
#             scripts/supply with the local executor, which builds the stand-in modules
#             from source against this kernel's real headers and publishes; the installer
#             installs at its next check. The ask answered and the Events are checked on
#             the host (tests/vm/supply-host.py), and the times printed as VMTIME lines
#   gpudirect GDRCopy and GPUDirect Storage: the stand-in driver with the stand-ins of
#             gdrcopy and gds-nvidia-fs (tests/standin/) built by build-driver-package
#             --gdrcopy --gds against this kernel's headers; a package whose gdrdrv.ko was
#             changed after signing refused with nothing loaded; the good one's gdrdrv and
#             nvidia-fs loaded after nvidia, /dev/gdrdrv and /dev/nvidia-fs0..15 at the
#             majors of /proc/devices, in the CDI spec, gone after uninstall
#   real-supply
#             supply with NVIDIA's real 535.261.03: the pass builds it from Debian's non-free
#             packages for this kernel (in make check-real's work directory, whose cache
#             holds its compiled modules), signs it with the real-driver test key and
#             publishes; the node that waited installs it, verifies every signature, and the
#             kernel refuses it with ENODEV (no GPU), as real-proprietary
#   clang, clang-enforce
#             the clang-built stand-in for a COS kernel (tests/real/clang-kernel.sh, made by
#             make check-real into build/real/clang-kernel; release 6.1.192+, the real-driver
#             test key built in), booted instead of Debian's; module.sig_enforce=1 for
#             clang-enforce. The stand-in modules built by build-driver-package --llvm
#             against its kernel-headers.tgz load (signed with the built-in key); the same
#             modules signed with another key load only without enforcement (the kernel
#             refuses them with it, exit 6, nothing loaded); NVIDIA's real 535.261.03 built
#             --llvm (build/real/clang-repo, both flavours) is refused with ENODEV and
#             rolled back, as on Debian's kernel without a GPU
#   timing    time to ready, for make bench (bench/run.py): NDI_TIMING_ROUNDS (1) rounds of
#             two boots of one disk made anew (timing-1, timing-2), the kernel's
#             initcall_debug on, the repository served by the host (tests/tools/httpd.py on
#             127.0.0.1, the guest's 10.0.2.2): a cold install; after the reboot, the
#             reload from the node's disk, then an upgrade. Each run's stage times, wall
#             time and the kernel's module-init time in a "VMTIME round=N RUN" line
#   real-timing
#             timing's measurement for NVIDIA's real 535.261.03 (make check-real's
#             repository, served by the host), one boot per round: without a GPU no run
#             reaches ready, so a cold install, the same from the node's cache and the
#             user space alone are timed up to the kernel's refusal (ENODEV) or, for the
#             user space, to its end
#   arm64-main, arm64-enforce
#             main and enforce on Debian's current arm64 kernel under qemu-system-aarch64
#             (virt, cortex-a57, TCG): the installer cross-built (make ARCH=arm64, given as
#             NDI_VM_ARM64_BIN), the stand-in driver built for that kernel by
#             build-driver-package --arch arm64 (make_arm64), with a default module
#             parameter of the package's own (--module-param nvidia-drm.modeset=1)
#   arm64-real-proprietary, arm64-real-open
#             NVIDIA's real arm64 535.261.03 (make check-real cross-builds it into
#             build/real/arm64/repo for the same arm64 kernel), one flavour asked for, as
#             real-proprietary and real-open: refused with ENODEV and rolled back, then
#             the user space only, the real arm64 nvidia-smi run
#   rdma      GPUDirect RDMA on Debian's in-tree ib_core (in the initramfs, not loaded at boot):
#             --rdma auto without an RDMA stack loaded serves nothing and says why (exit 0,
#             ib_core not loaded); --rdma peermem loads ib_core from the node's module tree,
#             then the stand-in nvidia-peermem (tests/kmod: it needs ib_core's
#             ib_register_client), the order read from the kernel (ib_core's holders); the
#             node agent (--rdma peermem): the stack stopped as MOFED's openibd stops it, the
#             agent waits and loads nothing; the stack started again with the stand-in of
#             MOFED's peer-memory API (tests/kmod/mofed, from /lib/modules/R/updates), the
#             agent loads nvidia-peermem again, verified, which registers with that API (the
#             kernel's holders of ib_core and ib_peer_mem, the kernel log's order); doctor's
#             rdma line; the agent's metrics held to docs/metrics.md on the host
#   demo      the install, shown (make demo)
#   real-proprietary, real-open
#             NVIDIA's real driver (make check-real builds its repository, both flavours,
#             into build/real first), one flavour asked for: refused with ENODEV and rolled
#             back, then user space only, its nvidia.ko's license naming the flavour
#   real-agent
#             NVIDIA's real 535.261.03 user space (the proprietary package make check-real
#             built) over the stand-in modules of the same version, which load without a
#             GPU: installed, then the node agent starts NVIDIA's real nvidia-persistenced
#             against a loaded driver; what the daemon does there (no GPU, the stand-in's
#             /dev/nvidiactl) is recorded, with its syslog, and the agent's SIGTERM ends it
#   real-flavours
#             the same repository, the fake GPU set to a Hopper (10de:2330), a Volta
#             (10de:1db1), a Blackwell (10de:2901) and a GPU of the open list in turn; per
#             --kernel-module-type, the outcome the index's GPU lists predict (written on
#             the host into /etc/ndi-real-cases): the flavour's nvidia.ko and ENODEV, or
#             exit 3
#
# Stand-in modules (tests/kmod) are built against the installed headers and signed with a
# throwaway key by Debian's sign-file. Work files stay in build/vm.
set -euo pipefail
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

BIN=$(realpath "${1:?usage: run.sh BINARY [SCENARIO...]}")
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(main defer enforce lockdown vendor-sig agent-upgrade supply mig rhel selinux rdma gpudirect arm64-main arm64-enforce)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tools/pipes.sh"
W="$SRC/build/vm"
V_OLD=535.261.03
V_NEW=550.90.07

fail() {
    echo "vm: $*" >&2
    exit 1
}

# wait_port FILE PID WHAT
. "$SRC/tests/tools/wait-port.sh"

# The newest kernel with both headers and an image.
R=""
for d in /lib/modules/*/; do
    r=$(basename "$d")
    [ -e "/lib/modules/$r/build/Makefile" ] && [ -e "/boot/vmlinuz-$r" ] && R=$r
done
[ -n "$R" ] || fail "no kernel with headers and image (apt-get install linux-image-amd64 linux-headers-amd64)"
KIMAGE=/boot/vmlinuz-$R
SIGN_FILE=$(ls /usr/lib/linux-kbuild-*/scripts/sign-file 2>/dev/null | tail -1)
[ -x "$SIGN_FILE" ] || fail "no sign-file (apt-get install linux-kbuild-6.1)"
command -v qemu-system-x86_64 >/dev/null || fail "no qemu (apt-get install qemu-system-x86)"
# Seconds a boot may take to print its first VMTEST line (10 s idle, about 60 s under a
# loaded make check; the real driver's boots load 3 GB of initramfs first).
FIRST_LINE_S=${NDI_VM_FIRST_LINE_S:-300}
command -v mkfs.ext4 >/dev/null || fail "no mkfs.ext4 (apt-get install e2fsprogs)"
BUSYBOX=$(command -v busybox) || fail "no busybox (apt-get install busybox-static)"

# What the guest runs: the host's own architecture, unless an arm64 scenario sets these
# (make_arm64).
GUEST_ARCH=amd64 GUEST_BIN=$BIN GUEST_BUSYBOX=$BUSYBOX GUEST_LDCONFIG=/usr/sbin/ldconfig
MULTIARCH=x86_64-linux-gnu KROOT=""

rm -rf "$W/initrd" "$W/repo" "$W"/*.log "$W/stateful.img"
mkdir -p "$W/keys" "$W/initrd"

make_keys() {
    # mod.key: made by scripts/make-signing-key (through make-module-key); a key of the
    # older test tool, without it, is made anew.
    [ -s "$W/keys/mod.key" ] && return
    "$SRC/tests/tools/make-module-key" "nvidia-driver-installer VM test key" "$W/keys/mod"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/keys/repo.pem" 2>/dev/null
    openssl pkey -in "$W/keys/repo.pem" -pubout -out "$W/keys/repo-pub.pem"
}

# Stand-in modules for VERSION, built once per kernel and version, then signed.
# On amd64 nvidia-peermem is built against the MOFED stand-in's Module.symvers, as NVIDIA's
# driver container builds it against MOFED's ofa_kernel (tests/kmod/Kbuild: its conftest).
build_modules() {
    local v=$1
    local dir="$W/kmod-$R-$v" extra=()
    if [ "${GUEST_ARCH:-amd64}" != arm64 ]; then
        build_mofed
        extra=(KBUILD_EXTRA_SYMBOLS="$W/mofed-$R/Module.symvers")
    fi
    if [ ! -e "$dir/nvidia.ko" ] || [ ! -e "$dir/nvidia-peermem.ko" ] ||
        [ -n "$(find "$SRC/tests/kmod" -maxdepth 1 -newer "$dir/nvidia.ko" -name '*.[ch]' -o -newer "$dir/nvidia.ko" -name Kbuild)" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$dir/"
        make -s -C "/lib/modules/$R/build" M="$dir" NV_VERSION="$v" "${extra[@]}" modules 2>&1 |
            grep -v "Skipping BTF" || true
    fi
    for ko in "$dir"/*.ko; do
        strip --strip-debug "$ko"
        "$SIGN_FILE" sha256 "$W/keys/mod.pem" "$W/keys/mod.pem" "$ko"
    done
}

make_repo() {
    # The index names the modules' signer (packages[].signer), as build-driver-package
    # records it: the dry-run plan predicts from it before anything is downloaded.
    local crt="$W/keys/mod.crt" serial
    serial=$(openssl x509 -in "$crt" -noout -serial | cut -d= -f2)
    [ $((${#serial} % 2)) = 0 ] || serial=0$serial
    local signer=(--signer-subject "nvidia-driver-installer VM test key"
        --signer-key-id "$(echo "$serial" | sed 's/../&:/g; s/:$//')"
        --signer-sha256 "$(openssl x509 -in "$crt" -outform DER | sha256sum | cut -c1-64)")
    for v in "$V_OLD" "$V_NEW"; do
        build_modules "$v"
        "$SRC/scripts/make-standin-driver" "$v" "$W/drv-$v" 64 >/dev/null
        rm -f "$W/drv-$v/kernel/"*.ko
        cp "$W/kmod-$R-$v/"*.ko "$W/drv-$v/kernel/"
        "$SRC/scripts/make-repo" pack "$W/drv-$v" "$W/nvidia-$v.tar.zst"
        "$SRC/scripts/make-repo" add --repo "$W/repo" --key "$W/keys/repo.pem" --version "$v" \
            --kernel "$R" $([ "$v" = "$V_OLD" ] && echo --tag default) "${signer[@]}" \
            "$W/nvidia-$v.tar.zst" >/dev/null
    done
}

# A repository of the platform's own signatures (vendor-sig): Debian's signed crc7.ko
# (small, no dependencies, not loaded at boot) packaged by build-driver-package with its
# signature kept ($VENDOR_MOD, V_OLD), verified with the certificate Debian's kernel has
# built in; and the same module re-signed with the test key (V_NEW).
VENDOR_MOD=crc7
make_vendor_repo() {
    local ko src=$W/vendor-src bdp=("$SRC/scripts/build-driver-package" --kernel "$R"
        --modules "$VENDOR_MOD" --installer "$BIN" --repo "$W/vendor-repo" --repo-key "$W/keys/repo.pem")
    ko=$(find "/lib/modules/$R/kernel" -name "$VENDOR_MOD.ko*" | sed -n 1p)
    [ -n "$ko" ] || fail "Debian's kernel has no $VENDOR_MOD module"
    "$SRC/scripts/extract-kernel-certs" "/boot/vmlinuz-$R" >"$W/keys/kernel.pem"
    rm -rf "$W/vendor-repo" "$W/vendor-ko" "$src" && mkdir -p "$W/vendor-ko" "$src/firmware"
    cp "$ko" "$W/vendor-ko/"
    "$SRC/scripts/make-standin-driver" "$V_OLD" "$W/vendor-drv" 4 >/dev/null
    find "$W/vendor-drv/lib64" -type f -exec cp {} "$src/" \;
    cp "$W/vendor-drv/bin/"* "$src/"
    "${bdp[@]}" --source "$src" --prebuilt-modules "$W/vendor-ko" --keep-signatures \
        --vendor-cert "$W/keys/kernel.pem" --work "$W/vendor-work" --tag default >"$W/vendor-kept.log" 2>&1 ||
        { cat "$W/vendor-kept.log"; fail "build-driver-package --keep-signatures failed"; }
    rm -rf "$src"/* && mkdir -p "$src/firmware"
    "$SRC/scripts/make-standin-driver" "$V_NEW" "$W/vendor-drv" 4 >/dev/null
    find "$W/vendor-drv/lib64" -type f -exec cp {} "$src/" \;
    cp "$W/vendor-drv/bin/"* "$src/"
    "${bdp[@]}" --source "$src" --prebuilt-modules "$W/vendor-ko" --sign-key "$W/keys/mod.pem" \
        --sign-cert "$W/keys/mod.pem" --work "$W/vendor-work" >"$W/vendor-ours.log" 2>&1 ||
        { cat "$W/vendor-ours.log"; fail "build-driver-package (re-signed) failed"; }
    rm -rf "$src" "$W/vendor-drv"
}

# rhel-repo: the stand-ins built by build-driver-package --kernel-devel-rpm from a stand-in
# of Red Hat's kernel-devel RPM of this kernel (tests/tools/make-kernel-devel-rpm), for os
# rhel, signed with the VM's test key.
make_rhel_repo() {
    local w=$W/rhel src rpm
    rm -rf "$w" "$W/rhel-repo" && mkdir -p "$w"
    rpm=$("$SRC/tests/tools/make-kernel-devel-rpm" "$R" "$w") || fail "the stand-in kernel-devel RPM"
    src=$w/src
    standin_source "$src"
    "$SRC/scripts/build-driver-package" --kernel "$R" --kernel-devel-rpm "$rpm" --os rhel \
        --source "$src" --sign-key "$W/keys/mod.pem" --sign-cert "$W/keys/mod.crt" \
        --repo "$W/rhel-repo" --repo-key "$W/keys/repo.pem" --installer "$BIN" --work "$w/work" \
        --tag default --quiet >"$w/bdp.log" 2>&1 ||
        { tail -5 "$w/bdp.log"; fail "build-driver-package --kernel-devel-rpm failed"; }
    rm -rf "$w/root" "$w/rpm"
}

# The selinux scenario's policies ($W/selinux): Debian's reference policy as
# selinux-policy-default built it (policy.stock: no container module), and the same with
# refpolicy's container module (container.te and container.fc from selinux-policy-src,
# compiled against selinux-policy-dev's headers) and a test-only CIL module that makes
# kernel_t (/init's domain) permissive and the container engine (policy.container), built by semodule in a copy of the policy store
# (the host's own is not touched). And what reads labels back in the guest: coreutils' stat
# and chcon, which libselinux makes SELinux-aware.
SE_TOOLS=(/usr/bin/stat /usr/bin/chcon)
make_selinux() {
    local d=$W/selinux stock=/etc/selinux/default/policy/policy.33 dev=/usr/share/selinux/devel/Makefile
    local src=/usr/src/selinux-policy-src.tar.zst mod=selinux-policy-src/policy/modules/services/container
    [ -s "$stock" ] || fail "no SELinux reference policy (apt-get install selinux-policy-default)"
    [ -e "$dev" ] || fail "no reference policy headers (apt-get install selinux-policy-dev)"
    [ -e "$src" ] || fail "no reference policy source (apt-get install selinux-policy-src)"
    command -v semodule >/dev/null || fail "no semodule (apt-get install policycoreutils)"
    [ -s "$d/policy.container" ] && [ "$d/policy.container" -nt "$stock" ] &&
        [ "$d/policy.container" -nt "$SRC/tests/vm/run.sh" ] && return
    rm -rf "$d" && mkdir -p "$d/mod" "$d/root/etc/selinux" "$d/root/var/lib/selinux"
    tar -xf "$src" -C "$d" "$mod.te" "$mod.fc"
    cp "$d/$mod.te" "$d/$mod.fc" "$d/mod/"
    make -s -C "$d/mod" -f "$dev" container.pp >"$d/build.log" 2>&1 ||
        { cat "$d/build.log"; fail "refpolicy's container module did not build"; }
    # kernel_t stands in for the container engine that starts a container's process: what
    # the container module grants container_t toward the engine's domain
    # (container_engine_system_domain: its descriptors, its SIGCHLD) goes to kernel_t.
    printf '%s\n' '(typepermissive kernel_t)' '(allow container_t kernel_t (fd (use)))' \
        '(allow container_t kernel_t (process (sigchld)))' >"$d/mod/ndi_vm_permissive.cil"
    cp -a /etc/selinux/default /etc/selinux/config /etc/selinux/semanage.conf "$d/root/etc/selinux/"
    cp -a /var/lib/selinux/default "$d/root/var/lib/selinux/"
    # -S is taken under -p: the store copied into $d/root. -D: without the dontaudit rules,
    # as semodule -DB debugs a host, so that every denial is logged (refpolicy hides a
    # container's reads of files it may not read).
    semodule -D -p "$d/root" -S /var/lib/selinux -i "$d/mod/container.pp" "$d/mod/ndi_vm_permissive.cil" \
        >>"$d/build.log" 2>&1 || { cat "$d/build.log"; fail "semodule could not build the test policy"; }
    cp "$stock" "$d/policy.stock"
    cp "$d/root/etc/selinux/default/policy/policy.33" "$d/policy.container.tmp"
    rm -rf "$d/root" "$d/selinux-policy-src"
    mv "$d/policy.container.tmp" "$d/policy.container"
}

# with_arm64 COMMAND...: runs COMMAND (make_arm64, make_arm64_real) with what the guest
# runs set for arm64: Debian's current arm64 kernel (scripts/fetch-debian-kernel, cached in
# build/kernels: image, modules, headers and busybox-static:arm64), the cross-built
# installer (make ARCH=arm64, or NDI_VM_ARM64_BIN), its libraries from this machine's
# :arm64 packages, the arm64 ldconfig it ships. Sets AKIMAGE, the kernel boot() gives the
# arm64 scenarios.
with_arm64() {
    local ar
    ar=$("$SRC/scripts/fetch-debian-kernel" arm64 "$SRC/build/kernels") ||
        fail "could not fetch Debian's arm64 kernel (scripts/fetch-debian-kernel arm64)"
    command -v qemu-system-aarch64 >/dev/null || fail "no qemu-system-aarch64 (apt-get install qemu-system-arm)"
    local GUEST_ARCH=arm64 MULTIARCH=aarch64-linux-gnu R=$ar KROOT=$SRC/build/kernels/$ar/root
    local GUEST_BIN GUEST_BUSYBOX GUEST_LDCONFIG
    GUEST_BIN=$(realpath "${NDI_VM_ARM64_BIN:-$SRC/build-arm64/nvidia-driver-installer}")
    [ -x "$GUEST_BIN" ] || fail "no arm64 installer at $GUEST_BIN (make ARCH=arm64)"
    readelf -h "$GUEST_BIN" | grepq "Machine: *AArch64" || fail "$GUEST_BIN is not an arm64 binary"
    GUEST_LDCONFIG=$(dirname "$GUEST_BIN")/libexec/nvidia-driver-installer/ldconfig
    GUEST_BUSYBOX=$KROOT/bin/busybox
    AKIMAGE=$KROOT/boot/vmlinuz-$ar
    "$@"
}

# The arm64 scenarios' initramfs (initrd-arm64.gz): a repository of the stand-in driver
# built for the arm64 kernel the way an operator builds one: the user space
# cross-compiled (make-standin-driver with aarch64-linux-gnu-gcc), the modules compiled,
# signed and packed by build-driver-package --arch arm64.
make_arm64() {
    local v src
    command -v aarch64-linux-gnu-gcc >/dev/null || fail "no aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu)"
    rm -rf "$W/arm64" && mkdir -p "$W/arm64"
    echo "10de:2330 NVIDIA H100 80GB HBM3" >"$W/arm64/gpus"
    for v in "$V_OLD" "$V_NEW"; do
        src=$W/arm64/src-$v
        mkdir -p "$src/kernel-open" "$src/firmware"
        CC=aarch64-linux-gnu-gcc KERNEL_RELEASE=$R "$SRC/scripts/make-standin-driver" "$v" "$W/arm64/drv" 64 >/dev/null
        cp -L "$W/arm64/drv/lib64/"*.so."$v" "$W/arm64/drv/bin/nvidia-smi" "$src/"
        cp "$W/arm64/drv/firmware/nvidia/$v/"*.bin "$src/firmware/"
        cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$src/kernel-open/"
        printf 'modules:\n\t$(MAKE) -C $(SYSOUT) M=$(CURDIR) NV_VERSION=%s modules\n' "$v" >"$src/kernel-open/Makefile"
        # The stand-ins are GPL (no 'P' taint, as NVIDIA's open modules): packed as the
        # open flavour, for the GPU the VM fakes.
        "$SRC/scripts/build-driver-package" --kernel "$R" --arch arm64 --flavour open \
            --pci-ids "open=$W/arm64/gpus" --module-param nvidia-drm.modeset=1 \
            --headers "$KROOT/usr/src/linux-headers-$R" --source "$src" \
            --sign-key "$W/keys/mod.pem" --sign-cert "$W/keys/mod.crt" --repo "$W/arm64/repo" \
            --repo-key "$W/keys/repo.pem" --installer "$BIN" --work "$W/arm64/work" \
            $([ "$v" = "$V_OLD" ] && echo --tag default) --quiet >"$W/arm64/bdp-$v.log" 2>&1 ||
            { tail -5 "$W/arm64/bdp-$v.log"; fail "build-driver-package --arch arm64 ($v) failed"; }
    done
    rm -rf "$W/arm64/drv" "$W/arm64/work"/*.tar.zst
    make_initrd "$W/initrd-arm64.gz" "$W/arm64/repo"
    echo "vm: arm64 kernel $R, initramfs $(du -h "$W/initrd-arm64.gz" | cut -f1)"
}

# The arm64 real scenarios' initramfs (initrd-arm64-real.gz): NVIDIA's real arm64
# 535.261.03 as make check-real built it for the same arm64 kernel, both flavours in one
# repository ($REAL/arm64/repo).
make_arm64_real() {
    [ -s "$REAL/arm64/repo/index.json" ] || fail "no arm64 real-driver repository in $REAL/arm64 (make check-real builds it)"
    grep -q "\"$R\"" "$REAL/arm64/repo/index.json" || fail "$REAL/arm64/repo has no package for $R"
    make_initrd "$W/initrd-arm64-real.gz" "$REAL/arm64/repo"
    echo "vm: arm64 kernel $R, real-driver initramfs $(du -h "$W/initrd-arm64-real.gz" | cut -f1)"
}

# Copies FILE (and, for a binary, its libraries) to the same path in the initramfs.
copy_in() {
    local f
    for f in "$@"; do
        mkdir -p "$W/initrd$(dirname "$f")"
        cp -L "$f" "$W/initrd$f"
    done
}

# The rdma scenario's stand-in for MOFED's addition to ib_core (tests/kmod/mofed), built
# once per kernel against the installed headers: copy_kernel_modules puts it where MOFED
# installs its modules, /lib/modules/R/updates/.
build_mofed() {
    local dir=$W/mofed-$R
    if [ ! -e "$dir/ib_peer_mem.ko" ] || [ "$SRC/tests/kmod/mofed/ib_peer_mem.c" -nt "$dir/ib_peer_mem.ko" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        cp "$SRC/tests/kmod/mofed/"* "$dir/"
        make -s -C "/lib/modules/$R/build" M="$dir" modules 2>&1 | grep -v "Skipping BTF" || true
        [ -e "$dir/ib_peer_mem.ko" ] || fail "tests/kmod/mofed did not build"
        strip --strip-debug "$dir/ib_peer_mem.ko"
    fi
}

# The host's in-tree modules the driver needs (drm, drm_kms_helper; video for the real
# nvidia-modeset), and what the defer scenario's disk needs (Debian builds virtio_pci,
# virtio_blk, ext4 and the crc32c its checksums ask the crypto API for as modules; /init
# loads them for that scenario only) and agent-upgrade's network (virtio_net), with their
# dependencies from modules.dep, indexed by depmod.
# On arm64 (GUEST_ARCH), Debian's arm64 kernel as fetched and unpacked under $KROOT, and
# what its scenarios need: drm, drm_kms_helper and ACPI's video (NVIDIA's arm64
# nvidia-modeset depends on it too).
copy_kernel_modules() {
    local m dep rel="/lib/modules/$R" base="$KROOT/lib/modules/$R" todo=() want=(drm drm_kms_helper video)
    # ib_core: the rdma scenario's in-tree RDMA stack (no dependencies of its own in 6.1).
    [ "$GUEST_ARCH" = arm64 ] || want+=(virtio_pci virtio_blk ext4 crc32c_generic virtio_net ib_core)
    for m in "${want[@]}"; do
        todo+=("$(grep -o "^[^:]*/$m\.ko" "$base/modules.dep")")
    done
    while [ ${#todo[@]} -gt 0 ]; do
        m=${todo[0]}
        todo=("${todo[@]:1}")
        [ -e "$W/initrd$rel/$m" ] && continue
        mkdir -p "$(dirname "$W/initrd$rel/$m")"
        cp "$base/$m" "$W/initrd$rel/$m"
        for dep in $(grep "^$m:" "$base/modules.dep" | cut -d: -f2); do
            todo+=("$dep")
        done
    done
    if [ "$GUEST_ARCH" != arm64 ]; then
        build_mofed
        mkdir -p "$W/initrd$rel/updates"
        cp "$W/mofed-$R/ib_peer_mem.ko" "$W/initrd$rel/updates/"
    fi
    for f in modules.order modules.builtin modules.builtin.modinfo; do
        [ -e "$base/$f" ] && cp "$base/$f" "$W/initrd$rel/$f"
    done
    depmod -b "$W/initrd" "$R"
}

# elf_libs FILE...: the shared libraries FILE... need, transitively, from the guest
# architecture's multiarch directories of this machine (scripts/elf-needed: what ldd tells
# for the host's own binaries, without running them), and the program interpreter.
elf_libs() {
    "$SRC/scripts/elf-needed" "$MULTIARCH" "$@" || return 1
    readelf -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p'
}

# make_initrd OUT REPO_DIR... : the installer, the kernel's modules, the repositories
# (each at /<its name>) and the keys of KEY_DIR.
make_initrd() {
    local out=$1 r
    shift
    rm -rf "$W/initrd"
    mkdir -p "$W/initrd/bin" "$W/initrd/usr/bin" "$W/initrd/etc" "$W/initrd/keys"
    cp "$GUEST_BUSYBOX" "$W/initrd/bin/busybox"
    cp "$GUEST_BIN" "$W/initrd/usr/bin/nvidia-driver-installer"
    # Its static helpers (installer/stage/libexec.h), found at ../libexec from /usr/bin.
    mkdir -p "$W/initrd/usr/libexec"
    cp -r "$(dirname "$GUEST_BIN")/libexec/nvidia-driver-installer" "$W/initrd/usr/libexec/"
    local so lib sonames libs
    sonames=$(grep -o '"lib[a-z]*\.so\.[0-9]*"' "$SRC/installer/util/dlib.h" | tr -d '"')
    if [ "$GUEST_ARCH" = arm64 ]; then
        # The libraries it links and loads on first use, and what NVIDIA's user space links
        # against, from this machine's :arm64 packages.
        local dl=()
        for so in $sonames libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do
            lib=$(ls "/lib/$MULTIARCH/$so" "/usr/lib/$MULTIARCH/$so" 2>/dev/null | sed -n 1p)
            [ -n "$lib" ] || fail "$so is not installed for $MULTIARCH"
            dl+=("$lib")
        done
        libs=$(elf_libs "$GUEST_BIN" "${dl[@]}") || fail "the arm64 libraries of $GUEST_BIN"
        copy_in $libs "${dl[@]}"
    else
        copy_in $(ldd "$GUEST_BIN" | grep -o '/[^ ]*' | sort -u)
        # And the libraries it loads on first use (their sonames as installer/util/dlib.h
        # names them), with what those link.
        for so in $sonames; do
            lib=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ && !found {print $NF; found = 1}')
            [ -n "$lib" ] || fail "$so is not installed"
            copy_in "$lib" $(ldd "$lib" | grep -o '/[^ ]*' | sort -u)
        done
        # What NVIDIA's own user space links against (nvidia-smi, libcuda, libnvidia-ml).
        copy_in $(ls /lib/x86_64-linux-gnu/{libpthread.so.0,libdl.so.2,librt.so.1,libm.so.6})
        # and Debian's nvidia-persistenced, which the agent runs in our image, where it is too
        copy_in /lib/x86_64-linux-gnu/libtirpc.so.3 $(ldd /lib/x86_64-linux-gnu/libtirpc.so.3 | grep -o '/[^ ]*' | sort -u)
    fi
    copy_kernel_modules
    for r in "$@"; do
        cp -r "$r" "$W/initrd/$(basename "$r")"
    done
    cp "$KEY_DIR/repo-pub.pem" "$KEY_DIR/mod.crt" "$W/initrd/keys/"
    [ ! -e "$KEY_DIR/other.crt" ] || cp "$KEY_DIR/other.crt" "$W/initrd/keys/"
    # agent-upgrade's service account, for the API stand-in on the host.
    [ ! -d "$W/kube/sa" ] || cp -r "$W/kube/sa" "$W/initrd/sa"
    [ -z "${REAL_CASES:-}" ] || cp "$REAL_CASES" "$W/initrd/etc/ndi-real-cases"
    [ ! -e "$KEY_DIR/kernel.pem" ] || cp "$KEY_DIR/kernel.pem" "$W/initrd/keys/"
    # The selinux scenario's policies and tools (make_selinux), the tools beside busybox's.
    if [ -n "${SELINUX_DIR:-}" ]; then
        mkdir -p "$W/initrd/selinux" "$W/initrd/usr/lib/ndi-selinux"
        cp "$SELINUX_DIR/policy.stock" "$SELINUX_DIR/policy.container" "$W/initrd/selinux/"
        cp "${SE_TOOLS[@]}" "$W/initrd/usr/lib/ndi-selinux/"
        gcc -O1 -Wall -Werror -static -o "$W/initrd/usr/lib/ndi-selinux/ctr-exec" "$SRC/tests/vm/ctr-exec.c" ||
            fail "tests/vm/ctr-exec.c did not build"
        copy_in $(ldd "${SE_TOOLS[@]}" | grep -v ":$" | grep -o '/[^ ]*' | sort -u)
    fi
    printf 'VENDOR_MOD=%s\n' "${VENDOR_MOD}" >>"$W/initrd/etc/ndi-vendor"
    printf '%b' "${OS_RELEASE:-ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (test VM)"\n}" \
        >"$W/initrd/etc/os-release"
    # The node's own ldconfig (static in Debian), which the installer runs for the host.
    mkdir -p "$W/initrd/sbin"
    cp "$GUEST_LDCONFIG" "$W/initrd/sbin/ldconfig"
    echo "include /etc/ld.so.conf.d/*.conf" >"$W/initrd/etc/ld.so.conf"
    printf 'V_OLD=%s\nV_NEW=%s\n' "$V_OLD" "$V_NEW" >"$W/initrd/etc/ndi-versions"
    install -m 0755 "$SRC/tests/vm/init" "$W/initrd/init"
    cp "$SRC/tests/vm/test.sh" "$W/initrd/test.sh"
    # Packages are compressed already: gzip only what is not.
    (cd "$W/initrd" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out"
    rm -rf "$W/initrd"
}

# agent-upgrade's API server stand-in (tests/tools/kube-api.py): a CA, the server's
# certificate for the address the guest reaches the host's loopback at (10.0.2.2, qemu's
# user network), and a service account (token, ca.crt, namespace) for the initramfs.
make_kube_sa() {
    # Once per run: both initramfs images (stand-in and real) carry the same account.
    [ -z "${KUBE_SA_MADE:-}" ] || return 0
    KUBE_SA_MADE=1
    local d=$W/kube
    rm -rf "$d"
    # The guest reaches the stand-in at 10.0.2.2; supply's pass on the host at 127.0.0.1.
    "$SRC/tests/tools/kube-certs" "$d" 10.0.2.2,IP:127.0.0.1 || fail "agent-upgrade: certificates"
    echo "vm-token-$RANDOM$RANDOM" >"$d/sa/token"
    printf kube-system >"$d/sa/namespace"
    printf '{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "vm-node"}, "spec": {}}]}\n' \
        >"$d/cluster.json"
}

# agent_upgrade_boot: the stand-in on the host's 127.0.0.1, the VM booted with a user
# network to it, then what the agent left on the node: its record done, uncordoned, the
# slot given back, an Event per state in order, and its condition's life in Events and
# its last state. Prints the boot's VMTEST lines, and a
# VMTEST FAIL line for each host-side check that fails.
agent_upgrade_boot() {
    local d=$W/kube spid
    rm -f "$d/port" "$d/state.json" "$d/requests.log"
    cp "$d/cluster.json" "$d/state.json"
    python3 "$SRC/tests/tools/kube-api.py" "$d/port" "$d/api.pem" "$d/api.key" "$d/sa/token" \
        "$d/state.json" "$d/faults.json" "$d/requests.log" 900 &
    spid=$!
    wait_port "$d/port" "$spid" "agent-upgrade: the API server stand-in"
    boot agent-upgrade "ndi_kube_port=$(cat "$d/port")" -netdev user,id=n0 \
        -device virtio-net-pci,netdev=n0
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    python3 - "$d/state.json" <<'EOF'
import json, sys
db = json.load(open(sys.argv[1]))
n = db["nodes"][0]
rec = json.loads(n["metadata"].get("annotations", {}).get("nvidia.com/gpu.driver-installer.upgrade", "{}"))
reasons = [e["reason"] for e in db["events"]]
want = ["DriverUpgradePending", "DriverUpgradeCordoned", "DriverUpgradeWaiting",
        "DriverUpgradeActivating", "DriverUpgradeValidating", "DriverUpgradeDone"]
# The condition nvidia.com/GPUDriverReady beside it: ready on the old driver, not ready
# while the new one is switched in (DriverUpgrading), ready on the new one, Unknown once
# the agent stopped at the guest's shutdown.
want_cond = ["GPUDriverReady", "GPUDriverNotReady", "GPUDriverReady", "GPUDriverUnknown"]
conds = [c for c in n.get("status", {}).get("conditions", [])
         if c.get("type") == "nvidia.com/GPUDriverReady"]
checks = [
    ("host-node-done", n["metadata"].get("labels", {}).get(
        "nvidia.com/gpu.driver-installer.upgrade-state") == "done" and rec.get("state") == "done"),
    ("host-uncordoned", not n.get("spec", {}).get("unschedulable", False) and not rec.get("cordoned")),
    ("host-slot-free", all(not l["spec"].get("holderIdentity") for l in db["leases"]) and db["leases"]),
    ("host-events", [r for r in reasons if r.startswith("DriverUpgrade")] == want),
    ("host-condition-events", [r for r in reasons if r.startswith("GPUDriver")] == want_cond),
    ("host-condition", len(conds) == 1 and conds[0].get("status") == "Unknown"
     and conds[0].get("reason") == "AgentStopped"),
]
for name, ok in checks:
    print("VMTEST ok %s" % name if ok else "VMTEST FAIL %s: node %s, events %s" % (
        name, json.dumps(n), reasons))
EOF
}

# rdma_boot: the rdma scenario's boot, then the agent's metrics the guest printed ("VMTEST
# prom" lines, its textfile) held to docs/metrics.md's "GPUDirect RDMA" table, both ways.
rdma_boot() {
    local out
    out=$(boot rdma "")
    grep -v '^VMTEST END ' <<<"$out"
    sed -n 's/^VMTEST prom //p' <<<"$out" >"$W/rdma.prom"
    if python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "GPUDirect RDMA" \
        "$W/rdma.prom" >"$W/rdma-metrics.log" 2>&1 && [ -s "$W/rdma.prom" ]; then
        echo "VMTEST ok rdma-metrics-doc"
    else
        echo "VMTEST FAIL rdma-metrics-doc: $(tr '\n' ' ' <"$W/rdma-metrics.log")"
    fi
    grep '^VMTEST END ' <<<"$out"
}

# supply_boot SCENARIO OUTCOME KEYS BUILD_ARGS_JSON [PASS_ARGS...]: the VM boots SCENARIO (supply,
# real-supply) against the API stand-in and a repository the host serves (both on
# 127.0.0.1, the guest's 10.0.2.2) that has V_OLD for another kernel only. Beside the boot,
# the host waits for the node's ask (its wants annotation in the stand-in's store: an
# event, not a time) and runs one supply pass: the Nodes from the stand-in, the local
# executor, build-driver-package with BUILD_ARGS_JSON (the platform's build_args of
# supply.json) and PASS_ARGS after the pass's --, signed with KEYS' mod.pem, published with
# KEYS' repo.pem. Then what the node left (tests/vm/supply-host.py check, OUTCOME installed
# or refused): the ask served, withdrawn once installed, the Events, the pass's report; and
# the times as VMTIME lines.
supply_boot() {
    local scenario=$1 outcome=$2 keys=$3 build_args=$4 d=$W/kube s=$W/$1 spid hpid ppid
    shift 4
    rm -rf "$s" && mkdir -p "$s"
    rm -f "$d/port" "$d/state.json" "$d/requests.log"
    cp "$d/cluster.json" "$d/state.json"
    # The repository: V_OLD (tagged default) for a kernel no node runs.
    "$SRC/scripts/make-standin-driver" "$V_OLD" "$s/drv" 4 >/dev/null
    "$SRC/scripts/make-repo" pack "$s/drv" "$s/other.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$s/repo" --key "$keys/repo.pem" --version "$V_OLD" \
        --kernel 0.0.0-none --tag default "$s/other.tar.zst" >/dev/null ||
        fail "$scenario: the repository"
    printf '{"supply": 1, "platforms": {"debian": {"build_args": %s}}}\n' "$build_args" \
        >"$s/supply.json"
    python3 "$SRC/tests/tools/kube-api.py" "$d/port" "$d/api.pem" "$d/api.key" "$d/sa/token" \
        "$d/state.json" "$d/faults.json" "$d/requests.log" 3600 &
    spid=$!
    python3 "$SRC/tests/tools/httpd.py" --dir "$s/repo" --port-file "$s/port" \
        --log "$s/requests.log" --lifetime 3600 &
    hpid=$!
    wait_port "$d/port" "$spid" "$scenario: the API server stand-in"
    wait_port "$s/port" "$hpid" "$scenario: the repository server"
    (
        python3 "$SRC/tests/vm/supply-host.py" wait-ask "$d/state.json" "$s/asked" || exit 1
        "$SRC/scripts/supply" --repo "$s/repo" --repo-key "$keys/repo.pem" \
            --config "$s/supply.json" --nodes in-cluster \
            --kube-server "https://127.0.0.1:$(cat "$d/port")" --kube-token-file "$d/sa/token" \
            --kube-ca "$d/sa/ca.crt" --installer "$BIN" --work "$s/work" --json "$s/report.json" \
            -- --sign-key "$keys/mod.pem" --sign-cert "$keys/mod.crt" "$@" >"$s/pass.log" 2>&1
        echo $? >"$s/pass.rc"
        date +%s.%N >"$s/published"
    ) &
    ppid=$!
    boot "$scenario" "ndi_kube_port=$(cat "$d/port") ndi_repo_port=$(cat "$s/port")" \
        -netdev user,id=n0 -device virtio-net-pci,netdev=n0
    wait "$ppid" 2>/dev/null || true
    kill "$spid" "$hpid" 2>/dev/null || true
    wait "$spid" "$hpid" 2>/dev/null || true
    sed 's/^/VMTEST | supply: /' "$s/pass.log" | tail -12
    python3 "$SRC/tests/vm/supply-host.py" check "$d/state.json" "$s" "$R" "$outcome"
}

# standin_source DIR: V_OLD's source in DIR as NVIDIA's .run extracts it: the stand-in user
# space (scripts/make-standin-driver) and tests/kmod's module sources, built by the kernel's
# Makefile (build-driver-package --source).
standin_source() {
    local src=$1
    rm -rf "$src" "$src.drv" && mkdir -p "$src/kernel" "$src/firmware"
    "$SRC/scripts/make-standin-driver" "$V_OLD" "$src.drv" 4 >/dev/null
    cp -L "$src.drv/lib64/"*.so."$V_OLD" "$src.drv/bin/nvidia-smi" "$src/"
    cp "$src.drv/firmware/nvidia/$V_OLD/"*.bin "$src/firmware/"
    cp "$SRC/tests/kmod/"*.[ch] "$SRC/tests/kmod/Kbuild" "$src/kernel/"
    printf 'modules:\n\t$(MAKE) -C $(SYSOUT) M=$(CURDIR) NV_VERSION=%s modules\n' "$V_OLD" \
        >"$src/kernel/Makefile"
    rm -rf "$src.drv"
}

# The gpudirect scenario's repositories: the stand-in driver with the stand-ins of gdrcopy
# and gds-nvidia-fs (tests/standin/), built by build-driver-package against this kernel's
# installed headers and the stand-in nvidia.ko's Module.symvers, signed with the VM's test
# key ($W/gpudirect-repo); and the same package with one byte of kernel/gdrdrv.ko changed
# ($W/gpudirect-bad-repo), which the installer must refuse before the kernel sees it.
make_gpudirect_repos() {
    local w=$W/gpudirect p
    rm -rf "$w" "$W/gpudirect-repo" "$W/gpudirect-bad-repo" && mkdir -p "$w"
    standin_source "$w/src"
    # By hand, NVIDIA's own trees and header may replace the stand-ins (docs/testing.md).
    cp "${NDI_NV_P2P_H:-$SRC/tests/kmod/nv-p2p.h}" "$w/src/kernel/nv-p2p.h"
    "$SRC/scripts/build-driver-package" --kernel "$R" --installer "$BIN" --source "$w/src" \
        --gdrcopy "${NDI_GDRCOPY_SRC:-$SRC/tests/standin/gdrcopy}" \
        --gds "${NDI_GDS_SRC:-$SRC/tests/standin/gds-nvidia-fs}" \
        --sign-key "$W/keys/mod.pem" --sign-cert "$W/keys/mod.crt" --work "$w/work" \
        --repo "$W/gpudirect-repo" --repo-key "$W/keys/repo.pem" --tag default \
        >"$w/bdp.log" 2>&1 || { tail -20 "$w/bdp.log"; fail "build-driver-package --gdrcopy --gds"; }
    p=$w/pkg && mkdir -p "$p"
    tar -C "$p" -xf "$(ls "$W/gpudirect-repo/packages/$R/"*/nvidia-*.tar.zst)"
    printf 'X' | dd of="$p/kernel/gdrdrv.ko" bs=1 seek=4096 conv=notrunc 2>/dev/null
    "$SRC/scripts/make-repo" pack "$p" "$w/bad.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$W/gpudirect-bad-repo" --key "$W/keys/repo.pem" \
        --version "$V_OLD" --kernel "$R" --tag default "$w/bad.tar.zst" >/dev/null
    # One repository key signs both: the good index is signed again, after the bad one, so
    # that the node's anti-rollback (it accepted the bad index first) takes it as current.
    "$SRC/scripts/make-repo" sign --repo "$W/gpudirect-repo" --key "$W/keys/repo.pem" >/dev/null
}

# The supply scenario's build: standin_source against this kernel's installed headers.
# Prints supply.json's build_args for it.
supply_source() {
    standin_source "$W/supply-src"
    printf '["--source", "%s", "--headers", "/lib/modules/{kernel}/build"]' "$W/supply-src"
}

# real_cases INDEX OUT: the real-flavours cases and what the driver's own data predicts for
# each ("NAME GPU POLICY proprietary|open|refuse" lines), derived from the index's
# module_types the way the installer's auto policy is specified (docs/configuration.md):
# a GPU only one flavour supports decides; where both do, open from branch 560 on (where
# NVIDIA's installer defaults to open), proprietary before; a flavour without a list of
# GPUs is not restricted. Also prints "OPEN_GPU=ID": a GPU both lists have, for real-open.
real_cases() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
OPEN_DEFAULT_BRANCH = 560
d = json.load(open(sys.argv[1]))["drivers"][0]
mt = d.get("module_types", {})
def supports(flavour, gpu):
    ids = mt.get(flavour, {}).get("supported_pci_ids")
    return flavour in mt and (ids is None or gpu in ids)
def expect(gpu, policy):
    o, p = supports("open", gpu), supports("proprietary", gpu)
    if policy != "auto":
        return policy if (o if policy == "open" else p) else "refuse"
    if o and p:
        return "open" if int(d["version"].split(".")[0]) >= OPEN_DEFAULT_BRANCH else "proprietary"
    return "open" if o else "proprietary" if p else "refuse"
both = sorted(set(mt.get("open", {}).get("supported_pci_ids", [])) &
              set(mt.get("proprietary", {}).get("supported_pci_ids", [])))
gpus = [("hopper", "10de:2330"), ("volta", "10de:1db1"), ("blackwell", "10de:2901")]
if both:
    gpus.append(("open-listed", both[0]))
with open(sys.argv[2], "w") as f:
    for name, gpu in gpus:
        # --kernel-module-type proprietary only where auto does not already pick it (the
        # same file again would cost a minute of the VM's time and prove nothing new).
        for policy in ("auto", "open", "proprietary"):
            if policy != "proprietary" or expect(gpu, "auto") != "proprietary":
                f.write("%s %s %s %s\n" % (name, gpu, policy, expect(gpu, policy)))
print("OPEN_GPU=%s" % (both[0] if both else ""))
EOF
}

# boot SCENARIO KERNEL_ARGS [QEMU_ARG...]
boot() {
    local scenario=$1 extra=$2 log="$W/$1.log" initrd=$W/initrd.gz mem=1024
    shift 2
    local kimage=$KIMAGE qemu=(qemu-system-x86_64 -accel tcg -cpu max) console=ttyS0
    case $scenario in
    real-*) initrd=$W/initrd-real.gz mem=3072 ;;
    clang*) initrd=$W/initrd-clang.gz mem=3072 kimage=$CLANG/bzImage ;;
    arm64-real-*)
        initrd=$W/initrd-arm64-real.gz mem=3072 kimage=$AKIMAGE console=ttyAMA0
        qemu=(qemu-system-aarch64 -M virt -accel tcg -cpu cortex-a57)
        ;;
    arm64-*)
        initrd=$W/initrd-arm64.gz kimage=$AKIMAGE console=ttyAMA0
        qemu=(qemu-system-aarch64 -M virt -accel tcg -cpu cortex-a57)
        ;;
    esac
    local try pid waited
    # A boot that prints no VMTEST line within FIRST_LINE_S has hung before the test began
    # (seen once under a loaded make check: qemu spinning under TCG, no output after the
    # firmware's, the same boot 11 s when run again): it is killed and booted once more, and
    # said so. A hang after the test began is the test's and is not retried.
    for try in 1 2; do
        timeout 900 "${qemu[@]}" -m $mem -smp 2 -nographic -no-reboot \
            -kernel "$kimage" -initrd "$initrd" "$@" \
            -append "console=$console quiet panic=-1 ndi_scenario=$scenario $extra" </dev/null >"$log" 2>&1 &
        pid=$!
        waited=0
        while kill -0 "$pid" 2>/dev/null && ! grep -q VMTEST "$log" && [ $waited -lt "$FIRST_LINE_S" ]; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null && ! grep -q VMTEST "$log"; then
            pkill -TERM -P "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            echo "vm: boot $scenario printed nothing in $FIRST_LINE_S s (hung before the test began): $([ $try = 1 ] && echo booting it again || echo giving up)" >&2
            continue
        fi
        wait "$pid" 2>/dev/null || true
        break
    done
    tr -d '\r' <"$log" | grep -E '^VM(TEST|TIME) ' || true
}

# timing: NDI_TIMING_ROUNDS rounds (1 unless set) of the two boots of one disk made anew
# (timing-1, timing-2), the kernel's initcall_debug on, the repository served from the
# host's 127.0.0.1 (tests/tools/httpd.py) to the guest at 10.0.2.2. Prints each boot's
# VMTEST lines and its VMTIME lines as "VMTIME round=N RUN ..." (bench/run.py reads them).
#   timing_rounds REPOSITORY BOOT...
timing_rounds() {
    local d=$W/timing disk=$W/stateful.img repo=$1 r b spid out bad=0
    shift
    rm -rf "$d" && mkdir -p "$d"
    python3 "$SRC/tests/tools/httpd.py" --dir "$repo" --port-file "$d/port" \
        --log "$d/requests.log" --lifetime 3600 &
    spid=$!
    wait_port "$d/port" "$spid" "timing: the repository server"
    for r in $(seq "${NDI_TIMING_ROUNDS:-1}"); do
        rm -f "$disk"
        truncate -s 2G "$disk"
        mkfs.ext4 -q -F -L stateful "$disk"
        for b in "$@"; do
            out=$(boot "$b" "initcall_debug ndi_repo_port=$(cat "$d/port")" \
                -drive "file=$disk,if=virtio,format=raw" -netdev user,id=n0 -device virtio-net-pci,netdev=n0)
            grep -v '^VMTIME ' <<<"$out" || true
            grep '^VMTIME ' <<<"$out" | sed "s/^VMTIME /VMTIME round=$r /" || true
            if ! grep -q "^VMTEST END $b pass=[0-9]* fail=0$" <<<"$out"; then
                echo "vm: timing round $r, boot $b failed (console log: $W/$b.log)"
                bad=1
            fi
        done
    done
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    return $bad
}

# real-agent's repository (real-agent-repo): the real proprietary package as make
# check-real unpacked it, its modules replaced by the stand-ins of the same version, signed
# with the real-driver test key; the real user space, daemons and libraries, unchanged.
make_real_agent_repo() {
    local d=$W/real-agent-drv ko
    [ -x "$REAL/unpacked-proprietary/bin/nvidia-persistenced" ] ||
        fail "no unpacked real package in $REAL (make check-real makes it)"
    make_keys
    build_modules "$V_OLD"
    rm -rf "$d" "$W/real-agent-repo" && cp -a "$REAL/unpacked-proprietary" "$d"
    rm -f "$d/kernel/"*.ko
    for ko in "$W/kmod-$R-$V_OLD/"*.ko; do
        cp "$ko" "$d/kernel/"
        strip --strip-debug "$d/kernel/$(basename "$ko")"
        "$SIGN_FILE" sha256 "$REAL/keys/mod.pem" "$REAL/keys/mod.crt" "$d/kernel/$(basename "$ko")"
    done
    "$SRC/scripts/make-repo" pack "$d" "$W/real-agent.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$W/real-agent-repo" --key "$REAL/keys/repo.pem" \
        --version "$V_OLD" --kernel "$R" --tag default "$W/real-agent.tar.zst" >/dev/null
    rm -rf "$d" "$W/real-agent.tar.zst"
}

# The clang scenarios' repository: the stand-in driver source (make-standin-driver's user
# space, tests/kmod as kernel/), built by build-driver-package --llvm against the clang
# kernel's kernel-headers.tgz, V_OLD signed with the key that kernel has built in (the
# real-driver test key) and V_NEW with another; NVIDIA's real packages for it, where
# make check-real built them (build/real/clang-repo), go in beside.
make_clang() {
    local cr v key src
    [ -s "$CLANG/bzImage" ] && [ -s "$CLANG/kernel-headers.tgz" ] ||
        fail "no clang-built kernel in $CLANG (make check-real builds it: tests/real/clang-kernel.sh)"
    cr=$(cat "$CLANG/release")
    rm -rf "$W/clang-standin-repo"
    for v in "$V_OLD:mod" "$V_NEW:other"; do
        key=${v#*:} v=${v%%:*} src=$W/clang-src-$v
        rm -rf "$src" "$W/clang-work-$v" && mkdir -p "$src/kernel"
        "$SRC/scripts/make-standin-driver" "$v" "$W/clang-drv-$v" 4 >/dev/null
        cp -L "$W/clang-drv-$v/lib64/"*.so."$v" "$W/clang-drv-$v/bin/nvidia-smi" "$src/"
        # Not nvidia-drm's stand-in: it uses DRM's symbols, and the kernel has no DRM
        # (NVIDIA's own nvidia-drm builds without it).
        cp "$SRC/tests/kmod/"nvidia.c "$SRC/tests/kmod/"nv-p2p.h "$SRC/tests/kmod/"nvidia-uvm.c "$SRC/tests/kmod/"nvidia-modeset.c "$src/kernel/"
        echo "obj-m := nvidia.o nvidia-modeset.o nvidia-uvm.o" >"$src/kernel/Kbuild"
        echo "ccflags-y := -DNV_VERSION=\\\"\$(NV_VERSION)\\\"" >>"$src/kernel/Kbuild"
        printf 'modules:\n\t$(MAKE) -C $(SYSOUT) M=$(CURDIR) NV_VERSION=%s V=1 modules\n' "$v" >"$src/kernel/Makefile"
        "$SRC/scripts/build-driver-package" --kernel "$cr" --source "$src" --llvm \
            --kernel-headers "$CLANG/kernel-headers.tgz" --sign-key "$REAL/keys/$key.pem" \
            --sign-cert "$REAL/keys/$key.crt" --repo "$W/clang-standin-repo" \
            --repo-key "$REAL/keys/repo.pem" --installer "$BIN" --work "$W/clang-work-$v" \
            --quiet >"$W/clang-bdp-$v.log" 2>&1 ||
            { tail -5 "$W/clang-bdp-$v.log"; fail "build-driver-package --llvm for $cr failed"; }
        grep -q "ld.lld -r" "$W/clang-work-$v/build/"*/build.log || fail "the $v modules were not linked by ld.lld"
        rm -rf "$W/clang-drv-$v"
    done
}

t0=$(date +%s)
standin=0 real=0 clang=0 arm64=0 arm64real=0
for s in "${scenarios[@]}"; do
    case $s in
    real-*) real=1 ;;
    clang*) clang=1 ;;
    arm64-real-*) arm64real=1 ;;
    arm64-*) arm64=1 ;;
    *) standin=1 ;;
    esac
done
if [ $clang = 1 ]; then
    REAL=${NDI_REAL_DIR:-$SRC/build/real}
    CLANG=${NDI_CLANG_DIR:-$REAL/clang-kernel}
    KEY_DIR=$REAL/keys
    make_clang
    clang_repos=("$W/clang-standin-repo")
    CLANG_GPUS=""
    if [ -s "$REAL/clang-repo/index.json" ]; then
        clang_repos+=("$REAL/clang-repo")
        # A GPU both of NVIDIA's flavours support, so that each is asked for and loaded.
        eval "$(real_cases "$REAL/clang-repo/index.json" /dev/null)"
        CLANG_GPUS="ndi_gpus=$OPEN_GPU,$OPEN_GPU"
    fi
    # The node says it is COS, as the kernel stands in for one (check-real builds NVIDIA's
    # packages for os cos).
    OS_RELEASE='ID=cos\nVERSION_ID=113\nBUILD_ID=18244.151.14\nPRETTY_NAME="Container-Optimized OS (test VM)"\n' \
        make_initrd "$W/initrd-clang.gz" "${clang_repos[@]}"
    echo "vm: clang kernel $(cat "$CLANG/release"), initramfs $(du -h "$W/initrd-clang.gz" | cut -f1)" \
        "(${#clang_repos[@]} repositories), prepared in $(($(date +%s) - t0)) s"
    t0=$(date +%s)
fi
if [ $standin = 1 ]; then
    KEY_DIR=$W/keys
    make_keys
    make_repo
    make_vendor_repo
    make_kube_sa
    rhel_repo=()
    if [[ " ${scenarios[*]} " == *" rhel "* ]]; then
        make_rhel_repo
        rhel_repo=("$W/rhel-repo")
    fi
    SELINUX_DIR=""
    if [[ " ${scenarios[*]} " == *" selinux "* ]]; then
        make_selinux
        SELINUX_DIR=$W/selinux
    fi
    gpudirect_repos=()
    if [[ " ${scenarios[*]} " == *" gpudirect "* ]]; then
        make_gpudirect_repos
        gpudirect_repos=("$W/gpudirect-repo" "$W/gpudirect-bad-repo")
    fi
    make_initrd "$W/initrd.gz" "$W/repo" "$W/vendor-repo" "${rhel_repo[@]}" "${gpudirect_repos[@]}"
    echo "vm: kernel $R, initramfs $(du -h "$W/initrd.gz" | cut -f1), prepared in $(($(date +%s) - t0)) s"
fi
if [ $arm64 = 1 ]; then
    t0=$(date +%s)
    KEY_DIR=$W/keys
    make_keys
    with_arm64 make_arm64
    echo "vm: arm64 prepared in $(($(date +%s) - t0)) s"
fi
if [ $arm64real = 1 ]; then
    t0=$(date +%s)
    REAL=${NDI_REAL_DIR:-$SRC/build/real}
    KEY_DIR=$REAL/keys
    # A GPU both flavours' lists have, faked for arm64-real-open (535's open list lacks
    # the H100 the VM fakes by default).
    eval "$(real_cases "$REAL/arm64/repo/index.json" /dev/null | sed 's/^OPEN_GPU=/A64_OPEN_GPU=/')"
    with_arm64 make_arm64_real
    echo "vm: arm64 real driver prepared in $(($(date +%s) - t0)) s"
fi
if [ $real = 1 ]; then
    REAL=${NDI_REAL_DIR:-$SRC/build/real}
    KEY_DIR=$REAL/keys
    [ -s "$REAL/repo/index.json" ] ||
        fail "no real-driver repository in $REAL (make check-real builds it)"
    t0=$(date +%s)
    REAL_CASES=$W/real-cases
    eval "$(real_cases "$REAL/repo/index.json" "$REAL_CASES")"
    [ -n "$OPEN_GPU" ] || fail "$REAL/repo lists no GPU both flavours support: nothing for real-open to fake"
    sed 's/^/vm: real-flavours expects: /' "$REAL_CASES"
    real_repos=("$REAL/repo")
    if [[ " ${scenarios[*]} " == *" real-agent "* ]]; then
        make_real_agent_repo
        real_repos+=("$W/real-agent-repo")
    fi
    # real-supply's service account, for the API stand-in on the host.
    make_kube_sa
    make_initrd "$W/initrd-real.gz" "${real_repos[@]}"
    REAL_CASES=""
    echo "vm: kernel $R, real-driver initramfs $(du -h "$W/initrd-real.gz" | cut -f1)," \
        "prepared in $(($(date +%s) - t0)) s"
fi

failed=0
for s in "${scenarios[@]}"; do
    case $s in
    enforce | vendor-sig | arm64-enforce) extra="module.sig_enforce=1" ;;
    clang) extra=$CLANG_GPUS ;;
    clang-enforce) extra="module.sig_enforce=1 $CLANG_GPUS" ;;
    lockdown) extra="lockdown=integrity" ;;
    selinux) extra="security=selinux selinux=1" ;;
    real-open) extra="ndi_gpus=$OPEN_GPU,$OPEN_GPU" ;;
    arm64-real-open) extra="ndi_gpus=$A64_OPEN_GPU,$A64_OPEN_GPU" ;;
    *) extra="" ;;
    esac
    t1=$(date +%s)
    if [ "$s" = demo ]; then
        boot demo "" >/dev/null
        # The console's escape codes may precede the first line.
        tr -d '\r' <"$W/demo.log" | sed -n '/VMTEST BEGIN/,/^VMTEST END/p' |
            sed -e 's/.*VMTEST BEGIN demo /booted kernel /' -e '/^VMTEST END/d'
        grep -q "^VMTEST END demo pass=1" <(tr -d '\r' <"$W/demo.log") || failed=1
        continue
    fi
    if [ "$s" = defer ]; then
        # Two boots of one disk, made anew: the second finds what the first left.
        disk=$W/stateful.img
        rm -f "$disk"
        truncate -s 2G "$disk"
        mkfs.ext4 -q -F -L stateful "$disk"
        for b in defer-1 defer-2; do
            t2=$(date +%s)
            out=$(boot "$b" "" -drive "file=$disk,if=virtio,format=raw")
            echo "$out"
            if ! grep -q "^VMTEST END $b pass=[0-9]* fail=0$" <<<"$out"; then
                echo "vm: scenario $s, boot $b failed (console log: $W/$b.log)"
                failed=1
            fi
            echo "vm: scenario $s, boot $b: $(($(date +%s) - t2)) s"
        done
        echo "vm: scenario $s: $(($(date +%s) - t1)) s"
        continue
    fi
    if [ "$s" = timing ] || [ "$s" = real-timing ]; then
        if [ "$s" = timing ]; then
            timing_rounds "$W/repo" timing-1 timing-2 || failed=1
        else
            timing_rounds "$REAL/repo" real-timing || failed=1
        fi
        echo "vm: scenario $s: $(($(date +%s) - t1)) s"
        continue
    fi
    if [ "$s" = agent-upgrade ]; then
        out=$(agent_upgrade_boot)
    elif [ "$s" = rdma ]; then
        out=$(rdma_boot)
    elif [ "$s" = supply ]; then
        out=$(supply_boot supply installed "$W/keys" "$(supply_source)")
    elif [ "$s" = real-supply ]; then
        # NVIDIA's real 535.261.03 from Debian's non-free, built in make check-real's work
        # directory ($REAL/work, its build cache: its modules compiled once for this kernel).
        out=$(supply_boot real-supply refused "$REAL/keys" '["--debian", "{version}"]' \
            --work "$REAL/work")
    else
        out=$(boot "$s" "$extra")
    fi
    echo "$out"
    if ! grep -q "^VMTEST END $s pass=[0-9]* fail=0$" <<<"$out" || grep -q "^VMTEST FAIL" <<<"$out"; then
        echo "vm: scenario $s failed (console log: $W/$s.log)"
        failed=1
    fi
    echo "vm: scenario $s: $(($(date +%s) - t1)) s"
done
exit $failed
