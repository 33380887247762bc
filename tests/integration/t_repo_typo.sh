# A permanent answer for index.json at every mirror (HTTP 404, no such file:// path) is
# likely a configuration error (a typo in --repo, a moved repository), not an outage. A
# node with a cache still serves from it, but says so loudly: a warning naming the likely
# typo, status --json "repository_fallback", a metric, and doctor fails its repository
# check. Without a cache: exit 4 with "check the URL".
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
prom="$T/root/var/lib/node_exporter/nvidia.prom"
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --metrics-file /var/lib/node_exporter/nvidia.prom
grep -qx 'nvidia_driver_installer_index_from_cache{reason="not_found"} 0' "$prom" ||
    fail "metrics: $(cat "$prom")"
fallback() {
    "$BIN" --root "$T/root" status --json |
        python3 -c 'import json,sys; f=json.load(sys.stdin)["repository_fallback"]; print(f and f["reason"])'
}
assert_eq "$(fallback)" "None" "status after a good run"

# A typo in the URL, over http and file://: the node keeps its driver, loudly.
for typo in "$HTTP/rpeo" "file://$T/srv/rpeo"; do
    expect_rc 0 install --repo "$typo" $(install_args) --metrics-file /var/lib/node_exporter/nvidia.prom
    expect_err "WARN  index: every mirror answered that it has no index.json: the repository URL is likely wrong"
    expect_err "check the URL in --repo (NVIDIA_DRIVER_REPO)"
    expect_err "repo=$typo"
    assert_eq "$(installed_version)" "$V_NEW" "still installed"
    assert_eq "$(fallback)" "not_found" "status --json repository_fallback"
    grep -qx 'nvidia_driver_installer_index_from_cache{reason="not_found"} 1' "$prom" ||
        fail "metrics: $(cat "$prom")"
done
"$BIN" --root "$T/root" status >"$T/status.txt"
grep -q "^index:.*node cache.*not_found" "$T/status.txt" || fail "status: $(cat "$T/status.txt")"

# The dry run's plan says where the index came from, and why.
expect_rc 0 install --repo "$HTTP/rpeo" $(install_args) --dry-run
expect_out "repository:  node cache, the mirrors' index unusable: not_found"

# doctor does not call a repository that answered from the cache ok.
expect_rc 9 doctor --repo "$HTTP/rpeo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
grep -q '^\[ok  \] repository' "$T/out" && fail "doctor: $(cat "$T/out")"
grep -q '^\[fail\] repository .*answered from the node.s cache' "$T/out" || fail "doctor: $(cat "$T/out")"
expect_out "check the URL"

# An outage is not a typo: it falls back as before, and says which.
dead="http://127.0.0.1:$(dead_port)/repo"
expect_rc 0 install --repo "$dead" $(install_args) --fetch-timeout 2
assert_eq "$(fallback)" "unreachable" "status after an outage"

# A good run clears it.
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --metrics-file /var/lib/node_exporter/nvidia.prom
assert_eq "$(fallback)" "None" "status after the URL is fixed"
grep -qx 'nvidia_driver_installer_index_from_cache{reason="not_found"} 0' "$prom" ||
    fail "metrics: $(cat "$prom")"

# Without a cache: exit 4, "check the URL".
expect_rc 4 install --repo "$HTTP/rpeo" $(install_args) --cache-dir /var/cache/other
expect_err "ERROR install: index: every mirror answered that it has no such file: .$HTTP/rpeo/index.json.: HTTP 404"
expect_err "fix: check the URL in --repo (NVIDIA_DRIVER_REPO)"
