# New module parameters for the live driver that the kernel refuses: the driver is loaded
# again with the values it ran with (readiness back, nothing pending) and the run fails
# with exit 6, naming the refused parameter and the fix. If that load fails too, the node
# is left as a failed switch leaves it: the version current, no driver, no readiness.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
I=$(idir)
ready=$T/root/run/nvidia/validations/driver-ready
param() { awk -F': ' -v k="$1" '$1 == k {print $2}' "$T/root/proc/driver/nvidia/params"; }
pending_reason() {
    ${INST_WRAP:-} "$BIN" --root "$T/root" status --json 2>/dev/null | python3 -c \
        'import json,sys; p=json.load(sys.stdin)["pending_upgrade"]; print(p and p["reason"] or "")'
}
good=(--module-arg nvidia.NVreg_DeviceFileMode=432 --module-arg nvidia.NVreg_DeviceFileGID=44)
bad=(--module-arg nvidia.NVreg_DeviceFileMode=abc --module-arg nvidia.NVreg_DeviceFileGID=44)
refuse=nvidia.NVreg_DeviceFileMode=abc:EINVAL
expect_rc 0 install --repo "$R" $(kernel_args) "${good[@]}"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "parameters of the first load"

# Busy: the refused value waits (a pending record claims it) ...
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
FAKE_KERNEL_FAIL=$refuse expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer "${bad[@]}"
assert_eq "$(pending_reason)" "module_args" "pending while busy"
# ... idle, the kernel refuses it: the old values are live again, the node ready, nothing pending.
rm -rf "$T/root/proc/4242"
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --when-busy defer "${bad[@]}"
expect_err "ERROR install: new module parameters refused (nvidia.NVreg_DeviceFileMode: 432 -> abc); the driver runs again with the previous ones: kernel: .*NVreg_DeviceFileMode=abc.*; fix: correct NVIDIA_MODULE_ARGS (--module-arg): the kernel refused a value; see dmesg (exit 6)"
expect_err "the driver runs again with its previous module parameters (version=$V_OLD parameters=nvidia.NVreg_DeviceFileMode=432 nvidia.NVreg_DeviceFileGID=44)"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "loaded after the refused parameters"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "parameters after the refused ones"
[ -e "$ready" ] || fail "no readiness marker after the driver came back"
[ ! -e "$I/.pending.json" ] || fail "a pending record claims the refused parameters"
assert_eq "$(pending_reason)" "" "status after the refused parameters"
assert_eq "$(installed_version)" "$V_OLD" "current after the refused parameters"

# The previous values are refused as well (a kernel that changed under the node): said,
# and the node is left without a driver and without readiness, the version current.
FAKE_KERNEL_FAIL=$refuse,nvidia.NVreg_DeviceFileMode=432:EINVAL expect_rc 6 install --repo "$R" $(kernel_args) "${bad[@]}"
expect_err "the driver did not load again with its previous module parameters either: kernel: .*NVreg_DeviceFileMode=432"
expect_err "ERROR install: the driver loaded neither with the new module parameters (nvidia.NVreg_DeviceFileMode: 432 -> abc) nor with the previous ones: kernel: .*NVreg_DeviceFileMode=abc.*; fix: check --module-arg.* (exit 6)"
assert_eq "$(loaded_modules | grep -c '^nvidia' || true)" 0 "nvidia modules after both loads failed"
[ ! -e "$ready" ] || fail "readiness marker without a driver"
[ ! -e "$I/.pending.json" ] || fail "pending after both loads failed"
assert_eq "$(installed_version)" "$V_OLD" "current after both loads failed"
# Corrected parameters: the next run serves again.
expect_rc 0 install --repo "$R" $(kernel_args) "${good[@]}"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "parameters after the fix"
[ -e "$ready" ] || fail "no readiness marker after the fix"
