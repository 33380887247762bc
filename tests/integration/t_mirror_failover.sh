# The first mirror is down or failing: the next one serves, and the package comes from a
# mirror that works.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
dead="http://127.0.0.1:$(dead_port)/repo"
expect_rc 0 install --repo "$dead" --repo "$HTTP/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed via the second mirror"
expect_err "mirror=$dead"

# A mirror that answers 404 for the package fails over as well (index from mirror 1).
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
mkdir -p "$T/srv/broken"
cp "$T/srv/repo/index.json" "$T/srv/repo/index.json.sig" "$T/srv/broken/"
http_log_reset
expect_rc 0 install --repo "$HTTP/broken" --repo "$HTTP/repo" $(install_args)
grep -q '"path": "/broken/packages/.*"status": 404' "$HTTP_LOG" || fail "broken mirror not tried"
assert_eq "$(installed_version)" "$V_NEW" "installed via failover"
