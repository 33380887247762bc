# mirror --to oci-layout:PATH[:TAG]: an OCI image layout (image-spec image-layout.md) holding
# the repository as the artifact docs/repository-format.md describes ("In an OCI registry"):
# the manifest's types, order and titles, the oci-layout file and index.json's ref.name; skopeo
# reads it; a re-run writes nothing new; a second tag keeps the first; a partial mirror lists
# only its packages; an older index is refused; a package failing its digest is never written.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD:default" "$V_NEW"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" "$FIX/spkg-$V_NEW.tar.zst" >/dev/null
cp -a "$T/srv/repo" "$T/old"
L="$T/layout"
mirror() {
    expect_rc "$1" mirror --from "file://$2" --repo-key "$FIX/keys/pub.pem" --to "oci-layout:$3" \
        "${@:4}"
}
mirror 0 "$T/srv/repo" "$L:v1"
expect_out "mirrored 3 package(s), 0 already present, to oci-layout:$L:v1"

# The layout and the manifest, field by field.
check_layout() { # check_layout LAYOUT TAG REPO KERNEL|all
    python3 "$SRC/tests/tools/oci-artifact.py" "$@" || fail "the layout $1:$2"
}
check_layout "$L" v1 "$T/srv/repo" all

# skopeo reads it (its oci: transport), byte for byte.
skopeo copy --quiet "oci:$L:v1" "oci:$T/copy:v1" || fail "skopeo could not read the layout"
assert_eq "$(skopeo inspect --raw "oci:$T/copy:v1" | sha256sum)" \
    "$(skopeo inspect --raw "oci:$L:v1" | sha256sum)" "the manifest as skopeo copied it"

# A re-run writes nothing: every blob is the file it was.
stamp() { (cd "$L" && find . -type f -printf '%p %i %T@\n' | sort); }
before=$(stamp)
mirror 0 "$T/srv/repo" "$L:v1"
expect_out "mirrored 0 package(s), 3 already present"
assert_eq "$(stamp)" "$before" "the layout after a re-run"

# A partial mirror under a second tag lists only its packages; the first tag stays.
mirror 0 "$T/srv/repo" "$L:k2" --kernel "$OTHER_KERNEL"
expect_out "mirrored 0 package(s), 1 already present"
check_layout "$L" k2 "$T/srv/repo" "$OTHER_KERNEL"
check_layout "$L" v1 "$T/srv/repo" all
# The default tag is latest.
mirror 0 "$T/srv/repo" "$L" --kernel "$KERNEL"
check_layout "$L" latest "$T/srv/repo" "$KERNEL"

# A newer index, then the older one: refused at the destination, the layout as it was.
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_BRANCH_OLD" \
    --kernel "$KERNEL" "$FIX/pkg-$V_BRANCH_OLD.tar.zst" >/dev/null
mirror 0 "$T/srv/repo" "$L:v1"
expect_out "mirrored 1 package(s), 3 already present"
cp "$L/index.json" "$T/index.before"
mirror 5 "$T/old" "$L:v1"
expect_err "is older than the one generated"
expect_err "that the mirror holds"
cmp "$L/index.json" "$T/index.before" || fail "a refused run changed index.json"
# Under another tag the older one is welcome (each tag is judged by what it holds).
mirror 0 "$T/old" "$L:old"

# One writer at a time: a mirror waits for the layout's lock (flock on its directory), and
# goes on once the holder lets go.
python3 -c 'import fcntl, os, sys, time
fcntl.flock(os.open(sys.argv[1], os.O_RDONLY), fcntl.LOCK_EX)
time.sleep(300)' "$L" &
holder=$!
trap 'kill "$holder" 2>/dev/null || true' EXIT
locked_by() { grep -Eq "^[0-9]+: $2FLOCK +ADVISORY +WRITE $1 " /proc/locks; }
wait_for "a process to hold $L's lock" 30 locked_by "$holder" ""
"$BIN" --root "$T/root" mirror --from "file://$T/srv/repo" --repo-key "$FIX/keys/pub.pem" \
    --to "oci-layout:$L:v1" >"$T/locked.out" 2>&1 &
waiter=$!
wait_for "the mirror to wait for the layout's lock" 30 locked_by "$waiter" "-> "
kill "$holder"
wait "$waiter" || fail "the mirror that waited: $(cat "$T/locked.out")"
grep -q "mirrored 0 package(s), 4 already present" "$T/locked.out" || fail "$(cat "$T/locked.out")"

# A package failing its digest never reaches the layout.
bad="$T/srv/repo/packages/$KERNEL/x86_64/nvidia-$V_BRANCH_OLD.tar.zst"
sha=$(sha256sum "$bad" | cut -d' ' -f1)
printf 'X' | dd of="$bad" bs=1 seek=100 conv=notrunc 2>/dev/null
mirror 5 "$T/srv/repo" "$T/fresh:v1"
expect_err "sha256 mismatch"
[ ! -e "$T/fresh/blobs/sha256/$sha" ] || fail "a package that failed its digest entered the layout"
[ ! -e "$T/fresh/index.json" ] || fail "a failed run wrote index.json"

# What is not a layout, or not a tag, is refused before anything is fetched.
mkdir "$T/other" && touch "$T/other/file"
mirror 2 "$T/srv/repo" "$T/other"
expect_err "is a directory that is not an OCI image layout (it has no oci-layout file)"
mirror 2 "$T/srv/repo" "$L:-x"
expect_err "the tag '-x' is not"
# A --to of another scheme is no destination (and is not made a directory named "https:").
expect_rc 2 mirror --from "file://$T/srv/repo" --repo-key "$FIX/keys/pub.pem" --to "https://mirror.example/x"
expect_err "mirror: --to 'https://mirror.example/x': not a directory, file://, oci:// or oci-layout: destination"
[ ! -e https: ] || fail "a directory named https: was made"
# file://DIR is the directory DIR.
expect_rc 0 mirror --from "file://$T/old" --repo-key "$FIX/keys/pub.pem" --to "file://$T/fdir"
cmp "$T/fdir/index.json" "$T/old/index.json" || fail "file:// --to: the index"
