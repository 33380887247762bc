# Two installers on one host serialise on the lock: the second says it waits, then finds
# the driver installed and downloads nothing.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
pkg=$(cd "$T/srv" && ls repo/packages/*/*/*.tar.zst)
printf '[{"path": "/%s", "action": "stall", "seconds": 2, "times": 1}]\n' "$pkg" >"$HTTP_FAULTS"
"$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) 2>"$T/first.err" &
first=$!
for _ in $(seq 100); do
    grep -q "$pkg" "$HTTP_LOG" 2>/dev/null && break
    grep -q "driver selected" "$T/first.err" && break
    sleep 0.05
done
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
wait "$first" || fail "first installer failed: $(cat "$T/first.err")"
expect_err "another installer is running; waiting for it"
expect_err "already installed"
assert_eq "$(served_requests .tar.zst)" 1 "package requests for two installers"
