# A repository that signs "max_age" into its index lets a node reuse the index it fetched:
# a re-run within max_age asks no mirror at all (the cached copy is verified again), and
# past it, with --index-max-age 0, with another mirror list, or with a damaged copy, the
# node asks again. Without max_age, every run asks.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD:default"
start_httpd "$T/srv"
rec="$T/root/var/cache/nvidia-driver-installer/index-fetched"
cached="$T/root/var/cache/nvidia-driver-installer/index.json"
index_requests() { served_requests '"/repo/index.json"'; }

# No max_age: no record, and a re-run asks.
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
[ ! -e "$rec" ] || fail "a record for an index without max_age"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(index_requests)" 1 "index requests of a re-run without max_age"

# The node may opt in with --index-max-age: the next run with it reuses the index.
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --index-max-age 60
[ -s "$rec" ] || fail "no record with --index-max-age 60"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --index-max-age 60
expect_err "cache (fresh)"
http_settle
assert_eq "$(wc -l <"$HTTP_LOG")" 0 "requests of a fresh re-run"

# The repository's max_age: a fresh re-run makes no request, and still sees what the
# index said when it was fetched, even after the repository changed.
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 300
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --index-max-age 0
grep -qx 'max_age 300' "$rec" || fail "record: $(cat "$rec")"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 300
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "already installed"
http_settle
assert_eq "$(wc -l <"$HTTP_LOG")" 0 "requests of a fresh re-run"
assert_eq "$(installed_version)" "$V_OLD" "version within max_age"

# Past max_age (the record says it was fetched 301 s ago), the node asks and upgrades.
sed -i "s/^fetched .*/fetched $(($(date +%s) - 301))/" "$rec"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(index_requests)" 1 "index requests past max_age"
assert_eq "$(installed_version)" "$V_NEW" "version past max_age"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
http_settle
assert_eq "$(wc -l <"$HTTP_LOG")" 0 "requests after the record was renewed"

# A record from the future (the clock went back) is not trusted to be young.
sed -i "s/^fetched .*/fetched $(($(date +%s) + 3600))/" "$rec"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(index_requests)" 1 "index requests with a record from the future"

# --index-max-age 0 asks, and does not spoil the record for the next run.
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --index-max-age 0
assert_eq "$(index_requests)" 1 "index requests with --index-max-age 0"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
http_settle
assert_eq "$(wc -l <"$HTTP_LOG")" 0 "requests after --index-max-age 0"

# Another mirror list is another source: ask.
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" --repo "$HTTP/mirror" $(install_args)
assert_eq "$(index_requests)" 1 "index requests with another mirror list"

# A damaged copy fails verification, with a warning, and the mirror is asked.
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
sed -i 's/default/defaulx/' "$cached"
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "cached index unusable"
assert_eq "$(index_requests)" 1 "index requests with a damaged copy"
cmp -s "$cached" "$T/srv/repo/index.json" || fail "the damaged copy was not replaced"

# With every mirror down, a fresh index still serves: no wait, no warning.
kill %1 2>/dev/null || true
wait 2>/dev/null || true
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --fetch-timeout 2
expect_err "cache (fresh)"
if grep -q "no repository answered" "$T/err"; then fail "asked a mirror"; fi

# The dry run shows where its index came from.
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --dry-run
expect_out "the node's copy, fetched"

# A version published after the node's copy was fetched is found all the same: no match in
# a fresh copy sends the node to the repository.
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" \
    --version "$V_BRANCH_OLD" --kernel "$KERNEL" "$FIX/pkg-$V_BRANCH_OLD.tar.zst" >/dev/null
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 300
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version "$V_BRANCH_OLD"
expect_err "no match in the node's copy of the index"
assert_eq "$(index_requests)" 1 "index requests for a version the copy lacks"
assert_eq "$(installed_version)" "$V_BRANCH_OLD" "version published after the copy"

# A package replaced under the same path within max_age: the copy's digest no longer
# matches what the mirror serves, so the node fetches the index and chooses again, once.
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "cache (fresh)"
cp -a "$FIX/drv-$V_OLD" "$T/drv2"
echo republished >"$T/drv2/share/republished"
"$SRC/scripts/make-repo" pack "$T/drv2" "$T/pkg2.tar.zst"
rel=$("$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" \
    --version "$V_OLD" --kernel "$KERNEL" "$T/pkg2.tar.zst")
# make-repo never writes over a file the index names (the new bytes got their digest in
# their name): a repository kept by other tools may, so the test does it by hand.
old=packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst
[ "$rel" != "$old" ] || fail "make-repo add wrote over $old"
mv "$T/srv/repo/$rel" "$T/srv/repo/$old"
edit_index "$T/srv/repo" '
for d in idx["drivers"]:
    for p in d["packages"]:
        if p["path"] == "'"$rel"'":
            p["path"] = "'"$old"'"
'
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 300
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version "$V_OLD"
expect_err "the package named by the node's copy of the index failed"
[ -f "$(idir)/share/republished" ] || fail "the republished package was not installed"

# An unreadable --ca-file is refused on a fresh run too, before anything happens.
expect_rc 2 install --repo "$HTTP/repo" $(install_args) --ca-file "$T/missing-ca.pem"
expect_err "ca-file"

# A new signing key: the copy does not verify with it, so the mirror is asked.
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/other.pem" --max-age 300 --new-key
http_log_reset
expect_rc 0 install --repo "$HTTP/repo" --repo-key "$FIX/keys/other-pub.pem" \
    --kernel-release "$KERNEL" --skip-modules --fetch-timeout 20
expect_err "cached index unusable"
assert_eq "$(index_requests)" 1 "index requests with a new key"
