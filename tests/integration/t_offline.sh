# With every mirror down, the node reinstalls from its cache: the last verified index and
# the package. Without a cached package it fails with exit 4.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_rc 0 uninstall
[ ! -e "$(idir)/.current" ] || fail "uninstall left .current"
dead="http://127.0.0.1:$(dead_port)/repo"
expect_rc 0 install --repo "$dead" $(install_args) --fetch-timeout 2
expect_err "using the cached index"
expect_err "package found in the node cache"
assert_eq "$(installed_version)" "$V_NEW" "installed offline"

# A tampered cached index is not trusted.
expect_rc 0 uninstall
sed -i 's/default/defaulx/' "$T/root/var/cache/nvidia-driver-installer/index.json"
expect_rc 4 install --repo "$dead" $(install_args) --fetch-timeout 2
expect_err "cached index unusable"

# The cached package is verified again as it is unpacked: a corrupted copy is dropped and
# downloaded again.
cache="$T/root/var/cache/nvidia-driver-installer/packages"
pkgfile=$(ls "$cache"/*.pkg)
printf 'garbage' | dd of="$pkgfile" bs=1 seek=5000 conv=notrunc 2>/dev/null
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "cached package failed verification"
[ "$(served_bytes .tar.zst)" -gt 0 ] || fail "not downloaded again"
assert_eq "$(installed_version)" "$V_NEW" "installed after a corrupt cache entry"
