# Damage a node may have: a torn manifest, a PCI function that vanishes during the scan, a
# malformed os-release line in a field we do not read, a read-only host root, install dir
# or cache dir, a run as non-root. Each is repaired, skipped or refused with a classified
# error (exit 2) naming the full path and a fix, never exit 1; doctor and the dry-run plan
# warn about a read-only install dir instead of calling it ok.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(install_args)
m="$(idir)/.current/.install.json"

# A torn manifest: the version is installed again, which writes a sound one.
printf '{"format": 1, "driver_vers' >"$m"
expect_rc 0 install --repo "$R" $(install_args)
expect_err "the installed version's manifest is damaged: installing again"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["driver_version"] == sys.argv[2]' "$m" "$V_NEW"
echo '{"format": 1}' >"$m"
expect_rc 0 install --repo "$R" $(install_args)
expect_err "manifest: missing"
assert_eq "$(installed_version)" "$V_NEW" "after a manifest without fields"

# A malformed line in a field we do not read (an unterminated quote) is ignored; in one
# we read it is still refused.
printf 'ANSI_COLOR="0;31\n' >>"$T/root/etc/os-release"
expect_rc 0 install --repo "$R" $(install_args)
printf 'BUILD_ID="17800\n' >>"$T/root/etc/os-release"
expect_rc 2 install --repo "$R" $(install_args)
expect_err "unterminated quote in BUILD_ID"
sed -i '/^BUILD_ID="17800$/d' "$T/root/etc/os-release"

# FIFOs where the host has files: nobody waits for a writer (the old readers did, forever:
# hence the timeout). At /proc/cmdline, /proc/modules and a module's version they read as
# absent; at os-release the run is refused (exit 2) naming it.
bounded() {
    set +e
    timeout 60 "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
mkdir -p "$T/root/proc" "$T/root/sys/module/nvidia"
rm -f "$T/root/proc/cmdline" "$T/root/proc/modules" "$T/root/sys/module/nvidia/version"
mkfifo "$T/root/proc/cmdline" "$T/root/proc/modules" "$T/root/sys/module/nvidia/version"
bounded install --repo "$R" $(install_args) --dry-run
[ "$RC" = 0 ] || { cat "$T/err"; fail "FIFOs in /proc and /sys: exit $RC"; }
bounded doctor --repo "$R" $(install_args)
[ "$RC" != 124 ] || fail "doctor waited on a FIFO"
rm "$T/root/proc/cmdline" "$T/root/proc/modules" "$T/root/sys/module/nvidia/version"
mv "$T/root/etc/os-release" "$T/os-release"
mkfifo "$T/root/etc/os-release"
bounded install --repo "$R" $(install_args) --dry-run
[ "$RC" = 2 ] || { cat "$T/err"; fail "a FIFO at os-release: exit $RC, expected 2"; }
expect_err "host: '/etc/os-release' is not a regular file: Invalid argument; fix: put the distribution's os-release file back at /etc/os-release"
rm "$T/root/etc/os-release"
mv "$T/os-release" "$T/root/etc/os-release"
# A FIFO at the installed version's manifest and at firmware_class.path: status and
# install do not wait on them either.
mkdir -p "$T/root/sys/module/firmware_class/parameters"
mv "$m" "$T/manifest.keep"
mkfifo "$m" "$T/root/sys/module/firmware_class/parameters/path"
bounded status
[ "$RC" != 124 ] || fail "status waited on a FIFO at the manifest"
bounded install --repo "$R" $(install_args)
[ "$RC" = 0 ] || { cat "$T/err"; fail "a FIFO at the manifest: install exit $RC"; }
[ -f "$m" ] && [ ! -p "$m" ] || fail "the manifest is still not a regular file"
assert_eq "$(installed_version)" "$V_NEW" "installed again over a FIFO at the manifest"
rm "$T/root/sys/module/firmware_class/parameters/path" "$T/manifest.keep"

# A PCI function that vanished during the scan: its sysfs entry points nowhere, or lost
# its attributes. Skipped; the GPU next to it is found.
add_pci "$T/root" 0000:00:05.0 10de 2330 0x030200
ln -s ../../../devices/pci0000:00/0000:00:09.0 "$T/root/sys/bus/pci/devices/0000:00:09.0"
mkdir -p "$T/root/sys/devices/pci0000:00/0000:00:0a.0"
echo 0x10de >"$T/root/sys/devices/pci0000:00/0000:00:0a.0/vendor"
ln -s ../../../devices/pci0000:00/0000:00:0a.0 "$T/root/sys/bus/pci/devices/0000:00:0a.0"
expect_rc 0 install --repo "$R" $(install_args) --dry-run
expect_out "GPU 10de:2330 at 0000:00:05.0"
[ "$(grep -c "GPU 10de" "$T/out")" = 1 ] || fail "vanished functions counted: $(cat "$T/out")"

# Read-only: the host root, then only the install dir, then only the cache dir, each a
# read-only bind mount in a private mount namespace that lives as long as this test.
hold_mount_ns
ro() { $INST_WRAP mount --bind "$1" "$1" && $INST_WRAP mount -o remount,bind,ro "$1"; }
unro() { $INST_WRAP umount "$1"; }
before=$(snapshot "$T/root")

ro "$T/root"
expect_rc 2 install --repo "$R" $(install_args) --driver-version "$V_NEW"
expect_err "ERROR install: --install-dir '/home/kubernetes/bin/nvidia' is on a read-only file system (at '/home/kubernetes/bin/nvidia'); fix: mount the host's / read-write at --root"
expect_rc 2 uninstall --skip-modules
expect_err "is on a read-only file system"
unro "$T/root"

ro "$(idir)"
expect_rc 2 install --repo "$R" $(install_args)
expect_err "--install-dir '/home/kubernetes/bin/nvidia' is on a read-only file system"
expect_rc 0 install --repo "$R" $(install_args) --dry-run
expect_out "WARNING:     --install-dir '/home/kubernetes/bin/nvidia' is on a read-only file system (at '/home/kubernetes/bin/nvidia'): install will fail"
expect_rc 9 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "\[warn\] host paths    --install-dir '/home/kubernetes/bin/nvidia' is on a read-only file system"
unro "$(idir)"

ro "$T/root/var/cache/nvidia-driver-installer"
expect_rc 2 install --repo "$R" $(install_args)
expect_err "ERROR install: --cache-dir '/var/cache/nvidia-driver-installer' is on a read-only file system"
unro "$T/root/var/cache/nvidia-driver-installer"
kill "$NS_PID"
assert_eq "$(snapshot "$T/root")" "$before" "the host after the read-only runs"

# Not root: the same classified refusal, naming the directory and the uid.
chmod 755 "$(dirname "$T")" "$T" "$T/root"
set +e
setpriv --reuid 65534 --regid 65534 --clear-groups "$BIN" --root "$T/root" install \
    --repo "$R" $(install_args) >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "exit as uid 65534"
expect_err "is not writable by uid 65534: Permission denied; fix: run the installer as root"
assert_eq "$(snapshot "$T/root")" "$before" "the host after the non-root run"
