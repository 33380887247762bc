# A partial mirror (mirror --kernel ... --driver-version ...) keeps the full signed index:
# list-versions does not call a version installable that no mirror carries (it asks with a
# HEAD request, or a stat for file://), and install says "this mirror does not carry that
# package" and tries the next mirror; when none carries it, exit 4 saying so.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD" "$V_NEW:default"
start_httpd "$T/srv"
P="$T/srv/partial"
expect_rc 0 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$P" --kernel "$KERNEL" \
    --driver-version "$V_OLD"
[ ! -e "$P/packages/$KERNEL/x86_64/nvidia-$V_NEW.tar.zst" ] || fail "the mirror is not partial"
list() { expect_rc 0 list-versions --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" "$@"; }
installable() {
    python3 -c 'import json,sys; print(" ".join(v["version"] for v in json.load(open(sys.argv[1]))["versions"] if v["installable"]))' "$T/out"
}

# list-versions over http and file://: the version the mirror lacks is not installable.
for m in "$HTTP/partial" "file://$P"; do
    list --repo "$m" --json
    assert_eq "$(installable)" "$V_OLD" "installable from $m"
    grep -q "\"reason\": \"no mirror carries its package" "$T/out" || fail "no reason: $(cat "$T/out")"
    list --repo "$m"
    expect_out "^$V_NEW .*excluded: no mirror carries its package"
    expect_out "^$V_OLD .*installable"
done
echo "partial-mirror: list-versions asked $(grep -c '"method": "HEAD"' "$HTTP_LOG") HEAD request(s) in all over http"
# With the full repository as a second mirror, both are.
list --repo "$HTTP/partial" --repo "$HTTP/repo" --json
assert_eq "$(installable)" "$V_NEW $V_OLD" "installable from both mirrors"

# doctor does not call the repository ok when no mirror carries the package chosen.
expect_rc 9 doctor --repo "$HTTP/partial" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "^\[fail\] repository .*driver $V_NEW has a package for kernel $KERNEL in the index, but no mirror carries it"
expect_out "fix: add it to the mirror ('nvidia-driver-installer mirror --kernel $KERNEL --driver-version $V_NEW')"
inst doctor --repo "$HTTP/partial" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_OLD"
expect_out "^\[ok  \] repository .*driver $V_OLD has a package"

# install: the partial mirror says it does not carry the default; the next mirror serves it.
expect_rc 0 install --repo "$HTTP/partial" --repo "$HTTP/repo" $(install_args)
expect_err "'$HTTP/partial/packages/$KERNEL/x86_64/nvidia-$V_NEW.tar.zst': HTTP 404: this mirror does not carry that package"
assert_eq "$(installed_version)" "$V_NEW" "installed from the second mirror"
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"

# Only the partial mirror: exit 4, naming the package and the fix.
expect_rc 4 install --repo "file://$P" $(install_args)
expect_err "no mirror carries package 'packages/$KERNEL/x86_64/nvidia-$V_NEW.tar.zst'"
expect_err "fix: .*mirror --kernel $KERNEL --driver-version $V_NEW"
# ... and the version it carries installs.
expect_rc 0 install --repo "file://$P" $(install_args) --driver-version "$V_OLD"
assert_eq "$(installed_version)" "$V_OLD" "installed from the partial mirror"
