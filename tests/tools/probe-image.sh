# SPDX-License-Identifier: Apache-2.0
# A tiny container image and Debian's podman with runc, for the tests that hand our
# outputs to a real runtime (t_cdi_podman, tests/real/run.sh). Sourced; needs $SRC.
#
# The image, localhost/ndi-cdi-probe:1: busybox (static), the host's glibc with an ld
# cache of its own, /bin/probe (tests/tools/cdi-probe.c: prints LD_LIBRARY_PATH, dlopens
# its arguments), and LD_LIBRARY_PATH=/opt/conda/lib set by the image, as a conda image
# sets it: what a workload brings and our outputs must leave alone.
PROBE_IMAGE=localhost/ndi-cdi-probe:1

# probe_image_tar DIR TAR: lays the image out in DIR and packs it into TAR.
probe_image_tar() {
    local img=$1
    mkdir -p "$img/bin" "$img/lib64" "$img/lib/x86_64-linux-gnu" "$img/etc/ld.so.conf.d" \
        "$img/opt/conda/lib" "$img/usr/local" "$img/dev" "$img/proc" "$img/sys" "$img/tmp"
    cp /bin/busybox "$img/bin/"
    for a in sh ls cat test; do ln -s busybox "$img/bin/$a"; done
    cc -O1 -o "$img/bin/probe" "$SRC/tests/tools/cdi-probe.c"
    cp /lib64/ld-linux-x86-64.so.2 "$img/lib64/"
    # glibc's libraries, as a slim distribution image has them (NVIDIA's programs link
    # libpthread, libm, libdl and librt by name).
    for l in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
        cp "/lib/x86_64-linux-gnu/$l" "$img/lib/x86_64-linux-gnu/"
    done
    echo 'include /etc/ld.so.conf.d/*.conf' >"$img/etc/ld.so.conf"
    echo /lib/x86_64-linux-gnu >"$img/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
    ldconfig -r "$img"
    tar -C "$img" -cf "$2" .
}

# probe_podman WORK ARGS...: podman with its storage, state and temporary files under
# WORK (removed with it), no systemd or journald, cgroups by cgroupfs.
probe_podman() {
    local w=$1
    shift
    mkdir -p "$w/storage" "$w/runroot" "$w/ptmp"
    podman --root "$w/storage" --runroot "$w/runroot" --tmpdir "$w/ptmp" --storage-driver vfs \
        --cgroup-manager cgroupfs --events-backend file "$@"
}

# The flags of `podman run` here: runc (crun refuses the hybrid cgroups of these
# machines), no network, and limits the runtime may set (docs: ../shared/TESTING.md).
probe_run_flags() {
    local h
    h=$(ulimit -Hn)
    echo "--runtime runc --network none --ulimit nofile=$h:$h --ulimit nproc=$h:$h"
}

# probe_image_import WORK TAR
probe_image_import() {
    probe_podman "$1" import -q --change 'ENV LD_LIBRARY_PATH=/opt/conda/lib' "$2" "$PROBE_IMAGE" >/dev/null
}

# probe_node_ns ROOT WORK GPUS: inside a private mount namespace (the caller's unshare -m),
# puts the fake node ROOT's install dir (/home/kubernetes/bin/nvidia), /var/run/cdi and
# /etc/cdi where the host's would be, and a /dev of WORK/dev holding the usual nodes and
# the driver's: GPUS GPUs, nvidiactl, nvidia-uvm(-tools), nvidia-modeset (no driver behind
# them), and the node's nvidia-caps/ as the installer made it. The host's /etc/cdi and /var/run/cdi must exist to be mounted over.
probe_node_ns() {
    local root=$1 w=$2 gpus=$3 inst=/home/kubernetes/bin/nvidia n
    mount --make-rprivate /
    mount -t tmpfs tmpfs /home
    mkdir -p "$inst" "$root/var/run/cdi" "$root/etc/cdi"
    mount --bind "$root$inst" "$inst"
    mount --bind "$root/var/run/cdi" /var/run/cdi
    mount --bind "$root/etc/cdi" /etc/cdi
    mkdir -p "$w/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$w/dev"
    cp -a /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty "$w/dev/"
    mkdir "$w/dev/pts" "$w/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$w/dev/pts"
    ln -s pts/ptmx "$w/dev/ptmx"
    for ((n = 0; n < gpus; n++)); do mknod -m 666 "$w/dev/nvidia$n" c 195 "$n"; done
    mknod -m 666 "$w/dev/nvidiactl" c 195 255
    mknod -m 666 "$w/dev/nvidia-uvm" c 510 0
    mknod -m 666 "$w/dev/nvidia-uvm-tools" c 510 1
    mknod -m 666 "$w/dev/nvidia-modeset" c 195 254
    # The MIG instances' capability nodes, as the installer made them on the fake node.
    [ ! -d "$root/dev/nvidia-caps" ] || cp -a "$root/dev/nvidia-caps" "$w/dev/"
    mount --bind "$w/dev" /dev
}

# The host's /etc/cdi and /var/run/cdi must exist for probe_node_ns to mount over them.
# probe_cdi_dirs_take makes those missing, under a shared lock that every test using them
# holds while it runs; probe_cdi_dirs_release removes what tests made once the last of them
# is done (the one that gets the lock exclusively), so that tests running side by side never
# pull the directories from under each other and the host is left as it was.
PROBE_CDI_LOCK=/tmp/ndi-probe-cdi-dirs.lock
probe_cdi_dirs_take() {
    local d
    exec {PROBE_CDI_FD}>>"$PROBE_CDI_LOCK"
    flock -s "$PROBE_CDI_FD"
    for d in /etc/cdi /var/run/cdi; do
        [ -d "$d" ] || { mkdir -p "$d" && echo "$d" >>"$PROBE_CDI_LOCK"; }
    done
}
probe_cdi_dirs_release() {
    local d
    [ -n "${PROBE_CDI_FD:-}" ] || return 0
    if flock -n -x "$PROBE_CDI_FD"; then
        while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$PROBE_CDI_LOCK"
        : >"$PROBE_CDI_LOCK"
    fi
    exec {PROBE_CDI_FD}>&-
    PROBE_CDI_FD=
}

# probe_ns_setup WORK GPUS: the image (WORK/img.tar) and WORK/ns.sh, the script that makes
# the private namespace (probe_node_ns over the fake node WORK/root) and imports the image,
# then runs WORK/steps.sh with P (podman) and run (podman run with probe_run_flags).
# probe_in_ns WORK STEPS: STEPS run there; stdout and stderr in WORK/ns.out, WORK/ns.err.
probe_ns_setup() {
    local w=$1 gpus=$2
    probe_image_tar "$w/img" "$w/img.tar"
    cat >"$w/ns.sh" <<EOF
set -euo pipefail
T='$w' SRC='$SRC'
. "\$SRC/tests/tools/probe-image.sh"
P() { probe_podman "\$T" "\$@"; }
run() { P run --rm \$(probe_run_flags) "\$@"; }
probe_node_ns "\$T/root" "\$T" $gpus
probe_image_import "\$T" "\$T/img.tar"
. "\$T/steps.sh"
EOF
}
probe_in_ns() {
    printf '%s\n' "$2" >"$1/steps.sh"
    unshare -m --propagation private bash "$1/ns.sh" >"$1/ns.out" 2>"$1/ns.err"
}
