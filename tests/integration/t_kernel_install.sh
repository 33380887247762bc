# The kernel side against the fake kernel: verified modules loaded in dependency order with
# their parameters, in-tree dependencies through libkmod, device nodes, firmware; a re-run
# changes nothing; an upgrade reloads; uninstall unloads.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432 \
    --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
assert_eq "$(loaded_modules)" "drm drm_kms_helper nvidia nvidia_drm nvidia_modeset nvidia_uvm " "loaded"
# The kernel's own modules the set needs, found before anything was loaded.
expect_err "in-tree dependencies found (modules=drm,drm_kms_helper)"
# Order: each module after what it depends on.
order=$(grep -o 'module loaded (module=[a-z_]*' "$T/err" | sed 's/.*=//' | tr '\n' ' ')
echo "load order: $order"
pos() { echo "$order" | tr ' ' '\n' | grep -n "^$1\$" | cut -d: -f1; }
[ "$(pos nvidia)" -lt "$(pos nvidia_modeset)" ] && [ "$(pos nvidia_modeset)" -lt "$(pos nvidia_drm)" ] &&
    [ "$(pos drm)" -lt "$(pos nvidia_drm)" ] && [ "$(pos drm_kms_helper)" -lt "$(pos nvidia_drm)" ] &&
    [ "$(pos nvidia)" -lt "$(pos nvidia_uvm)" ] || fail "bad load order: $order"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "loaded version"
assert_eq "$(cat "$T/root/sys/module/nvidia/parameters/NVreg_DeviceFileMode")" 432 "nvidia parameter"
assert_eq "$(cat "$T/root/sys/module/nvidia_uvm/parameters/uvm_perf_prefetch_enable")" 0 "uvm parameter"
expect_err "module signature verified (module=nvidia version=$V_OLD signer=Test modkey)"
# Device nodes: mode 432 = 0660, from the driver's params.
assert_eq "$(devnode nvidiactl)" "c 195:255 660" nvidiactl
assert_eq "$(devnode nvidia0)" "c 195:0 660" nvidia0
assert_eq "$(devnode nvidia1)" "c 195:1 660" nvidia1
assert_eq "$(devnode nvidia-modeset)" "c 195:254 660" nvidia-modeset
assert_eq "$(devnode nvidia-uvm)" "c 511:0 660" nvidia-uvm
assert_eq "$(devnode nvidia-uvm-tools)" "c 511:1 660" nvidia-uvm-tools
assert_eq "$(devnode nvidia-caps/nvidia-cap1)" "c 236:1 400" nvidia-cap1
assert_eq "$(devnode nvidia-caps/nvidia-cap2)" "c 236:2 444" nvidia-cap2
assert_eq "$(readlink "$T/root/dev/char/195:255")" "../nvidiactl" "/dev/char link"
assert_eq "$(readlink "$T/root/dev/char/236:1")" "../nvidia-caps/nvidia-cap1" "/dev/char caps link"
# GSP firmware reachable through /lib/firmware.
assert_eq "$(readlink "$T/root/lib/firmware/nvidia/$V_OLD")" \
    "/home/kubernetes/bin/nvidia/firmware/nvidia/$V_OLD" "firmware link"
[ -f "$T/root/lib/firmware/nvidia/$V_OLD/gsp_ga10x.bin" ] || [ -f "$T/root/$IDIR_REL/firmware/nvidia/$V_OLD/gsp_ga10x.bin" ] ||
    fail "firmware not in the install dir"
expect_rc 0 status --json
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["loaded_version"] == sys.argv[2], s' "$T/out" "$V_OLD"

# Re-run: nothing changes.
before=$(snapshot "$T/root/sys/module"; snapshot "$T/root/dev")
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432 \
    --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
expect_err "driver already loaded"
expect_err "device nodes in place (created=0 replaced=0 fixed=0 kept=8 links=0)"
assert_eq "$(snapshot "$T/root/sys/module"; snapshot "$T/root/dev")" "$before" "kernel state after a re-run"

# Wrong nodes are replaced or fixed; right ones are left alone.
rm "$T/root/dev/nvidiactl"
echo junk >"$T/root/dev/nvidiactl"
rm "$T/root/dev/nvidia1"
mknod "$T/root/dev/nvidia1" c 195 7
chmod 600 "$T/root/dev/nvidia0"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432 \
    --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
expect_err "created=0 replaced=2 fixed=1 kept=5"
assert_eq "$(devnode nvidiactl)" "c 195:255 660" "nvidiactl replaced"
assert_eq "$(devnode nvidia1)" "c 195:1 660" "nvidia1 replaced"
assert_eq "$(devnode nvidia0)" "c 195:0 660" "nvidia0 fixed"

# After a reboot (modules gone, user space on disk): the re-run loads from the install dir.
rm -rf "$T/root/sys/module/nvidia"* "$T/root/proc/driver" "$T/root/proc/modules"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_err "already installed"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "reloaded after reboot"

# Upgrade: the old driver goes, holders first; the new one comes.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version latest
expect_err "unloading the loaded driver (version=$V_OLD module_type=proprietary)"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "upgraded"
assert_eq "$(installed_version)" "$V_NEW" "user space upgraded"
unload=$(grep -o 'module unloaded (module=[a-z_]*' "$T/err" | sed 's/.*=//' | tr '\n' ' ')
echo "unload order: $unload"
case "$unload" in *nvidia\ ) ;; *) fail "nvidia was not unloaded last: $unload" ;; esac
assert_eq "$(readlink "$T/root/lib/firmware/nvidia/$V_NEW")" \
    "/home/kubernetes/bin/nvidia/firmware/nvidia/$V_NEW" "new firmware link"

# Uninstall: the driver's modules out, nodes and firmware links gone, then user space.
expect_rc 0 uninstall
assert_eq "$(loaded_modules)" "drm drm_kms_helper " "after uninstall"
assert_eq "$(ls "$T/root/dev" | tr '\n' ' ')" "char " "/dev after uninstall"
assert_eq "$(ls "$T/root/dev/char" | wc -l)" 0 "/dev/char after uninstall"
[ ! -e "$T/root/lib/firmware/nvidia/$V_NEW" ] || fail "firmware link left"
expect_rc 3 status
