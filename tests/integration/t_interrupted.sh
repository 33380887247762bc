# A run killed with SIGKILL leaves the previous install intact and usable; the next run
# cleans up what it left and converges.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD:default" "$V_NEW"
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
before=$(snapshot "$T/root/$IDIR_REL")

# Killed while the package download stalls.
pkg=$(cd "$T/srv" && ls repo/packages/*/*/nvidia-$V_NEW.tar.zst)
printf '[{"path": "/%s", "action": "stall", "seconds": 20, "times": 1}]\n' "$pkg" >"$HTTP_FAULTS"
"$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) --driver-version latest \
    >/dev/null 2>&1 &
pid=$!
# Killed once the stalled package is streaming into a staging tree. (The server logs a
# request after its last byte, so its log cannot say the download began.)
wait_for "the download to open a staging tree" 30 has_file "$(idir)/.staging-*"
kill -0 "$pid" 2>/dev/null || fail "the installer exited before it was killed"
kill -9 "$pid"
wait "$pid" || true
# The package streams into a staging tree while it downloads: a kill leaves that tree
# (hidden, never current; the next run removes it) and nothing else changed.
assert_eq "$(snapshot "$T/root/$IDIR_REL" | grep -v '^\./\.staging-')" "$before" "install dir after kill -9"
"$(idir)/bin/nvidia-smi" | grepq "$V_OLD" || fail "previous install unusable"

# Leftovers of a run killed during unpack and publish: a staging tree, a temporary link,
# an unreferenced version.
d=$(idir)
mkdir -p "$d/.staging-dead01/lib64" "$d/.versions/999.0.1-abcdefabcdef/bin"
ln -s .versions/999.0.1-abcdefabcdef "$d/..current.tmp-x1y2z3w4"
echo '[]' >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version latest
assert_eq "$(installed_version)" "$V_NEW" "converged"
assert_eq "$(ls -A "$d" | sort | tr '\n' ' ')" ".current .versions bin drivers firmware lib lib64 share usr vulkan " "install dir entries"
assert_eq "$(ls "$d/.versions" | wc -l)" 1 "versions"

# A broken top-level link (killed between the switch and the links) is repaired.
rm "$d/lib64"
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version latest
expect_err "links repaired"
[ -e "$d/lib64/libcuda.so.1" ] || fail "lib64 not repaired"
