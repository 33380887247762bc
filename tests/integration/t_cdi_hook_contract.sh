# plain build: the hook is a static helper, built alike for both
# Our hook as a drop-in for NVIDIA's nvidia-cdi-hook, each subcommand against the contract of
# NVIDIA/nvidia-container-toolkit's (cmd/nvidia-cdi-hook/, at d34b3046, v1.20.0-27), run
# as a runtime runs it (the state on stdin, or --container-spec), on a bundle's rootfs:
#   commands.go: "nvidia-ctk hook NAME" and "NAME" forms, global --debug/--quiet, an unknown
#     hook is a warning and exit 0, an unknown flag of a known hook an error;
#   update-ldcache.go: --folder repeated and comma-separated, --ldconfig-path accepted;
#     the soname links of the folders' libraries made beside them (its ldconfig runs
#     without -X: internal/ldconfig/ldconfig.go, UpdateLDCache), which the specs of
#     toolkits before 1.18 rely on; ours only in those folders, never through a soname
#     that names another place, and not in the image's own directories;
#   create-symlinks.go: --link TARGET::LINK, parents made, an existing link with the same
#     target left, another replaced, a directory in the way an error; an absolute link in
#     the image never leads out of it;
#   chmod.go: --mode octal, --path repeated, missing paths skipped;
#   cudacompat.go, cuda-elf-header.go: the ELF note .note.cuda.fwd_compatibility decides
#     (Driver list, newer version; CUDA Version against --host-cuda-version), without it
#     the major versions; one library only; nothing without host versions;
#   update-application-profile.go: the mask of the container's /dev/nvidiaN minors;
#   disable-device-node-modification.go, params_linux.go: where the host's params say
#     ModifyDeviceFiles: 1, a read-only copy saying 0 over the container's, and nothing
#     outside the container's root whatever its /proc is.
[ "$(id -u)" = 0 ] || fail "needs root (chroot, mounts)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
inst_dir="$T/root/home/kubernetes/bin/nvidia"
hook="$inst_dir/.helpers/nvidia-cdi-hook"
rootfs="$T/bundle/rootfs"

image() {
    rm -rf "$T/bundle"
    mkdir -p "$rootfs/etc/ld.so.conf.d" "$rootfs/dev" "$rootfs/run" "$rootfs/a" "$rootfs/b"
    cp "$inst_dir/lib64/libcuda.so.1" "$rootfs/a/libcuda.so.$V_OLD"
    ln -s "libcuda.so.$V_OLD" "$rootfs/a/libcuda.so.1"
    cp "$inst_dir/lib64/libnvidia-ml.so.1" "$rootfs/b/libnvidia-ml.so.$V_OLD"
    ln -s "libnvidia-ml.so.$V_OLD" "$rootfs/b/libnvidia-ml.so.1"
    echo "include /etc/ld.so.conf.d/*.conf" >"$rootfs/etc/ld.so.conf"
    echo '{"ociVersion": "1.0.2", "root": {"path": "rootfs"}}' >"$T/bundle/config.json"
    echo "{\"ociVersion\": \"1.0.2\", \"bundle\": \"$T/bundle\"}" >"$T/state.json"
}
run_hook() {
    set +e
    timeout 60 "$hook" "$@" <"$T/state.json" >"$T/hout" 2>"$T/herr"
    HRC=$?
    set -e
    [ "$HRC" != 124 ] || fail "the hook did not end: $(cat "$T/herr")"
}
ok() { run_hook "$@"; [ "$HRC" = 0 ] || fail "hook $*: exit $HRC: $(cat "$T/herr")"; }
refused() {
    local rc=$1 msg=$2
    shift 2
    run_hook "$@"
    [ "$HRC" = "$rc" ] || fail "hook $*: exit $HRC, want $rc: $(cat "$T/herr")"
    grep -q -- "$msg" "$T/herr" || fail "hook $*: stderr lacks '$msg': $(cat "$T/herr")"
}
cached() { ldconfig -p -C "$rootfs/etc/ld.so.cache" | grepq "$1 .*=> $2"; }

# update-ldcache: nvidia-ctk's form, repeated and comma-separated folders, --ldconfig-path.
image
ok hook update-ldcache --folder /a --folder=/b --ldconfig-path /sbin/ldconfig
cached libcuda.so.1 /a/libcuda.so.1 && cached libnvidia-ml.so.1 /b/libnvidia-ml.so.1 ||
    fail "repeated --folder: $(ldconfig -p -C "$rootfs/etc/ld.so.cache")"
image
ok --debug update-ldcache --folder /a,/b --container-spec "$T/state.json" </dev/null
cached libnvidia-ml.so.1 /b/ || fail "comma-separated --folder, --container-spec"
# One folder the spec names is not in the container: said, the others still cached.
image
ok update-ldcache --folder /a --folder /not-here
grep -q "/not-here is not a directory in the container" "$T/herr" || fail "missing folder: $(cat "$T/herr")"
cached libcuda.so.1 /a/ || fail "the folder that is there"
refused 1 "is not in the container" update-ldcache --folder /not-here

# The soname links, as a spec before 1.18 needs them: only libcuda.so.VERSION and
# libnvidia-ml.so.VERSION mounted, libnvidia-ml.so.1 a stale link.
image
rm "$rootfs/a/libcuda.so.1" "$rootfs/b/libnvidia-ml.so.1"
ln -s libnvidia-ml.so.1.gone "$rootfs/b/libnvidia-ml.so.1"
echo 'int f(void) { return 0; }' >"$T/f.c"
# A library whose soname names another place: no link made there, or anywhere.
cc -shared -fPIC -Wl,-soname,../escape.so.1 -o "$rootfs/a/libevil.so.1.0" "$T/f.c"
# A regular file where a soname link would go: left as it is.
cc -shared -fPIC -Wl,-soname,libkeep.so.4 -o "$rootfs/a/libkeep.so.4.0" "$T/f.c"
echo image >"$rootfs/a/libkeep.so.4"
# Two versions of one soname: the link names the newer (ldconfig's order: 10 after 9).
cc -shared -fPIC -Wl,-soname,libtwo.so.1 -o "$rootfs/a/libtwo.so.1.9" "$T/f.c"
cc -shared -fPIC -Wl,-soname,libtwo.so.1 -o "$rootfs/a/libtwo.so.1.10" "$T/f.c"
# The image's own directory, in its ld configuration: left as the image has it.
mkdir -p "$rootfs/img"
cc -shared -fPIC -Wl,-soname,libimg.so.2 -o "$rootfs/img/libimg.so.2.0" "$T/f.c"
echo /img >"$rootfs/etc/ld.so.conf.d/img.conf"
ok update-ldcache --folder /a --folder /b
assert_eq "$(readlink "$rootfs/a/libcuda.so.1")" "libcuda.so.$V_OLD" "libcuda.so.1 made"
assert_eq "$(readlink "$rootfs/b/libnvidia-ml.so.1")" "libnvidia-ml.so.$V_OLD" "a stale soname link replaced"
assert_eq "$(readlink "$rootfs/a/libtwo.so.1")" libtwo.so.1.10 "the newer of two"
assert_eq "$(cat "$rootfs/a/libkeep.so.4")" image "a regular file at a soname"
[ -z "$(find "$rootfs" -name 'escape*')" ] || fail "a link made through a soname naming another place: $(find "$rootfs" -name 'escape*')"
[ ! -e "$rootfs/img/libimg.so.2" ] && [ ! -L "$rootfs/img/libimg.so.2" ] || fail "a link made in the image's own directory"
cached libcuda.so.1 /a/libcuda.so.1 && cached libnvidia-ml.so.1 /b/libnvidia-ml.so.1 ||
    fail "the soname links' cache: $(ldconfig -p -C "$rootfs/etc/ld.so.cache")"
# Again: the links are there, nothing changes.
ino=$(stat -c %i "$rootfs/a/libcuda.so.1")
ok update-ldcache --folder /a --folder /b
assert_eq "$(stat -c %i "$rootfs/a/libcuda.so.1")" "$ino" "a soname link already right is left"
! grep -q "nvidia-cdi-hook" "$T/herr" || fail "update-ldcache said: $(cat "$T/herr")"

# commands.go: unknown hook, no-op; unknown flag, an error.
ok some-future-hook --whatever
grep -q "unsupported hook 'some-future-hook': nothing done" "$T/herr" || fail "unknown hook: $(cat "$T/herr")"
ok noop
refused 2 "unknown flag '--nope'" create-symlinks --nope x
refused 2 "not TARGET::/ABSOLUTE-LINK" create-symlinks --link libcuda.so.1
refused 2 "needs --mode" chmod --path /a

# create-symlinks.
image
ln -s wrong "$rootfs/a/libcuda.so"
mkdir "$rootfs/a/dir.so"
ok create-symlinks --link libcuda.so.1::/a/libcuda.so --link ../a/libcuda.so.1::/new/deep/libcuda.so.1
assert_eq "$(readlink "$rootfs/a/libcuda.so")" libcuda.so.1 "an existing link replaced"
assert_eq "$(readlink "$rootfs/new/deep/libcuda.so.1")" ../a/libcuda.so.1 "parents made"
ino=$(stat -c %i "$rootfs/a/libcuda.so")
ok create-symlinks --link libcuda.so.1::/a/libcuda.so
assert_eq "$(stat -c %i "$rootfs/a/libcuda.so")" "$ino" "a link with the same target is left"
refused 1 "link /a/dir.so" create-symlinks --link x::/a/dir.so
# The image's absolute link leads to its own root, never the host's.
mkdir -p "$T/escape" "$rootfs$T/escape"
ln -s "$T/escape" "$rootfs/evil"
ok create-symlinks --link target::/evil/made
[ ! -e "$T/escape/made" ] && [ ! -L "$T/escape/made" ] || fail "create-symlinks wrote on the host through the image's link"
[ -L "$rootfs$T/escape/made" ] || fail "the link is not inside the image"

# chmod.
: >"$rootfs/a/f"
chmod 600 "$rootfs/a/f"
ok chmod --mode 755 --path /a/f --path /a/missing
assert_eq "$(stat -c %a "$rootfs/a/f")" 755 "chmod"

# enable-cuda-compat: a compat libcuda with and without NVIDIA's note.
compat=$rootfs/usr/local/cuda/compat
# note DRIVERS CUDA: the note section's bytes (owner "NVIDIA Corporation"; the section that
# objcopy adds is aligned to 1, so the owner is not padded: readers pad to the alignment).
note() {
    python3 - "$1" "$2" <<'EOF'
import json, struct, sys
desc = json.dumps({"Format": 1, "CUDA Version": sys.argv[2], "Driver": json.loads(sys.argv[1]), "Device": []}).encode()
name = b"NVIDIA Corporation\0"
sys.stdout.buffer.write(struct.pack("<III", len(name), len(desc), 1) + name + desc)
EOF
}
echo 'int cuInit(int f) { return f; }' >"$T/c.c"
cc -shared -fPIC -o "$T/libplain.so" "$T/c.c"
# compat_lib VERSION [DRIVERS CUDA]: the image's one compat library.
compat_lib() {
    rm -rf "$compat"
    mkdir -p "$compat"
    if [ $# -gt 1 ]; then
        note "$2" "$3" >"$T/note.bin"
        objcopy --add-section .note.cuda.fwd_compatibility="$T/note.bin" \
            --set-section-flags .note.cuda.fwd_compatibility=readonly "$T/libplain.so" "$compat/libcuda.so.$1"
        readelf -SW "$compat/libcuda.so.$1" | grepq "fwd_compatibility *NOTE .* 1$" || fail "the stand-in's note section"
    else
        cp "$T/libplain.so" "$compat/libcuda.so.$1"
    fi
    ln -s "libcuda.so.$1" "$compat/libcuda.so.1"
    rm -f "$rootfs/etc/ld.so.conf.d/00-compat-nvidia-driver.conf"
}
used() { [ "$(cat "$rootfs/etc/ld.so.conf.d/00-compat-nvidia-driver.conf" 2>/dev/null)" = /usr/local/cuda/compat ]; }
image
compat_lib 550.54.15 "[535, 550]" 12.4
ok enable-cuda-compat --host-driver-version=535.261.03
used || fail "compat: the note lists 535 and 550.54.15 is newer: not used"
compat_lib 550.54.15 "[470]" 12.4
ok enable-cuda-compat --host-driver-version=535.261.03
used && fail "compat: the note does not list 535, but it was used"
compat_lib 550.54.15 "[535]" 12.4
ok enable-cuda-compat --host-cuda-version=12.2
used || fail "compat: CUDA 12.4 over the host's 12.2: not used"
compat_lib 550.54.15 "[535]" 12.4
ok enable-cuda-compat --host-cuda-version=12.6
used && fail "compat: CUDA 12.4 under the host's 12.6, but used"
compat_lib 550.54.15
ok enable-cuda-compat --host-driver-version=535.261.03
used || fail "compat without a note: major 550 over 535: not used"
compat_lib 535.300.01
ok enable-cuda-compat --host-driver-version=535.261.03
used && fail "compat without a note: same major, but used"
compat_lib 550.54.15
cp "$T/libplain.so" "$compat/libcuda.so.555.1.1"
ok enable-cuda-compat --host-driver-version=535.261.03
used && fail "compat: two libraries, but one was used"
grep -q "2 libcuda.so.\*.\* in /usr/local/cuda/compat, expected one" "$T/herr" || fail "two libraries: $(cat "$T/herr")"
compat_lib 550.54.15
ok enable-cuda-compat
used && fail "compat without host versions, but used"
# The compat directory comes before the driver's in the ld configuration, and wins.
compat_lib 550.54.15 "[535]" 12.4
ok enable-cuda-compat --host-driver-version=535.261.03
ok update-ldcache --folder /a
ldconfig -p -C "$rootfs/etc/ld.so.cache" | grep "libcuda.so.1 " | sed -n 1p | grepq "/usr/local/cuda/compat/" ||
    fail "compat first: $(ldconfig -p -C "$rootfs/etc/ld.so.cache" | grep libcuda)"

# update-application-profile: the container's GPUs 1 and 3 (minors), not other devices.
image
mknod "$rootfs/dev/nvidia1" c 195 1
mknod "$rootfs/dev/nvidia3" c 195 3
mknod "$rootfs/dev/nvidiactl" c 195 255
: >"$rootfs/dev/nvidia5"
ok update-application-profile
assert_eq "$(cat "$rootfs/etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf")" \
    '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0xa]}],"rules":[{"pattern":[],"profile":"_container_"}]}' \
    "application profile"
assert_eq "$(stat -c %a "$rootfs/etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf")" 444 "profile mode"

# disable-device-node-modification, in a mount namespace whose /proc/driver is a tmpfs
# holding the host's params (this host has no NVIDIA driver).
image
mkdir -p "$rootfs/proc/driver/nvidia"
echo "ModifyDeviceFiles: 1" >"$rootfs/proc/driver/nvidia/params"
cat >"$T/params.sh" <<'EOF'
set -eu
T=$1 hook=$2 rootfs=$3 mode=$4
mount --make-rprivate /
mount -t tmpfs tmpfs /proc/driver
mkdir /proc/driver/nvidia
printf 'ResmanDebugLevel: 4294967295\n%s\nInitializeSystemMemoryAllocations: 1\n' "$mode" >/proc/driver/nvidia/params
"$hook" disable-device-node-modification <"$T/state.json"
cat "$rootfs/proc/driver/nvidia/params"
findmnt -n -o OPTIONS --target "$rootfs/proc/driver/nvidia/params" | tr , '\n' | grep -x ro
echo "host: $(cat /proc/driver/nvidia/params | grep Modify)"
EOF
unshare -m bash "$T/params.sh" "$T" "$hook" "$rootfs" "ModifyDeviceFiles: 1" >"$T/pout" 2>&1 || fail "params: $(cat "$T/pout")"
grep -qx "ModifyDeviceFiles: 0" "$T/pout" && grep -qx "InitializeSystemMemoryAllocations: 1" "$T/pout" &&
    grep -qx ro "$T/pout" && grep -qx "host: ModifyDeviceFiles: 1" "$T/pout" || fail "params copy: $(cat "$T/pout")"
# The host's driver leaves device files alone: nothing to do, nothing mounted.
unshare -m bash "$T/params.sh" "$T" "$hook" "$rootfs" "ModifyDeviceFiles: 0" >"$T/pout" 2>&1 && fail "params mounted although 0"
grep -qx "ModifyDeviceFiles: 1" "$T/pout" || fail "params without modification: $(cat "$T/pout")"
# The image's /proc a link to /: resolved inside the image, never the host's /proc.
rm -rf "$rootfs/proc"
ln -s / "$rootfs/proc"
cat >"$T/params2.sh" <<'EOF'
set -eu
mount --make-rprivate /
mount -t tmpfs tmpfs /proc/driver
mkdir /proc/driver/nvidia
echo "ModifyDeviceFiles: 1" >/proc/driver/nvidia/params
"$2" disable-device-node-modification <"$1/state.json"
cat /proc/driver/nvidia/params
EOF
unshare -m bash "$T/params2.sh" "$T" "$hook" >"$T/pout" 2>&1 || fail "params with /proc a link: $(cat "$T/pout")"
grep -qx "ModifyDeviceFiles: 1" "$T/pout" || fail "the host's params were covered: $(cat "$T/pout")"
