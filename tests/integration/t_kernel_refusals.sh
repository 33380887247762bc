# Every way the kernel (or the installer on its behalf) refuses a module ends in one clear
# message and exit code, with nothing of the set left loaded and user space rolled back.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"

# A module built for another kernel: exit 6 before anything changes.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 600.1.1 \
    --kernel "$KERNEL" "$FIX/opkg.tar.zst" >/dev/null
kstate() { for d in sys proc dev lib; do snapshot "$T/root/$d"; done; }
before=$(kstate)
expect_rc 6 install --repo "$R" $(kernel_args) --driver-version 600.1.1
expect_err "module nvidia: built for another kernel: vermagic '$OTHER_KERNEL SMP preempt"
expect_err "fix: install a package built for kernel $KERNEL"
# Unsigned modules with a pinned certificate: exit 5.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 600.2.1 \
    --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
expect_rc 5 install --repo "$R" $(kernel_args) --driver-version 600.2.1
expect_err "module nvidia: signature rejected: the module is not signed"
# Signed by a key that is not pinned.
expect_rc 5 install --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" \
    --module-cert "$FIX/keys/othermodkey.crt" --driver-version "$V_OLD"
expect_err "not a pinned certificate"
assert_eq "$(kstate)" "$before" "kernel state after refusals"
assert_eq "$(ls -A "$T/root/$IDIR_REL")" "" "install dir after refusals"

# The kernel rejects a signature (EKEYREJECTED) half-way through the set: what was loaded is
# unloaded, and the first install leaves nothing current.
FAKE_KERNEL_FAIL=nvidia_drm:EKEYREJECTED expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "the kernel rejected the signature of module nvidia_drm: signed by 'Test modkey' (key "
expect_err "a key it does not trust"
expect_err "fix: sign the modules with a key the kernel trusts"
assert_eq "$(loaded_modules)" "" "modules after a rejected signature (drm too: this run loaded it)"
[ ! -e "$T/root/$IDIR_REL/.current" ] || fail "user space left current after a failed load"
expect_err "rolled back (current=nothing)"
# The failed run's stage times: the stages before the refusal, the kernel stage's time
# until the refusal, with the kernel's part in the insertions it made (and refused); no
# device nodes, nothing exposed. The metrics list only the stages that ended.
python3 - "$T/err" <<'PY' || fail "stage times of a refused load: $(grep 'stage times' "$T/err")"
import re, sys
line = [l for l in open(sys.argv[1]) if "install: stage times (" in l][-1]
f = {k: int(v) for k, v in re.findall(r"(\w+)_us=(\d+)", line)}
assert f["unpack"] > 0 and f["publish"] > 0, f
assert f["devices"] == 0 and f["expose"] == 0, f
assert 0 < f["in_kernel"] <= f["kernel"], f
PY

# Under lockdown, EPERM names it.
echo "none [integrity] confidentiality" >"$T/root/sys/kernel/security/lockdown"
FAKE_KERNEL_FAIL=nvidia:EPERM expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "refused module nvidia under lockdown (integrity)"
# EPERM with CAP_SYS_MODULE held is some security rule, never called a missing capability.
echo "[none] integrity confidentiality" >"$T/root/sys/kernel/security/lockdown"
FAKE_KERNEL_FAIL=nvidia:EPERM expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "the kernel refused module nvidia (EPERM) although the installer holds CAP_SYS_MODULE"
grep -q "no permission" "$T/err" && fail "EPERM told as a missing capability: $(cat "$T/err")"
# Lockdown unreadable (no securityfs): still no capability claim, and how to read it.
mv "$T/root/sys/kernel/security/lockdown" "$T/lockdown"
FAKE_KERNEL_FAIL=nvidia:EPERM expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "a security rule refused it (LoadPin unknown, lockdown unknown, sig_enforce no)"
expect_err "fix: mount securityfs on the host's /sys/kernel/security"
grep -q "no permission" "$T/err" && fail "EPERM told as a missing capability: $(cat "$T/err")"
mv "$T/lockdown" "$T/root/sys/kernel/security/lockdown"
# Without CAP_SYS_MODULE (dropped from the bounding set), that is what is said.
INST_WRAP="setpriv --bounding-set -sys_module" FAKE_KERNEL_FAIL=nvidia:EPERM \
    expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "no permission to load module nvidia: the installer lacks CAP_SYS_MODULE"
FAKE_KERNEL_FAIL=nvidia:ENOKEY expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "the kernel has no key to check module nvidia (signer 'Test modkey'"
FAKE_KERNEL_FAIL=nvidia_uvm:ENOEXEC expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "the kernel cannot run module nvidia_uvm: it is built for another kernel"
FAKE_KERNEL_FAIL=nvidia:EINVAL expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_Bogus=1
expect_err "an unknown parameter (NVreg_Bogus=1)"
FAKE_KERNEL_FAIL=nvidia:ENODEV expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "module nvidia found no NVIDIA GPU it supports (no such device)"
assert_eq "$(loaded_modules)" "" "modules after refusals"

# An upgrade whose new driver is refused: the old version is current and loaded again.
expect_rc 0 install --repo "$R" $(kernel_args)
FAKE_KERNEL_FAIL=nvidia_uvm@$V_NEW:EKEYREJECTED expect_rc 6 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "rolled back (current=$V_OLD)"
assert_eq "$(installed_version)" "$V_OLD" "user space after a failed upgrade"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "driver after a failed upgrade"
assert_eq "$(ls "$T/root/$IDIR_REL/.versions" | wc -l)" 1 "versions after a failed upgrade"

# sig_enforce without --module-cert: the plan and the log say signatures go unchecked here.
echo Y >"$T/root/sys/module/module/parameters/sig_enforce"
# efivarfs: 4 bytes of attributes, then SecureBoot's value.
mkdir -p "$T/root/sys/firmware/efi/efivars"
printf '\x06\x00\x00\x00\x01' >"$T/root/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0d1fb5f3d7c"
expect_rc 0 install --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --dry-run
expect_out "kernel:      sig_enforce yes, lockdown none, Secure Boot enabled"
expect_out "signatures:  not checked (no --module-cert); the kernel enforces signatures"
expect_out "loaded:      nvidia $V_OLD"
expect_rc 0 install --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_NEW"
expect_err "WARN  kernel: no --module-cert: signatures are not checked here, but the kernel enforces them"

# A missing in-tree dependency: named, with the package that would bring it.
expect_rc 0 uninstall
rm "$T/root/lib/modules/$KERNEL/kernel/drivers/gpu/drm/drm_kms_helper.ko"
depmod -b "$T/root" "$KERNEL" 2>/dev/null
rm -rf "$T/root/sys/module/drm_kms_helper"
expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "the driver needs module drm_kms_helper, which kernel $KERNEL has neither built in nor in /lib/modules/$KERNEL"
# Found out before anything is loaded, not by a load and a rollback.
grep -q "module loaded" "$T/err" && fail "modules were loaded before the missing dependency was found"
case "$(loaded_modules)" in *nvidia*) fail "nvidia modules left: $(loaded_modules)" ;; esac
# ... unless the set does not need it.
expect_rc 0 install --repo "$R" $(kernel_args) --modules nvidia,nvidia-uvm,nvidia-peermem
assert_eq "$(loaded_modules)" "drm nvidia nvidia_peermem nvidia_uvm " "a custom set"
[ "$(devnode nvidia-modeset)" = missing ] || fail "nvidia-modeset node without the module"
expect_rc 2 install --repo "$R" $(kernel_args) --modules nvidia --module-arg nvidia_drm.modeset=1
expect_err "names 'nvidia_drm', which is not in the set being loaded"
expect_rc 2 install --repo "$R" $(kernel_args) --module-arg nvidia-modeset
expect_err "is not MODULE.KEY=VALUE"
expect_rc 5 install --repo "$R" $(kernel_args) --modules nvidia,nvidia-vgpu-vfio
expect_err "the package has no nvidia-vgpu-vfio.ko"
