# Bytes not yet verified take a bounded amount of the host's disk: a small package that
# expands far beyond its size is stopped at what its signed index implies (its signed
# "unpacked_size", else 16 times its signed size, at least 1 MiB), not at the 16 GiB
# ceiling; streamed from a mirror or unpacked from the node cache alike.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
before=$(snapshot "$(idir)")
grep -q '"unpacked_size": ' "$T/repo/index.json" || fail "make-repo add wrote no unpacked_size"

# The valid tree plus: a 64 MiB file of zeros (a few KiB compressed), or the valid tree
# followed by 64 MiB of zeros after the tar's end (declared sizes all small).
python3 - "$T" <<'EOF'
import io, sys, tarfile
t = sys.argv[1]
def tree(extra):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data, mode in [("lib64/libcuda.so.1", b"x", 0o755), ("bin/nvidia-smi", b"#!/bin/sh\n", 0o755)] + extra:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
open(t + "/zeros.tar", "wb").write(tree([("firmware/zero.bin", bytes(64 << 20), 0o644)]))
open(t + "/trailing.tar", "wb").write(tree([]) + bytes(64 << 20))
open(t + "/valid.tar", "wb").write(tree([]))
EOF
n=0
for kind in zeros trailing valid; do
    n=$((n + 1))
    zstd -q -19 -c "$T/$kind.tar" >"$T/$kind.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "610.$n.1" \
        --kernel "$KERNEL" "$T/$kind.tar.zst" >/dev/null
done
echo "packages: zeros $(stat -c %s "$T/zeros.tar.zst") bytes, trailing $(stat -c %s "$T/trailing.tar.zst") bytes"
# set_unpacked VERSION VALUE|None: the index's unpacked_size for that driver's package.
set_unpacked() {
    edit_index "$T/repo" '
for d in idx["drivers"]:
    if d["version"] == "'"$1"'":
        p = d["packages"][0]
        p.pop("unpacked_size", None)
        v = ('"$2"')
        if v is not None:
            p["unpacked_size"] = v
'
}
# refused VERSION MESSAGE: refused with exit 5, nothing near 64 MiB written, the install as it was.
refused() {
    local cache="$T/root/var/cache/nvidia-driver-installer"
    expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "$1"
    expect_err "$2"
    expect_err "fix: a genuine package needs its unpacked_size in the index"
    echo "$1: $(grep ERROR "$T/err")"
    assert_eq "$(snapshot "$(idir)")" "$before" "$1: install dir"
    local kib
    kib=$(du -sk --exclude=packages "$T/root" | cut -f1)
    [ "$kib" -lt 16384 ] || fail "$1: unpacked far past the bound: $(du -sh "$T/root")"
    [ "$kib" -gt "$max_kib" ] && max_kib=$kib
    return 0
}

max_kib=0
# Without unpacked_size: 16 times the signed size, at least 1 MiB. The member's declared
# size is past it (refused from its header), and so is the stream after the tar's end
# (refused by the decompressor, which stops there).
set_unpacked 610.1.1 None
refused 610.1.1 "package unpacks to more than 1048576 bytes, the most 16 times its signed size, at least 1 MiB (the index gives no unpacked_size) allows (its decompressed stream passes it)"
set_unpacked 610.2.1 None
refused 610.2.1 "package unpacks to more than 1048576 bytes, the most 16 times its signed size"

# Sparse members are judged by the sizes their headers declare, before any data: a 5 GiB
# member of a package whose signed unpacked_size (what make-repo measured: the small tar
# stream) is some KiB.
python3 "$SRC/tests/tools/evil-tar.py" huge-entry | zstd -q -c >"$T/sparse.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 610.4.1 \
    --kernel "$KERNEL" "$T/sparse.tar.zst" >/dev/null
refused 610.4.1 "the most its signed unpacked_size allows (member 'firmware/f0.bin' passes it)"

# A signed unpacked_size is the bound, below the ratio and above it alike.
set_unpacked 610.1.1 "32 << 20"
refused 610.1.1 "package unpacks to more than 33554432 bytes, the most its signed unpacked_size allows"
set_unpacked 610.2.1 "8 << 20"
refused 610.2.1 "package unpacks to more than 8388608 bytes, the most its signed unpacked_size allows"

# From the node cache too: the refused package was verified and kept there; it is
# unpacked from there first, and refused again.
set_unpacked 610.2.1 "4 << 20"
refused 610.2.1 "package unpacks to more than 4194304 bytes, the most its signed unpacked_size allows"
grep -q "package found in the node cache" "$T/err" || fail "not unpacked from the cache: $(cat "$T/err")"

echo "unpack-bound: packages of $(stat -c %s "$T/zeros.tar.zst") and $(stat -c %s "$T/trailing.tar.zst") bytes that unpack to 64 MiB refused at the signed bound, the install dir unchanged and the host root at most $max_kib KiB after each (the previous install included, cache packages aside)"

# What the signed size implies is enough for a real package: without unpacked_size, and
# with the exact one make-repo writes (and the 64 MiB file, with its own), it installs.
set_unpacked 610.3.1 None
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version 610.3.1
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 610.1.1 \
    --kernel "$KERNEL" "$T/zeros.tar.zst" >/dev/null
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version 610.1.1
assert_eq "$(stat -c %s "$(idir)/firmware/zero.bin")" $((64 << 20)) "the 64 MiB member"

# A malformed unpacked_size is refused like a forged index.
set_unpacked 610.3.1 '"big"'
expect_rc 5 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" \
    --kernel-release "$KERNEL" --cache-dir "$T/other-cache"
expect_err '"unpacked_size" must be an integer from 1 to 2^40'
