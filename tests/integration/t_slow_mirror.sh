# serial: wall-clock budgets: each mirror's share of a 10 or 12 s budget, and the whole install under 9 s
# plain build: its failover and resume run under ASan in t_mirror_failover and t_resume; the budgets are wall-clock figures
# A mirror that stays above the speed floor but is too slow for the budget does not starve
# the next one: each attempt gets a share of what is left of the budget (1/k with k mirrors
# still in play), the next mirror resumes after its bytes, and the slow one is named.
mkroot "$T/root"
big_package_repo 6
for m in slow fast; do
    mkdir -p "$T/srv/$m"
    cp -a "$T/srv/repo/." "$T/srv/$m/"
done
start_httpd "$T/srv"
# 200 kB/s: far above the 1024 B/s floor, 30 s for the package.
printf '[{"path": "/slow/%s", "action": "slow", "rate": 200000}]\n' "${pkg#repo/}" >"$HTTP_FAULTS"
t0=$(date +%s%N)
expect_rc 0 install --repo "$HTTP/slow" --repo "$HTTP/fast" $(install_args) --fetch-timeout 10
ms=$((($(date +%s%N) - t0) / 1000000))
echo "slow-mirror: installed in $ms ms with a 10 s budget, the 200 kB/s mirror cut after its share"
assert_eq "$(installed_version)" "$V_NEW" "installed from the fast mirror"
expect_err "'$HTTP/slow/.*': too slow: .* this mirror's share of the time budget (1/2 of"
# The server logs a request after its last byte: wait for the line, not for time.
wait_for "the fast mirror to resume after the slow one's bytes" 30 \
    grep -q "\"path\": \"/fast/${pkg#repo/}\", \"range\": \"bytes=[1-9]" "$HTTP_LOG"
[ "$ms" -lt 9000 ] || fail "the slow mirror took the whole budget ($ms ms)"

# A share spent is not a failed round: with no retries and a dead second mirror, the slow
# mirror (1 MB/s, about 7 s for the package) still gets the rest of a 12 s budget.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
printf '[{"path": "/slow/%s", "action": "slow", "rate": 1000000}]\n' "${pkg#repo/}" >"$HTTP_FAULTS"
dead="http://127.0.0.1:$(dead_port)/repo"
t0=$(date +%s%N)
expect_rc 0 install --repo "$HTTP/slow" --repo "$dead" $(install_args) --fetch-timeout 12 \
    --fetch-retries 0
echo "slow-mirror: alone with a dead mirror and no retries: installed at 1 MB/s in $((($(date +%s%N) - t0) / 1000000)) ms of a 12 s budget"
expect_err "'$HTTP/slow/.*': too slow: .* (1/2 of"
assert_eq "$(installed_version)" "$V_NEW" "installed from the slow mirror"

# Every mirror slow: exit 4 within the budget, the error names the slow mirrors.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
printf '[{"path": "/slow/%s", "action": "slow", "rate": 200000}, {"path": "/fast/%s", "action": "slow", "rate": 200000}]\n' \
    "${pkg#repo/}" "${pkg#repo/}" >"$HTTP_FAULTS"
t0=$(date +%s%N)
expect_rc 4 install --repo "$HTTP/slow" --repo "$HTTP/fast" $(install_args) --fetch-timeout 4 \
    --cache-dir /var/cache/other
echo "slow-mirror: every mirror slow: exit 4 in $((($(date +%s%N) - t0) / 1000000)) ms with a 4 s budget"
grep -q "ERROR.*'$HTTP/slow/[^']*': too slow" "$T/err" || fail "the error does not name the slow mirror"
