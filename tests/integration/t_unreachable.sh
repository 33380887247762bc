# serial: wall-clock bounds: exit 4 between 1 and 5 s of a 3 s budget, Retry-After waits of 1 s
# With no repository reachable, install fails with exit 4 inside the time budget.
mkroot "$T/root"
dead="http://127.0.0.1:$(dead_port)/repo"
t0=$(date +%s%N)
expect_rc 4 install --repo "$dead" --repo "file://$T/nowhere" --repo-key "$FIX/keys/pub.pem" \
    --kernel-release "$KERNEL" --skip-modules --fetch-timeout 3
ms=$((($(date +%s%N) - t0) / 1000000))
echo "gave up after $ms ms"
[ "$ms" -lt 5000 ] || fail "exit 4 took $ms ms with a 3 s budget"
[ "$ms" -ge 1000 ] || fail "no retry happened ($ms ms)"
expect_err "no repository answered after"
expect_err "$dead"
expect_err "fix: check --repo"
[ ! -e "$(idir)/.current" ] || fail "installed from nowhere"

# Transient server errors are retried (honouring Retry-After), then succeed.
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
echo '[{"path": "/repo/index.json", "action": "status", "code": 503, "retry_after": 1, "times": 2}]' >"$HTTP_FAULTS"
t0=$(date +%s%N)
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "$(served_requests '"/repo/index.json"')" 3 "index requests"
[ "$ms" -ge 1900 ] || fail "Retry-After not honoured ($ms ms)"
expect_err "HTTP 503"

# A permanent error (404) is not retried.
http_log_reset
expect_rc 4 install --repo "$HTTP/missing" $(install_args) --cache-dir /var/cache/other
assert_eq "$(served_requests '/missing/index.json')" 1 "requests for a 404"
expect_err "HTTP 404"
