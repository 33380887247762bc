# Every member the archive policy forbids fails the whole package with exit 5; nothing is
# written outside staging, the previous install stays, and no staging is left behind.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
before=$(snapshot "$T/root/$IDIR_REL")
n=0
for kind in traversal absolute symlink-escape symlink-abs symlink-dotdot through-link device \
    fifo hardlink dangling unknown-top duplicate control-char setuid setgid huge-entry bomb-total; do
    n=$((n + 1))
    v="600.$n.1"
    python3 "$SRC/tests/tools/evil-tar.py" "$kind" | zstd -q -c >"$T/$kind.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$KERNEL" "$T/$kind.tar.zst" >/dev/null
    # The sparse bombs claim a huge unpacked_size, so that the fixed ceilings are what
    # stops them (the signed bound below them is t_unpack_bound's).
    case $kind in huge-entry | bomb-total)
        edit_index "$T/repo" '
for d in idx["drivers"]:
    if d["version"] == "'"$v"'":
        d["packages"][0]["unpacked_size"] = 1 << 40
' ;;
    esac
    expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "$v"
    grep -q "unpack:" "$T/err" || fail "$kind: not refused by the unpacker: $(cat "$T/err")"
    echo "$kind: $(grep ERROR "$T/err")"
    case $kind in
    control-char) expect_err "control character" ;;
    setuid) expect_err "member 'bin/nvidia-smi' is setuid or setgid (mode 4755)" ;;
    setgid) expect_err "member 'bin/nvidia-smi' is setuid or setgid (mode 2755)" ;;
    huge-entry) expect_err "member 'firmware/f0.bin' is larger than the limit" ;;
    bomb-total) expect_err "member 'firmware/f5.bin' takes the package past 16 GiB unpacked" ;;
    esac
    assert_eq "$(snapshot "$T/root/$IDIR_REL")" "$before" "$kind: install dir"
done
[ ! -e /tmp/evil-absolute ] || fail "absolute member escaped"
[ ! -e "$T/root/home/kubernetes/evil" ] && [ ! -e "$T/root/home/kubernetes/bin/evil" ] || fail "traversal escaped"
assert_eq "$(installed_version)" "$V_OLD" "still installed"

# The sparse bombs were refused from their headers: nothing near their size was written.
[ "$(du -sk "$T/root" | cut -f1)" -lt 102400 ] || fail "a bomb was unpacked: $(du -sh "$T/root")"

# A world-writable member is accepted with its mode normalised.
python3 "$SRC/tests/tools/evil-tar.py" world-writable | zstd -q -c >"$T/ww.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 700.1.1 \
    --kernel "$KERNEL" "$T/ww.tar.zst" >/dev/null
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version 700.1.1
assert_eq "$(stat -c %a "$(idir)/bin/nvidia-smi")" 755 "normalised mode"
[ -f "$(idir)/share/libs/libcuda.so.1" ] || fail "a link to a directory inside the package"

# Compression other than zstd, xz or gzip is refused; xz and gzip are accepted.
python3 "$SRC/tests/tools/evil-tar.py" valid | bzip2 -c >"$T/valid.tar.bz2"
python3 "$SRC/tests/tools/evil-tar.py" valid >"$T/valid.tar"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 700.2.1 \
    --kernel "$KERNEL" "$T/valid.tar.bz2" >/dev/null 2>&1 && fail "make-repo took bzip2"
cp "$T/valid.tar" "$T/repo/plain.tar"
edit_index "$T/repo" '
import hashlib
data = open("'"$T/repo/plain.tar"'", "rb").read()
idx["drivers"].append({"version": "700.3.1", "packages": [{"kernel": "'"$KERNEL"'",
    "arch": "x86_64", "path": "plain.tar", "size": len(data),
    "sha256": hashlib.sha256(data).hexdigest()}]})
'
expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version 700.3.1
expect_err "zstd, xz or gzip is required"
for c in xz gzip; do
    "$SRC/scripts/make-repo" pack "$FIX/drv-$V_NEW" "$T/pkg.$c" --compress "$c"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
        --kernel "$KERNEL" "$T/pkg.$c" >/dev/null
    expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW"
    "$(idir)/bin/nvidia-smi" | grepq "$V_NEW" || fail "$c package"
done
