# A new driver while the loaded one is busy (--when-busy defer): the new version is staged
# and verified, the old one keeps serving (loaded, ready, labels and CDI spec untouched),
# the run exits 0 and the pending version is shown (status, list-versions, label, metric).
# It switches at the first run that finds the GPUs idle (with the rollback of a failed load
# intact), and at a boot (nothing loaded) it is the one that loads. fail keeps exit 7.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
I=$(idir)
prom=/var/lib/metrics/installer.prom
m=(--metrics-file "$prom")
expect_rc 0 install --repo "$R" $(kernel_args) "${m[@]}"
features=$T/root/etc/kubernetes/node-feature-discovery/features.d
served() { # what the node serves: the tree, modules, nodes, marker, labels, CDI spec
    snapshot "$I/.current/"
    loaded_modules
    cat "$T/root/sys/module/nvidia/version"
    (cd "$T/root/dev" && ls -l nvidia* | awk '{print $1, $5, $6, $NF}')
    cat "$T/root/run/nvidia/validations/driver-ready" "$features/00-nvidia-driver"
    cat "$T/root/var/run/cdi/"*
}
pending_key() {
    ${INST_WRAP:-} "$BIN" --root "$T/root" status --json 2>/dev/null | python3 -c \
        'import json,sys; p=json.load(sys.stdin)["pending_upgrade"]; print(p and p[sys.argv[1]] or "")' "$1"
}

# A workload holds /dev/nvidiactl.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
echo cuda-app >"$T/root/proc/4242/comm"
before=$(served)
state_before=$(snapshot "$I")

# fail (the default): exit 7, the node exactly as it was, nothing pending.
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" "${m[@]}"
expect_err "driver in use: /dev/nvidiactl open in pid 4242 (cuda-app)"
assert_eq "$(served)" "$before" "what the node serves after a refused upgrade"
assert_eq "$(snapshot "$I")" "$state_before" "install dir after a refused upgrade"
NVIDIA_WHEN_BUSY=fail expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(snapshot "$I")" "$state_before" "install dir after --when-busy fail"

# defer, with a new version whose modules are signed by a key that is not pinned: refused
# (exit 5) before anything is staged, and nothing is pending.
cp -a "$FIX/drv-$V_NEW" "$T/bad"
for ko in "$T/bad/kernel/"*.ko; do
    "$SIGN_FILE" sha256 "$FIX/keys/othermodkey.pem" "$FIX/keys/othermodkey.pem" "$ko"
done
"$SRC/scripts/make-repo" pack "$T/bad" "$T/bad.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 600.3.1 \
    --kernel "$KERNEL" "$T/bad.tar.zst" >/dev/null
expect_rc 5 install --repo "$R" $(kernel_args) --when-busy defer --driver-version 600.3.1
expect_err "module nvidia: signature rejected"
[ ! -e "$I/.pending.json" ] || fail "a refused package is pending"
assert_eq "$(ls "$I/.versions" | wc -l)" 1 "versions on disk after a refused package"
assert_eq "$(served)" "$before" "what the node serves after a refused package"

# defer: exit 0, the old driver serves, the new one is staged, verified and pending.
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW" "${m[@]}"
expect_err "module signature verified (module=nvidia version=$V_NEW"
expect_err "the change waits for idle GPUs or the next boot (pending=$V_NEW reason=driver_in_use current=$V_OLD"
assert_eq "$(served)" "$before" "what the node serves while the new version waits"
assert_eq "$(installed_version)" "$V_OLD" "current while pending"
staged=$(ls "$I/.versions" | grep "^$V_NEW-")
[ -f "$I/.versions/$staged/.install.json" ] || fail "the pending version is not staged whole"
assert_eq "$(pending_key driver_version)" "$V_NEW" "status --json pending_upgrade.driver_version"
assert_eq "$(pending_key reason)" "driver_in_use" "status --json pending_upgrade.reason"
case "$(pending_key waiting_for)" in *"/dev/nvidiactl open in pid 4242 (cuda-app)"*) ;;
*) fail "pending_upgrade.waiting_for does not name the holder: $(pending_key waiting_for)" ;; esac
expect_rc 0 status
expect_out "^pending:        $V_NEW: staged and verified, waits for idle GPUs or the next boot since "
expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["pending_upgrade"]["driver_version"] == sys.argv[2]' "$T/out" "$V_NEW" ||
    fail "list-versions --json lacks the pending version"
assert_eq "$(cat "$features/00-nvidia-driver-pending")" "nvidia.com/gpu.driver-installer.upgrade-pending=$V_NEW
nvidia.com/gpu.driver-installer.upgrade-pending-reason=driver_in_use" "pending labels"
grep -qx "nvidia_driver_installer_upgrade_pending{version=\"$V_NEW\",reason=\"driver_in_use\"} 1" "$T/root$prom" ||
    fail "metric: $(grep upgrade_pending "$T/root$prom")"
# Their consumers: NFD keeps both labels (its rules: tests/tools/nfd-local.py), promtool the
# metrics file.
python3 "$SRC/tests/tools/nfd-local.py" "$features" 2>"$T/ignored" >"$T/node-labels"
grep -qx "nvidia.com/gpu.driver-installer.upgrade-pending=$V_NEW" "$T/node-labels" &&
    grep -qx "nvidia.com/gpu.driver-installer.upgrade-pending-reason=driver_in_use" "$T/node-labels" ||
    fail "NFD drops a pending label: $(cat "$T/ignored")"
grep -qx "nvidia.com/gpu.driver-installer.version=$V_OLD" "$T/node-labels" || fail "the driver's labels changed"
promtool check metrics <"$T/root$prom" >"$T/promtool" 2>&1 || fail "promtool: $(cat "$T/promtool")"

# The plan says what waits; a run that fails before its plan still reports it in the metrics.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --dry-run
expect_out "^  pending:     $V_NEW: staged and verified, waits for idle GPUs or the next boot since "
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --dry-run --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["pending_upgrade"]["driver_version"] == sys.argv[2]' "$T/out" "$V_NEW" ||
    fail "install --dry-run --json lacks the pending version"
expect_rc 3 install --repo "$R" $(kernel_args) --when-busy defer --driver-version 999.1.1 "${m[@]}"
grep -qx "nvidia_driver_installer_upgrade_pending{version=\"$V_NEW\",reason=\"driver_in_use\"} 1" "$T/root$prom" ||
    fail "metric after a failed run: $(grep upgrade_pending "$T/root$prom")"

# Still busy: the next run keeps it pending (protected from the cleanup), still exit 0.
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
expect_err "the pending version is staged and verified"
[ -d "$I/.versions/$staged" ] || fail "the pending version was removed"
assert_eq "$(served)" "$before" "what the node serves on a second busy run"

# The holder exits: the next run switches to the staged version; a failed load rolls back
# to the old version (still on disk), and the version is staged again by the run after.
rm -rf "$T/root/proc/4242"
FAKE_KERNEL_FAIL=nvidia_uvm@$V_NEW:EKEYREJECTED expect_rc 6 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
expect_err "rolled back (current=$V_OLD)"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "loaded after a rolled-back switch"
[ ! -e "$I/.pending.json" ] || fail "a version that failed to load is still pending"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW" "${m[@]}"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "loaded after the switch"
assert_eq "$(installed_version)" "$V_NEW" "current after the switch"
assert_eq "$(ls "$I/.versions" | wc -l)" 1 "versions on disk after the switch"
[ ! -e "$I/.pending.json" ] && [ ! -e "$features/00-nvidia-driver-pending" ] || fail "still pending after the switch"
assert_eq "$(pending_key reason)" "" "status after the switch"
grep -qx 'nvidia_driver_installer_upgrade_pending{version="",reason=""} 0' "$T/root$prom" ||
    fail "metric after the switch: $(grep upgrade_pending "$T/root$prom")"

# The switch from a staged version: busy again, pending $V_OLD this time (a downgrade is a
# request like any other); then a reboot: nothing loaded, and the pending version loads.
mkdir -p "$T/root/proc/4243/fd"
ln -s /dev/nvidia0 "$T/root/proc/4243/fd/5"
echo trainer >"$T/root/proc/4243/comm"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD"
assert_eq "$(pending_key driver_version)" "$V_OLD" "pending before the reboot"
reboot_node() { # the kernel forgets its modules and the processes go; disks stay
    rm -rf "$T/root/proc/4243" "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" \
        "$T/root/sys/module/"nvidia* "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" \
        "$T/root/dev/"nvidia*
    [ "$(loaded_modules)" = "" ] || fail "modules left after the simulated reboot: $(loaded_modules)"
}
reboot_node
# Only the staged copy can serve now: the repository's and the cache's packages are gone.
cache=$T/root/var/cache/nvidia-driver-installer
rm -rf "$T/repo/packages" "$cache/packages"
# And the repository does not answer at boot (docs/configuration.md, Busy nodes): without
# the node's cached index as well, the boot fails (exit 4) and loads nothing; the pending
# version stays recorded and staged for the next run.
dead=(--repo "http://127.0.0.1:$(dead_port)/repo" $(kernel_args) --fetch-timeout 3)
mv "$cache/index.json" "$T/index.json.kept"
expect_rc 4 install "${dead[@]}" --when-busy defer --driver-version "$V_OLD" "${m[@]}"
expect_err "no repository answered after"
assert_eq "$(loaded_modules)" "" "loaded at a boot without repository or cached index"
[ ! -e "$T/root/run/nvidia/validations/driver-ready" ] || fail "ready at a boot that loaded nothing"
assert_eq "$(pending_key driver_version)" "$V_OLD" "pending after a boot without an index"
# With the node's cached index, the pending version loads from its staged copy.
mv "$T/index.json.kept" "$cache/index.json"
expect_rc 0 install "${dead[@]}" --when-busy defer --driver-version "$V_OLD" "${m[@]}"
expect_err "no repository answered; using the cached index"
grep -qx 'nvidia_driver_installer_index_from_cache{reason="unreachable"} 1' "$T/root$prom" ||
    fail "metric at a boot from the cached index: $(grep index_from_cache "$T/root$prom")"
expect_err "the pending version is staged and verified (version=$V_OLD"
expect_err "driver loaded (version=$V_OLD"
! grep -q "driver loaded (version=$V_NEW" "$T/err" || fail "the old current version was loaded at boot"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "loaded at boot: the pending version"
assert_eq "$(installed_version)" "$V_OLD" "current after the boot"
[ ! -e "$I/.pending.json" ] || fail "still pending after the boot"

# doctor says how to finish a pending upgrade (busy again, $V_NEW asked).
mkdir -p "$T/root/proc/4244/fd"
ln -s /dev/nvidiactl "$T/root/proc/4244/fd/3"
echo cuda-app >"$T/root/proc/4244/comm"
new_signed_repo "$T/repo" "$V_NEW"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
inst doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_NEW"
expect_out "upgrade pending.*driver $V_NEW waits (driver_in_use) since .*/dev/nvidiactl open in pid 4244 (cuda-app)"
expect_out "drain the node's GPU workloads (cordon, then evict its GPU pods), then delete the installer pod"
# A newer request replaces the pending version: still two versions on disk, not three.
cp -a "$FIX/drv-$V_BRANCH_OLD" "$T/third"
sign_modules "$T/third/kernel"
"$SRC/scripts/make-repo" pack "$T/third" "$T/third.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_BRANCH_OLD" \
    --kernel "$KERNEL" "$T/third.tar.zst" >/dev/null
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_BRANCH_OLD"
assert_eq "$(pending_key driver_version)" "$V_BRANCH_OLD" "the pending version after a newer request"
assert_eq "$(ls "$I/.versions" | sed 's/-.*//' | sort | tr '\n' ' ')" "$V_BRANCH_OLD $V_OLD " "versions on disk after a newer request"
# A reverted rollout: the current version asked again withdraws the pending one.
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD"
expect_err "the pending change is no longer asked for: withdrawn (pending=$V_BRANCH_OLD"
[ ! -e "$I/.pending.json" ] && [ ! -e "$features/00-nvidia-driver-pending" ] || fail "pending after a reverted rollout"
assert_eq "$(ls "$I/.versions" | wc -l)" 1 "versions on disk after a reverted rollout"

# New module parameters for the live driver, busy: under fail exit 7, under defer they wait
# (reason module_args); idle, the driver is loaded again with them.
params() { awk -F': ' '$1 == "DeviceFileMode" {print $2}' "$T/root/proc/driver/nvidia/params"; }
assert_eq "$(params)" 438 "DeviceFileMode before"
before=$(served)
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "driver in use: /dev/nvidiactl open in pid 4244 (cuda-app)"
assert_eq "$(served)" "$before" "what the node serves after refused module parameters"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "the live driver runs with other module parameters (changes=nvidia.NVreg_DeviceFileMode: (default) -> 432)"
assert_eq "$(pending_key reason)" "module_args" "pending reason for new parameters"
assert_eq "$(pending_key driver_version)" "$V_OLD" "pending version for new parameters"
assert_eq "$(params)" 438 "DeviceFileMode while they wait"
assert_eq "$(served)" "$before" "what the node serves while new parameters wait"
rm -rf "$T/root/proc/4244"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "driver loaded again with the new module parameters (version=$V_OLD"
assert_eq "$(params)" 432 "DeviceFileMode after the reload"
assert_eq "$(pending_key reason)" "" "pending after the reload"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "already installed (version=$V_OLD"

# uninstall takes the pending state with it.
mkdir -p "$T/root/proc/4245/fd"
ln -s /dev/nvidiactl "$T/root/proc/4245/fd/3"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
[ -e "$I/.pending.json" ] || fail "nothing pending before uninstall"
kargs_rec=$T/root/run/nvidia-driver-installer/module-args.json
[ -e "$kargs_rec" ] || fail "no record of the loaded driver's module parameters before uninstall"
rm -rf "$T/root/proc/4245"
expect_rc 0 uninstall --kernel-release "$KERNEL"
[ ! -e "$kargs_rec" ] || fail "the record of the module parameters outlives the driver uninstall unloaded"
[ ! -e "$I/.pending.json" ] && [ ! -e "$features/00-nvidia-driver-pending" ] && [ ! -e "$I/.versions" ] ||
    fail "pending state left after uninstall: $(ls -A "$I" "$features")"

# The installed version is what the request wants, but another version is loaded and busy
# (loaded by hand, say): nothing is staged to wait, so even under defer it is exit 7, and
# the busy driver stays loaded.
new_signed_repo "$T/repo" "$V_OLD"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_OLD" --skip-modules
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "loaded, another version installed"
mkdir -p "$T/root/proc/4246/fd"
ln -s /dev/nvidiactl "$T/root/proc/4246/fd/3"
expect_rc 7 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD"
expect_err "driver in use: /dev/nvidiactl open in pid 4246"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "the busy driver"
