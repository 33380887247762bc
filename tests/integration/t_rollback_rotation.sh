# A key rotation without a repository name is not a downgrade path: an index that names no
# "repository" is judged against the newest record of every key the node trusts, so while
# the rotation trusts two keys, a replayed older index signed by the other one is refused
# like one signed by the same key (t_rollback). A node that trusts several keys for an
# unnamed repository says so (log and doctor), and make-repo refuses to sign an unnamed
# index with a second key.
mkroot "$T/root"
keys=(--repo-key "$FIX/keys/other-pub.pem") # and install_args' pub.pem
# Yesterday's index, signed by the other key (the one the rotation retires or introduces).
new_repo "$T/repo" "$V_OLD:default"
"$SRC/scripts/make-repo" sign --repo "$T/repo" --key "$FIX/keys/other.pem" --new-key
cp "$T/repo/index.json" "$T/old.json"
cp "$T/repo/index.json.sig" "$T/old.json.sig"
old_gen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$T/old.json")
# Today's, signed by the first key, with the new driver as default. make-repo refuses a
# second key for an unnamed index unless told that it takes the repository over.
add_new() {
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
        --kernel "$KERNEL" --tag default "$@" "$FIX/pkg-$V_NEW.tar.zst" >"$T/make-repo.out" 2>&1
}
add_new && fail "make-repo signed an unnamed index with a second key"
grep -q "names no repository and its signature does not verify with $FIX/keys/key.pem: another key signed it" "$T/make-repo.out" ||
    fail "make-repo: $(cat "$T/make-repo.out")"
cmp -s "$T/repo/index.json" "$T/old.json" || fail "a refused make-repo add changed the index"
add_new --new-key || fail "make-repo add --new-key: $(cat "$T/make-repo.out")"
expect_rc 0 install --repo "file://$T/repo" $(install_args) "${keys[@]}"
assert_eq "$(installed_version)" "$V_NEW" "installed from the newer index"
expect_err "WARN  index: the index names no repository and several keys are trusted: anti-rollback judges it by the newest index any of them signed, so they must all sign this one repository (keys=2 fix=name the repository in its index ('make-repo sign --repository ID')"
new_gen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$T/repo/index.json")
cp "$T/repo/index.json" "$T/new.json"
cp "$T/repo/index.json.sig" "$T/new.json.sig"

# The replay, signed by the other trusted key: refused, the node keeps the newest index.
cp "$T/old.json" "$T/repo/index.json"
cp "$T/old.json.sig" "$T/repo/index.json.sig"
before=$(snapshot "$(idir)")
expect_rc 0 install --repo "file://$T/repo" $(install_args) "${keys[@]}"
expect_err "index generated $old_gen is older than the one generated $new_gen that this node accepted before"
expect_err "using the cached index"
assert_eq "$(installed_version)" "$V_NEW" "not rolled back by the other key's older index"
assert_eq "$(snapshot "$(idir)")" "$before" "install dir after a replay"
# Without a cached index to fall back on, the refusal is the run's cause.
rm -f "$T/root/var/cache/nvidia-driver-installer/index.json"
expect_rc 5 install --repo "file://$T/repo" $(install_args) "${keys[@]}"
expect_err "is older than the one generated $new_gen"

# doctor warns about the same (the current index again; the node has no GPU: exit 9).
cp "$T/new.json" "$T/repo/index.json"
cp "$T/new.json.sig" "$T/repo/index.json.sig"
expect_rc 9 doctor --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" "${keys[@]}" --kernel-release "$KERNEL"
expect_out "^\[warn\] repository keys the index names no repository"
expect_out "the index names no repository and several keys are trusted: .* (2 keys)"
