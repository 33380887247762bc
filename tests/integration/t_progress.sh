# A long download reports progress: a line every few seconds in a log, a bar on a terminal.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
pkg=$(cd "$T/srv" && ls repo/packages/*/*/*.tar.zst)
size=$(stat -c %s "$T/srv/$pkg")
start_httpd "$T/srv"
# A 6 s download: one progress line, at 5 s.
printf '[{"path": "/%s", "action": "slow", "rate": %d}]\n' "$pkg" $((size / 6)) >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
grep -E "^INFO  fetch: downloading \(file=nvidia-$V_NEW.tar.zst percent=[0-9]+ done=.* total=.* rate=.*/s\)" \
    "$T/err" || fail "no progress line: $(cat "$T/err")"

# On a terminal: a bar redrawn in place. script(1) gives the installer a pty.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
printf '[{"path": "/%s", "action": "slow", "rate": %d}]\n' "$pkg" $((size / 2)) >"$HTTP_FAULTS"
script -qec "$BIN --root $T/root install --repo $HTTP/repo $(install_args)" /dev/null >"$T/tty" 2>&1
grep -q $'\r'"nvidia-$V_NEW.tar.zst \[=*" "$T/tty" || fail "no progress bar on a tty: $(cat -v "$T/tty")"
assert_eq "$(installed_version)" "$V_NEW" "installed with a bar"
