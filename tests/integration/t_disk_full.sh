# A full disk: the install dir is a small tmpfs (in a private mount namespace) that holds
# the installed driver but not the next one. The upgrade fails cleanly, naming the cause;
# staging is removed; the previous install is intact and usable; with room again, it works.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
cp -a "$FIX/drv-$V_NEW" "$T/drv"
head -c $((6 * 1024 * 1024)) /dev/urandom >"$T/drv/firmware/nvidia/$V_NEW/big.bin"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/big.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" "$T/big.tar.zst" >/dev/null

# A namespace that lives as long as this test, holding the tmpfs.
hold_mount_ns
mkdir -p "$(idir)"
$INST_WRAP mount -t tmpfs -o size=4m tmpfs "$(idir)"
grep -q " $(idir) " /proc/self/mountinfo && fail "the tmpfs leaked out of its namespace"

expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed on the small file system"
before=$($INST_WRAP sh -c "cd '$(idir)' && find . -printf '%p %y %s %l %m\n' | sort")
expect_rc 1 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW"
expect_err "No space left on device"
expect_err "fix: a file system is full: free space on the one holding the file named"
after=$($INST_WRAP sh -c "cd '$(idir)' && find . -printf '%p %y %s %l %m\n' | sort")
assert_eq "$after" "$before" "install dir after ENOSPC (staging removed)"
expect_rc 0 status
expect_out "driver_version: $V_OLD"
$INST_WRAP "$(idir)/bin/nvidia-smi" | grepq "$V_OLD" || fail "the previous driver is not usable"

# Room again: the same command succeeds, from the cached package.
$INST_WRAP mount -o remount,size=32m "$(idir)"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW"
expect_err "package found in the node cache"
assert_eq "$(installed_version)" "$V_NEW" "installed once there was room"

# A full cache disk: the mirror answered, this node could not keep what it sent. The cause is
# the node's file system (exit 1, its own fix), not "no repository answered".
mkdir -p "$T/root/var/cache/small"
$INST_WRAP mount -t tmpfs -o size=2m tmpfs "$T/root/var/cache/small"
expect_rc 0 uninstall
expect_rc 1 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW" --cache-dir /var/cache/small
expect_err "No space left on device"
expect_err "fix: a file system is full: free space on the one holding the file named"
grep -q "no repository answered" "$T/err" && cat "$T/err" >&2 && fail "a full cache disk is blamed on the repository"
assert_eq "$(installed_version)" "" "nothing installed after a full cache disk"
kill "$NS_PID"
