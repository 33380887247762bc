# An install dir on a noexec file system (COS mounts /home so) is reported with its mount,
# in the log and in the plan: its binaries cannot run until it is remounted exec.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default"
mkdir -p "$T/root/home"
unshare -m bash -c '
    mount -t tmpfs -o noexec,nosuid,nodev tmpfs "$1/root/home" &&
    "$2" --root "$1/root" install --repo "file://$1/repo" $3 2>"$1/err" &&
    "$2" --root "$1/root" install --repo "file://$1/repo" $3 --dry-run >"$1/out" 2>/dev/null
' _ "$T" "$BIN" "$(install_args)"
expect_err "WARN  mounts: the install dir is on a noexec mount.*mount=$T/root/home fstype=tmpfs"
expect_out "mount:       $T/root/home (tmpfs, .*noexec.*): noexec, its binaries cannot run"
# On an ordinary mount there is no warning.
expect_rc 0 install --repo "file://$T/repo" $(install_args)
grep -q "noexec mount" "$T/err" && fail "noexec reported for an exec mount"
true
