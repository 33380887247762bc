# --dry-run resolves and prints the plan and changes nothing, on a fresh host and on an
# installed one.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default" "$V_NEW"
before=$(snapshot "$T/root")
expect_rc 0 install --repo "file://$T/repo" $(install_args) --dry-run
expect_out "plan (dry run, nothing changed)"
expect_out "request:     default -> driver $V_OLD"
expect_out "action:      download"
expect_out "installed:   nothing"
assert_eq "$(snapshot "$T/root")" "$before" "host root after a dry run"

expect_rc 0 install --repo "file://$T/repo" $(install_args)
before=$(snapshot "$T/root")
expect_rc 0 install --repo "file://$T/repo" $(install_args) --dry-run --driver-version latest
expect_out "installed:   $V_OLD for kernel $KERNEL"
expect_out "replacing the installed version"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --dry-run
expect_out "action:      none, already installed"
assert_eq "$(snapshot "$T/root")" "$before" "host root after dry runs"
