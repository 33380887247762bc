# Upgrading replaces the old version atomically and removes it afterwards.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default" "$V_NEW"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "first install"
old_target=$(readlink "$(idir)/.current")
# A process holding the old libcuda open keeps working across the switch.
exec 3<"$(idir)/lib64/libcuda.so.1"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version latest
assert_eq "$(installed_version)" "$V_NEW" "after upgrade"
expect_err "previous=$V_OLD"
[ "$(readlink "$(idir)/.current")" != "$old_target" ] || fail ".current did not switch"
[ ! -e "$(idir)/$old_target" ] || fail "old version left behind"
assert_eq "$(ls "$(idir)/.versions" | wc -l)" 1 "versions kept"
head -c 4 <&3 | grepq ELF || fail "open old library unreadable after the switch"
exec 3<&-
"$(idir)/bin/nvidia-smi" | grepq "$V_NEW" || fail "new nvidia-smi"
# And back down to an explicit version.
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_OLD"
assert_eq "$(installed_version)" "$V_OLD" "explicit downgrade"
