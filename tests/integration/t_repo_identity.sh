# Anti-rollback belongs to the repository, not to the key: an index names its repository
# ("repository", signed), and the node's record is kept under that name. An older index of
# the same repository signed by another trusted key (a key rotation) is a replay; two
# repositories signed with one key do not refuse each other; the repository's own older
# indexes from before it named itself stay refused; `mirror` refuses to replace a newer
# index in its target the same way.
mkroot "$T/root"
cache="$T/root/var/cache/nvidia-driver-installer"
gen() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$1"; }
fpr_of() {
    openssl pkey -pubin -in "$1" -outform DER | sha256sum | cut -c1-16
}
# One key file, both keys: the rotation's old and new key are trusted together.
cat "$FIX/keys/pub.pem" "$FIX/keys/other-pub.pem" >"$T/both.pem"
args=(--repo-key "$T/both.pem" --kernel-release "$KERNEL" --skip-modules --fetch-timeout 20)

# A repository without an identity: its last index before it named itself, signed by key A.
new_repo "$T/legacy" "$V_OLD:default"
legacy_gen=$(gen "$T/legacy/index.json")

# Repository pool-c, signed by key A, generated before pool-a's indexes.
mkdir -p "$T/pool-c"
"$SRC/scripts/make-repo" add --repo "$T/pool-c" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" --tag default --repository example.com/nvidia/pool-c \
    "$FIX/pkg-$V_OLD.tar.zst" >/dev/null
c_gen=$(gen "$T/pool-c/index.json")

# Repository pool-a: an index signed by key A (kept: the replay), then the key rotates to B.
new_repo "$T/pool-a" "$V_OLD:default"
"$SRC/scripts/make-repo" sign --repo "$T/pool-a" --key "$FIX/keys/key.pem" \
    --repository example.com/nvidia/pool-a
cp -a "$T/pool-a" "$T/pool-a-old"
old_gen=$(gen "$T/pool-a-old/index.json")
"$SRC/scripts/make-repo" add --repo "$T/pool-a" --key "$FIX/keys/other.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
new_gen=$(gen "$T/pool-a/index.json")
grep -q '"repository": "example.com/nvidia/pool-a"' "$T/pool-a/index.json" ||
    fail "make-repo add dropped the identity"

# The node takes pool-a's current index, signed by the new key B.
inst install --repo "file://$T/pool-a" "${args[@]}"
[ "$RC" = 0 ] || fail "install from pool-a: $(cat "$T/err")"
assert_eq "$(installed_version)" "$V_NEW" "installed from pool-a"
expect_err "index verified (source=file://$T/pool-a key=$(fpr_of "$FIX/keys/other-pub.pem") repository=example.com/nvidia/pool-a"
grep -q "^repository:example.com/nvidia/pool-a [0-9]* $new_gen\$" "$cache/index-times" ||
    fail "no record under the repository: $(cat "$cache/index-times")"

# The replay: pool-a's older index, genuinely signed by the old key A, which the node has
# never seen sign anything. Refused: same repository (the node keeps its cached index).
before=$(snapshot "$(idir)")
expect_rc 0 install --repo "file://$T/pool-a-old" "${args[@]}"
expect_err "using the cached index"
expect_err "index generated $old_gen is older than the one generated $new_gen that this node accepted before (repository example.com/nvidia/pool-a): a replayed or stale index"
expect_err "fix: resync the stale mirror from its repository"
assert_eq "$(snapshot "$(idir)")" "$before" "install dir after a replay"

# Repository pool-b, signed by key A, newer than everything: accepted, and then pool-c,
# signed by the same key A but older, is accepted too: another repository.
mkdir -p "$T/pool-b"
"$SRC/scripts/make-repo" add --repo "$T/pool-b" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default --repository example.com/nvidia/pool-b \
    "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
b_gen=$(gen "$T/pool-b/index.json")
expect_rc 0 install --repo "file://$T/pool-b" "${args[@]}"
expect_rc 0 install --repo "file://$T/pool-c" "${args[@]}"
assert_eq "$(installed_version)" "$V_OLD" "installed from pool-c"
grep -q "^repository:example.com/nvidia/pool-c [0-9]* $c_gen\$" "$cache/index-times" ||
    fail "no record for pool-c: $(cat "$cache/index-times")"

# An index without an identity is judged by its key, whose record every named index it
# signed raised: the repository's own older, unnamed indexes stay refused.
expect_rc 0 install --repo "file://$T/legacy" "${args[@]}"
expect_err "using the cached index"
expect_err "index generated $legacy_gen is older than the one generated $b_gen that this node accepted before (key $(fpr_of "$FIX/keys/pub.pem"))"

# mirror: a stale source does not replace the newer index of the same repository in the
# target; the override does, with a warning; another repository's index replaces it.
M="$T/mirror"
expect_rc 0 mirror --repo "file://$T/pool-a" --repo-key "$T/both.pem" --to "$M"
cp "$M/index.json" "$T/m-before.json"
expect_rc 5 mirror --repo "file://$T/pool-a-old" --repo-key "$T/both.pem" --to "$M"
expect_err "mirror: '$M': index generated $old_gen is older than the one generated $new_gen that the mirror holds (repository example.com/nvidia/pool-a)"
expect_err "fix: resync the stale mirror from its repository"
cmp -s "$M/index.json" "$T/m-before.json" || fail "a stale index replaced the mirror's"
expect_rc 0 mirror --repo "file://$T/pool-a-old" --repo-key "$T/both.pem" --to "$M" \
    --allow-index-rollback
expect_err "WARN  mirror: replacing the mirror's index with an older one"
cmp -s "$M/index.json" "$T/pool-a-old/index.json" || fail "the override did not replace the index"
expect_rc 0 mirror --repo "file://$T/pool-c" --repo-key "$T/both.pem" --to "$M"
cmp -s "$M/index.json" "$T/pool-c/index.json" || fail "another repository's index was refused"

# A malformed identity is refused like a forged index.
edit_index "$T/pool-b" 'idx["repository"] = "pool b"'
expect_rc 0 install --repo "file://$T/pool-b" "${args[@]}"
expect_err "using the cached index"
expect_err '"repository" must be 1 to 128 letters, digits or ._-:/'
echo "repo-identity: $(grep -c . "$cache/index-times") records ($(cut -d' ' -f1 "$cache/index-times" | tr '\n' ' '))"
