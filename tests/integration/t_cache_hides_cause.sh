# When the mirrors' index is refused and the node's cached index cannot serve the request, the
# run fails with the mirrors' cause (a signature that does not verify: exit 5; no mirror
# answering: exit 4), naming the mirror and that the cache was the fallback; not with the
# older cached index's "no driver matches" (exit 3), which hides why the new version is not
# there.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed"

# The repository publishes $V_NEW, and its index is tampered with on the way.
new_repo "$T/repo" "$V_NEW"
sed -i 's/"default"/"defaulx"/' "$T/repo/index.json"
expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW"
expect_err "ERROR install: index: file://$T/repo/index.json: index.json signature does not verify with any of the 1 trusted key(s); the node's cached index, the fallback, cannot serve the request: no driver in the repository matches version '$V_NEW'"
# The fix is the mirrors' (their index is what lacks), not a version the old copy offers.
expect_err "; fix: re-sign index.json with 'openssl dgst -sha256 -sign', or trust the signer's public key with --repo-key (exit 5)$"
[ "$(grep -c '^ERROR' "$T/err")" = 1 ] || fail "not one error line"
assert_eq "$(installed_version)" "$V_OLD" "kept"
# What the cached index serves still installs, with the warning.
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_OLD"
expect_err "using the cached index"

# No mirror answering, or every one without index.json: that is the cause (exit 4), not the
# cache's no-match.
dead="http://127.0.0.1:$(dead_port)/repo"
expect_rc 4 install --repo "$dead" $(install_args) --driver-version "$V_NEW" --fetch-retries 0 --fetch-timeout 3
expect_err "ERROR install: index: no repository answered after 1 attempt(s) in .*: '$dead/index.json': .*; the node's cached index, the fallback, cannot serve the request: no driver in the repository matches version '$V_NEW'.*(exit 4)$"
expect_rc 4 install --repo "file://$T/gone" $(install_args) --driver-version "$V_NEW" --fetch-retries 0
expect_err "ERROR install: index: every mirror answered that it has no such file: 'file://$T/gone/index.json'.*; the node's cached index, the fallback, cannot serve the request: no driver in the repository matches version '$V_NEW'.*(exit 4)$"

# A request the cached index cannot satisfy for another reason (no package for this kernel)
# names the mirrors' cause too.
expect_rc 5 install --repo "file://$T/repo" $(install_args) --kernel-release "$OTHER_KERNEL" --driver-version "$V_OLD"
expect_err "ERROR install: index: file://$T/repo/index.json: index.json signature does not verify with any of the 1 trusted key(s); the node's cached index, the fallback, cannot serve the request: driver $V_OLD has no package for kernel $OTHER_KERNEL"
assert_eq "$(installed_version)" "$V_OLD" "kept"

# coverage answers the same question as install, so it names the same cause.
expect_rc 5 coverage --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --root "$T/root" --os cos --kernel "$KERNEL" --driver-version "$V_NEW"
expect_err "ERROR coverage: .*index.json signature does not verify with any of the 1 trusted key(s); the node's cached index, the fallback, cannot serve the request: no driver in the repository matches version '$V_NEW'"
