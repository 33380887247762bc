# A pending version that fails never costs the node its current driver. A version deferred
# on a busy node (--when-busy defer) whose staged copy is damaged later (a module's
# signature gone, a torn write), that cannot be staged again at boot, or that the kernel
# refuses at boot: the record is withdrawn (status, labels, metric), the current version
# loads and is made ready as if nothing were pending, the run fails with the pending
# version's own error, and the next run stages the version again from the repository. A
# staged copy replaced by a link is not ours: it is staged again, and the link's target is
# left alone.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
I=$(idir)
prom=/var/lib/metrics/installer.prom
args=(--repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW" --metrics-file "$prom")
features=$T/root/etc/kubernetes/node-feature-discovery/features.d
ready=$T/root/run/nvidia/validations/driver-ready
cache=$T/root/var/cache/nvidia-driver-installer

expect_rc 0 install --repo "$R" $(kernel_args)
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
expect_rc 0 install "${args[@]}"
expect_err "the change waits for idle GPUs or the next boot (pending=$V_NEW"
staged=$(ls "$I/.versions" | grep "^$V_NEW-")
rm -rf "$T/root/proc/4242"
# A reboot: the kernel forgets its modules, /run goes, the disk stays.
rm -rf "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" "$T/root/sys/module/"nvidia* \
    "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" "$T/root/dev/"nvidia*
cp -a "$T/root" "$T/booted"
fresh() { rm -rf "$T/root" && cp -a "$T/booted" "$T/root"; }
# served_current: the current version loaded and ready, nothing pending anywhere.
served_current() {
    assert_eq "$(cat "$T/root/sys/module/nvidia/version" 2>/dev/null)" "$V_OLD" "$1: the loaded driver"
    assert_eq "$(installed_version)" "$V_OLD" "$1: the current version"
    grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" "$ready" || fail "$1: not ready: $(cat "$ready" 2>&1)"
    grep -q "version=$V_OLD" "$features/00-nvidia-driver" || fail "$1: labels: $(cat "$features/00-nvidia-driver")"
    [ -e "$T/root/var/run/cdi/nvidia-driver-installer.json" ] || fail "$1: no CDI spec"
    [ ! -e "$I/.pending.json" ] || fail "$1: still pending: $(cat "$I/.pending.json")"
    [ ! -e "$features/00-nvidia-driver-pending" ] || fail "$1: pending labels left"
    grep -qx 'nvidia_driver_installer_upgrade_pending{version="",reason=""} 0' "$T/root$prom" ||
        fail "$1: metric: $(grep upgrade_pending "$T/root$prom")"
    assert_eq "$(ls "$I/.versions")" "$(readlink "$I/.current" | sed 's|.*/||')" "$1: versions on disk"
    expect_rc 0 status
    ! grep -q "^pending:" "$T/out" || fail "$1: status shows a pending version: $(grep pending "$T/out")"
}
# staged_again: the next run stages the version from the repository (or the node cache)
# and switches to it.
staged_again() {
    expect_rc 0 install "${args[@]}"
    assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "$1: loaded at the next run"
    assert_eq "$(installed_version)" "$V_NEW" "$1: current at the next run"
}
module=$(cd "$I/.versions/$staged" && find . -name nvidia-uvm.ko | sed -n 1p)
[ -n "$module" ] || fail "no nvidia-uvm.ko in the staged version: $(cd "$I/.versions/$staged" && find .)"

# One module's signature gone: exit 5 as always, and the current version serves.
fresh
cp "$FIX/drv-$V_NEW/kernel/nvidia-uvm.ko" "$I/.versions/$staged/$module"
expect_rc 5 install "${args[@]}"
expect_err "module nvidia_uvm: signature rejected: the module is not signed"
expect_err "the pending version failed: it is withdrawn and the current version loads (pending=$V_NEW"
expect_err "pending version $V_NEW withdrawn, the current version $V_OLD loaded instead; the next run stages $V_NEW again:"
served_current "a stripped signature"
staged_again "a stripped signature"

# A torn write: half of a module.
fresh
ko=$I/.versions/$staged/$module
truncate -s $(($(stat -c %s "$ko") / 2)) "$ko"
expect_rc 5 install "${args[@]}"
served_current "a torn module"
staged_again "a torn module"

# The kernel refuses the pending version at boot: the current one loads instead.
fresh
FAKE_KERNEL_FAIL=nvidia@$V_NEW:EKEYREJECTED expect_rc 6 install "${args[@]}"
expect_err "pending version $V_NEW withdrawn, the current version $V_OLD loaded instead"
served_current "a refused load"
staged_again "a refused load"

# The staged copy is gone and cannot be staged again (neither repository nor cache has
# the package): exit 4, and the current version serves.
fresh
rm -rf "${I:?}/.versions/$staged"
mv "$T/repo/packages" "$T/packages.kept"
mv "$cache/packages" "$T/cache-packages.kept"
expect_rc 4 install "${args[@]}"
served_current "a staged copy gone, the package unreachable"
mv "$T/packages.kept" "$T/repo/packages"
staged_again "a staged copy gone, the package unreachable"
rm -rf "$T/cache-packages.kept"

# The staged copy replaced by a link (to a copy outside the install dir): not ours, so it
# is staged again from the package; the link goes and its target stays.
fresh
mv "$I/.versions/$staged" "$T/elsewhere"
ln -s "$T/elsewhere" "$I/.versions/$staged"
before=$(snapshot "$T/elsewhere")
expect_rc 0 install "${args[@]}"
expect_err "the pending version's staged copy is missing or not a directory: staging it again (pending=$V_NEW"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "loaded after a linked staged copy"
[ -d "$I/.versions/$staged" ] && [ ! -L "$I/.versions/$staged" ] || fail "the staged copy is still a link"
assert_eq "$(snapshot "$T/elsewhere")" "$before" "the link's target"
