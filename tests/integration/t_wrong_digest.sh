# A package whose bytes do not match the signed digest or size is never published.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default" "$V_NEW"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
before=$(snapshot "$T/root/$IDIR_REL")
edit_index "$T/repo" '
for d in idx["drivers"]:
    if d["version"] == "'"$V_NEW"'":
        p = d["packages"][0]
        p["sha256"] = ("0" if p["sha256"][0] != "0" else "1") + p["sha256"][1:]
'
expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version latest
expect_err "sha256 mismatch"
assert_eq "$(snapshot "$T/root/$IDIR_REL")" "$before" "install dir after digest failure"
assert_eq "$(installed_version)" "$V_OLD" "still installed"
ls "$T/root/var/cache/nvidia-driver-installer/packages/" | grep -v "$(sha256sum "$FIX/pkg-$V_OLD.tar.zst" | cut -c1-64)" |
    grepq pkg && fail "a bad package entered the cache"

# Wrong size: the index promises fewer bytes than the file has.
edit_index "$T/repo" '
for d in idx["drivers"]:
    if d["version"] == "'"$V_NEW"'":
        import hashlib
        p = d["packages"][0]
        p["sha256"] = hashlib.sha256(open("'"$T/repo/"'" + p["path"], "rb").read()).hexdigest()
        p["size"] -= 100
'
expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version latest
expect_err "larger than"
assert_eq "$(installed_version)" "$V_OLD" "still installed after size mismatch"
