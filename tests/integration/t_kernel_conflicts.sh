# nouveau (and nova) are unloaded when unused, refused when in use or when asked not to;
# the firmware path and the kernel keyring; ModifyDeviceFiles=0.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
fake_nouveau() { # live and unused
    mkdir -p "$T/root/sys/module/nouveau/holders"
    echo live >"$T/root/sys/module/nouveau/initstate"
    echo "${1:-0}" >"$T/root/sys/module/nouveau/refcnt"
    echo "nouveau 2367488 ${1:-0} - Live 0x0000000000000000" >>"$T/root/proc/modules"
}

fake_nouveau
expect_rc 7 install --repo "$R" $(kernel_args) --no-unload-conflicts
expect_err "conflicting driver nouveau is loaded"
expect_err "fix: drop --no-unload-conflicts, or blacklist nouveau"
[ -e "$T/root/sys/module/nouveau/initstate" ] || fail "nouveau unloaded despite --no-unload-conflicts"
echo 1 >"$T/root/sys/module/nouveau/refcnt"
expect_rc 7 install --repo "$R" $(kernel_args)
expect_err "conflicting driver nouveau is loaded and in use"
echo 0 >"$T/root/sys/module/nouveau/refcnt"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "module unloaded (module=nouveau)"
[ ! -e "$T/root/sys/module/nouveau" ] || fail "nouveau still loaded"
expect_rc 0 uninstall

# Built in and bound to the GPU: cannot be unloaded; the fix is a boot parameter.
mkdir -p "$T/root/sys/module/nouveau" "$T/root/sys/bus/pci/drivers/nouveau"
ln -s ../../../../devices/pci0000:00/0000:00:04.0 "$T/root/sys/bus/pci/drivers/nouveau/0000:00:04.0"
expect_rc 7 install --repo "$R" $(kernel_args)
expect_err "nouveau is built into the kernel and drives 0000:00:04.0"
expect_err "nouveau.modeset=0"
rm -rf "$T/root/sys/module/nouveau" "$T/root/sys/bus/pci/drivers/nouveau"

# A read-only /lib/firmware (COS): firmware_class.path points at the install dir; a path
# set by someone else is left alone, with a warning.
install_with_ro_firmware() {
    unshare -m bash -c '
        mount --bind "$1/root/lib/firmware" "$1/root/lib/firmware" &&
        mount -o remount,bind,ro "$1/root/lib/firmware" &&
        env LD_PRELOAD="$2" FAKE_KERNEL_ROOT="$1/root" ASAN_OPTIONS=verify_asan_link_order=0 \
            "$3" --root "$1/root" install --repo "file://$1/repo" $4 2>"$1/err"
    ' _ "$T" "$FAKEKERNEL" "$BIN" "$(kernel_args)"
}
install_with_ro_firmware
expect_err "firmware_class.path points at the install dir"
assert_eq "$(cat "$T/root/sys/module/firmware_class/parameters/path")" \
    "/home/kubernetes/bin/nvidia/firmware" "firmware_class.path"
expect_rc 0 uninstall
assert_eq "$(tr -d '\0' <"$T/root/sys/module/firmware_class/parameters/path")" "" "path after uninstall"
echo -n /opt/vendor/firmware >"$T/root/sys/module/firmware_class/parameters/path"
install_with_ro_firmware
expect_err "firmware_class.path is set by someone else: not changing it"
assert_eq "$(cat "$T/root/sys/module/firmware_class/parameters/path")" "/opt/vendor/firmware" \
    "someone else's path"
# doctor names the consequence: the firmware is out of the kernel's reach.
expect_rc 9 doctor --kernel-release "$KERNEL"
grep -q "^\[fail\] firmware      firmware_class.path '/opt/vendor/firmware'" "$T/out" ||
    fail "doctor on a read-only firmware dir: $(cat "$T/out")"
expect_rc 0 uninstall
assert_eq "$(cat "$T/root/sys/module/firmware_class/parameters/path")" "/opt/vendor/firmware" \
    "someone else's path after uninstall"

# --kernel-keyring-cert: added to .secondary_trusted_keys before insertion.
printf '%s\n' "1e2b3c4d I------     1 perm 1f0b0000     0     0 keyring   .secondary_trusted_keys: 2" \
    "0a0b0c0d I------     1 perm 1f0b0000     0     0 keyring   .builtin_trusted_keys: 1" \
    >"$T/root/proc/keys"
expect_rc 0 install --repo "$R" $(kernel_args) --kernel-keyring-cert "$FIX/keys/modkey.der"
expect_err "certificate added to .secondary_trusted_keys"
grep -q "added to 1e2b3c4d" "$T/root/proc/keys" || fail "not added to the secondary keyring"
expect_rc 0 uninstall
FAKE_KERNEL_FAIL=add_key:ENOKEY expect_rc 6 install --repo "$R" $(kernel_args) --kernel-keyring-cert "$FIX/keys/modkey.crt"
expect_err "the kernel refused certificate"
expect_err "enroll yours with mokutil and reboot"
case "$(loaded_modules)" in *nvidia*) fail "loaded despite a refused certificate" ;; esac
FAKE_KERNEL_FAIL=add_key:EKEYREJECTED expect_rc 6 install --repo "$R" $(kernel_args) --kernel-keyring-cert "$FIX/keys/modkey.crt"
expect_err "signature did not verify against the trusted keys"
expect_rc 2 install --repo "$R" $(kernel_args) --kernel-keyring-cert "$FIX/keys/pub.pem"
expect_err "not a PEM or DER X.509 certificate"
grep -q "driver published" "$T/err" && fail "a bad certificate was found only after publishing"
: >"$T/root/proc/keys"
expect_rc 6 install --repo "$R" $(kernel_args) --kernel-keyring-cert "$FIX/keys/modkey.crt"
expect_err ".secondary_trusted_keys not found"

# ModifyDeviceFiles=0: /dev is left to whoever manages it.
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_ModifyDeviceFiles=0
expect_err "ModifyDeviceFiles is 0"
assert_eq "$(devnode nvidiactl)" missing "nvidiactl with ModifyDeviceFiles=0"
