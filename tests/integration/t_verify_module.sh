# verify-module checks what the 6.1 kernel checks: every way a signature can be wrong is a
# failure with a reason (exit 5), every well-signed module passes, and nothing crashes.
[ -x "$SIGN_FILE" ] || fail "sign-file not found (package linux-kbuild-6.1)"
mkroot "$T/root"
cp "$FIX/drv-$V_NEW/kernel/"*.ko "$T/"
ko="$T/nvidia.ko"
vm() { expect_rc "$1" verify-module --kernel-release "$KERNEL" "${@:2}"; }
# refused FILE MESSAGE: our key, yet the signature is refused with MESSAGE.
refused() {
    vm 5 --module-cert "$FIX/keys/modkey.crt" "$T/$1"
    expect_out "$2"
}

# Issuer+serial (sign-file) and subject key id (sign-file -k), PEM and DER certificates.
cp "$ko" "$T/serial.ko"
"$SIGN_FILE" sha256 "$FIX/keys/modkey.pem" "$FIX/keys/modkey.pem" "$T/serial.ko"
cp "$ko" "$T/skid.ko"
"$SIGN_FILE" -k sha512 "$FIX/keys/modkey.pem" "$FIX/keys/modkey.pem" "$T/skid.ko"
vm 0 --module-cert "$FIX/keys/modkey.crt" "$T/serial.ko" "$T/skid.ko"
expect_out "signer:   Test modkey"
expect_out "hash:     sha512"
expect_out "name:     nvidia"
expect_out "version:  $V_NEW"
key_id=$(openssl x509 -in "$FIX/keys/modkey.pem" -noout -ext subjectKeyIdentifier | tail -1 | tr -d ' ')
expect_out "key id:   $key_id"
vm 0 --module-cert "$FIX/keys/modkey.der" "$T/serial.ko"
# The same certificate from the environment.
set +e
NVIDIA_MODULE_CERT="$FIX/keys/othermodkey.crt,$FIX/keys/modkey.der" "$BIN" --root "$T/root" \
    verify-module --kernel-release "$KERNEL" "$T/skid.ko" >/dev/null 2>&1
rc=$?
set -e
assert_eq "$rc" 0 "NVIDIA_MODULE_CERT"

# A certificate other than the signer's.
vm 5 --module-cert "$FIX/keys/othermodkey.crt" "$T/serial.ko"
expect_out "FAIL: signature rejected: signed by 'Test modkey'.*not a pinned certificate"
# No certificate: nothing is verified, and the fix is the certificate, not a new signature.
vm 5 "$T/serial.ko"
expect_out "not verified"
expect_err "; fix: pass the certificate that signed them: --module-cert FILE (NVIDIA_MODULE_CERT); each module's signer is shown above (exit 5)$"
grep -q "sign them\|sign the modules" "$T/err" && fail "without --module-cert the hint is to re-sign: $(cat "$T/err")"
# Unsigned.
vm 5 --module-cert "$FIX/keys/modkey.crt" "$ko"
expect_out "signed:   no"
expect_out "the module is not signed"
# One byte of the module changed after signing.
cp "$T/serial.ko" "$T/flip.ko"
printf '\x01' | dd of="$T/flip.ko" bs=1 seek=100 conv=notrunc 2>/dev/null
refused flip.ko "the signature does not match the module's contents"
# A CMS signature with signed attributes (plain openssl cms -sign), content not id-data,
# and embedded content: all refused by the kernel, so refused here.
for kind in attrs econtent embedded; do
    cp "$ko" "$T/$kind.ko"
    case $kind in
    attrs) opts=() ;;
    econtent) opts=(-noattr -econtent_type 1.2.3.4) ;;
    embedded) opts=(-noattr -nodetach) ;;
    esac
    openssl cms -sign -binary -nocerts -nosmimecap -md sha256 -signer "$FIX/keys/modkey.pem" \
        -inkey "$FIX/keys/modkey.pem" -outform DER -in "$ko" -out "$T/$kind.p7s" "${opts[@]}"
    "$SIGN_FILE" -s "$T/$kind.p7s" sha256 "$FIX/keys/modkey.pem" "$T/$kind.ko"
    vm 5 --module-cert "$FIX/keys/modkey.crt" "$T/$kind.ko"
done
refused attrs.ko "signed attributes"
refused econtent.ko "not id-data"
refused embedded.ko "embeds its content"
# Corrupt trailers: a length past the start of the file, another id_type, non-zero fields.
python3 - "$T/serial.ko" "$T" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
info = len(data) - 28 - 12
def write(name, d):
    open(sys.argv[2] + "/" + name, "wb").write(d)
d = bytearray(data); d[info + 8:info + 12] = (len(data)).to_bytes(4, "big"); write("len.ko", d)
d = bytearray(data); d[info + 2] = 1; write("idtype.ko", d)
d = bytearray(data); d[info + 0] = 4; write("algo.ko", d)
d = bytearray(data); d[info + 8:info + 12] = (100).to_bytes(4, "big"); write("short.ko", d)
PY
refused len.ko "corrupt signature length"
refused idtype.ko "not PKCS#7"
refused algo.ko "unexpected non-zero fields"
refused short.ko "not a well-formed PKCS#7 message"
# Truncated, garbage, empty and tiny files: a message each, never a crash.
size=$(stat -c %s "$T/serial.ko")
head -c $((size - 10)) "$T/serial.ko" >"$T/trunc-tail.ko"
head -c $((size / 3)) "$T/serial.ko" >"$T/trunc-elf.ko"
head -c 4096 /dev/urandom >"$T/garbage.ko"
: >"$T/empty.ko"
printf '~Module signature appended~\n' >"$T/magic-only.ko"
vm 5 --module-cert "$FIX/keys/modkey.crt" "$T/trunc-tail.ko" "$T/trunc-elf.ko" "$T/garbage.ko" \
    "$T/empty.ko" "$T/magic-only.ko"
assert_eq "$(grep -c 'verdict:  FAIL' "$T/out")" 5 "failed verdicts"
expect_err "5 of 5 module(s) failed"
# Built for another kernel.
vm 5 --module-cert "$FIX/keys/modkey.crt" --kernel-release "$OTHER_KERNEL" "$T/serial.ko"
expect_out "built for another kernel"
# Usage.
vm 2 --module-cert "$FIX/keys/modkey.crt"
expect_err "missing FILE arguments"
vm 2 --module-cert "$FIX/keys/modkey.key-missing" "$T/serial.ko"
vm 1 --module-cert "$FIX/keys/modkey.crt" "$T/nonexistent.ko"
# A FIFO given as the module or as --module-cert: refused at once, naming it (the old
# open waited for a writer forever: hence the timeout).
mkfifo "$T/fifo.ko" "$T/fifo.crt"
vm_bounded() {
    set +e
    timeout 60 "$BIN" --root "$T/root" verify-module --kernel-release "$KERNEL" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
vm_bounded --module-cert "$FIX/keys/modkey.crt" "$T/fifo.ko"
[ "$RC" = 1 ] || { cat "$T/err"; fail "a FIFO as the module: exit $RC, expected 1"; }
expect_err "ERROR verify-module: module: '$T/fifo.ko' is not a regular file"
vm_bounded --module-cert "$T/fifo.crt" "$T/serial.ko"
[ "$RC" = 2 ] || { cat "$T/err"; fail "a FIFO as --module-cert: exit $RC, expected 2"; }
expect_err "module certificate: '$T/fifo.crt' is not a regular file"
