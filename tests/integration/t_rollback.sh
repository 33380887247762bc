# Anti-rollback: a replayed older index (validly signed) does not downgrade a node; the
# record is per repository (here, without a "repository" identity: per signing key, see
# t_repo_identity), kept in the node cache, and only an explicit override goes back.
mkroot "$T/root"
cache="$T/root/var/cache/nvidia-driver-installer"
new_repo "$T/repo" "$V_OLD:default"
cp "$T/repo/index.json" "$T/old.json"
cp "$T/repo/index.json.sig" "$T/old.json.sig"
old_gen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$T/old.json")
new_repo "$T/repo" "$V_NEW:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed from the newer index"
new_gen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$T/repo/index.json")
grep -q " $new_gen\$" "$cache/index-times" || fail "the newest time is not recorded: $(cat "$cache/index-times")"

# The replay: yesterday's index and its genuine signature, which names the old driver default.
# Refused; the node keeps the newest index it accepted, from its cache, with a warning (a
# mirror that is behind is no worse than none: t_mirror_behind).
cp "$T/old.json" "$T/repo/index.json"
cp "$T/old.json.sig" "$T/repo/index.json.sig"
before=$(snapshot "$(idir)")
expect_rc 0 install --repo "file://$T/repo" $(install_args)
expect_err "using the cached index"
expect_err "index generated $old_gen is older than the one generated $new_gen that this node accepted before"
expect_err "fix: resync the stale mirror from its repository ('nvidia-driver-installer mirror'), or have the repository re-sign its current index ('make-repo sign')"
assert_eq "$(snapshot "$(idir)")" "$before" "install dir after a replay"
expect_rc 0 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_err "a replayed or stale index"
expect_out "$V_NEW .*installable (default)"

# A second mirror with the current index is used instead of the stale one.
mkdir -p "$T/fresh"
new_repo "$T/fresh" "$V_NEW:default"
expect_rc 0 install --repo "file://$T/repo" --repo "file://$T/fresh" $(install_args)
expect_err "index verified (source=file://$T/fresh"
new_gen=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generated"])' "$T/fresh/index.json")

# An index without "generated" is a replay too, once a time is on record for its key.
python3 - "$T/old.json" "$T/repo/index.json" <<'EOF'
import json, sys
idx = json.load(open(sys.argv[1]))
del idx["generated"]
open(sys.argv[2], "w").write(json.dumps(idx))
EOF
openssl dgst -sha256 -sign "$FIX/keys/key.pem" -out "$T/repo/index.json.sig" "$T/repo/index.json"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
expect_err "using the cached index"
expect_err "index has no \"generated\" time, so it is older than the one generated $new_gen that this node accepted before"

# The override goes back, says so, and leaves the record as it was.
cp "$T/old.json" "$T/repo/index.json"
cp "$T/old.json.sig" "$T/repo/index.json.sig"
NVIDIA_ALLOW_INDEX_ROLLBACK=1 expect_rc 0 install --repo "file://$T/repo" $(install_args)
expect_err "WARN  index: accepting an index older than one accepted before (generated=$old_gen accepted=$new_gen"
assert_eq "$(installed_version)" "$V_OLD" "rolled back on purpose"
grep -q " $new_gen\$" "$cache/index-times" || fail "the override lowered the record"

# Another key's repository has a record of its own.
"$SRC/tests/tools/make-module-key" "other repository" "$T/other" >/dev/null
openssl pkey -in "$T/other.pem" -pubout -out "$T/other-pub.pem"
mkdir -p "$T/repo2"
"$SRC/scripts/make-repo" add --repo "$T/repo2" --key "$T/other.pem" --version "$V_OLD" \
    --kernel "$KERNEL" --tag default "$FIX/pkg-$V_OLD.tar.zst" >/dev/null
expect_rc 0 install --repo "file://$T/repo2" --repo-key "$T/other-pub.pem" --kernel-release "$KERNEL" --skip-modules
assert_eq "$(grep -c . "$cache/index-times")" 2 "one record per key"

# A dry run checks but records nothing; a malformed time is refused like a forged index.
new_repo "$T/repo" "$V_NEW:default"
cp "$cache/index-times" "$T/times-before"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --dry-run
cmp -s "$cache/index-times" "$T/times-before" || fail "a dry run changed the record"
python3 - "$T/repo/index.json" <<'EOF'
import json, sys
idx = json.load(open(sys.argv[1]))
idx["generated"] = "2026-02-30T00:00:00Z"
open(sys.argv[1], "w").write(json.dumps(idx))
EOF
openssl dgst -sha256 -sign "$FIX/keys/key.pem" -out "$T/repo/index.json.sig" "$T/repo/index.json"
expect_rc 5 install --repo "file://$T/repo" $(install_args)
expect_err "\"generated\" is not a UTC time like 2026-11-30T04:13:03Z"
