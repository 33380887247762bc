# mirror: the signed index byte for byte and exactly the packages asked for, each verified;
# the result installs over file:// and over a static HTTP server; a re-run fetches only
# what is missing; a tampered package on the source is refused.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD:default" "$V_NEW" "$V_BRANCH_OLD"
for v in "$V_OLD" "$V_NEW"; do
    "$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$OTHER_KERNEL" "$FIX/pkg-$v.tar.zst" >/dev/null
done
# A version that is listed means itself: 550.90.07 does not bring 550.90.07.1 along.
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW.1" \
    --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
start_httpd "$T/srv"
M="$T/mirror"
expect_rc 0 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$M" --kernel "$KERNEL" \
    --driver-version default --driver-version "$V_NEW"
expect_out "mirrored 2 package(s), 0 already present"
cmp "$M/index.json" "$T/srv/repo/index.json" || fail "index changed"
cmp "$M/index.json.sig" "$T/srv/repo/index.json.sig" || fail "signature changed"
assert_eq "$(cd "$M" && find packages -type f | sort | tr '\n' ' ')" \
    "packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst packages/$KERNEL/x86_64/nvidia-$V_NEW.tar.zst " \
    "mirrored files"
openssl dgst -sha256 -verify "$FIX/keys/pub.pem" -signature "$M/index.json.sig" "$M/index.json" >/dev/null ||
    fail "the mirror's signature does not verify"

# The mirror is a repository: file:// and a static server.
expect_rc 0 install --repo "file://$M" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed from the mirror"
start_httpd "$T" static
expect_rc 0 install --repo "$HTTP/mirror" $(install_args) --driver-version "$V_NEW"
assert_eq "$(installed_version)" "$V_NEW" "installed from the mirror over HTTP"

# A re-run fetches nothing new; adding a kernel fetches only its packages.
start_httpd "$T/srv" src2
expect_rc 0 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$M" --kernel "$KERNEL" \
    --driver-version default --driver-version "$V_NEW"
expect_out "mirrored 0 package(s), 2 already present"
assert_eq "$(served_requests .tar.zst)" 0 "package requests on a re-run"
expect_rc 0 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$M" --kernel "$KERNEL" \
    --kernel "$OTHER_KERNEL" --driver-version default --driver-version "$V_NEW"
expect_out "mirrored 2 package(s), 2 already present"
assert_eq "$(served_requests "/$OTHER_KERNEL/")" 2 "requests for the new kernel's packages"

# A corrupted mirror copy is fetched again; a tampered source is refused.
pkg="$M/packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst"
printf 'X' | dd of="$pkg" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_rc 0 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$M" --kernel "$KERNEL" \
    --driver-version "$V_OLD"
expect_out "mirrored 1 package(s), 0 already present"
printf 'X' | dd of="$T/srv/repo/packages/$KERNEL/x86_64/nvidia-$V_BRANCH_OLD.tar.zst" bs=1 seek=100 \
    conv=notrunc 2>/dev/null
expect_rc 5 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$M" --driver-version 535.183
expect_err "sha256 mismatch"
[ ! -e "$M/packages/$KERNEL/x86_64/nvidia-$V_BRANCH_OLD.tar.zst" ] || fail "a bad package entered the mirror"
# A wrong signature: nothing is written.
expect_rc 5 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/other-pub.pem" --to "$T/m2"
[ ! -e "$T/m2/index.json" ] || fail "an unverified index was mirrored"
# A kernel the index lacks is refused, naming those it has, before anything is copied
# (also when another --kernel given is there).
expect_rc 3 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$T/m3" --kernel 9.9.9
expect_err "mirror: the index has no package for kernel '9.9.9'; it has kernels: "
expect_err "$KERNEL"
expect_err "$OTHER_KERNEL"
expect_rc 3 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$T/m3" --kernel "$KERNEL" --kernel 9.9.9
[ -z "$(ls -A "$T/m3")" ] || fail "a refused mirror run copied: $(ls -A "$T/m3")"
expect_rc 2 mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem"
expect_err "--to DIR is required"
