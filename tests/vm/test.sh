# SPDX-License-Identifier: Apache-2.0
# Scenarios run inside the test VM (busybox sh), against a real kernel. Each check prints
# "VMTEST ok NAME" or "VMTEST FAIL NAME: ..."; the scenario ends with "VMTEST END".
# V_OLD and V_NEW come from /etc/ndi-versions.
. /etc/ndi-versions
S=$1
pass=0
fail=0
I=/usr/bin/nvidia-driver-installer
ARGS="--repo file:///repo --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 60"

ok() {
    echo "VMTEST ok $1"
    pass=$((pass + 1))
}
bad() {
    echo "VMTEST FAIL $1: $2"
    fail=$((fail + 1))
}
# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds; 1 once SECONDS have passed.
# Scenarios wait for the state they need, never for a fixed time.
wait_for() {
    deadline=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.05
    done
}
# holds_nvidiactl PID: the process has /dev/nvidiactl open on fd 3.
holds_nvidiactl() {
    [ "$(readlink "/proc/$1/fd/3")" = /dev/nvidiactl ]
}
# check NAME COMMAND...: the command's success is the verdict.
check() {
    name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name" "$*"; fi
}
run() {
    t0=$(date +%s)
    "$I" "$@" >/tmp/out 2>/tmp/err
    echo $? >/tmp/rc
    echo "VMTEST ran '$*' -> exit $(cat /tmp/rc) in $(($(date +%s) - t0)) s"
}
rc_is() { [ "$(cat /tmp/rc)" = "$1" ] || { sed 's/^/VMTEST | /' /tmp/err; false; }; }
err_has() { grep -q -- "$1" /tmp/err || { sed 's/^/VMTEST | /' /tmp/err; false; }; }
out_has() { grep -q -- "$1" /tmp/out || { sed 's/^/VMTEST | /' /tmp/out; false; }; }
loaded() { cut -d' ' -f1 /proc/modules | sort | tr '\n' ' '; }
no_nvidia() { ! grep -q '^nvidia' /proc/modules; }
# "MAJ:MIN MODE" in decimal
node() { stat -c '%t %T %a' "/dev/$1" 2>/dev/null | { read -r a b m && echo "$((0x$a)):$((0x$b)) $m"; }; }

# The whole published state: exec mount, ld cache, NVML, CDI, labels, readiness, doctor.
published() {
    check exec-mount sh -c 'grep " /home/kubernetes/bin/nvidia " /proc/self/mountinfo | grep -qv noexec'
    check smi-runs sh -c '/home/kubernetes/bin/nvidia/bin/nvidia-smi | grep -q "Driver Version"'
    check ld-cache sh -c '/sbin/ldconfig -p | grep -q "libcuda.so.1 .*/home/kubernetes/bin/nvidia/lib64/libcuda.so.1"'
    check nvml err_has "verify: GPU (index=0 name=NVIDIA stand-in GPU uuid=GPU-5a5a5a5a"
    check cdi grep -q '"name": "GPU-5a5a5a5a-0000-0000-0000-000000000001"' /var/run/cdi/nvidia-driver-installer.json
    check cdi-nodes grep -q '"path": "/dev/nvidia-uvm-tools"' /var/run/cdi/nvidia-driver-installer.json
    check labels grep -qx "nvidia.com/gpu.count=2" /etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver
    check ready grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" /run/nvidia/validations/driver-ready
    "$I" doctor --repo file:///repo --repo-key /keys/repo-pub.pem >/tmp/doctor 2>/tmp/doctor.err
    check doctor-healthy [ $? = 0 ]
    grep -v '^\[ok' /tmp/doctor /tmp/doctor.err | sed 's/^/VMTEST | /'
    "$I" status --json >/tmp/status
    check status-nvml grep -q '"cuda_version": 12020' /tmp/status
}

# The node agent on the real kernel: /dev/kmsg is a character device (a record per read,
# poll(2) wakes the agent), where the fake kernel's is a file. The driver's lines come from
# the kernel (the stand-in nvidia.ko's standin-kmsg logs what is written to it); the same
# lines written into /dev/kmsg from user space get LOG_USER from the kernel and change
# nothing. Its metrics textfile shows what it judged (no network in this VM: --listen on
# 0.0.0.0, port 0).
agent_on_real_kmsg() {
    prom=/var/lib/metrics/agent.prom
    marker=/run/nvidia/validations/driver-ready
    driver_says() { echo "$1" >/proc/driver/nvidia/standin-kmsg; }
    "$I" agent --listen 0.0.0.0:0 --interval 1 --agent-metrics-file "$prom" 2>/tmp/agent.err &
    apid=$!
    check agent-ready wait_for 60 grep -qx "nvidia_driver_installer_agent_ready{version=\"$V_OLD\"} 1" "$prom"
    check agent-kmsg-device grep -q "kernel_log=/dev/kmsg" /tmp/agent.err
    echo "NVRM: Xid (PCI:0000:00:04): 79, pid=1, name=vmtest, GPU has fallen off the bus." >/dev/kmsg
    check agent-user-xid-ignored wait_for 60 grep -q "record user space wrote to the kernel log: ignored (facility=1)" /tmp/agent.err
    check agent-user-xid-ready [ -e $marker ]
    driver_says "NVRM: Xid (PCI:0000:00:04): 79, pid=1, name=vmtest, GPU has fallen off the bus."
    check agent-xid-withdraws wait_for 60 sh -c "[ ! -e $marker ]"
    # The textfile is written after the look that withdrew the marker: waited for too.
    check agent-xid-counted wait_for 60 grep -q 'xid_errors_total{gpu="0000:00:04",xid="79",class="fatal"} 1' "$prom"
    echo "<6>NVRM: loading NVIDIA UNIX $(uname -m) Kernel Module  $V_OLD  (vmtest)" >/dev/kmsg
    check agent-user-load-ignored wait_for 60 sh -c "[ \$(grep -c 'user space wrote to the kernel log: ignored' /tmp/agent.err) = 2 ]"
    check agent-user-load-not-ready [ ! -e $marker ]
    driver_says "NVRM: loading NVIDIA UNIX $(uname -m) Kernel Module  $V_OLD  (vmtest)"
    check agent-reload-restores wait_for 60 sh -c "[ -e $marker ]"
    kill -TERM "$apid"
    wait "$apid"
    check agent-sigterm [ $? = 0 ]
    sed 's/^/VMTEST | agent: /' /tmp/agent.err | tail -6
}

main() {
    run install $ARGS --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432 \
        --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
    check install rc_is 0
    check modules-live [ "$(loaded)" = "drm drm_kms_helper nvidia nvidia_drm nvidia_modeset nvidia_uvm " ]
    check version [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check param-nvidia [ "$(cat /sys/module/nvidia/parameters/NVreg_DeviceFileMode)" = 432 ]
    check param-uvm [ "$(cat /sys/module/nvidia_uvm/parameters/uvm_perf_prefetch_enable)" = 0 ]
    if [ -n "${PKG_DEFAULTS:-}" ]; then
        # The package's own default (build-driver-package --module-param), beside ours.
        check param-package-default [ "$(cat /sys/module/nvidia_drm/parameters/modeset)" = Y ]
        # and the one build-driver-package gives every arm64 package whose nvidia.ko has it
        check param-grace-default [ "$(cat /sys/module/nvidia/parameters/NVreg_CoherentGPUMemoryMode)" = driver ]
        check param-package-logged err_has "module parameters with the package's defaults (defaults=2 overridden=0"
    fi
    order=$(sed -n 's/.*module loaded (module=\([a-z_]*\).*/\1/p' /tmp/err | tr '\n' ' ')
    echo "VMTEST load order: $order"
    check load-order [ "$order" = "nvidia nvidia_modeset drm drm_kms_helper nvidia_drm nvidia_uvm " ]
    check signatures err_has "module signature verified (module=nvidia version=$V_OLD signer=nvidia-driver-installer VM test key)"
    uvm=$(sed -n 's/^ *\([0-9]*\) nvidia-uvm$/\1/p' /proc/devices)
    check node-ctl [ "$(node nvidiactl)" = "195:255 660" ]
    check node-gpu0 [ "$(node nvidia0)" = "195:0 660" ]
    check node-gpu1 [ "$(node nvidia1)" = "195:1 660" ]
    check node-modeset [ "$(node nvidia-modeset)" = "195:254 660" ]
    check node-uvm [ "$(node nvidia-uvm)" = "$uvm:0 660" ]
    check node-uvm-tools [ "$(node nvidia-uvm-tools)" = "$uvm:1 660" ]
    check char-link [ "$(readlink /dev/char/195:255)" = "../nvidiactl" ]
    # IMEX's chrdev: NVIDIA's nvidia.ko registers it from branch 550, the stand-in too.
    check imex-none-535 sh -c '! grep -q nvidia-caps-imex-channels /proc/devices'
    # No /lib/firmware in this VM: the loader is pointed at the install dir.
    check firmware-path [ "$(cat /sys/module/firmware_class/parameters/path)" = /home/kubernetes/bin/nvidia/firmware ]
    check firmware-file [ -f "/home/kubernetes/bin/nvidia/firmware/nvidia/$V_OLD/gsp_ga10x.bin" ]
    published
    agent_on_real_kmsg

    before=$(cat /proc/modules | cut -d' ' -f1,3 | sort)
    run install $ARGS --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432 \
        --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
    check rerun rc_is 0
    check rerun-nothing-loaded err_has "driver already loaded"
    check rerun-same [ "$(cat /proc/modules | cut -d' ' -f1,3 | sort)" = "$before" ]

    # A parameter dropped from the request: the kernel alone cannot tell it was ever set (it
    # shows a value either way); the record of the last load in /run can. The idle driver is
    # loaded again without it, back at the module's default.
    check args-record grep -q 'uvm_perf_prefetch_enable=0' /run/nvidia-driver-installer/module-args.json
    run install $ARGS --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432
    check args-dropped rc_is 0
    check args-dropped-named err_has "changes=nvidia_uvm.uvm_perf_prefetch_enable: 0 -> (default))"
    check args-dropped-default [ "$(cat /sys/module/nvidia_uvm/parameters/uvm_perf_prefetch_enable)" = 1 ]
    check args-dropped-kept [ "$(cat /sys/module/nvidia/parameters/NVreg_DeviceFileMode)" = 432 ]
    # A value the kernel itself refuses (parse_args: not a uint): exit 6, and the driver
    # runs again with the recorded set, ready.
    run install $ARGS --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=abc
    check args-refused rc_is 6
    check args-refused-named err_has "new module parameters refused (nvidia.NVreg_DeviceFileMode: 432 -> abc)"
    check args-restored [ "$(cat /sys/module/nvidia/parameters/NVreg_DeviceFileMode)" = 432 ]
    check args-restored-ready grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" /run/nvidia/validations/driver-ready

    # A process holding /dev/nvidiactl: the upgrade is refused and the driver stays.
    sh -c 'exec 3</dev/nvidiactl; sleep 600' &
    holder=$!
    check holder-open wait_for 60 holds_nvidiactl "$holder"
    run install $ARGS --driver-version "$V_NEW"
    check in-use rc_is 7
    check in-use-message err_has "driver in use: .*nvidia has [1-9] reference(s) beyond its own modules"
    check in-use-process err_has "/dev/nvidiactl open in pid"
    check in-use-kept [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    kill "$holder"
    wait "$holder" 2>/dev/null

    run install $ARGS --driver-version "$V_NEW"
    check upgrade rc_is 0
    check upgraded [ "$(cat /sys/module/nvidia/version)" = "$V_NEW" ]
    check upgrade-unloaded err_has "module unloaded (module=nvidia)"
    check upgrade-nodes [ "$(node nvidiactl)" = "195:255 666" ]
    # IMEX's default channel (--imex-channel0) with the major the real kernel gave 550's
    # nvidia-caps-imex-channels; not made unasked.
    imex=$(sed -n 's/^ *\([0-9]*\) nvidia-caps-imex-channels$/\1/p' /proc/devices)
    check imex-chrdev [ -n "$imex" ]
    check imex-unasked [ ! -e /dev/nvidia-caps-imex-channels ]
    export NVIDIA_IMEX_CHANNEL0=yes
    run install $ARGS --driver-version "$V_NEW"
    unset NVIDIA_IMEX_CHANNEL0
    check imex-run rc_is 0
    check imex-channel0 [ "$(node nvidia-caps-imex-channels/channel0)" = "$imex:0 666" ]
    check imex-char-link [ "$(readlink "/dev/char/$imex:0")" = ../nvidia-caps-imex-channels/channel0 ]

    run uninstall --imex-channel0
    check uninstall rc_is 0
    check uninstall-imex [ ! -e /dev/nvidia-caps-imex-channels ]
    check uninstall-unmounted sh -c '! grep -q " /home/kubernetes/bin/nvidia " /proc/self/mountinfo'
    check uninstall-unready [ ! -e /run/nvidia/validations/driver-ready ]
    check uninstall-cdi [ ! -e /var/run/cdi/nvidia-driver-installer.json ]
    check uninstall-unloaded no_nvidia
    check uninstall-nodes [ ! -e /dev/nvidiactl ]
    check uninstall-firmware-path [ -z "$(cat /sys/module/firmware_class/parameters/path)" ]
}

# --when-busy defer against the real kernel's finit_module and delete_module, over two
# boots of one disk (tests/vm/init: the node's stateful partition on /dev/vda carries
# /home, /var and /etc/kubernetes; /run, /dev and /tmp start empty). tests/integration/
# t_defer.sh proves the same on the fake kernel, which does not model the kernel's own
# refusal: here an open device node holds a reference on its module (the file's owner),
# and delete_module fails while it does.
IDIR=/home/kubernetes/bin/nvidia
FEAT=/etc/kubernetes/node-feature-discovery/features.d
PROM=/var/lib/metrics/installer.prom
DA="$ARGS --metrics-file $PROM"
MARKER=/run/nvidia/validations/driver-ready
CDI=/var/run/cdi/nvidia-driver-installer.json
# source_of PATH: the device of the file system mounted at PATH (its top mount).
source_of() {
    awk -v p="$1" '$5 == p { for (i = 7; $i != "-"; i++) ; s = $(i + 2) } END { print s }' \
        /proc/self/mountinfo
}
# What the node serves: the loaded modules and their version, the marker, the CDI spec,
# the labels, byte for byte, and the current version's directory.
served() {
    cut -d' ' -f1 /proc/modules | sort | tr '\n' ' '
    cat /sys/module/nvidia/version
    md5sum "$MARKER" "$CDI" "$FEAT/00-nvidia-driver"
    readlink "$IDIR/.current"
}
refcount() { awk -v m="$1" '$1 == m {print $3}' /proc/modules; }
# pending_field KEY: the key of status --json's pending_upgrade object ("null" if none).
pending_field() {
    "$I" status --json 2>/dev/null >/tmp/status
    if grep -q '"pending_upgrade": null' /tmp/status; then
        echo null
        return
    fi
    sed -n '/"pending_upgrade": {/,/}/p' /tmp/status | sed -n "s/^ *\"$1\": \"\\([^\"]*\\)\".*/\\1/p"
}
waits_for() { case "$(pending_field waiting_for)" in *"$1"*) ;; *) false ;; esac; }
pending_record_names() { grep -q "\"driver_version\": \"$1\"" "$IDIR/.pending.json"; }
nothing_pending() {
    [ ! -e "$IDIR/.pending.json" ] && [ ! -e "$FEAT/00-nvidia-driver-pending" ] &&
        [ "$(pending_field driver_version)" = null ]
}
metric_is() { grep -qx "nvidia_driver_installer_upgrade_pending{$1} $2" "$PROM" || { grep upgrade_pending "$PROM" | sed 's/^/VMTEST | /'; false; }; }
hold() { # hold NODE: a process keeps /dev/NODE open on fd 3; its pid in $held
    sh -c "exec 3</dev/$1; exec sleep 600" &
    held=$!
    wait_for 60 sh -c "[ \"\$(readlink /proc/$held/fd/3)\" = /dev/$1 ]"
}
stateful_mounted() {
    for p in /home /var /etc/kubernetes; do
        [ "$(source_of "$p")" = /dev/vda ] || { echo "VMTEST | $p is on $(source_of "$p")"; return 1; }
    done
    grep " /home " /proc/self/mountinfo | grep -q noexec
}

defer_1() {
    check stateful-disk stateful_mounted
    check fresh-disk [ ! -e "$IDIR" ]
    run install $DA --driver-version "$V_OLD"
    check install rc_is 0
    check version [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check ready grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" "$MARKER"
    idle_refs=$(refcount nvidia)

    # A workload holds /dev/nvidiactl: the kernel counts the open file as references on
    # nvidia.ko (chrdev_open takes the cdev's and the file operations').
    hold nvidiactl
    holder=$held
    check holder-open holds_nvidiactl "$holder"
    check holder-refs [ "$(refcount nvidia)" -gt "$idle_refs" ]
    # The kernel's own refusal, shown on nvidia_uvm (no module depends on it, so only the
    # open node keeps it): delete_module fails while /dev/nvidia-uvm is open.
    check holder-uvm-open hold nvidia-uvm
    rmmod nvidia_uvm 2>/tmp/rmmod
    check kernel-refuses-delete [ $? != 0 ]
    sed 's/^/VMTEST | rmmod: /' /tmp/rmmod
    check kernel-kept-uvm grep -q '^nvidia_uvm ' /proc/modules
    kill "$held"
    wait "$held" 2>/dev/null
    before=$(served)
    dir_before=$(ls -A "$IDIR" "$IDIR/.versions")

    # fail: exit 7 and nothing changed.
    run install $DA --when-busy fail --driver-version "$V_NEW"
    check fail-in-use rc_is 7
    check fail-names-holder err_has "driver in use: .*/dev/nvidiactl open in pid $holder"
    check fail-served [ "$(served)" = "$before" ]
    check fail-dir [ "$(ls -A "$IDIR" "$IDIR/.versions")" = "$dir_before" ]
    check fail-nothing-pending nothing_pending

    # defer: exit 0, the old driver serves (loaded, marker, CDI spec, labels byte for byte),
    # the new one is staged, verified and pending.
    run install $DA --when-busy defer --driver-version "$V_NEW"
    check defer rc_is 0
    check defer-verified err_has "module signature verified (module=nvidia version=$V_NEW"
    check defer-waits err_has "the change waits for idle GPUs or the next boot (pending=$V_NEW reason=driver_in_use current=$V_OLD"
    check defer-loaded [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check defer-served [ "$(served)" = "$before" ]
    check defer-record pending_record_names "$V_NEW"
    check defer-staged sh -c "ls '$IDIR/.versions' | grep -q '^$V_NEW-'"
    check defer-status [ "$(pending_field driver_version)" = "$V_NEW" ]
    check defer-status-reason [ "$(pending_field reason)" = driver_in_use ]
    check defer-status-holder waits_for "/dev/nvidiactl open in pid $holder"
    check defer-label grep -qx "nvidia.com/gpu.driver-installer.upgrade-pending=$V_NEW" "$FEAT/00-nvidia-driver-pending"
    check defer-metric metric_is "version=\"$V_NEW\",reason=\"driver_in_use\"" 1

    # The holder exits: the next run switches through the real delete_module and
    # finit_module.
    kill "$holder"
    wait "$holder" 2>/dev/null
    check holder-gone [ "$(refcount nvidia)" = "$idle_refs" ]
    run install $DA --when-busy defer --driver-version "$V_NEW"
    check switch rc_is 0
    check switch-unloaded err_has "module unloaded (module=nvidia)"
    check switch-loaded err_has "driver loaded (version=$V_NEW"
    check switched [ "$(cat /sys/module/nvidia/version)" = "$V_NEW" ]
    check switch-ready grep -qx "NVIDIA_DRIVER_VERSION=$V_NEW" "$MARKER"
    check switch-nothing-pending nothing_pending
    check switch-metric metric_is 'version="",reason=""' 0
    check switch-one-version [ "$(ls "$IDIR/.versions" | wc -l)" = 1 ]

    # Busy again, and a request for $V_OLD (a rollback is a request like any other): it is
    # pending when the node goes down, with the holder still running (the reboot ends it).
    hold nvidiactl
    holder=$held
    check holder-again holds_nvidiactl "$holder"
    run install $DA --when-busy defer --driver-version "$V_OLD"
    check defer-old rc_is 0
    check defer-old-loaded [ "$(cat /sys/module/nvidia/version)" = "$V_NEW" ]
    check defer-old-record pending_record_names "$V_OLD"
    check defer-old-status [ "$(pending_field driver_version)" = "$V_OLD" ]
    check defer-old-label grep -qx "nvidia.com/gpu.driver-installer.upgrade-pending=$V_OLD" "$FEAT/00-nvidia-driver-pending"

    down_cleanly
    check holder-at-poweroff holds_nvidiactl "$holder"
}

# Before poweroff: every mount of the disk unmounted, the installer's exec mount first.
down_cleanly() {
    sync
    for m in $(awk '{ for (i = 7; $i != "-"; i++) ; if ($(i + 2) == "/dev/vda") print $5 }' \
        /proc/self/mountinfo | sed -n '1!G;h;$p'); do
        umount "$m" || echo "VMTEST | umount $m failed"
    done
    check disk-unmounted sh -c '! grep -q " /dev/vda " /proc/self/mountinfo'
}

defer_2() {
    check stateful-disk stateful_mounted
    # Boot 1 unmounted the disk: ext4 had no journal to replay.
    dmesg | grep 'EXT4-fs (vda)' | sed 's/^/VMTEST | dmesg: /'
    check disk-was-clean sh -c '! dmesg | grep -q "EXT4-fs (vda): recovery complete"'
    # A new boot: nothing loaded, /run empty; the disk kept the install dir and the
    # pending record.
    check boot-nothing-loaded no_nvidia
    check boot-no-marker [ ! -e "$MARKER" ]
    check boot-no-cdi [ ! -e "$CDI" ]
    check boot-pending-kept pending_record_names "$V_OLD"
    check boot-current-kept sh -c "readlink '$IDIR/.current' | grep -q '$V_NEW-'"
    # Only the staged copy can serve: the repository's packages are moved away (back for
    # doctor below), the cache's removed.
    echo "VMTEST cached packages: $(find /var/cache/nvidia-driver-installer/packages -type f | tr '\n' ' ')"
    mv /repo/packages /repo-packages
    rm -rf /var/cache/nvidia-driver-installer/packages
    run install $DA --when-busy defer --driver-version "$V_OLD"
    check install rc_is 0
    check staged-used err_has "the pending version is staged and verified (version=$V_OLD"
    check loaded-pending err_has "driver loaded (version=$V_OLD"
    check new-never-loaded sh -c "! grep -q 'driver loaded (version=$V_NEW' /tmp/err"
    check version [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check nothing-pending nothing_pending
    check metric metric_is 'version="",reason=""' 0
    check one-version sh -c "[ \"\$(ls '$IDIR/.versions')\" = \"\$(basename \"\$(readlink '$IDIR/.current')\")\" ] && ls '$IDIR/.versions' | grep -q '^$V_OLD-'"
    mv /repo-packages /repo/packages
    published
}

enforce() {
    check sig-enforce-on [ "$(cat /sys/module/module/parameters/sig_enforce)" = Y ]
    # Predicted before anything changes, from the index's signer and this kernel's keys.
    run install $ARGS --driver-version "$V_OLD" --dry-run
    check predicted-refused out_has "will load:   refused: the kernel enforces signatures (sig_enforce)"
    check predicted-needs out_has "needs:       the kernel must trust 'nvidia-driver-installer VM test key'"
    run install $ARGS --driver-version "$V_OLD"
    check refused rc_is 6
    grep ERROR /tmp/err | sed 's/^/VMTEST | /'
    check refused-signer err_has "the kernel rejected the signature of module nvidia: signed by 'nvidia-driver-installer VM test key'"
    check refused-nothing-loaded no_nvidia
    run status
    check rolled-back rc_is 3
}

lockdown() {
    check lockdown-on grep -q '\[integrity\]' /sys/kernel/security/lockdown
    run install $ARGS --driver-version "$V_OLD" --dry-run
    check predicted-refused out_has "will load:   refused: the kernel enforces signatures (lockdown)"
    check predicted-needs out_has "needs:       the kernel must trust 'nvidia-driver-installer VM test key'"
    run install $ARGS --driver-version "$V_OLD"
    check refused rc_is 6
    grep ERROR /tmp/err | sed 's/^/VMTEST | /'
    check refused-lockdown err_has "under lockdown (integrity)"
    check refused-nothing-loaded no_nvidia
}

# GDRCopy and GPUDirect Storage (tests/vm/run.sh make_gpudirect_repos): a package whose
# gdrdrv.ko was changed after signing is refused before the kernel sees it, nothing loaded;
# the good package's gdrdrv and nvidia-fs load after nvidia (their dependency), with
# /dev/gdrdrv and /dev/nvidia-fs0..15 at the majors of /proc/devices, mode 0666, in the CDI
# spec's gdrcopy and gds devices; uninstall takes them away. /dev is a tmpfs here, as in a
# container, not devtmpfs: every node there is the installer's (devtmpfs would have made
# nvidia-fs's itself).
gpudirect() {
    local K="--repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 60"
    local M="--modules nvidia,nvidia-uvm,gdrdrv,nvidia-fs"
    mount -t tmpfs -o mode=755 ndi-dev /dev
    mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/zero c 1 5 &&
        mknod -m 644 /dev/urandom c 1 9 && mknod -m 600 /dev/kmsg c 1 11
    check dev-tmpfs sh -c 'grep -q "^ndi-dev /dev tmpfs" /proc/mounts'
    check dev-no-nvfs [ ! -e /dev/nvidia-fs0 ]
    run install --repo file:///gpudirect-bad-repo $K $M --driver-version "$V_OLD"
    grep ERROR /tmp/err | sed 's/^/VMTEST | /'
    check tampered-refused rc_is 5
    check tampered-named err_has "gdrdrv"
    check tampered-nothing-loaded [ -z "$(loaded)" ]
    run install --repo file:///gpudirect-repo $K $M --driver-version "$V_OLD"
    check install rc_is 0
    check modules-live [ "$(loaded)" = "gdrdrv nvidia nvidia_fs nvidia_uvm " ]
    order=$(sed -n 's/.*module loaded (module=\([a-z_]*\).*/\1/p' /tmp/err | tr '\n' ' ')
    echo "VMTEST load order: $order"
    check load-order-gdrdrv sh -c "echo '$order' | grep -q '^nvidia .*gdrdrv'"
    check load-order-nvfs sh -c "echo '$order' | grep -q '^nvidia .*nvidia_fs'"
    check signatures err_has "module signature verified (module=gdrdrv .*signer=nvidia-driver-installer VM test key)"
    check signatures-nvfs err_has "module signature verified (module=nvidia_fs .*signer=nvidia-driver-installer VM test key)"
    gdr=$(sed -n 's/^ *\([0-9]*\) gdrdrv$/\1/p' /proc/devices)
    nvfs=$(sed -n 's/^ *\([0-9]*\) nvidia-fs$/\1/p' /proc/devices)
    check chrdevs [ -n "$gdr" ] && [ -n "$nvfs" ]
    check node-gdrdrv [ "$(node gdrdrv)" = "$gdr:0 666" ]
    check node-nvfs0 [ "$(node nvidia-fs0)" = "$nvfs:0 666" ]
    check node-nvfs15 [ "$(node nvidia-fs15)" = "$nvfs:15 666" ]
    check char-link-gdrdrv [ "$(readlink "/dev/char/$gdr:0")" = "../gdrdrv" ]
    # nvidiactl, nvidia-uvm, -uvm-tools, gdrdrv and 16 nvidia-fs at least, all made by us.
    created=$(sed -n 's/.*device nodes in place (created=\([0-9]*\).*/\1/p' /tmp/err)
    echo "VMTEST nodes created: $created"
    check nodes-ours [ "${created:-0}" -ge 20 ]
    cdi=/var/run/cdi/nvidia-driver-installer.json
    check cdi-gdrcopy-device grep -q '"name": "gdrcopy"' $cdi
    check cdi-gds-device grep -q '"name": "gds"' $cdi
    check cdi-gdrdrv grep -q '"path": "/dev/gdrdrv"' $cdi
    check cdi-nvfs grep -q '"path": "/dev/nvidia-fs15"' $cdi
    check libgdrapi sh -c 'case $(readlink /home/kubernetes/bin/nvidia/lib64/libgdrapi.so.2) in libgdrapi.so.2.[0-9]*) ;; *) false ;; esac'
    run uninstall
    check uninstall rc_is 0
    check uninstall-unloaded [ -z "$(loaded)" ]
    check uninstall-node [ ! -e /dev/gdrdrv ]
    check uninstall-nvfs [ ! -e /dev/nvidia-fs0 ]
    umount /dev
}

# The platform's own signature, kept: Debian's signed module loads under sig_enforce, the
# same module re-signed with the test key is refused by the kernel, naming its signer.
vendor_sig() {
    . /etc/ndi-vendor
    R="--repo file:///vendor-repo --repo-key /keys/repo-pub.pem"
    VA="$R --modules $VENDOR_MOD --fetch-timeout 60"
    check sig-enforce-on [ "$(cat /sys/module/module/parameters/sig_enforce)" = Y ]
    check not-loaded-before sh -c "! grep -q '^$VENDOR_MOD ' /proc/modules"
    "$I" list-versions $R >/tmp/list 2>&1
    sed 's/^/VMTEST | /' /tmp/list
    check listed-signer grep -q "modules signed by 'Build time autogenerated kernel key'" /tmp/list
    # Before anything changes, the plan predicts from the index's signer and this kernel's
    # own keys (/proc/keys): Debian's key is held, the test key is not. Debian's sign-file
    # names the key by issuer and serial, which /proc/keys does not show: a key of that
    # name alone settles nothing (every Debian kernel's build key has it); the pinned
    # certificate does.
    run install $VA --dry-run --driver-version "$V_OLD"
    check predicted-unknown out_has "will load:   unknown: the kernel enforces signatures (sig_enforce) and holds a key named 'Build time autogenerated kernel key'"
    run install $VA --dry-run --module-cert /keys/kernel.pem --driver-version "$V_OLD"
    check predicted-loads out_has "will load:   loads: signed by 'Build time autogenerated kernel key'"
    run install $VA --dry-run --driver-version "$V_NEW"
    check predicted-refused out_has "will load:   refused: the kernel enforces signatures (sig_enforce)"
    check predicted-needs out_has "needs:       the kernel must trust 'nvidia-driver-installer VM test key'"
    run install $VA --module-cert /keys/kernel.pem --driver-version "$V_OLD"
    sed 's/^/VMTEST | /' /tmp/err
    check kept-verified err_has "module signature verified (module=$VENDOR_MOD .*signer=Build time autogenerated kernel key)"
    check kept-loaded err_has "module loaded (module=$VENDOR_MOD"
    check kept-live grep -q "^$VENDOR_MOD " /proc/modules
    rmmod "$VENDOR_MOD"
    check unloaded sh -c "! grep -q '^$VENDOR_MOD ' /proc/modules"
    run install $VA --module-cert /keys/mod.crt --driver-version "$V_NEW"
    grep ERROR /tmp/err | sed 's/^/VMTEST | /'
    check ours-refused rc_is 6
    check ours-refused-signer err_has "the kernel rejected the signature of module $VENDOR_MOD: signed by 'nvidia-driver-installer VM test key'"
    check ours-not-loaded sh -c "! grep -q '^$VENDOR_MOD ' /proc/modules"
}

demo() {
    echo "$ nvidia-driver-installer install $ARGS"
    "$I" install $ARGS --module-arg nvidia.NVreg_DeviceFileMode=432 2>/tmp/err
    rc=$?
    cat /tmp/err
    echo "exit code $rc"
    echo
    echo "== Summary"
    echo "   modules live (name, refcount, used by):"
    grep -E '^(nvidia|drm)' /proc/modules | awk '{printf "     %-16s %s  %s\n", $1, $3, $4}'
    echo "   versions: nvidia.ko $(cat /sys/module/nvidia/version), user space" \
        "$("$I" status --json | sed -n 's/.*"driver_version": *"\([0-9.]*\)".*/\1/p' | head -1)"
    echo "   device nodes:"
    ls -l /dev/nvidia* | sed 's/^/     /'
    echo "   published: $(ls /var/run/cdi/nvidia-driver-installer.json /run/nvidia/validations/driver-ready \
        /etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver 2>/dev/null | tr '\n' ' ')"
    echo "   doctor:"
    "$I" doctor 2>/dev/null | sed 's/^/     /'
    echo "   time per stage (ms):"
    sed -n 's/^INFO  \([a-z]*\): \([a-z ]*\) (.*duration_ms=\([0-9]*\).*/\1 \3 \2/p' /tmp/err |
        awk '{printf "     %-9s %6s  %s %s %s %s\n", $1, $2, $3, $4, $5, $6}'
    pass=1
}

# NVIDIA's real driver, built by scripts/build-driver-package (make check-real), both
# flavours in one repository. No NVIDIA GPU is on qemu's bus (only the fakes the PCI scan
# sees), so the real nvidia.ko gives up.
RV=535.261.03
RA="--repo file:///repo --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 300"
D=/home/kubernetes/bin/nvidia
real_mods='^(nvidia|nvidia_uvm|nvidia_modeset|nvidia_drm|drm|drm_kms_helper|video|wmi) '
# The license NVIDIA's sources give each flavour's nvidia.ko, and the one of a file.
license_of() { case $1 in open) echo "Dual MIT/GPL" ;; proprietary) echo NVIDIA ;; esac; }
ko_license() { strings "$1" | sed -n 's/^license=//p' | head -1; }

real() {
    F=${S#real-}
    RA="$RA --kernel-module-type $F"
    echo "VMTEST GPUs: $(cat /sys/bus/pci/devices/*/device | tr '\n' ' ')"

    run install $RA
    check refused rc_is 6
    grep ERROR /tmp/err | sed 's/^/VMTEST | /'
    check no-gpu err_has "module nvidia found no NVIDIA GPU it supports; the driver logged: No NVIDIA GPU found"
    intree=$(sed -n 's/.*in-tree dependencies found (modules=\([a-z_,]*\)).*/\1/p' /tmp/err | tr , '\n' | sort | tr '\n' ' ')
    echo "VMTEST in-tree dependencies: $intree"
    # nvidia-modeset uses ACPI's video on both; on x86 video depends on wmi, on arm64 not.
    case $(uname -m) in
    aarch64) check deps-found [ "$intree" = "drm drm_kms_helper video " ] ;;
    *) check deps-found [ "$intree" = "drm drm_kms_helper video wmi " ] ;;
    esac
    check signatures err_has "module signature verified (module=nvidia version=$RV signer=nvidia-driver-installer real-driver test key)"
    check dep-loaded err_has "module loaded (module=drm"
    check dep-unloaded err_has "module unloaded (module=drm)"
    grep -E 'module (loaded|unloaded)' /tmp/err | sed 's/^/VMTEST | /'
    check nothing-loaded sh -c "! grep -qE '$real_mods' /proc/modules"
    check no-nodes [ ! -e /dev/nvidiactl ]
    check nothing-published sh -c "[ ! -e $D/lib64 ] && [ ! -e /run/nvidia/validations/driver-ready ]"
    dmesg | grep NVRM | sed 's/^/VMTEST | dmesg: /'

    run install $RA --skip-modules
    check user-space rc_is 0
    check ld-libcuda sh -c "/sbin/ldconfig -p | grep -q 'libcuda.so.1 .*=> $D/lib64/libcuda.so.1'"
    check ld-nvml sh -c "/sbin/ldconfig -p | grep -q 'libnvidia-ml.so.1 .*=> $D/lib64/libnvidia-ml.so.1'"
    check firmware [ -s "$D/firmware/nvidia/$RV/gsp_ga10x.bin" ]
    "$D/bin/nvidia-smi" >/tmp/smi 2>&1
    echo $? >/tmp/smi.rc
    sed 's/^/VMTEST | nvidia-smi: /' /tmp/smi
    check smi-no-driver grep -q "couldn't communicate with the NVIDIA driver" /tmp/smi
    check smi-exit [ "$(cat /tmp/smi.rc)" = 9 ]
    "$I" status --json >/tmp/status 2>/tmp/status.err
    sed -n 's/.*\("error": "[^"]*"\).*/VMTEST | status nvml \1/p' /tmp/status
    check nvml-cause grep -q '"error": "NVML initialisation failed: Driver Not Loaded (9)' /tmp/status
    "$I" verify-module --module-cert /keys/mod.crt "$D"/drivers/*.ko >/tmp/vm.out 2>&1
    check verify-modules [ $? = 0 ]
    check verify-count [ "$(grep -c '^  verdict:  ok' /tmp/vm.out)" = "$(ls "$D"/drivers/*.ko | wc -l)" ]
    grep -E '^[^ ]|signer|vermagic' /tmp/vm.out | sed 's/^/VMTEST | /'
    check module-file-flavour [ "$(ko_license "$D/drivers/nvidia.ko")" = "$(license_of "$F")" ]
    run uninstall
    check uninstall rc_is 0
}

# procs_of NAME: the pids whose executable is named NAME.
procs_of() {
    for p in /proc/[0-9]*; do
        case $(readlink "$p/exe" 2>/dev/null) in */"$1") echo "${p#/proc/}" ;; esac
    done
}

supervised() {
    [ -n "$(procs_of nvidia-persistenced)" ] ||
        grep -q 'daemon ended: starting it again after the backoff (daemon=nvidia-persistenced' /tmp/agent.err
}

# NVIDIA's real 535.261.03 user space over the stand-in modules of that version (make
# check-real's real-agent-repo): the driver loads without a GPU, so the node agent starts
# NVIDIA's real nvidia-persistenced. What the daemon then does is recorded (it logs to
# syslog only: busybox's syslogd takes /dev/log here); the agent must supervise it either
# way and stop it with itself.
real_agent() {
    RG="--repo file:///real-agent-repo --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 300"
    syslogd -n -O /tmp/syslog &
    slpid=$!
    run install $RG
    grep -E "ERROR|WARN|verify" /tmp/err | sed 's/^/VMTEST | install: /'
    check agent-driver-loaded [ "$(cat /sys/module/nvidia/version 2>/dev/null)" = "$RV" ]
    check agent-real-daemon [ -x "$D/bin/nvidia-persistenced" ]
    prom=/var/lib/metrics/agent.prom
    "$I" agent --listen 0.0.0.0:0 --interval 1 --agent-metrics-file "$prom" 2>/tmp/agent.err &
    apid=$!
    check agent-runs-persistenced wait_for 60 grep -q "daemon=nvidia-persistenced" /tmp/agent.err
    # Long enough for a running daemon to show it stays, or for two of the backoff's restarts.
    sleep 6
    echo "VMTEST real nvidia-persistenced processes: $(procs_of nvidia-persistenced | tr '\n' ' ')"
    for p in $(procs_of nvidia-persistenced); do
        echo "VMTEST | pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline"); fds: $(ls -l "/proc/$p/fd" 2>/dev/null | grep -o '/dev/nvidia[a-z0-9-]*' | sort -u | tr '\n' ' ')"
    done
    grep -E "daemon|persistenced" /tmp/agent.err | sed 's/^/VMTEST | agent: /'
    grep -i persistenced /tmp/syslog 2>/dev/null | sed 's/^/VMTEST | syslog: /' | head -12
    grep 'daemon=\"nvidia-persistenced\"' "$prom" | sed 's/^/VMTEST | metric: /'
    ls /var/run/nvidia-persistenced 2>/dev/null | sed 's/^/VMTEST | \/var\/run\/nvidia-persistenced: /'
    # It ran (its libraries found: Debian's build links libtirpc.so.3), and is supervised
    # whichever it does: running under the agent, or ended, reported and due again.
    check agent-daemon-ran grep -q "nvidia-persistenced: Started" /tmp/syslog
    check agent-supervises supervised
    kill -TERM "$apid"
    wait "$apid"
    check agent-sigterm [ $? = 0 ]
    check agent-daemon-gone [ -z "$(procs_of nvidia-persistenced)" ]
    run uninstall
    check agent-uninstall rc_is 0
    kill "$slpid" 2>/dev/null
}

# The node agent finishes a pending upgrade by itself on the real kernel (docs/design.md,
# "Upgrades that finish by themselves"), against the API server stand-in on the host
# (tests/tools/kube-api.py on the host's 127.0.0.1, reached as 10.0.2.2 through qemu's user
# network; /init brings the network up for this scenario; the service account is in /sa).
# A process holds /dev/nvidiactl, so the new version is left pending; the agent takes the
# slot, cordons the node and waits; the process ends, and the agent activates the version
# in place (delete_module and finit_module on this kernel) and validates it, and is the
# same process throughout (the pod's containers are not restarted). tests/vm/run.sh then
# checks what the agent left on the stand-in's node.
agent_upgrade() {
    run install $DA --driver-version "$V_OLD"
    check au-install rc_is 0
    hold nvidiactl
    run install $DA --when-busy defer --driver-version "$V_NEW"
    check au-deferred rc_is 0
    check au-pending pending_record_names "$V_NEW"
    NVIDIA_DRIVER_REPO=file:///repo NVIDIA_DRIVER_REPO_KEY=/keys/repo-pub.pem \
        NVIDIA_MODULE_CERT=/keys/mod.crt NVIDIA_METRICS_FILE=$PROM \
        KUBERNETES_SERVICE_HOST=10.0.2.2 KUBERNETES_SERVICE_PORT=$ndi_kube_port \
        "$I" --root / agent --listen 127.0.0.1:9400 --interval 1 --node-name vm-node --kube-sa-dir /sa \
        2>/tmp/agent.err &
    apid=$!
    if ! wait_for 60 grep -q "driver upgrades on (node=vm-node" /tmp/agent.err; then
        bad au-agent-api "the agent did not turn upgrades on"
        sed 's/^/VMTEST | agent: /' /tmp/agent.err
        kill "$apid" "$held" 2>/dev/null
        return
    fi
    ok au-agent-api
    check au-waiting wait_for 60 upgrade_state waiting
    check au-old-serves [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check au-still-pending pending_record_names "$V_NEW"
    kill "$held"
    wait "$held" 2>/dev/null
    check au-done wait_for 90 upgrade_state done
    check au-new-loaded [ "$(cat /sys/module/nvidia/version)" = "$V_NEW" ]
    check au-nothing-pending nothing_pending
    check au-ready grep -qx "NVIDIA_DRIVER_VERSION=$V_NEW" "$MARKER"
    check au-activated grep -q "driver upgrade: the installer ended (what=activation how=exit 0)" /tmp/agent.err
    check au-same-agent kill -0 "$apid"
    check au-started-once [ "$(grep -c "agent: watching the node" /tmp/agent.err)" = 1 ]
    grep "driver upgrade" /tmp/agent.err | sed 's/^/VMTEST | agent: /'
    kill -TERM "$apid"
    wait "$apid"
    check au-sigterm [ $? = 0 ]
}
# Time to ready (make bench: bench/run.py, tests/vm/run.sh timing), over two boots of one
# disk laid out as COS's stateful partition (as defer's) with the kernel's initcall_debug
# on, the repository served by the host (http://10.0.2.2, qemu's user network). Boot 1: a
# cold install. Boot 2, a reboot: the reload from the node's disk, then an upgrade to
# V_NEW. Each run's times in one VMTIME line: the installer's stage times (its own clock,
# from the start of the install command), the wall time of the whole process (from
# /proc/uptime, 10 ms steps), and the time the kernel spent in the modules' init
# functions (initcall_debug's lines for [nvidia*]).
TA="--repo http://10.0.2.2:${ndi_repo_port:-0} --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 60 --metrics-file $PROM"

# timed NAME INSTALLER_ARGS...: runs the installer as run does and prints NAME's VMTIME line.
timed() {
    name=$1
    shift
    dmesg -c >/dev/null
    u0=$(cut -d' ' -f1 /proc/uptime)
    "$I" "$@" >/tmp/out 2>/tmp/err
    echo $? >/tmp/rc
    u1=$(cut -d' ' -f1 /proc/uptime)
    dmesg | sed -n 's/.*initcall .* \[nvidia[a-z_]*\] returned -*[0-9]* after \([0-9]*\) usecs.*/\1/p' >/tmp/inits
    inits=$(wc -l </tmp/inits)
    init_us=$(awk '{ s += $1 } END { printf "%d", s }' /tmp/inits)
    times=$(sed -n 's/.*install: stage times (\(.*\))$/\1/p' /tmp/err)
    echo "VMTIME $name $times wall_ms=$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%d", (b - a) * 1000 }') init_us=$init_us inits=$inits"
    echo "VMTEST ran '$*' -> exit $(cat /tmp/rc)"
}

# ready_as RUN VERSION: the timed run RUN ended with VERSION loaded and the node ready, the
# modules' init functions seen by initcall_debug.
ready_as() {
    check "$1" rc_is 0
    check "$1-loaded" [ "$(cat /sys/module/nvidia/version)" = "$2" ]
    check "$1-ready" grep -qx "NVIDIA_DRIVER_VERSION=$2" "$MARKER"
    check "$1-inits-seen" [ "$inits" -ge 3 ]
}

timing_1() {
    check stateful-disk stateful_mounted
    check fresh-disk [ ! -e "$IDIR" ]
    check initcall-debug grep -qw initcall_debug /proc/cmdline
    timed cold install $TA --driver-version "$V_OLD"
    ready_as cold "$V_OLD"
    check cold-downloaded err_has "package downloaded"
    down_cleanly
}

timing_2() {
    check stateful-disk stateful_mounted
    check boot-nothing-loaded no_nvidia
    check boot-no-marker [ ! -e "$MARKER" ]
    timed reboot install $TA --driver-version "$V_OLD"
    ready_as reboot "$V_OLD"
    check reboot-no-download sh -c '! grep -q "package downloaded" /tmp/err'
    check reboot-load-logged err_has "driver loaded (version=$V_OLD"
    timed upgrade install $TA --driver-version "$V_NEW"
    ready_as upgrade "$V_NEW"
    check upgrade-unloaded err_has "module unloaded (module=nvidia)"
    down_cleanly
}

# NVIDIA's real 535.261.03 (make check-real's repository, served by the host as timing's):
# without a GPU no run reaches ready, so each is timed up to the kernel's refusal (ENODEV
# from nvidia.ko's init), which the kernel's own times show apart: a cold install, the
# same from the node's cache, then the user space alone (--skip-modules), which publishes
# without the kernel. Proprietary modules, as GKE's default.
real_timing() {
    check stateful-disk stateful_mounted
    check initcall-debug grep -qw initcall_debug /proc/cmdline
    TR="$TA --fetch-timeout 300 --kernel-module-type proprietary --driver-version $RV"
    timed real-cold install $TR
    check real-cold-refused rc_is 6
    check real-cold-enodev err_has "module nvidia found no NVIDIA GPU it supports"
    check real-cold-downloaded err_has "package downloaded"
    check real-cold-nvidia-init [ "$inits" -ge 1 ]
    timed real-cached install $TR
    check real-cached-refused rc_is 6
    check real-cached-no-download sh -c '! grep -q "package downloaded" /tmp/err'
    timed real-user-space install $TR --skip-modules
    check real-user-space rc_is 0
    check real-user-space-ld sh -c "/sbin/ldconfig -p | grep -q 'libcuda.so.1 .*=> $D/lib64/libcuda.so.1'"
    check real-nothing-loaded sh -c "! grep -qE '$real_mods' /proc/modules"
    down_cleanly
}

# upgrade_state STATE: the agent's metric says the node's upgrade is at STATE.
upgrade_state() {
    wget -q -O - http://127.0.0.1:9400/metrics 2>/dev/null |
        grep -qx "nvidia_driver_installer_agent_upgrade_state{state=\"$1\"} 1"
}

# GPU partitions on the real kernel: the stand-in nvidia.ko registers "nvidia-caps" and makes
# each instance's capability files from what the NVML stand-in writes (tests/kmod/nvidia.c):
# the pool's gpu_config.json makes seven 1g.10gb instances per H100, whose nvidia-caps nodes
# get the kernel's major; the CDI spec names them; a process holding /dev/nvidia0 refuses
# another layout (exit 7, named), all-disabled removes the instances (the driver's
# capability files gone), and uninstall unloads the driver with the partitions gone.
mig() {
    mkdir -p /etc/nvidia
    echo '{"GPUPartitionSize": "1g.10gb"}' >/etc/nvidia/gpu_config.json
    run install $ARGS --driver-version "$V_OLD"
    check mig-install rc_is 0
    check mig-applied err_has "GPU layout applied (layout=all-1g.10gb from=/etc/nvidia/gpu_config.json changed=2 unchanged=0"
    caps=$(sed -n 's/^ *\([0-9]*\) nvidia-caps$/\1/p' /proc/devices)
    check mig-caps-major [ -n "$caps" ]
    check mig-driver-caps [ -f /proc/driver/nvidia/capabilities/gpu1/mig/gi7/ci0/access ]
    check mig-node-gi [ "$(node nvidia-caps/nvidia-cap12)" = "$caps:12 444" ]
    check mig-node-ci [ "$(node nvidia-caps/nvidia-cap148)" = "$caps:148 444" ]
    check mig-node-config [ "$(node nvidia-caps/nvidia-cap1)" = "$caps:1 400" ]
    check mig-cdi grep -q '"name": "1:6"' /var/run/cdi/nvidia-driver-installer.json
    check mig-cdi-whole-gone sh -c '! grep -q "\"name\": \"0\"," /var/run/cdi/nvidia-driver-installer.json'
    check mig-labels grep -qx "nvidia.com/gpu.product=NVIDIA-stand-in-GPU-MIG-1g.10gb" "$FEAT/00-nvidia-driver"
    run install $ARGS --driver-version "$V_OLD"
    check mig-rerun err_has "GPU layout already in place"
    hold nvidia0
    run install $ARGS --driver-version "$V_OLD" --mig-layout all-3g.40gb
    check mig-busy rc_is 7
    check mig-busy-named err_has "GPU partitioning refused: the GPUs are in use: /dev/nvidia0 open in pid $held (sleep)"
    check mig-busy-unchanged [ -f /proc/driver/nvidia/capabilities/gpu0/mig/gi7/access ]
    kill "$held"
    wait "$held" 2>/dev/null
    run install $ARGS --driver-version "$V_OLD" --mig-layout all-disabled
    check mig-undo rc_is 0
    check mig-undo-caps-gone sh -c '! ls /proc/driver/nvidia/capabilities/gpu0/mig | grep -q gi'
    check mig-undo-cdi grep -q '"name": "0",' /var/run/cdi/nvidia-driver-installer.json
    run uninstall
    check mig-uninstall rc_is 0
    check mig-uninstall-unloaded no_nvidia
    check mig-uninstall-nodes [ ! -e /dev/nvidia-caps ]
}

# A RHEL rebuild: the package for os rhel, built from a kernel-devel RPM, is the node's.
rhel() {
    RA="--repo file:///rhel-repo --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt --fetch-timeout 60"
    run install $RA
    check rhel-debian-none rc_is 3
    printf 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n' >/etc/os-release
    run install $RA
    check rhel-install rc_is 0
    check rhel-chosen err_has "host probed (os=rocky version=9.4"
    check rhel-loaded [ "$(loaded)" = "drm drm_kms_helper nvidia nvidia_drm nvidia_modeset nvidia_uvm " ]
    check rhel-verified err_has "module signature verified (module=nvidia version=$V_OLD signer=nvidia-driver-installer VM test key)"
    check rhel-vermagic [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check rhel-manifest grep -q '"os_id": "rocky"' /home/kubernetes/bin/nvidia/.current/.install.json
    run uninstall
    check rhel-uninstall rc_is 0
    check rhel-unloaded no_nvidia
}

# SELinux (booted with security=selinux; the policies and tools from tests/vm/run.sh,
# make_selinux). The label containers need, read back with coreutils' stat (libselinux),
# and a container's process: container_t with categories of its own, chrooted into a
# rootfs labelled as a container engine labels one (container_file_t), the install dir's
# lib64/ and bin/ bound at /usr/local/nvidia as our CDI spec binds them, running nvidia-smi
# (the launcher, then NVIDIA's program, which dlopens libnvidia-ml.so.1 from lib64/).
SE=/usr/lib/ndi-selinux
SE_FILE=system_u:object_r:container_file_t:s0
SE_MOD=system_u:object_r:modules_object_t:s0
SE_PROC=system_u:system_r:container_t:s0:c1,c2
D=/home/kubernetes/bin/nvidia
# The entries of the install dir whose label is not $1 (a version's drivers/ and what it
# holds: not $2, by default $1): "LABEL PATH" lines.
se_wrong() {
    find $D/ -exec $SE/stat -c '%C %n' {} + |
        awk -v c="$1" -v m="${2:-$1}" -v d="$D/.versions/" '{ want = c; p = $2
            if (index(p, d) == 1) { r = substr(p, length(d) + 1); sub(/^[^\/]*\//, "", r)
                if (r ~ /^drivers(\/|$)/) want = m }
            if ($1 != want) print }'
}
se_labelled() { ! se_wrong "$@" | sed 's/^/VMTEST | /' | grep -q .; }
se_ctr_make() {
    mkdir -p /ctr/bin /ctr/lib64 /ctr/lib/x86_64-linux-gnu /ctr/proc /ctr/tmp /ctr/dev \
        /ctr/usr/local/nvidia/lib64 /ctr/usr/local/nvidia/bin
    cp /bin/busybox /ctr/bin/
    # The /dev/null an engine gives every container (the process's inherited descriptors
    # are the installer's side's, which container_t may not use: the kernel revokes them).
    mknod -m 666 /ctr/dev/null c 1 3
    for a in sh cat; do ln -sf busybox /ctr/bin/$a; done
    cp /lib64/ld-linux-x86-64.so.2 /ctr/lib64/
    for l in libc.so.6 libdl.so.2 libpthread.so.0 libm.so.6 librt.so.1; do
        cp /lib/x86_64-linux-gnu/$l /ctr/lib/x86_64-linux-gnu/
    done
    $SE/chcon -R $SE_FILE /ctr
    mount -t proc proc /ctr/proc
    mount --bind $D/lib64 /ctr/usr/local/nvidia/lib64
    mount --bind $D/bin /ctr/usr/local/nvidia/bin
}
# se_ctr_run PROGRAM [ARG...]: PROGRAM as a container's process (tests/vm/ctr-exec.c: its
# own session, chrooted into /ctr, in $SE_PROC); its exit status in /tmp/ctr.rc.
se_ctr_run() {
    $SE/ctr-exec /ctr $SE_PROC "$@"
    echo $? >/tmp/ctr.rc
    [ "$(cat /tmp/ctr.rc)" = 0 ]
}
# nvidia-smi from the install dir: the launcher, NVIDIA's program from bin/.real, and
# libnvidia-ml.so.1 it dlopens from lib64/ (exit 12 when that cannot be loaded).
se_smi() { se_ctr_run /usr/local/nvidia/bin/nvidia-smi || { echo "VMTEST | nvidia-smi in container_t: exit $(cat /tmp/ctr.rc)"; false; }; }
se_smi_exit() {
    se_ctr_run /usr/local/nvidia/bin/nvidia-smi
    echo "VMTEST | nvidia-smi in container_t: exit $(cat /tmp/ctr.rc)"
    [ "$(cat /tmp/ctr.rc)" = "$1" ]
}
# The process's own domain, written by it into its rootfs.
se_domain() {
    rm -f /ctr/tmp/domain
    se_ctr_run /bin/sh -c 'cat /proc/self/attr/current >/tmp/domain'
    [ "$(tr -d '\0' </ctr/tmp/domain)" = $SE_PROC ] || { echo "VMTEST | domain: $(cat /ctr/tmp/domain), exit $(cat /tmp/ctr.rc)"; false; }
}
se_doctor() {
    "$I" doctor --repo file:///repo --repo-key /keys/repo-pub.pem >/tmp/doctor 2>/tmp/doctor.err
    echo $? >/tmp/doctor.rc
}
doctor_has() { grep -qE -- "$1" /tmp/doctor || { sed 's/^/VMTEST | /' /tmp/doctor; false; }; }
selinux() {
    # Without auditd the kernel prints its AVC records through printk_ratelimit(): every
    # one is wanted here (kernel_t's permissive records come in bursts).
    echo 0 >/proc/sys/kernel/printk_ratelimit
    mount -t selinuxfs selinuxfs /sys/fs/selinux
    check se-policy sh -c 'dd if=/selinux/policy.container of=/sys/fs/selinux/load bs=16M 2>/dev/null'
    check se-permissive [ "$(cat /sys/fs/selinux/enforce)" = 0 ]
    check se-container-type sh -c "printf %s $SE_FILE >/sys/fs/selinux/context"
    run install $ARGS
    check se-install rc_is 0
    check se-said err_has "SELinux: what containers read is published with the container label (mode=permissive label=$SE_FILE)"
    check se-labels se_labelled $SE_FILE $SE_MOD
    # The kernel loaded the modules from files of the type it may load them from: no
    # module_load denial (kernel_t is permissive: one would be logged) names the install dir.
    check se-modules-loadable sh -c "! dmesg | grep 'module_load' | grep -q '$D/'"
    dmesg | grep 'module_load' | sed 's/^/VMTEST | /'
    check se-hook-label [ "$($SE/stat -c %C $D/.helpers/nvidia-cdi-hook)" = $SE_FILE ]
    check se-spec-binds grep -q "\"hostPath\": \"$D/lib64\"" /var/run/cdi/nvidia-driver-installer.json
    se_ctr_make
    echo 1 >/sys/fs/selinux/enforce
    check se-enforcing [ "$(cat /sys/fs/selinux/enforce)" = 1 ]
    check se-ctr-smi se_smi
    check se-ctr-domain se_domain
    se_doctor
    check se-doctor-healthy [ "$(cat /tmp/doctor.rc)" = 0 ]
    check se-doctor-mode doctor_has "^\[ok *\] selinux +enforcing; containers read what we publish as $SE_FILE"
    check se-doctor-labels doctor_has "^\[ok *\] selinux labels +every entry of the install dir carries its label"
    # The label a file of the install dir's tmpfs has without us, on the libraries only:
    # the program runs, the loader cannot read libnvidia-ml.so.1 (NVIDIA's exit 12), and
    # the kernel says why; on everything: the exec itself is refused.
    find $D/.versions/ -path '*/lib64/*' -exec $SE/chcon -h -t tmpfs_t {} +
    check se-libs-unlabelled [ "$($SE/stat -c %C $D/lib64/libnvidia-ml.so.1)" = system_u:object_r:tmpfs_t:s0 ]
    check se-ctr-libs-refused se_smi_exit 12
    check se-ctr-avc sh -c "dmesg | grep 'avc:  denied' | grep 'scontext=$SE_PROC' | grep -q 'tcontext=system_u:object_r:tmpfs_t:s0'"
    dmesg | grep 'avc:  denied' | grep 'tmpfs_t' | tail -2 | sed 's/^/VMTEST | /'
    $SE/chcon -R -h -t tmpfs_t $D
    check se-unlabelled se_labelled system_u:object_r:tmpfs_t:s0
    check se-ctr-refused se_smi_exit 126
    se_doctor
    check se-doctor-fails [ "$(cat /tmp/doctor.rc)" = 9 ]
    check se-doctor-names doctor_has "^\[fail\] selinux labels +[0-9]+ of [0-9]+ entries of the install dir lack their label \($SE_FILE; drivers/ $SE_MOD\): containers, and the kernel for drivers/, are refused them"
    check se-doctor-fix doctor_has "chcon -R -h $SE_FILE $D"
    run install $ARGS
    check se-relabel rc_is 0
    check se-relabelled se_labelled $SE_FILE $SE_MOD
    check se-ctr-again se_smi
    # Debian's stock policy, which has no container module: nothing to label, and said so.
    echo 0 >/sys/fs/selinux/enforce
    check se-stock-policy sh -c 'dd if=/selinux/policy.stock of=/sys/fs/selinux/load bs=16M 2>/dev/null'
    run install $ARGS
    check se-stock-install rc_is 0
    check se-stock-said err_has "SELinux: the policy has no container_file_t: nothing is labelled (mode=permissive label=none)"
    se_doctor
    check se-stock-doctor doctor_has "^\[ok *\] selinux +permissive; the policy has no container_file_t"
    umount /ctr/usr/local/nvidia/lib64 /ctr/usr/local/nvidia/bin /ctr/proc
    run uninstall
    check se-uninstall rc_is 0
}

# set_gpus ID: every fake PCI function (tests/vm/init) becomes vendor:device ID.
set_gpus() {
    for f in /tmp/pci/*; do
        echo "0x${1%:*}" >"$f/vendor"
        echo "0x${1#*:}" >"$f/device"
    done
}

# One repository with both flavours; per GPU and --kernel-module-type, the outcome the
# driver's data predicts (/etc/ndi-real-cases, derived on the host from the index): the
# installer takes that flavour's nvidia.ko (its license says which) and the kernel answers
# ENODEV, or it refuses with exit 3 before anything is downloaded or loaded.
real_flavours() {
    exec 4</etc/ndi-real-cases
    while read -r name gpu policy want <&4; do
        c=$name-$policy
        set_gpus "$gpu"
        echo "VMTEST case $c: GPUs $(cat /sys/bus/pci/devices/*/device | tr '\n' ' ')--kernel-module-type $policy; the data says: $want"
        run install $RA --kernel-module-type "$policy"
        if [ "$want" = refuse ]; then
            check "$c-refused" rc_is 3
            grep ERROR /tmp/err | sed 's/^/VMTEST | /'
            check "$c-names-gpu" err_has "GPU $gpu is not supported by"
            check "$c-nothing-loaded" sh -c "! grep -qE '$real_mods' /proc/modules"
            check "$c-not-ready" [ ! -e /run/nvidia/validations/driver-ready ]
            continue
        fi
        grep ERROR /tmp/err | sed 's/^/VMTEST | /'
        check "$c-enodev" rc_is 6
        check "$c-no-gpu" err_has "module nvidia found no NVIDIA GPU it supports; the driver logged: No NVIDIA GPU found"
        check "$c-nothing-loaded" sh -c "! grep -qE '$real_mods' /proc/modules"
        # The same choice, published without loading: the module file it picked.
        run install $RA --kernel-module-type "$policy" --skip-modules
        check "$c-published" rc_is 0
        lic=$(ko_license "$D/drivers/nvidia.ko")
        echo "VMTEST case $c: picked $want, nvidia.ko license '$lic'"
        check "$c-module-file" [ "$lic" = "$(license_of "$want")" ]
        run uninstall
        check "$c-uninstall" rc_is 0
    done
    exec 4<&-
    check cases-ran [ $((pass + fail)) -gt 0 ]
}

# clang, clang-enforce: the clang-built COS stand-in (tests/vm/run.sh says what is where).
clang_kernel() {
    CA="--repo file:///clang-standin-repo --repo-key /keys/repo-pub.pem --fetch-timeout 120 --modules nvidia,nvidia-modeset,nvidia-uvm"
    echo "VMTEST kernel: $(cat /proc/version)"
    check clang-built grep -q "clang version" /proc/version
    enforced=$(cat /sys/module/module/parameters/sig_enforce)
    check enforcement [ "$enforced" = "$([ "$S" = clang-enforce ] && echo Y || echo N)" ]
    # Signed with the key the kernel has built in: loaded, with or without enforcement.
    run install $CA --module-cert /keys/mod.crt --driver-version "$V_OLD"
    check built-in-key rc_is 0
    check loaded sh -c "grep -q '^nvidia ' /proc/modules && grep -q '^nvidia_uvm ' /proc/modules"
    check nodes [ -c /dev/nvidiactl ]
    check version [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    run uninstall
    check uninstall rc_is 0
    check unloaded no_nvidia
    # Signed with a key the kernel does not have (the installer's own check is told to
    # trust it): the kernel decides.
    run install $CA --module-cert /keys/mod.crt,/keys/other.crt --driver-version "$V_NEW"
    if [ "$enforced" = Y ]; then
        check other-key-refused rc_is 6
        grep ERROR /tmp/err | sed 's/^/VMTEST | /'
        check other-key-signer err_has "the kernel rejected the signature of module nvidia: signed by 'nvidia-driver-installer other test key'"
        check other-key-nothing-loaded no_nvidia
    else
        check other-key-loaded rc_is 0
        check other-key-version [ "$(cat /sys/module/nvidia/version)" = "$V_NEW" ]
        # The kernel took it, marked as unverified (TAINT_UNSIGNED_MODULE, 'E').
        check other-key-tainted [ $(($(cat /proc/sys/kernel/tainted) & 8192)) = 8192 ]
        run uninstall
        check other-key-uninstall rc_is 0
    fi
    [ -d /clang-repo ] || { echo "VMTEST no /clang-repo: NVIDIA's modules were not built (make check-real builds them)"; return; }
    # NVIDIA's real 535.261.03, built with LLVM=1 against this kernel's headers. Its index is
    # signed with the same key as the stand-ins' and is older: a cache of its own, or the
    # node's anti-rollback memory would rightly refuse it.
    for f in proprietary open; do
        run install --repo file:///clang-repo --repo-key /keys/repo-pub.pem --module-cert /keys/mod.crt \
            --cache-dir /var/cache/ndi-clang-real --fetch-timeout 300 --kernel-module-type $f \
            --driver-version 535.261.03
        check nvidia-$f-enodev rc_is 6
        grep ERROR /tmp/err | sed 's/^/VMTEST | /'
        check nvidia-$f-no-gpu err_has "module nvidia found no NVIDIA GPU it supports; the driver logged: No NVIDIA GPU found"
        check nvidia-$f-signature err_has "module signature verified (module=nvidia version=535.261.03 signer=nvidia-driver-installer real-driver test key)"
        check nvidia-$f-rolled-back no_nvidia
    done
    dmesg | grep NVRM | sed 's/^/VMTEST | dmesg: /'
}

# A node that boots a kernel the repository has no package for (docs/design.md, "A kernel
# nobody built for"), end to end with no person: the installer, as the init container runs
# it, asks on its Node (the API stand-in on the host, reached at 10.0.2.2) and waits; on the
# host, tests/vm/run.sh's supply_boot sees the ask, runs scripts/supply (local executor)
# with this kernel's real headers and publishes into the repository the host serves at
# 10.0.2.2; the installer installs at its next check. The wait's own share of the time is
# printed as "VMTIME supply": from the first refusal (the record's since) to ready.
supply() {
    KUBERNETES_SERVICE_HOST=10.0.2.2 KUBERNETES_SERVICE_PORT=$ndi_kube_port \
        "$I" --root / install $TA --driver-version "$V_OLD" --wait-for-package \
        --wait-for-package-interval 5 --wait-for-package-max 900 --node-name vm-node \
        --kube-sa-dir /sa >/tmp/out 2>/tmp/err &
    ipid=$!
    check supply-waits wait_for 120 test -e "$IDIR/.waiting.json"
    "$I" --root / status >/tmp/status.out 2>&1
    check supply-status out_of_status_has "waiting for the repository to serve kernel $(uname -r)"
    check supply-metric grep -q "^nvidia_driver_installer_waiting_for_package{.*kernel=\"$(uname -r)\".*} 1" "$PROM"
    check supply-nothing-loaded no_nvidia
    wait "$ipid"
    echo $? >/tmp/rc
    u1=$(cut -d' ' -f1 /proc/uptime)
    check supply-installed rc_is 0
    check supply-loaded [ "$(cat /sys/module/nvidia/version)" = "$V_OLD" ]
    check supply-ready grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" "$MARKER"
    check supply-wait-cleared [ ! -e "$IDIR/.waiting.json" ]
    check supply-metric-cleared grep -q "^nvidia_driver_installer_waiting_for_package{.*} 0" "$PROM"
    grep -E "wait|nodeask|package" /tmp/err | sed 's/^/VMTEST | installer: /' | tail -8
    echo "VMTIME supply installed_uptime_s=$u1"
}
# real-supply: supply's wait and ask, and the pass on the host builds NVIDIA's real driver
# for this kernel; the installer then meets what real-proprietary meets (no GPU: ENODEV,
# rolled back), with every signature verified first.
real_supply() {
    KUBERNETES_SERVICE_HOST=10.0.2.2 KUBERNETES_SERVICE_PORT=$ndi_kube_port \
        "$I" --root / install $TA --driver-version "$RV" --kernel-module-type proprietary \
        --wait-for-package --wait-for-package-interval 5 --wait-for-package-max 1500 \
        --node-name vm-node --kube-sa-dir /sa >/tmp/out 2>/tmp/err &
    ipid=$!
    check rs-waits wait_for 300 test -e "$D/.waiting.json"
    "$I" --root / status >/tmp/status.out 2>&1
    check rs-status out_of_status_has "waiting for the repository to serve kernel $(uname -r)"
    wait "$ipid"
    echo $? >/tmp/rc
    check rs-came err_has "wait: the repository serves this node's package"
    check rs-refused rc_is 6
    check rs-signatures err_has "module signature verified (module=nvidia version=$RV signer=nvidia-driver-installer real-driver test key)"
    check rs-no-gpu err_has "module nvidia found no NVIDIA GPU it supports; the driver logged: No NVIDIA GPU found"
    check rs-nothing-loaded sh -c "! grep -qE '$real_mods' /proc/modules"
    grep -E "ERROR|wait:" /tmp/err | sed 's/^/VMTEST | /' | tail -6
}
# GPUDirect RDMA (docs/design.md, "GPUDirect RDMA") on Debian's in-tree ib_core, which the
# initramfs has and nothing loads at boot; tests/kmod/mofed's ib_peer_mem, in
# /lib/modules/R/updates as MOFED installs its modules, stands in for the peer-memory API
# MOFED's ib_core adds. The package's stand-in nvidia-peermem was built against it (as
# NVIDIA's container builds against MOFED's ofa_kernel): it imports that API, so the kernel
# refuses it over the in-tree core alone. The order is read from the kernel: a module is
# among the holders of each module whose symbols it took when it was inserted, and the
# kernel log has each stand-in's init line in order.
holds() { [ -e "/sys/module/$1/holders/$2" ]; }
# (a shell function: checks call it through eval, never sh -c, where it is not defined)
live() { grep -q "^$1 " /proc/modules; }
# openibd's stop, as MOFED's driver container runs it: the modules on the stack first.
stack_stop() {
    ! live nvidia_peermem || rmmod nvidia_peermem
    ! live ib_peer_mem || rmmod ib_peer_mem
    ! live ib_core || rmmod ib_core
}
rdma() {
    RA="$ARGS --driver-version $V_OLD"
    # A node without an RDMA stack loaded: auto serves nothing, says why, loads nothing.
    run install $RA --rdma auto
    check rdma-auto-no-stack rc_is 0
    check rdma-auto-says-why err_has "path=none why=RDMA is not served: no RDMA stack is loaded"
    check rdma-auto-loads-nothing eval '! live ib_core && ! live nvidia_peermem'
    "$I" doctor --rdma auto >/tmp/doctor 2>&1
    check rdma-doctor-none grep -q "rdma.*no RDMA stack is loaded" /tmp/doctor
    # peermem with ib_core only in the module tree: the driver installs, nvidia-peermem
    # waits for the node's stack; ib_core is never loaded from the tree by us (openibd's).
    run install $RA --rdma peermem
    check rdma-peermem-waits rc_is 0
    check rdma-peermem-waits-said err_has "nvidia-peermem waits: the node agent (--rdma) loads it then (reason=ib_core with MOFED's peer-memory API is not live (none loaded))"
    check rdma-peermem-no-intree-core eval '! live ib_core && ! live nvidia_peermem && live nvidia'
    # The in-tree core loaded by the node, without MOFED's API: still waits (NVIDIA's
    # nvidia-peermem built with the API would not load over it, nor one without work).
    modprobe ib_core
    run install $RA --rdma peermem
    check rdma-peermem-lacks-api err_has "peer-memory API is not live (the loaded one lacks it)"
    check rdma-peermem-not-over-intree eval '! live nvidia_peermem'
    # The kernel's own word on that file over the in-tree core: refused (what waiting avoids).
    ko=$(ls "$IDIR"/.versions/*/drivers/nvidia-peermem.ko 2>/dev/null | head -1)
    check rdma-kernel-refuses-without-api sh -c "[ -n '$ko' ] && ! insmod '$ko' 2>/dev/null"
    # openibd started: MOFED's API up; nvidia-peermem loads in its own step after the driver.
    modprobe ib_peer_mem
    run install $RA --rdma peermem
    check rdma-peermem rc_is 0
    check rdma-peermem-verified err_has "module signature verified (module=nvidia_peermem"
    check rdma-peermem-loaded err_has "kernel: nvidia-peermem loaded (version=$V_OLD)"
    check rdma-peermem-after-ib-core holds ib_core nvidia_peermem
    check rdma-peermem-after-nvidia holds nvidia nvidia_peermem
    check rdma-peermem-on-peer-api holds ib_peer_mem nvidia_peermem
    check rdma-peermem-registered dmesg_has "registered with ib_core and MOFED's peer-memory API"
    "$I" doctor --rdma peermem >/tmp/doctor 2>&1
    check rdma-doctor-peermem grep -q "rdma.*peermem: nvidia_peermem is loaded" /tmp/doctor
    # The agent, and MOFED's driver container restarting openibd under it; its readiness
    # file, /run/mellanox/drivers/.driver-ready, as that container writes it.
    mkdir -p /run/mellanox/drivers && touch /run/mellanox/drivers/.driver-ready
    prom=/var/lib/metrics/agent.prom
    NVIDIA_MODULE_CERT=/keys/mod.crt "$I" agent --listen 127.0.0.1:0 --interval 1 --rdma peermem \
        --agent-metrics-file "$prom" 2>/tmp/agent.err &
    apid=$!
    check rdma-agent-path wait_for 60 grep -qx 'nvidia_driver_installer_agent_rdma_path{path="peermem"} 1' "$prom"
    # A slow openibd stop: readiness withdrawn, nvidia_peermem out, and the rest of the
    # stack still up until the agent has looked at that half-stopped stack (its log line):
    # it waits, and inserts nothing meanwhile.
    rm /run/mellanox/drivers/.driver-ready
    rmmod nvidia_peermem
    check rdma-agent-waits-stop wait_for 60 grep -q "nvidia-peermem waits (reason=MOFED's driver container has not made its stack ready" /tmp/agent.err
    check rdma-agent-no-reinsert-in-stop eval '! live nvidia_peermem && live ib_peer_mem'
    stack_stop
    check rdma-agent-waits wait_for 60 grep -q "nvidia-peermem waits (reason=the RDMA stack is gone" /tmp/agent.err
    check rdma-agent-loads-no-stack eval '! live ib_core && ! live nvidia_peermem'
    modprobe ib_peer_mem
    touch /run/mellanox/drivers/.driver-ready
    check rdma-agent-reloads wait_for 60 grep -q "rdma: nvidia-peermem loaded again after the RDMA stack" /tmp/agent.err
    check rdma-reload-counted wait_for 60 grep -qx "nvidia_driver_installer_agent_peermem_reloads_total 1" "$prom"
    check rdma-reload-after-ib-core holds ib_core nvidia_peermem
    check rdma-reload-on-peer-api holds ib_peer_mem nvidia_peermem
    check rdma-reload-order dmesg_order "MOFED's peer-memory API up on ib_core" "peer-memory client 1 registered"
    check rdma-reload-verified grep -q "module loaded (module=nvidia_peermem" /tmp/agent.err
    "$I" doctor --rdma peermem >/tmp/doctor 2>&1
    check rdma-doctor-reloaded grep -q "rdma.*peermem: nvidia_peermem is loaded" /tmp/doctor
    kill -TERM "$apid"
    wait "$apid"
    check rdma-agent-sigterm [ $? = 0 ]
    grep -E "agent_(rdma|peermem)_" "$prom" | sed "s/^/VMTEST prom /"
    grep "rdma" /tmp/agent.err | sed 's/^/VMTEST | agent: /'
    echo "VMTEST holders: ib_core: $(ls /sys/module/ib_core/holders | tr '\n' ' ')nvidia: $(ls /sys/module/nvidia/holders | tr '\n' ' ')"
}
# dmesg_has TEXT; dmesg_order FIRST SECOND: SECOND's last line comes after FIRST's last.
dmesg_has() { dmesg | grep -q -- "$1" || { dmesg | tail -5 | sed 's/^/VMTEST | dmesg: /'; false; }; }
dmesg_order() {
    a=$(dmesg | grep -n -- "$1" | tail -1 | cut -d: -f1)
    b=$(dmesg | grep -n -- "$2" | tail -1 | cut -d: -f1)
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] || { dmesg | tail -8 | sed 's/^/VMTEST | dmesg: /'; false; }
}
out_of_status_has() { grep -q -- "$1" /tmp/status.out || { sed 's/^/VMTEST | /' /tmp/status.out; false; }; }

case "$S" in
main | enforce | lockdown | demo | mig | rhel | selinux) "$S" ;;
arm64-real-proprietary | arm64-real-open)
    check arch-aarch64 [ "$(uname -m)" = aarch64 ]
    S=${S#arm64-}
    real
    S=arm64-$S
    ;;
arm64-main | arm64-enforce)
    # Debian's arm64 kernel under qemu-system-aarch64, the cross-built installer.
    check arch-aarch64 [ "$(uname -m)" = aarch64 ]
    PKG_DEFAULTS=1
    ${S#arm64-}
    ;;
clang | clang-enforce) clang_kernel ;;
defer-1) defer_1 ;;
defer-2) defer_2 ;;
timing-1) timing_1 ;;
timing-2) timing_2 ;;
real-timing) real_timing ;;
vendor-sig) vendor_sig ;;
real-proprietary | real-open) real ;;
real-flavours) real_flavours ;;
real-agent) real_agent ;;
agent-upgrade) agent_upgrade ;;
rdma) rdma ;;
supply) supply ;;
gpudirect) gpudirect ;;
real-supply) real_supply ;;
*) bad scenario "unknown scenario '$S'" ;;
esac
echo "VMTEST END $S pass=$pass fail=$fail"
