# doctor's imex check on a GB200 node (10de:2941): it fails, with the fix, while the
# installed version does not drive the GPU (535: older than GB200's 570.123.01) or has no
# nvidia-imex and nvidia-imex-ctl, or the loaded driver registers no
# nvidia-caps-imex-channels; it is ok for a 570 package with both programs and the chrdev in
# /proc/devices; with --imex-channel0 it also holds the host's channel0 to the kernel's
# major. On other GPUs the line is ok (the golden doctor). A 570.133.20 (a 570 older than
# 570.158.01, the DRA driver's IMEXDaemonsWithDNSNames gate) is a warning with the fix,
# doctor's exit status unchanged; the programs are judged in usr/bin, where nvcdi finds them
# (a link there is not the program, even with bin/ intact). With a reload pending (570.172.08
# installed, an older driver loaded) the loaded one is judged, as the DRA driver reads it:
# 570.133.20 loaded is the gate's warning, 570.86.16 loaded a failure (it drives no GB200),
# each with the reload as its fix.
# NVLink 5 telemetry (doctor_nvsdm.c): with two management ports (VPD SMDL=SW_MNG, as HGX
# B200's), the "dcgm nvswitch" line warns, exit status unchanged, while the installed version
# has no lib64/libnvsdm.so.1, and is ok for the 570 package that has one (a stand-in,
# tests/standin/nvsdm.c); DCGM's lookup (tests/standin/dcgm-load.c) finds it through the
# install dir's lib64 as GKE's LD_LIBRARY_PATH gives it, and not in the 535 one; an absolute
# libnvsdm.so.1 link out of the host root does not count. An HGX B200 (10de:2901) gets the
# line without visible ports (host_nvsdm_wanted, as coverage); no line on a GB200 without
# them.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2941
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
# 570.172.08 and 570.133.20 (older than the DRA driver's gate needs), each with NVIDIA's two
# IMEX programs in bin/ (stand-ins: doctor only looks); 570.172.08 also with libnvsdm.
V570=570.172.08 V570_OLD=570.133.20
for v in "$V570" "$V570_OLD"; do
    "$SRC/scripts/make-standin-driver" "$v" "$T/drv-$v" 4 >/dev/null
    printf '#!/bin/sh\nexit 0\n' >"$T/drv-$v/bin/nvidia-imex"
    printf '#!/bin/sh\necho READY\n' >"$T/drv-$v/bin/nvidia-imex-ctl"
    chmod 755 "$T/drv-$v/bin/nvidia-imex" "$T/drv-$v/bin/nvidia-imex-ctl"
done
# NVIDIA's libnvsdm as build-driver-package --nvsdm packs it: the file, its soname link.
cc -shared -fPIC -Wl,-soname,libnvsdm.so.1 -o "$T/drv-$V570/lib64/libnvsdm.so.$V570" \
    "$SRC/tests/standin/nvsdm.c"
ln -s "libnvsdm.so.$V570" "$T/drv-$V570/lib64/libnvsdm.so.1"
cc -O1 -o "$T/dcgm-load" "$SRC/tests/standin/dcgm-load.c" -ldl
# nvlink5 on|off: the host's two NVLink 5 management functions (t_agent_fabric's layout).
nvlink5() {
    rm -rf "$T/root/sys/class/infiniband" "$T/root/sys/devices/pci0000:00/mlx5_"*
    [ "$1" = on ] || return 0
    local f d c
    for f in mlx5_1:0001 mlx5_2:0002; do
        d=$T/root/sys/devices/pci0000:00/${f%:*} c=$T/root/sys/class/infiniband/${f%:*}
        mkdir -p "$d" "$c/ports/1/gids"
        echo 0x15b3 >"$d/vendor"
        printf '\x82\x10Board Id\x90\x20V3\x0bSMDL=SW_MNG\x78\x00' >"$d/vpd"
        ln -s "../../../devices/pci0000:00/${f%:*}" "$c/device"
        echo "fe80:0000:0000:0000:b8ce:f603:0000:${f#*:}" >"$c/ports/1/gids/0"
    done
}
dcgm_line() { grep -A1 '^\[[a-z ]*\] dcgm nvswitch ' "$T/out"; }
# dcgm_load: DCGM's lookup in dcgm-exporter's container on GKE (the install dir mounted at
# /usr/local/nvidia, LD_LIBRARY_PATH=/usr/local/nvidia/lib64).
dcgm_load() { env -u LD_PRELOAD LD_LIBRARY_PATH="$T/root/$IDIR_REL/lib64" "$T/dcgm-load" >"$T/load" || true; }
for v in "$V570" "$V570_OLD"; do
    sign_modules "$T/drv-$v/kernel"
    "$SRC/scripts/make-repo" pack "$T/drv-$v" "$T/pkg-$v.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$KERNEL" "$T/pkg-$v.tar.zst" >/dev/null
done
imex_line() { grep -A1 '^\[[a-z ]*\] imex ' "$T/out"; }

expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_rc 9 doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[fail\] imex          GPU 10de:2941 (GB200) needs IMEX for jobs across nodes; the installed driver $V_OLD: driver $V_OLD does not drive the GB200 (570.123.01 or later does)$" ||
    fail "535's imex line: $(cat "$T/out")"
imex_line | grepq "fix: install a driver 570.158.01 or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version)$" ||
    fail "535's fix: $(imex_line)"
expect_rc 9 doctor --kernel-release "$KERNEL" --json
python3 - "$T/out" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
c = [x for x in o["checks"] if x["check"] == "imex"]
assert len(c) == 1 and c[0]["status"] == "fail" and "build-driver-package --imex" in c[0]["fix"], c
assert o["verdict"] == "fail", o["verdict"]
PY
nvlink5 on
expect_rc 9 doctor --kernel-release "$KERNEL"
dcgm_line | grepq "^\[warn\] dcgm nvswitch NVLink 5 switches behind 2 management port(s); the installed driver $V_OLD has no lib64/libnvsdm.so.1: DCGM (dcgm-exporter) cannot load NVSDM and reports no NVSwitch or NVLink metrics$" ||
    fail "535's dcgm nvswitch line: $(cat "$T/out")"
dcgm_line | grepq "fix: install a driver of branch 560 or later built with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version); the GPUs serve without it$" ||
    fail "535's dcgm nvswitch fix: $(dcgm_line)"
dcgm_load
grep -q "^nvsdm: not loaded: libnvsdm.so.1: cannot open shared object file" "$T/load" ||
    fail "libnvsdm.so.1 found in 535's lib64: $(cat "$T/load")"
nvlink5 off
# An HGX B200 whose management ports are not visible: the GPU alone asks for libnvsdm, as
# coverage judges it (host_nvsdm_wanted).
gpu_dev=$T/root/sys/devices/pci0000:00/0000:00:04.0/device
echo 0x2901 >"$gpu_dev"
inst doctor --kernel-release "$KERNEL"
dcgm_line | grepq "^\[warn\] dcgm nvswitch NVLink 5 switches of GPU 10de:2901 (B200); the installed driver $V_OLD has no lib64/libnvsdm.so.1: " ||
    fail "a B200 without visible ports: $(cat "$T/out")"
echo 0x2941 >"$gpu_dev"

# 570 with both programs, its chrdev registered: ok.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V570"
major=$(sed -n 's/^ *\([0-9]*\) nvidia-caps-imex-channels$/\1/p' "$T/root/proc/devices")
[ -n "$major" ] || fail "no chrdev for $V570"
inst doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[ok  \] imex          GPU 10de:2941 (GB200) needs IMEX for jobs across nodes; the installed driver $V570 has nvidia-imex and nvidia-imex-ctl, the kernel's nvidia-caps-imex-channels is major $major$" ||
    fail "570's imex line: $(cat "$T/out")"
grep -q "dcgm nvswitch" "$T/out" && fail "a dcgm nvswitch line without NVLink 5 ports"
rc_before=$RC
nvlink5 on
inst doctor --kernel-release "$KERNEL"
assert_eq "$RC" "$rc_before" "doctor's status with the dcgm nvswitch line"
dcgm_line | grepq "^\[ok  \] dcgm nvswitch NVLink 5 switches behind 2 management port(s); the installed driver $V570 has lib64/libnvsdm.so.1, which DCGM (dcgm-exporter) loads for their telemetry$" ||
    fail "570's dcgm nvswitch line: $(cat "$T/out")"
dcgm_load
grep -qx "nvswitch: nvsdm" "$T/load" || fail "DCGM's lookup: $(cat "$T/load")"
grep -q "^nvsdm: loaded $T/root/$IDIR_REL/lib64/libnvsdm.so.1$" "$T/load" || fail "DCGM's lookup: $(cat "$T/load")"
# libnvsdm.so.1 an absolute link out of the host root, to a file that is there in the
# installer's own mount namespace: judged inside the root (as make-repo judges a package's
# links: one to a file beside it in lib64/), it is no libnvsdm.
lib=$T/root/$IDIR_REL/lib64
mv "$lib/libnvsdm.so.1" "$T/nvsdm-link"
ln -s "$T/drv-$V570/lib64/libnvsdm.so.$V570" "$lib/libnvsdm.so.1"
inst doctor --kernel-release "$KERNEL"
dcgm_line | grepq "^\[warn\] dcgm nvswitch .*; the installed driver $V570 has no lib64/libnvsdm.so.1: " ||
    fail "an absolute libnvsdm.so.1 link out of the root: $(cat "$T/out")"
rm "$lib/libnvsdm.so.1"
mv "$T/nvsdm-link" "$lib/libnvsdm.so.1"
nvlink5 off

# 570.133.20: IMEX in place, but older than IMEXDaemonsWithDNSNames needs: a warning
# ("warn" in --json), the exit status that of the 570.172.08 run before it.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V570_OLD"
inst doctor --kernel-release "$KERNEL"
assert_eq "$RC" "$rc_before" "doctor's status with the gate's warning"
imex_line | grepq "^\[warn\] imex          GPU 10de:2941 (GB200) needs IMEX for jobs across nodes; the installed driver $V570_OLD has nvidia-imex and nvidia-imex-ctl, the kernel's nvidia-caps-imex-channels is major $major; driver $V570_OLD is older than 570.158.01, which NVIDIA's DRA driver needs for its default feature gate IMEXDaemonsWithDNSNames: its ComputeDomain kubelet plugin refuses to start$" ||
    fail "570.133.20's imex line: $(cat "$T/out")"
imex_line | grepq "fix: install 570.158.01 or later, or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false$" ||
    fail "570.133.20's fix: $(imex_line)"
inst doctor --kernel-release "$KERNEL" --json
python3 -c 'import json,sys; c=[x for x in json.load(open(sys.argv[1]))["checks"] if x["check"] == "imex"]; assert len(c) == 1 and c[0]["status"] == "warn" and "IMEXDaemonsWithDNSNames=false" in c[0]["fix"], c' "$T/out" ||
    fail "570.133.20's imex check in --json: $(cat "$T/out")"
# usr/bin/nvidia-imex-ctl a link to bin/'s file: not the program nvcdi mounts.
ub=$(find "$T/root/$IDIR_REL/" -path '*/usr/bin/nvidia-imex-ctl')
[ -f "$ub" ] && [ -f "${ub%/usr/bin/*}/bin/nvidia-imex-ctl" ] || fail "no usr/bin/nvidia-imex-ctl: $ub"
rm "$ub" && ln -s ../../bin/nvidia-imex-ctl "$ub"
inst doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[fail\] imex          .*; the installed driver $V570_OLD: it carries no nvidia-imex and nvidia-imex-ctl$" ||
    fail "usr/bin/nvidia-imex-ctl a link: $(cat "$T/out")"
imex_line | grepq "fix: install a driver 570.158.01 or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version; single-node jobs run without it)$" ||
    fail "no programs' fix: $(imex_line)"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V570"

# A reload pending: 570.172.08 installed, an older driver still loaded (its version in
# sysfs): the DRA driver reads the loaded one through NVML, and so does this line; the fix
# is the reload.
loaded=$T/root/sys/module/nvidia/version
echo "$V570_OLD" >"$loaded"
inst doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[warn\] imex          GPU 10de:2941 (GB200) needs IMEX for jobs across nodes; the installed driver $V570 has nvidia-imex and nvidia-imex-ctl, the loaded driver $V570_OLD's nvidia-caps-imex-channels is major $major; driver $V570_OLD is older than 570.158.01, " ||
    fail "$V570_OLD loaded under $V570: $(cat "$T/out")"
imex_line | grepq "fix: drain the node and re-run install, or reboot: either loads the installed $V570; or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false$" ||
    fail "$V570_OLD loaded's fix: $(imex_line)"
echo 570.86.16 >"$loaded"
inst doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[fail\] imex          GPU 10de:2941 (GB200) needs IMEX for jobs across nodes; the loaded driver 570.86.16: driver 570.86.16 does not drive the GB200 (570.123.01 or later does)$" ||
    fail "570.86.16 loaded under $V570: $(cat "$T/out")"
imex_line | grepq "fix: drain the node and re-run install, or reboot: either loads the installed $V570$" ||
    fail "570.86.16 loaded's fix: $(imex_line)"
echo "$V570" >"$loaded"

# --imex-channel0: the host's channel0 is held to the kernel's major.
inst doctor --kernel-release "$KERNEL" --imex-channel0
imex_line | grepq "^\[fail\] imex .*; /dev/nvidia-caps-imex-channels/channel0 is missing$" ||
    fail "channel0 missing: $(cat "$T/out")"
imex_line | grepq "fix: re-run install with --imex-channel0: it makes it$" || fail "channel0's fix: $(imex_line)"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V570" --imex-channel0
inst doctor --kernel-release "$KERNEL" --imex-channel0
imex_line | grepq "^\[ok  \] imex .*is major $major, channel0 in place$" || fail "channel0 in place: $(cat "$T/out")"
rm "$T/root/dev/nvidia-caps-imex-channels/channel0"
mknod "$T/root/dev/nvidia-caps-imex-channels/channel0" c 240 0
inst doctor --kernel-release "$KERNEL" --imex-channel0
imex_line | grepq "^\[fail\] imex .*; /dev/nvidia-caps-imex-channels/channel0 is 240:0, the kernel's channel 0 is $major:0$" ||
    fail "a stale channel0: $(cat "$T/out")"
# The directory a link (to a real one with a right channel0): install refuses it, so does
# doctor, never following it.
mv "$T/root/dev/nvidia-caps-imex-channels" "$T/root/dev/elsewhere"
rm "$T/root/dev/elsewhere/channel0"
mknod "$T/root/dev/elsewhere/channel0" c "$major" 0
ln -s elsewhere "$T/root/dev/nvidia-caps-imex-channels"
inst doctor --kernel-release "$KERNEL" --imex-channel0
imex_line | grepq "^\[fail\] imex .*; /dev/nvidia-caps-imex-channels is a symbolic link, not a directory$" ||
    fail "channel0 through a link: $(cat "$T/out")"
imex_line | grepq "fix: remove it: the installer makes the directory and channel0 in it (--imex-channel0); then re-run install$" ||
    fail "the link's fix: $(imex_line)"
rm -r "$T/root/dev/nvidia-caps-imex-channels" "$T/root/dev/elsewhere"

# The loaded driver without the chrdev (as 535 loaded under 570's files would be).
sed -i '/ nvidia-caps-imex-channels$/d' "$T/root/proc/devices"
inst doctor --kernel-release "$KERNEL"
imex_line | grepq "^\[fail\] imex .*; the loaded driver $V570 registers no nvidia-caps-imex-channels in /proc/devices$" ||
    fail "no chrdev: $(cat "$T/out")"
