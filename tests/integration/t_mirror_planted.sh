# mirror --to writes only its own files, and says "mirror complete" only for a mirror a
# node can install from. A destination left half-written, or with things planted in it: a
# hard link at a package's .part (a file outside the mirror would receive the package), a
# symlink or a FIFO there or at the package itself (a FIFO made the old reader wait for a
# writer forever: hence the timeout), a packages/ link that leads out of it (the copy lands
# inside --to, where no node looks: refused, exit 2, and no index published).
new_repo "$T/srv/repo" "$V_OLD:default"
SRCREPO="file://$T/srv/repo"
PKG="packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst"
mirror_to() {
    set +e
    timeout 60 "$BIN" mirror --repo "$SRCREPO" --repo-key "$FIX/keys/pub.pem" --to "$1" \
        --kernel "$KERNEL" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
mirrored() { cmp -s "$1/$PKG" "$T/srv/repo/$PKG" || fail "$1: the package is not the source's"; }

# A hard link at the .part: the name is replaced, the file it shares is not written.
M="$T/m1"
mkdir -p "$(dirname "$M/$PKG")"
echo precious >"$T/outside"
ln "$T/outside" "$M/$PKG.part"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "a hard link at the .part: exit $RC"; }
outside_kept() { cmp -s "$T/outside" - <<<precious || fail "$1: $T/outside was written ($(stat -c %s "$T/outside") bytes)"; }
outside_kept "a hard link at the .part"
mirrored "$M"
[ ! -e "$M/$PKG.part" ] || fail "a .part was left"

# A symlink at the .part, a FIFO at the package and at the .part: replaced, not followed or read.
M="$T/m2"
mkdir -p "$(dirname "$M/$PKG")"
ln -s "$T/outside" "$M/$PKG.part"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "a symlink at the .part: exit $RC"; }
outside_kept "a symlink at the .part"
mirrored "$M"
rm "$M/$PKG"
mkfifo "$M/$PKG" "$M/$PKG.part"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "FIFOs at the package and its .part: exit $RC"; }
expect_out "mirrored 1 package(s), 0 already present"
mirrored "$M"

# A .part an interrupted run left, ours alone: resumed, and the result verified.
M="$T/m3"
mkdir -p "$(dirname "$M/$PKG")"
head -c 1000 "$T/srv/repo/$PKG" >"$M/$PKG.part"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "a partial .part: exit $RC"; }
mirrored "$M"
# ... and one holding other bytes is not published as the package.
head -c 1000 /dev/zero >"$M/$PKG.part"
rm "$M/$PKG"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "a .part with other bytes: exit $RC"; }
mirrored "$M"

# packages/ planted as a link out of --to (absolute, and relative past its top): the
# copy stays inside --to, where no node looks, so the mirror is refused and gets no index.
for target in "$T/elsewhere" ../elsewhere; do
    rm -rf "$T/m4" "$T/elsewhere"
    mkdir -p "$T/m4" "$T/elsewhere"
    ln -s "$target" "$T/m4/packages"
    mirror_to "$T/m4"
    [ "$RC" = 2 ] || { cat "$T/err"; fail "packages -> $target: exit $RC, expected 2"; }
    expect_err "ERROR mirror: mirror: '$T/m4/$PKG' does not read back as the package copied there (No such file or directory): a node would not get it from this mirror; fix: remove the link planted in '$T/m4'"
    [ ! -e "$T/m4/index.json" ] || fail "packages -> $target: an index was published"
    [ -z "$(ls -A "$T/elsewhere")" ] || fail "packages -> $target: written outside --to: $(ls -A "$T/elsewhere")"
    if grep -q "mirror complete" "$T/err"; then fail "packages -> $target: said complete"; fi
done
# The link removed, the same run completes, and the mirror installs.
rm "$T/m4/packages"
mirror_to "$T/m4"
[ "$RC" = 0 ] || { cat "$T/err"; fail "after the link was removed: exit $RC"; }
mirrored "$T/m4"
mkroot "$T/root"
expect_rc 0 install --repo "file://$T/m4" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed from the mirror"

# An index.json in --to that is a FIFO: not waited on, replaced by the source's.
M="$T/m6"
mkdir -p "$M"
mkfifo "$M/index.json"
mirror_to "$M"
[ "$RC" = 0 ] || { cat "$T/err"; fail "a FIFO at --to's index.json: exit $RC"; }
cmp -s "$M/index.json" "$T/srv/repo/index.json" || fail "the FIFO at index.json was not replaced"
mirrored "$M"

# A hostile source: a FIFO where the file:// repository's package should be. Refused
# without opening it (exit 4, naming it); nothing is published in --to.
mv "$T/srv/repo/$PKG" "$T/pkg.keep"
mkfifo "$T/srv/repo/$PKG"
mirror_to "$T/m7"
[ "$RC" = 4 ] || { cat "$T/err"; fail "a FIFO at the source's package: exit $RC, expected 4"; }
expect_err "'$SRCREPO/$PKG' is not a regular file"
[ ! -e "$T/m7/index.json" ] || fail "an index was published for a mirror without its package"
rm "$T/srv/repo/$PKG"
mv "$T/pkg.keep" "$T/srv/repo/$PKG"

# A file where the mirror needs a directory (a copy of another tree left there): exit 2,
# naming it and the fix; nothing published.
mkdir -p "$T/m8/packages"
echo stray >"$T/m8/packages/$KERNEL"
mirror_to "$T/m8"
[ "$RC" = 2 ] || { cat "$T/err"; fail "a file at packages/$KERNEL: exit $RC, expected 2"; }
expect_err "Not a directory; fix: remove the file in '$T/m8' that stands where 'packages/$KERNEL/x86_64' needs a directory, then run mirror again"
[ ! -e "$T/m8/index.json" ] || fail "an index was published over a stray file"
