# A loaded driver that is in use is never unloaded: the upgrade (or uninstall) exits 7
# naming what holds it, and the old driver and files stay as they were.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args)
kstate() { for d in sys proc dev; do snapshot "$T/root/$d"; done; snapshot "$T/root/$IDIR_REL"; }

# gdrdrv asked of a package built without --gdrcopy (no packages[].gpudirect): refused at
# selection, exit 3, before anything is downloaded or changed.
before=$(kstate)
expect_rc 3 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --modules nvidia,gdrdrv
expect_err "package for kernel .* has no gdrdrv.ko; --modules asks for it"
expect_err "build-driver-package --gdrcopy"
assert_eq "$(kstate)" "$before" "state after a refused gdrdrv"

# A process with /dev/nvidiactl open (as /proc shows it).
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
echo cuda-app >"$T/root/proc/4242/comm"
before=$(kstate)
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "driver in use: /dev/nvidiactl open in pid 4242 (cuda-app)"
expect_err "fix: drain the node"
assert_eq "$(kstate)" "$before" "state after a refused upgrade"
expect_rc 7 uninstall
expect_err "/dev/nvidiactl open in pid 4242"
assert_eq "$(kstate)" "$before" "state after a refused uninstall"
rm -rf "$T/root/proc/4242"

# References the driver's own modules do not explain (an open file of a process /proc
# does not show), and a module outside the driver holding it: Mellanox's nv_peer_mem, and
# GDRCopy's gdrdrv that our load did not insert (the GPU Operator's gdrcopy container's).
# gdrdrv_live NAME: a live module holding nvidia, as the fake kernel keeps one.
gdrdrv_live() {
    mkdir -p "$T/root/sys/module/gdrdrv/holders"
    echo live >"$T/root/sys/module/gdrdrv/initstate"
    echo 0 >"$T/root/sys/module/gdrdrv/refcnt"
    ln -s ../../gdrdrv "$T/root/sys/module/nvidia/holders/gdrdrv"
}
echo 3 >"$T/root/sys/module/nvidia_uvm/refcnt"
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "nvidia_uvm has 3 reference(s) beyond its own modules"
echo 0 >"$T/root/sys/module/nvidia_uvm/refcnt"
ln -s ../../nv_peer_mem "$T/root/sys/module/nvidia/holders/nv_peer_mem"
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "nvidia is held by module nv_peer_mem"
rm "$T/root/sys/module/nvidia/holders/nv_peer_mem"
gdrdrv_live
expect_rc 7 uninstall
expect_err "nvidia is held by module gdrdrv"
assert_eq "$(cat "$T/root/sys/module/gdrdrv/initstate")" live "a foreign gdrdrv left live"
rm -rf "$T/root/sys/module/nvidia/holders/gdrdrv" "$T/root/sys/module/gdrdrv"

# The kernel itself says busy while unloading: exit 7 too.
FAKE_KERNEL_FAIL=rm:nvidia_uvm:EBUSY expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "module nvidia_uvm is busy"
assert_eq "$(installed_version)" "$V_OLD" "user space after a busy unload"

# Idle again: the upgrade goes through.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "upgraded when idle"

# gdrdrv inserted by our load (the load record says so): the driver's own, unloaded with it.
gdrdrv_live
rec="$T/root/run/nvidia-driver-installer/module-args.json"
sed -i 's/"module_args"/"gpudirect_modules": [ "gdrdrv" ], "module_args"/' "$rec"
expect_rc 0 uninstall
assert_eq "$(ls "$T/root/sys/module" | grep -c '^gdrdrv$\|^nvidia$')" 0 "gdrdrv and nvidia unloaded"
