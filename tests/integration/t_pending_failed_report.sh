# A pending version that fails is withdrawn (t_pending_failure) and reported: a record
# beside the pending one (INSTALL_DIR/.pending-failed.json), status (text and --json, as
# docs/json.md documents it), a doctor warning, the metric upgrade_failed and the label
# upgrade-failed (kept by NFD), for each kind of failure; a second failure replaces the
# report; the run that stages the version again (switched or deferred) clears it, and so
# does uninstall. A damaged report is warned of once and removed.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
I=$(idir)
prom=/var/lib/metrics/installer.prom
args=(--repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW" --metrics-file "$prom")
features=$T/root/etc/kubernetes/node-feature-discovery/features.d
label=$features/00-nvidia-driver-pending-failed
cache=$T/root/var/cache/nvidia-driver-installer
doctor=(doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_NEW")
j() {
    local code=$1
    shift
    python3 -c "import json,sys; d=json.load(open('$T/out')); $code" "$@"
}

expect_rc 0 install --repo "$R" $(kernel_args)
busy() { mkdir -p "$T/root/proc/4242/fd" && ln -sf /dev/nvidiactl "$T/root/proc/4242/fd/3"; }
busy
expect_rc 0 install "${args[@]}"
staged=$(ls "$I/.versions" | grep "^$V_NEW-")
rm -rf "$T/root/proc/4242"
# A reboot: the kernel forgets its modules, /run goes, the disk stays.
rm -rf "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" "$T/root/sys/module/"nvidia* \
    "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" "$T/root/dev/"nvidia*
cp -a "$T/root" "$T/booted"
fresh() { rm -rf "$T/root" && cp -a "$T/booted" "$T/root"; }
module=$(cd "$I/.versions/$staged" && find . -name nvidia-uvm.ko | sed -n 1p)

# reported KIND CODE CAUSE: every consumer shows that $V_NEW failed with exit CODE, CAUSE.
reported() {
    [ -f "$I/.pending-failed.json" ] || fail "$1: no failure record: $(ls -A "$I")"
    expect_rc 0 status
    grep -q "^pending failed: $V_NEW failed at 20[0-9-]*T[0-9:]*Z (exit $2), withdrawn: .*$3" "$T/out" ||
        fail "$1: status: $(cat "$T/out")"
    expect_rc 0 status --json
    python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`status --json`' "$T/out" ||
        fail "$1: status --json against docs/json.md"
    j 'f = d["pending_failure"]; assert f["driver_version"] == sys.argv[1] and f["exit_code"] == int(sys.argv[2]) and sys.argv[3] in f["cause"] and f["failed_at"], f
assert d["pending_upgrade"] is None, d' "$V_NEW" "$2" "$3" || fail "$1: status --json"
    inst "${doctor[@]}"
    grep -q "pending version failed.*driver $V_NEW failed at .* (exit $2) and was withdrawn, the current version serves: .*$3" "$T/out" ||
        fail "$1: doctor: $(cat "$T/out")"
    expect_out "fix the cause (.*/exit-codes.md says what each exit code asks for), then delete the installer pod: its next run stages the version again"
    grep -qx "nvidia_driver_installer_upgrade_failed{version=\"$V_NEW\",exit_code=\"$2\"} 1" "$T/root$prom" ||
        fail "$1: metric: $(grep upgrade_failed "$T/root$prom")"
    promtool check metrics <"$T/root$prom" >"$T/promtool" 2>&1 || fail "$1: promtool: $(cat "$T/promtool")"
    python3 "$SRC/tests/tools/nfd-local.py" "$features" 2>"$T/ignored" >"$T/node-labels"
    grep -qx "nvidia.com/gpu.driver-installer.upgrade-failed=$V_NEW" "$T/node-labels" ||
        fail "$1: label: $(cat "$label" 2>&1) $(cat "$T/ignored")"
}
# cleared KIND: nothing reported any more.
cleared() {
    [ ! -e "$I/.pending-failed.json" ] || fail "$1: failure record left: $(cat "$I/.pending-failed.json")"
    [ ! -e "$label" ] || fail "$1: failure label left"
    grep -qx 'nvidia_driver_installer_upgrade_failed{version="",exit_code="0"} 0' "$T/root$prom" ||
        fail "$1: metric: $(grep upgrade_failed "$T/root$prom")"
    expect_rc 0 status
    ! grep -q "^pending failed:" "$T/out" || fail "$1: status: $(cat "$T/out")"
    expect_rc 0 status --json
    j 'assert d["pending_failure"] is None, d' || fail "$1: status --json"
    inst "${doctor[@]}"
    ! grep -q "pending version failed" "$T/out" || fail "$1: doctor: $(cat "$T/out")"
}

# A module's signature gone (exit 5); the next run stages the version again and switches.
fresh
cp "$FIX/drv-$V_NEW/kernel/nvidia-uvm.ko" "$I/.versions/$staged/$module"
expect_rc 5 install "${args[@]}"
reported "a stripped signature" 5 "signature rejected: the module is not signed"
cp "$I/.pending-failed.json" "$T/earlier-failure.json"
expect_rc 0 install "${args[@]}"
assert_eq "$(installed_version)" "$V_NEW" "switched at the next run"
cleared "switched at the next run"

# The kernel refuses the pending version (exit 6): it replaces an earlier report; the next
# run, the driver busy again, stages the version again and defers it: that clears it too.
fresh
cp "$T/earlier-failure.json" "$I/.pending-failed.json"
FAKE_KERNEL_FAIL=nvidia@$V_NEW:EKEYREJECTED expect_rc 6 install "${args[@]}"
reported "a refused load" 6 "rejected"
! grep -q "signature rejected" "$I/.pending-failed.json" || fail "the earlier report was not replaced"
busy
expect_rc 0 install "${args[@]}"
expect_err "the change waits for idle GPUs or the next boot (pending=$V_NEW"
rm -rf "$T/root/proc/4242"
cleared "deferred again"

# The staged copy gone and the package unreachable (exit 4); uninstall takes the report.
fresh
rm -rf "${I:?}/.versions/$staged"
mv "$T/repo/packages" "$T/packages.kept"
mv "$cache/packages" "$T/cache-packages.kept"
expect_rc 4 install "${args[@]}"
reported "a staged copy gone, the package unreachable" 4 "$V_NEW"
mv "$T/packages.kept" "$T/repo/packages"
expect_rc 0 uninstall --kernel-release "$KERNEL"
[ ! -e "$I/.pending-failed.json" ] && [ ! -e "$label" ] || fail "failure report left after uninstall: $(ls -A "$I" "$features")"

# A damaged report (wrong types, a FIFO, a link): warned of once, removed with its label,
# never shown.
# Judged by every install run, with or without a metrics file.
damaged() {
    expect_rc 0 install --repo "$R" $(kernel_args) "${@:2}"
    expect_err "the pending failure report is damaged: it is removed"
    [ ! -e "$I/.pending-failed.json" ] && [ ! -L "$I/.pending-failed.json" ] || fail "$1: damaged report left"
    [ ! -e "$label" ] || fail "$1: label left"
    expect_rc 0 install --repo "$R" $(kernel_args) "${@:2}"
    ! grep -q "pending failure report" "$T/err" || fail "$1: warned twice"
}
expect_rc 0 install --repo "$R" $(kernel_args)
printf '{"driver_version": 5, "cause": "x", "exit_code": 5}' >"$I/.pending-failed.json"
echo "nvidia.com/gpu.driver-installer.upgrade-failed=$V_NEW" >"$label"
expect_rc 0 status --json
j 'assert d["pending_failure"] is None, d' || fail "status shows a damaged report"
damaged "wrong types" --metrics-file "$prom"
mkfifo "$I/.pending-failed.json"
damaged "a FIFO"
printf '{"driver_version": "%s", "cause": "x", "exit_code": 5}' "$V_NEW" >"$T/outside.json"
ln -s "$T/outside.json" "$I/.pending-failed.json"
damaged "a link"
[ -f "$T/outside.json" ] || fail "the link's target was removed"
