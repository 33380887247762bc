# A package whose SHA-256 differs from the installed one is a new package, even when it
# carries the very version that is live: its modules are checked against --module-cert.
# A republished build of the live version with unsigned modules is refused (exit 5), and
# the verified install stays current, its package in the cache, its modules loaded.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_NEW:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_err "module signature verified (module=nvidia version=$V_NEW signer=Test modkey)"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "loaded version"
good=$(readlink "$(idir)/.current")

# The mirror republishes $V_NEW: same version, other bytes, modules unsigned.
rm -rf "$T/repo"
new_repo "$T/repo" "$V_NEW:default"
expect_rc 5 install --repo "file://$T/repo" $(kernel_args)
expect_err "module nvidia"
assert_eq "$(readlink "$(idir)/.current")" "$good" "the current version after the refusal"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "loaded version"
[ "$(ls "$(idir)/.versions")" = "${good#.versions/}" ] || fail "versions: $(ls "$(idir)/.versions")"
ls "$T/root/var/cache/nvidia-driver-installer/packages/" | grep "^$(sha256sum "$FIX/spkg-$V_NEW.tar.zst" | cut -c1-64)" >/dev/null ||
    fail "the verified package left the cache"

# A re-run against the verified package still skips re-reading the live modules.
rm -rf "$T/repo"
new_signed_repo "$T/repo" "$V_NEW:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_err "already installed (version=$V_NEW"
if grep -q "module signature verified" "$T/err"; then fail "a re-run read the live modules again"; fi
