# Selection failures exit 3 with a message that names what is missing.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default" "$V_OLD"

expect_rc 3 install --repo "file://$T/repo" $(install_args) --driver-version 999.1.1
expect_err "no driver in the repository matches version '999.1.1'"
# ... and says what there is, and what of it this host's kernel has.
expect_err "it has versions $V_NEW, $V_OLD (branches 550, 535; tags default), of which these have a package for kernel $KERNEL: $V_NEW, $V_OLD; fix: pass one of those"
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

# list-versions still lists, and exits 3 when nothing is installable (text and --json).
list=(list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$OTHER_KERNEL")
expect_rc 3 "${list[@]}"
expect_out "^$V_NEW .*excluded: no package for kernel $OTHER_KERNEL"
expect_err "nothing is installable on this host: no driver in the repository has a package for kernel $OTHER_KERNEL"
expect_rc 3 "${list[@]}" --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert len(o["versions"]) == 2 and not any(v["installable"] for v in o["versions"]), o' "$T/out" ||
    fail "list-versions --json: $(cat "$T/out")"
expect_rc 0 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
# A mirror that keeps the index but none of the packages serves nothing either.
cp -a "$T/repo" "$T/bare" && rm -r "$T/bare/packages"
expect_rc 3 list-versions --repo "file://$T/bare" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_err "no mirror carries the packages the index names for kernel $KERNEL"

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
