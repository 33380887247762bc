# serial: wall-clock bound: the re-run in under 1 s, the ASan build included
# Fresh install over HTTP; the re-run downloads nothing and takes milliseconds.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed version"
size=$(stat -c %s "$T/srv/repo"/packages/*/*/*.tar.zst)
assert_eq "$(served_bytes .tar.zst)" "$size" "package bytes served"

http_log_reset
t0=$(date +%s%N)
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
ms=$((($(date +%s%N) - t0) / 1000000))
expect_err "already installed"
assert_eq "$(served_requests .tar.zst)" 0 "package requests on re-run"
assert_eq "$(served_bytes .tar.zst)" 0 "package bytes on re-run"
[ "$ms" -lt 1000 ] || fail "re-run took $ms ms"
echo "re-run: $ms ms"
