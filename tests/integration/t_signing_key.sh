# scripts/make-signing-key, the production module-signing key: the private key is 0600 and
# never overwritten, the certificate has the kernel's signing-key shape, and modules the
# kernel's sign-file signs with it pass verify-module against its DER certificate (what
# mokutil enrolls) and PEM certificate, and fail against another key's.
[ -x "$SIGN_FILE" ] || fail "sign-file not found (package linux-kbuild-6.1)"
MSK=$SRC/scripts/make-signing-key
mkroot "$T/root"
mkdir -m 0700 "$T/keys"
"$MSK" --key-type rsa:2048 --subject "/O=Example Corp/CN=Example GPU driver signing" "$T/keys/mod" >"$T/out"
grep -q "^make-signing-key: $T/keys/mod.key (private, 0600: keep it offline), $T/keys/mod.crt, $T/keys/mod.der$" "$T/out" ||
    fail "output: $(cat "$T/out")"
assert_eq "$(stat -c %a "$T/keys/mod.key")" 600 "the private key's mode"
assert_eq "$(stat -c %a "$T/keys/mod.crt") $(stat -c %a "$T/keys/mod.der")" "644 644" "the certificates' modes"
[ -z "$(ls -A "$T/keys" | grep -v '^mod\.\(key\|crt\|der\)$')" ] || fail "left behind: $(ls -A "$T/keys")"

# The kernel's key shape (certs/x509.genkey) and the module-signing EKU.
openssl x509 -in "$T/keys/mod.crt" -noout -text >"$T/text"
for want in "Subject: O = Example Corp, CN = Example GPU driver signing" "CA:FALSE" \
    "X509v3 Basic Constraints: critical" "Digital Signature" "Code Signing, 1.3.6.1.4.1.2312.16.1.2" \
    "X509v3 Subject Key Identifier" "Signature Algorithm: sha256WithRSAEncryption" "Public-Key: (2048 bit)"; do
    grep -qF "$want" "$T/text" || fail "the certificate lacks '$want': $(cat "$T/text")"
done
! grep -q "Certificate Sign" "$T/text" || fail "a signing key that can sign certificates"
cmp -s <(openssl x509 -in "$T/keys/mod.der" -inform DER -outform DER) \
    <(openssl x509 -in "$T/keys/mod.crt" -outform DER) || fail ".der and .crt differ"
# The key is the certificate's.
cmp -s <(openssl pkey -in "$T/keys/mod.key" -pubout) <(openssl x509 -in "$T/keys/mod.crt" -noout -pubkey) ||
    fail "the key does not match the certificate"

# Never overwritten: a second run, or any one of the three files present, stops it.
sum=$(sha256sum "$T/keys/mod.key")
set +e
"$MSK" --key-type rsa:2048 "$T/keys/mod" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 1 "a second run"
expect_err "make-signing-key: $T/keys/mod.key $T/keys/mod.crt $T/keys/mod.der already exist(s): a signing key is never overwritten"
assert_eq "$(sha256sum "$T/keys/mod.key")" "$sum" "the key after a refused run"
cp "$T/keys/mod.der" "$T/keys/only.der"
set +e
"$MSK" --key-type rsa:2048 "$T/keys/only" >/dev/null 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 1 "OUT.der alone present"
[ ! -e "$T/keys/only.key" ] && [ ! -e "$T/keys/only.crt" ] || fail "wrote beside an existing OUT.der"
[ -z "$(ls -A "$T/keys" | grep '^\.make-signing-key')" ] || fail "temporary directory left"
# Bad options: exit 2, one line with the fix.
for bad in "--key-type dsa:1024" "--days 0" "--days 12x" "--subject CN=x" "--frobnicate"; do
    set +e
    "$MSK" $bad "$T/keys/bad" >/dev/null 2>"$T/err"
    rc=$?
    set -e
    assert_eq "$rc" 2 "make-signing-key $bad"
    assert_eq "$(wc -l <"$T/err")" 1 "one line for $bad: $(cat "$T/err")"
    grep -q "; try --help$" "$T/err" || fail "$bad: $(cat "$T/err")"
done
[ ! -e "$T/keys/bad.key" ] || fail "a refused run wrote a key"

# Modules signed with it, as build-driver-package signs them, pass against its DER and PEM
# certificate; against another key's certificate, they fail (exit 5).
cp "$FIX/drv-$V_NEW/kernel/nvidia.ko" "$T/nvidia.ko"
"$SIGN_FILE" sha256 "$T/keys/mod.key" "$T/keys/mod.crt" "$T/nvidia.ko"
expect_rc 0 verify-module --kernel-release "$KERNEL" --module-cert "$T/keys/mod.der" "$T/nvidia.ko"
expect_out "signer:   Example GPU driver signing"
expect_rc 0 verify-module --kernel-release "$KERNEL" --module-cert "$T/keys/mod.crt" "$T/nvidia.ko"
"$MSK" --key-type rsa:2048 --subject "/CN=Another signing key" "$T/keys/other" >/dev/null
expect_rc 5 verify-module --kernel-release "$KERNEL" --module-cert "$T/keys/other.der" "$T/nvidia.ko"
expect_out "FAIL: signature rejected: signed by 'Example GPU driver signing'.*not a pinned certificate"
# The default key: RSA 4096, the kernel's default.
"$MSK" "$T/keys/default" >/dev/null
openssl x509 -in "$T/keys/default.crt" -noout -text | grepq -F "Public-Key: (4096 bit)" || fail "default key type"
openssl x509 -in "$T/keys/default.crt" -noout -subject | grepq -xF "subject=CN = NVIDIA driver module signing key" ||
    fail "default subject"
