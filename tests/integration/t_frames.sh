# Packages written as independent zstd frames (make-repo pack) are read by zstd and tar as
# one stream, and installed frame by frame on every core, streamed from a mirror and from
# the node cache, into the same tree as the same package written as one frame; a frame
# damaged in a package whose digest is right is refused by name with the install as it
# was; a package with a skippable frame and frames of undeclared size installs too.
mkroot "$T/root"
cp -a "$FIX/drv-$V_NEW" "$T/drv"
# 12 MiB of firmware that compresses (text) and 4 MiB that does not.
python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(400000):
        f.write("firmware line %08d of a driver that compresses\n" % i)
' "$T/drv/firmware/nvidia/$V_NEW/text.bin"
head -c $((4 << 20)) /dev/urandom >"$T/drv/firmware/nvidia/$V_NEW/noise.bin"
"$SRC/scripts/make-repo" pack --frame-size 1 "$T/drv" "$T/framed.tar.zst"
"$SRC/scripts/make-repo" pack --frame-size 0 "$T/drv" "$T/single.tar.zst"
frames=$(zstd -lv "$T/framed.tar.zst" 2>&1 | sed -n 's/^# Zstandard Frames: //p')
[ "$frames" -ge 16 ] || fail "make-repo pack --frame-size 1 wrote $frames frames"
assert_eq "$(zstd -lv "$T/single.tar.zst" 2>&1 | sed -n 's/^# Zstandard Frames: //p')" 1 "frames of --frame-size 0"
# One stream to zstd and tar: the same tar as the single frame's.
cmp <(zstd -dcq "$T/framed.tar.zst") <(zstd -dcq "$T/single.tar.zst") ||
    fail "the framed package's tar differs from the single frame's"
tar --zstd -tf "$T/framed.tar.zst" >/dev/null || fail "tar cannot read the framed package"
echo "packages: $frames frames $(stat -c %s "$T/framed.tar.zst") bytes, one frame $(stat -c %s "$T/single.tar.zst") bytes"

mkdir -p "$T/srv/repo"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$T/framed.tar.zst" >/dev/null
start_httpd "$T/srv"

# unpacked_from: the frames the log says were cut, and the files as the source has them.
installed_as_source() {
    local d
    d=$(idir)
    for f in text.bin noise.bin; do
        cmp -s "$T/drv/firmware/nvidia/$V_NEW/$f" "$d/firmware/nvidia/$V_NEW/$f" ||
            fail "$1: firmware $f differs from the package's source"
    done
    cmp -s "$T/drv/bin/nvidia-smi" "$d/bin/.real/nvidia-smi" 2>/dev/null ||
        cmp -s "$T/drv/bin/nvidia-smi" "$d/bin/nvidia-smi" || fail "$1: nvidia-smi differs"
}
workers=$(nproc)
[ "$workers" -gt 8 ] && workers=8
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "unpack: package unpacked and verified"
expect_err "zstd_frames=$frames frames_streamed=0 workers=$workers"
installed_as_source "from the mirror"
# From the node cache: the same.
expect_rc 0 uninstall
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "package found in the node cache"
expect_err "zstd_frames=$frames frames_streamed=0 workers=$workers"
installed_as_source "from the cache"

# The one-frame package: too big to hand over whole, decompressed as it comes.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache/nvidia-driver-installer/packages"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW.1" \
    --kernel "$KERNEL" "$T/single.tar.zst" >/dev/null
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version "$V_NEW.1"
expect_err "zstd_frames=1 frames_streamed=1"
installed_as_source "one frame"

# A skippable frame first (as pzstd writes them) and frames that do not declare their
# size (zstd reading a pipe): installed; tar reads it too.
zstd -dcq "$T/framed.tar.zst" >"$T/plain.tar"
{
    printf '\x50\x2a\x4d\x18\x04\x00\x00\x00abcd'
    head -c $((3 << 20)) "$T/plain.tar" | zstd -q -c
    tail -c +$(((3 << 20) + 1)) "$T/plain.tar" | zstd -q -c
} >"$T/mixed.tar.zst"
tar --zstd -tf "$T/mixed.tar.zst" >/dev/null || fail "tar cannot read the mixed package"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW.2" \
    --kernel "$KERNEL" "$T/mixed.tar.zst" >/dev/null
expect_rc 0 install --repo "$HTTP/repo" $(install_args) --driver-version "$V_NEW.2"
expect_err "zstd_frames=2 frames_streamed=2"
installed_as_source "skippable and undeclared frames"

# A frame damaged in a package signed as it is: refused by name (zstd's words), the
# install as it was, and nothing of it left in the staging area.
before=$(snapshot "$(idir)")
cp "$T/framed.tar.zst" "$T/damaged.tar.zst"
# The middle frame's data: a byte well inside the file.
off=$(($(stat -c %s "$T/damaged.tar.zst") / 2))
printf '\xff' | dd of="$T/damaged.tar.zst" bs=1 seek="$off" conv=notrunc status=none
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW.3" \
    --kernel "$KERNEL" "$T/framed.tar.zst" >/dev/null
# make-repo refuses what does not decompress: the damaged file and its digest go in by hand.
p3=$(python3 -c 'import json,sys; print([d for d in json.load(open(sys.argv[1]))["drivers"] if d["version"] == sys.argv[2]][0]["packages"][0]["path"])' "$T/srv/repo/index.json" "$V_NEW.3")
cp "$T/damaged.tar.zst" "$T/srv/repo/$p3"
edit_index "$T/srv/repo" '
for d in idx["drivers"]:
    if d["version"] == "'"$V_NEW.3"'":
        d["packages"][0]["sha256"] = "'"$(sha256sum "$T/damaged.tar.zst" | cut -c1-64)"'"
        d["packages"][0]["size"] = '"$(stat -c %s "$T/damaged.tar.zst")"'
'
expect_rc 5 install --repo "$HTTP/repo" $(install_args) --driver-version "$V_NEW.3"
expect_err "decompressing the package: zstd: "
assert_eq "$(snapshot "$(idir)")" "$before" "install dir after a damaged frame"
echo "frames: $(grep -o 'decompressing the package: [^(]*' "$T/err" | sed -n 1p)"
