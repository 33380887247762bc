# Selection failures exit 3 with a message that names what is missing.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default" "$V_OLD"

expect_rc 3 install --repo "file://$T/repo" $(install_args) --driver-version 999.1.1
expect_err "no driver in the repository matches version '999.1.1'"
expect_rc 3 install --repo "file://$T/repo" $(install_args) --driver-version 470

# No package for this kernel: the message lists the kernels that have one.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel 6.1.0-99-amd64 "$FIX/pkg-$V_OLD.tar.zst" >/dev/null
expect_rc 3 install --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --skip-modules \
    --kernel-release "$OTHER_KERNEL"
expect_err "the default driver $V_NEW has no package for kernel $OTHER_KERNEL"
expect_err "packages exist for kernels: $KERNEL"
expect_rc 3 install --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --skip-modules \
    --kernel-release "$OTHER_KERNEL" --driver-version "$V_OLD"
expect_err "driver $V_OLD has no package for kernel $OTHER_KERNEL"
expect_err "packages exist for kernels: $KERNEL, 6.1.0-99-amd64"
expect_rc 3 install --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --skip-modules \
    --kernel-release "$OTHER_KERNEL" --driver-version latest
expect_err "no driver in the repository has a package"

# No driver tagged default.
edit_index "$T/repo" 'for d in idx["drivers"]: d.pop("tags", None)'
expect_rc 3 install --repo "file://$T/repo" $(install_args)
expect_err "no driver in the repository is tagged 'default'"

# An index in another format is refused by name (on a node without a cached index to use
# instead: t_mirror_behind).
edit_index "$T/repo" 'idx["format"] = 2'
expect_rc 5 install --repo "file://$T/repo" $(install_args) --cache-dir /var/cache/empty
expect_err "format 2 is not supported"
# A malformed but signed index is refused, not half-read.
edit_index "$T/repo" 'idx["format"] = 1; idx["drivers"][0]["packages"][0]["path"] = "../../etc/passwd"'
expect_rc 5 install --repo "file://$T/repo" $(install_args) --cache-dir /var/cache/empty
expect_err "must be relative"
[ ! -e "$(idir)/.current" ] || fail "something was installed"
