# A download cut off mid-way resumes where it stopped: the bytes fetched twice are few.
mkroot "$T/root"
big_package_repo 6
cut=$((size / 2))
start_httpd "$T/srv"
printf '[{"path": "/%s", "action": "truncate", "at": %d, "times": 1}]\n' "$pkg" "$cut" >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed after a cut"
expect_err "resuming partial download"
http_settle
grep -q "\"range\": \"bytes=$cut-\"" "$HTTP_LOG" || fail "second request did not resume at $cut"
served=$(served_bytes .tar.zst)
assert_eq "$served" "$size" "bytes served in all (no byte fetched twice)"

# A partial file left by a killed run is resumed too, and a server that ignores Range
# (200 instead of 206) makes the installer start over cleanly.
expect_rc 0 uninstall
cache="$T/root/var/cache/nvidia-driver-installer/packages"
sha=$(sha256sum "$T/srv/$pkg" | cut -c1-64)
rm -f "$cache/$sha.pkg"
head -c 1000000 "$T/srv/$pkg" >"$cache/$sha.part"
http_log_reset
printf '[{"path": "/%s", "action": "ignore_range"}]\n' "$pkg" >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "server ignored the range request"
# The aborted 200 may have pushed some bytes into the socket; the installer took the file once.
expect_err "network_bytes=$size"
assert_eq "$(installed_version)" "$V_NEW" "installed after a 200"

# With Range honoured, the partial file's bytes are not fetched again.
expect_rc 0 uninstall
rm -f "$cache/$sha.pkg"
head -c 1000000 "$T/srv/$pkg" >"$cache/$sha.part"
http_log_reset
echo '[]' >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(served_bytes .tar.zst)" $((size - 1000000)) "bytes served on resume"
