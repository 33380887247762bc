# After a reboot, mirrors that answer but serve no index that verifies or is current (a
# captive portal, a proxy's error page, a key not yet pinned, a mirror behind the index this
# node accepted) are no worse than no mirror: the node loads its installed, verified driver
# from its cache with a warning, as when every mirror is unreachable. Without a cache the
# refusal stands (exit 5).
mkroot "$T/root"
new_repo "$T/srv/behind" "$V_OLD:default"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed"
cached="$T/root/var/cache/nvidia-driver-installer/index.json"
cp "$cached" "$T/accepted.json"

# A captive portal: a login page for every file, and a redirect to it.
mkdir -p "$T/srv/portal"
echo '<html><body>Sign in to the guest network</body></html>' >"$T/srv/portal/index.json"
cp "$T/srv/portal/index.json" "$T/srv/portal/index.json.sig"
expect_rc 0 install --repo "$HTTP/portal" $(install_args)
expect_err "WARN  index: no mirror served an index that verifies and is current; using the cached index"
expect_err "signature does not verify"
assert_eq "$(installed_version)" "$V_NEW" "kept behind a captive portal"
printf '[{"path": "/login/index.json", "action": "redirect", "location": "%s/portal/index.json"}]\n' "$HTTP" >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/login" $(install_args)
expect_err "using the cached index"

# A repository signed with a key this node does not pin yet.
mkdir -p "$T/srv/rekeyed"
"$SRC/scripts/make-repo" add --repo "$T/srv/rekeyed" --key "$FIX/keys/other.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
expect_rc 0 install --repo "$HTTP/rekeyed" $(install_args)
expect_err "using the cached index"

# A secondary mirror behind the index this node accepted, the primary down.
dead="http://127.0.0.1:$(dead_port)/repo"
expect_rc 0 install --repo "$dead" --repo "$HTTP/behind" $(install_args) --fetch-timeout 3
expect_err "is older than the one generated"
expect_err "using the cached index"
assert_eq "$(installed_version)" "$V_NEW" "not rolled back by a lagging mirror"
cmp -s "$cached" "$T/accepted.json" || fail "the cached index was replaced"

# After a reboot that lost the install dir: reinstalled from the cache, not refused.
expect_rc 0 uninstall
expect_rc 0 install --repo "$HTTP/behind" $(install_args)
expect_err "using the cached index"
expect_err "package found in the node cache"
assert_eq "$(installed_version)" "$V_NEW" "reinstalled from the cache"

# Without a cache, an index that does not verify is refused.
expect_rc 5 install --repo "$HTTP/portal" $(install_args) --cache-dir /var/cache/other
expect_err "signature does not verify"
