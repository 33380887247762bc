# Member names and link targets the archive formats spell differently get one verdict:
# a UTF-8 name is accepted alike from a pax archive (where libarchive decodes it from the
# header's UTF-8) and from a GNU archive (raw bytes), whatever the locale; a name that is
# not UTF-8 is refused alike; a link target too long for the kernel to store is a
# package-policy refusal (exit 5), not an I/O error.
mkroot "$T/root"
mkdir -p "$T/repo"
n=0
pkg() { # NAME FORMAT KIND: a package whose one odd member is KIND
    python3 - "$T/$1.tar" "$2" "$3" <<'PY'
import io, sys, tarfile
out, fmt, kind = sys.argv[1], sys.argv[2], sys.argv[3]
f = {"pax": tarfile.PAX_FORMAT, "gnu": tarfile.GNU_FORMAT}[fmt]
with tarfile.open(out, "w", format=f, encoding="utf-8", errors="surrogateescape") as t:
    def add(name, data=b"x", mode=0o755):
        i = tarfile.TarInfo(name)
        i.size, i.mode = len(data), mode
        t.addfile(i, io.BytesIO(data))
    add("lib64/libcuda.so.1")
    add("bin/nvidia-smi", b"#!/bin/sh\necho 'Driver Version: 600.0'\n")
    if kind == "utf8":
        add("share/doc/caf\u00e9-\u65e5\u672c.txt", b"doc", 0o644)
    elif kind == "latin1":
        add("share/doc/caf" + "\udce9" + ".txt", b"doc", 0o644)  # the byte 0xe9 alone
    elif kind == "longlink":
        i = tarfile.TarInfo("lib64/long")
        i.type, i.linkname = tarfile.SYMTYPE, "/".join(["a" * 200] * 25)
        t.addfile(i)
PY
    zstd -q -f "$T/$1.tar" -o "$T/$1.tar.zst"
    n=$((n + 1))
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "600.$n.1" \
        --kernel "$KERNEL" "$T/$1.tar.zst" >/dev/null
    echo "600.$n.1"
}
for fmt in pax gnu; do
    v=$(pkg "utf8-$fmt" "$fmt" utf8)
    for loc in C C.UTF-8; do
        LC_ALL=$loc expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$v"
        [ -f "$(idir)/share/doc/café-日本.txt" ] || fail "utf8 $fmt ($loc): $(ls "$(idir)/share/doc")"
    done
    v=$(pkg "latin1-$fmt" "$fmt" latin1)
    LC_ALL=C expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "$v"
    expect_err "is not UTF-8"
    v=$(pkg "longlink-$fmt" "$fmt" longlink)
    expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "$v"
    expect_err "symlink 'lib64/long' has a target too long"
done
