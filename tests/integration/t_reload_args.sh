# New module parameters for the live driver that the kernel refuses: the driver is loaded
# again with the values it was loaded with (readiness back, nothing pending) and the run fails
# with exit 6, naming the refused parameter and the fix. If that load fails too, the node
# is left as a failed switch leaves it: the version current, no driver, no readiness. Then
# the record of each load (/run/nvidia-driver-installer/module-args.json): a parameter no
# longer asked for is a change, a refused reload restores every recorded parameter, the
# record goes with a reboot, and without one the kernel's live values are compared.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
I=$(idir)
ready=$T/root/run/nvidia/validations/driver-ready
param() { awk -F': ' -v k="$1" '$1 == k {print $2}' "$T/root/proc/driver/nvidia/params"; }
# The reason a change waits ("" when none); status exits 8 here (no NVML outside a pod), its
# document still says; a sanitizer's report fails the test.
pending_reason() {
    local st rc=0
    st=$(${INST_WRAP:-} "$BIN" --root "$T/root" status --json 2>"$T/status.err") || rc=$?
    [ $rc = 0 ] || [ $rc = 8 ] || fail "status exited $rc: $(cat "$T/status.err")"
    ! grep -q Sanitizer "$T/status.err" || fail "status: $(cat "$T/status.err")"
    python3 -c 'import json,sys; p=json.loads(sys.argv[1])["pending_upgrade"]; print(p and p["reason"] or "")' "$st"
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

# The record of the load: exactly the arguments it gave, in the host's /run.
rec=$T/root/run/nvidia-driver-installer/module-args.json
recorded() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["module_args"]))' "$rec"; }
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=432 nvidia.NVreg_DeviceFileGID=44" "the record of the load"

# A refused reload restores every recorded parameter, the one the new request leaves out too.
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=abc
expect_err "ERROR install: new module parameters refused (nvidia.NVreg_DeviceFileMode: 432 -> abc, nvidia.NVreg_DeviceFileGID: 44 -> (default)); the driver runs again with the previous ones"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "parameters restored, the unnamed one too"
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=432 nvidia.NVreg_DeviceFileGID=44" "the record after the restore"
[ -e "$ready" ] || fail "no readiness marker after the restore"

# A parameter no longer asked for is a change: busy under defer it waits (module_args),
# named; idle, the driver is loaded again without it, and it is back at its default.
mkdir -p "$T/root/proc/4243/fd"
ln -s /dev/nvidiactl "$T/root/proc/4243/fd/3"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "the live driver runs with other module parameters (changes=nvidia.NVreg_DeviceFileGID: 44 -> (default))"
assert_eq "$(pending_reason)" "module_args" "pending for a parameter no longer asked for"
assert_eq "$(param DeviceFileGID)" 44 "DeviceFileGID while the change waits"
rm -rf "$T/root/proc/4243"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "driver loaded again with the new module parameters (version=$V_OLD"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 0" "parameters after one was dropped"
[ ! -e "$T/root/sys/module/nvidia/parameters/NVreg_DeviceFileGID" ] || fail "the dropped parameter is still given"
assert_eq "$(pending_reason)" "" "pending after the reload"
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=432" "the record after one was dropped"
# None asked for any more: loaded again with none.
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "the live driver runs with other module parameters (changes=nvidia.NVreg_DeviceFileMode: 432 -> (default))"
assert_eq "$(param DeviceFileMode)" 438 "DeviceFileMode with none asked for"
assert_eq "$(recorded)" "" "the record of a load without parameters"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "already installed (version=$V_OLD"

# A record that would resolve outside /run (a link planted there) is not written: the
# load goes on, and changes are compared with what the kernel shows.
mv "$T/root/run/nvidia-driver-installer" "$T/run-kept"
mkdir -p "$T/root/var/lib/elsewhere"
ln -s /var/lib/elsewhere "$T/root/run/nvidia-driver-installer"
expect_rc 0 install --repo "$R" $(kernel_args) "${good[@]}"
expect_err "the module parameters of this load are not recorded: later changes are compared with what the kernel shows (reason=module parameters record: '/run/nvidia-driver-installer' resolves to '/var/lib/elsewhere', outside the host's /run"
[ ! -e "$T/root/var/lib/elsewhere/module-args.json" ] || fail "a record was written outside /run"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "parameters loaded without a record"
# The directory back, without the record the link's place held before (it described a
# load the driver has since left).
rm "$T/root/run/nvidia-driver-installer" "$T/run-kept/module-args.json"
mv "$T/run-kept" "$T/root/run/nvidia-driver-installer"

# Without a record (a driver loaded by hand, by an older installer, or as above), the
# request is compared with what the kernel shows: a value named is told, one left out is not.
[ ! -e "$rec" ] || fail "a record of a load that made none"
expect_rc 0 install --repo "$R" $(kernel_args) "${good[@]}"
expect_err "already installed (version=$V_OLD"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "already installed (version=$V_OLD"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=420
expect_err "the live driver runs with other module parameters (changes=nvidia.NVreg_DeviceFileMode: 432 -> 420)"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "420 0" "parameters after a change told by the kernel"
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=420" "the record after a load without one before"

# A reboot: the record goes with /run and the modules; the boot's load is a first load
# (no reload, no change waiting), recorded anew, and the next run has nothing to do.
expect_rc 0 install --repo "$R" $(kernel_args) "${good[@]}"
rm -rf "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" "$T/root/sys/module/"nvidia* \
    "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" "$T/root/dev/"nvidia*
assert_eq "$(loaded_modules)" "" "modules after the simulated reboot"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "driver loaded (version=$V_OLD"
! grep -q "other module parameters" "$T/err" || fail "a parameter change at the boot's first load"
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=432" "the record of the boot's load"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
expect_err "already installed (version=$V_OLD"

# nvidia's string parameters are not in sysfs, and /proc/driver/nvidia/params shows them
# quoted: without a record, the live value is compared and restored without its quotes,
# and an empty one (the default) is not restored at all.
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_RegistryDwords=RMFoo=1
assert_eq "$(param RegistryDwords)" '"RMFoo=1"' "a string parameter as the kernel shows it"
[ ! -e "$T/root/sys/module/nvidia/parameters/NVreg_RegistryDwords" ] || fail "a string parameter in sysfs"
rm "$rec"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_RegistryDwords=RMFoo=1
expect_err "already installed (version=$V_OLD"
rm -f "$rec"
FAKE_KERNEL_FAIL=nvidia.NVreg_RegistryDwords=RMBar=2:EINVAL expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_RegistryDwords=RMBar=2
expect_err "the driver runs again with its previous module parameters (version=$V_OLD parameters=nvidia.NVreg_RegistryDwords=RMFoo=1)"
assert_eq "$(param RegistryDwords)" '"RMFoo=1"' "a string parameter restored without a record"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(param RegistryDwords)" '""' "a string parameter no longer given"
rm "$rec"
FAKE_KERNEL_FAIL=nvidia.NVreg_RegistryDwords=RMBar=2:EINVAL expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_RegistryDwords=RMBar=2
expect_err "the driver runs again with its previous module parameters (version=$V_OLD parameters=)"
expect_err "changes=nvidia.NVreg_RegistryDwords: (default) -> RMBar=2)"
assert_eq "$(param RegistryDwords)" '""' "an empty string parameter left at its default"
[ -e "$ready" ] || fail "no readiness marker after an empty string parameter was restored"

# A refused reload restores only what the modules now asked for take: a recorded parameter
# of a module left out of --modules is not given (nvidia-uvm spelled with '-' here).
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432 --module-arg nvidia-uvm.uvm_perf_prefetch_enable=0
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=432 nvidia_uvm.uvm_perf_prefetch_enable=0" "the record with a uvm parameter"
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --modules nvidia,nvidia-modeset,nvidia-drm --module-arg nvidia.NVreg_DeviceFileMode=abc
expect_err "the driver runs again with its previous module parameters (version=$V_OLD parameters=nvidia.NVreg_DeviceFileMode=432)"
assert_eq "$(param DeviceFileMode)" 432 "restored without the module left out"
[ -e "$ready" ] || fail "no readiness marker after a restore without the module left out"

# A new value the load fails for another reason than a refused parameter (ENOMEM): the
# driver runs again with the previous values, and the error keeps the load's own cause and
# fix, not the one for a refused parameter.
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
FAKE_KERNEL_FAIL=nvidia.NVreg_DeviceFileMode=420:ENOMEM expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=420
expect_err "ERROR install: the driver did not load with the new module parameters (nvidia.NVreg_DeviceFileMode: 432 -> 420); it runs again with the previous ones: kernel: the kernel refused module nvidia: Cannot allocate memory; fix: see dmesg (exit 6)"
! grep -q "correct NVIDIA_MODULE_ARGS" "$T/err" || fail "a refused parameter's fix for an ENOMEM"
assert_eq "$(param DeviceFileMode)" 432 "restored after ENOMEM"
[ -e "$ready" ] || fail "no readiness marker after ENOMEM"

# Restored, but exposing it fails (readiness cannot be written): the driver runs, said so,
# not that it did not load.
rm -rf "$T/root/run/nvidia/validations"
touch "$T/root/run/nvidia/validations"
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=abc
expect_err "ERROR kernel: the driver runs again with its previous module parameters, but it is not ready: "
! grep -q "did not load again" "$T/err" || fail "a restored driver said not loaded"
expect_err "ERROR install: new module parameters refused (nvidia.NVreg_DeviceFileMode: 432 -> abc); the driver runs again with the previous ones but is not ready (see the error above): kernel: "
assert_eq "$(param DeviceFileMode)" 432 "restored, not exposed"
rm "$T/root/run/nvidia/validations"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
[ -e "$ready" ] || fail "no readiness marker once it can be written"

# The record's directory a dangling link: no record can be kept there, so nothing stops an
# uninstall (it unloads the driver and removes the device nodes), nor the next one.
mv "$T/root/run/nvidia-driver-installer" "$T/run-kept"
ln -s /run/gone "$T/root/run/nvidia-driver-installer"
expect_rc 0 uninstall --kernel-release "$KERNEL"
assert_eq "$(loaded_modules | grep -c '^nvidia' || true)" 0 "nvidia modules after an uninstall past a dangling link"
[ -z "$(ls "$T/root/dev" | grep '^nvidia' || true)" ] || fail "device nodes left by an uninstall past a dangling link"
expect_rc 0 uninstall --kernel-release "$KERNEL"
rm "$T/root/run/nvidia-driver-installer"
mv "$T/run-kept" "$T/root/run/nvidia-driver-installer"

# A damaged record is said once and removed: a reload compares with what the kernel shows,
# and the next run finds no record to warn about.
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
echo "not json" > "$rec"
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=420
assert_eq "$(grep -c "module parameters record .*damaged" "$T/err")" 1 "warnings of a damaged record in a reload"
expect_err "damaged, removed"
assert_eq "$(param DeviceFileMode)" 420 "reloaded past a damaged record"
assert_eq "$(recorded)" "nvidia.NVreg_DeviceFileMode=420" "the record after a damaged one"

# A record entry --module-arg would refuse (a value with a space) is a damaged record: no load
# of ours gave it, and a restore giving it failed, leaving the node without its driver.
# Warned about once and removed; a refused reload then restores what the kernel shows.
expect_rc 0 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=432
python3 - "$rec" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["module_args"].append("nvidia.NVreg_RegistryDwords=RMFoo=1 RMBar=2")
json.dump(d, open(sys.argv[1], "w"))
PY
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=abc
assert_eq "$(grep -c "module parameters record .*damaged" "$T/err")" 1 "warnings of a record with a refused entry"
expect_err "module parameters record '/run/nvidia-driver-installer/module-args.json': damaged, removed: module argument 'nvidia.NVreg_RegistryDwords=RMFoo=1 RMBar=2': values cannot hold spaces or quotes"
expect_err "ERROR install: new module parameters refused (nvidia.NVreg_DeviceFileMode: 432 -> abc); the driver runs again with the previous ones"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "loaded after a record with a refused entry"
assert_eq "$(param DeviceFileMode)" 432 "restored past a record with a refused entry"
[ -e "$ready" ] || fail "no readiness marker after a record with a refused entry"
# Without a record, a live value --module-arg could not give (a driver loaded by hand with
# a quoted space) is left at its default, said so; the rest is restored.
rm -f "$rec"
sed -i 's/^RegistryDwords: .*/RegistryDwords: "RMFoo=1 RMBar=2"/' "$T/root/proc/driver/nvidia/params"
FAKE_KERNEL_FAIL=$refuse expect_rc 6 install --repo "$R" $(kernel_args) --module-arg nvidia.NVreg_DeviceFileMode=abc --module-arg nvidia.NVreg_RegistryDwords=RMFoo=1
expect_err "a live module parameter cannot be given again: a restore leaves it at its default (reason=module argument 'nvidia.NVreg_RegistryDwords=RMFoo=1 RMBar=2': values cannot hold spaces or quotes)"
expect_err "the driver runs again with its previous module parameters (version=$V_OLD parameters=nvidia.NVreg_DeviceFileMode=432)"
assert_eq "$(param DeviceFileMode)" 432 "restored past a live value that cannot be given"
[ -e "$ready" ] || fail "no readiness marker after a live value that cannot be given"
