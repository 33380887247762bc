# An index whose signature does not verify is refused before it is parsed; nothing changes.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
before=$(snapshot "$T/root/$IDIR_REL")

# Tampered index (signature left as it was). Refused; a node with a cached index would use
# that instead (t_mirror_behind), so these runs have none.
sed -i 's/"default"/"defaulx"/' "$T/repo/index.json"
expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version latest --cache-dir /var/cache/empty
expect_err "signature does not verify"
expect_err "fix:"

# Signed by a key that is not trusted.
"$SRC/scripts/make-repo" sign --repo "$T/repo" --key "$FIX/keys/other.pem" --new-key
expect_rc 5 install --repo "file://$T/repo" $(install_args) --cache-dir /var/cache/empty
expect_err "signature does not verify with any of the 1 trusted key"
# ... and accepted once that key is trusted too.
expect_rc 0 install --repo "file://$T/repo" $(install_args) --repo-key "$FIX/keys/other-pub.pem" --driver-version "$V_OLD"

# Missing signature: the mirror is unusable.
rm "$T/repo/index.json.sig"
expect_rc 4 install --repo "file://$T/repo" $(install_args) --fetch-retries 0 --cache-dir /var/cache/empty
assert_eq "$(snapshot "$T/root/$IDIR_REL")" "$before" "install dir after refusals"
