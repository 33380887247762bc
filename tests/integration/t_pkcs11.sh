# Keys on a PKCS#11 token (docs/building-packages.md, "Keys where builds run"), Debian's
# SoftHSM2 as the token: build-driver-package signs stand-in modules with the token's key
# (pkcs11: URI, the PIN from pin-source=file:) and publishes an index the token's other key
# signs (build-driver-package --repo, and make-repo publish of a --stage-to build); the
# installer verifies both (install, the modules against the certificate); an
# RSA key's module is byte for byte what sign-file makes with the same key in a file.
# The PIN from the environment works too. A wrong PIN fails before anything is built, one
# line naming the cause and the fix; pin-value (a PIN on the command line) is refused with
# the PIN blanked. make-signing-key --key makes the certificate of the token's key. Every
# output, log, work file, the repository, and the command lines and environments of
# openssl and sign-file hold neither the PIN nor the keys' bytes.
command -v softhsm2-util >/dev/null || fail "softhsm2-util is needed (scripts/deps.sh installs softhsm2)"
MODULE=/usr/lib/softhsm/libsofthsm2.so
[ -f "$MODULE" ] || fail "$MODULE is missing (scripts/deps.sh installs softhsm2)"
openssl engine pkcs11 >/dev/null 2>&1 ||
    fail "OpenSSL's pkcs11 engine is missing (scripts/deps.sh installs libengine-pkcs11-openssl)"
[ -x "$SIGN_FILE" ] || fail "sign-file not found (package linux-kbuild-6.1)"
BDP=$SRC/scripts/build-driver-package
PIN=Nv-pin-7391-softhsm
FAKE_KERNEL=1
mkroot "$T/root" debian 12 --gpu 10de:2330
mkkernel "$T/root"

# A token of its own (SOFTHSM2_CONF), the keys imported from files kept outside everything
# the tools write, so that their bytes can be looked for.
mkdir -p "$T/tokens" "$T/secret" "$T/keys"
export SOFTHSM2_CONF=$T/softhsm2.conf
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$T/tokens" >"$SOFTHSM2_CONF"
softhsm2-util --init-token --free --label nvidia-supply --so-pin 87654321 --pin "$PIN" >/dev/null
"$SRC/tests/tools/make-module-key" "Token modkey" "$T/secret/mod" >/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/secret/repo.key" 2>/dev/null
for k in mod:01 repo:02; do
    openssl pkcs8 -topk8 -nocrypt -in "$T/secret/${k%:*}.key" -out "$T/secret/${k%:*}.p8"
    softhsm2-util --import "$T/secret/${k%:*}.p8" --token nvidia-supply --label "${k%:*}key" \
        --id "${k#*:}" --pin "$PIN" >/dev/null
done
cp "$T/secret/mod.crt" "$T/keys/mod.crt"
openssl pkey -in "$T/secret/repo.key" -pubout -out "$T/keys/repo-pub.pem"
echo "$PIN" >"$T/secret/pin"
echo "not-the-pin" >"$T/secret/badpin"
MOD_URI="pkcs11:token=nvidia-supply;object=modkey;type=private?module-path=$MODULE&pin-source=file:$T/secret/pin"
REPO_URI="pkcs11:token=nvidia-supply;id=%02?module-path=$MODULE&pin-source=file:$T/secret/pin"

# openssl and sign-file behind shims that log their command lines and environments: what
# ps (and /proc/PID/environ) would show of them.
mkdir -p "$T/bin"
for tool in openssl:/usr/bin/openssl sign-file:$SIGN_FILE; do
    cat >"$T/bin/${tool%%:*}" <<EOF
#!/bin/sh
{ echo "ARGV \$*"; env | sed 's/^/ENV /'; } >>"$T/exec.log"
exec ${tool#*:} "\$@"
EOF
    chmod +x "$T/bin/${tool%%:*}"
done

# A driver source in the .run layout, from the stand-in driver; its unsigned modules.
run_source "$FIX/drv-$V_NEW"
bdp() { # OUT [OPTIONS...]
    local out=$1
    shift
    set +e
    PATH="$T/bin:$PATH" "$BDP" --kernel "$KERNEL" --source "$T/src" \
        --prebuilt-modules "$FIX/drv-$V_NEW/kernel" --repo "$T/repo" --installer "$BIN" \
        --sign-file "$T/bin/sign-file" --work "$T/work" "$@" >"$T/$out" 2>&1
    RC=$?
    set -e
}

# The wrong PIN: refused before anything is built, one line naming the cause and the fix.
bad_uri=${MOD_URI/secret\/pin/secret/badpin}
bdp bdp-badpin.out --quiet --sign-key "$bad_uri" --sign-cert "$T/keys/mod.crt" --repo-key "$REPO_URI"
assert_eq "$RC" 1 "exit with a wrong PIN"
assert_eq "$(wc -l <"$T/bdp-badpin.out")" 1 "lines for a wrong PIN: $(cat "$T/bdp-badpin.out")"
grep -qF "build-driver-package: a trial signature with --sign-cert $T/keys/mod.crt failed with --sign-key $bad_uri: the token refused the PIN (CKR_PIN_INCORRECT): put the token's user PIN in pin-source $T/secret/badpin" "$T/bdp-badpin.out" ||
    fail "wrong PIN: $(cat "$T/bdp-badpin.out")"
[ ! -e "$T/repo/index.json" ] || fail "a refused build reached the index"
# make-repo alone, the same.
set +e
PATH="$T/bin:$PATH" "$SRC/scripts/make-repo" add --repo "$T/repo-none" --key "${REPO_URI/secret\/pin/secret/badpin}" \
    --version "$V_NEW" --kernel "$KERNEL" "$FIX/spkg-$V_NEW.tar.zst" >"$T/mr-badpin.out" 2>&1
rc=$?
set -e
assert_eq "$rc" 1 "make-repo with a wrong PIN"
assert_eq "$(wc -l <"$T/mr-badpin.out")" 1 "make-repo's lines for a wrong PIN: $(cat "$T/mr-badpin.out")"
grep -qF "the token refused the PIN (CKR_PIN_INCORRECT)" "$T/mr-badpin.out" || fail "make-repo: $(cat "$T/mr-badpin.out")"
[ ! -e "$T/repo-none" ] || fail "make-repo wrote $(ls "$T/repo-none") before finding the PIN wrong"

# The PIN on the command line (pin-value): refused, exit 2, the PIN blanked.
bdp bdp-pinvalue.out --quiet --sign-key "pkcs11:token=nvidia-supply;object=modkey?pin-value=$PIN" \
    --sign-cert "$T/keys/mod.crt" --repo-key "$REPO_URI"
assert_eq "$RC" 2 "exit with pin-value"
grep -qF "pkcs11:token=nvidia-supply;object=modkey?pin-value=***: pin-value puts the PIN on the command line, where ps shows it: give pin-source=file:PATH" "$T/bdp-pinvalue.out" ||
    fail "pin-value: $(cat "$T/bdp-pinvalue.out")"
# The certificate from the token is not taken: it is a file nodes get too.
bdp bdp-certuri.out --quiet --sign-key "$MOD_URI" --sign-cert "pkcs11:token=nvidia-supply;object=modkey;type=cert" --repo-key "$REPO_URI"
assert_eq "$RC" 2 "exit with a pkcs11: certificate"
grep -qF "the certificate comes from a file" "$T/bdp-certuri.out" || fail "cert URI: $(cat "$T/bdp-certuri.out")"
# A key the token does not have.
bdp bdp-nokey.out --quiet --sign-key "${MOD_URI/object=modkey/object=nokey}" --sign-cert "$T/keys/mod.crt" --repo-key "$REPO_URI"
assert_eq "$RC" 1 "exit with a missing key"
grep -qF "no private key on the token(s) of $MODULE matches pkcs11:token=nvidia-supply;object=nokey;type=private" "$T/bdp-nokey.out" ||
    fail "missing key: $(cat "$T/bdp-nokey.out")"

# The right PIN: modules signed and an index published by the token's keys, the index
# key's PIN from the environment (make-repo, run by build-driver-package, gets it; nothing
# else it runs does).
env_uri="pkcs11:token=nvidia-supply;object=repokey?module-path=$MODULE"
NVIDIA_PKCS11_PIN=$PIN bdp bdp.out --sign-key "$MOD_URI" --sign-cert "$T/keys/mod.crt" \
    --repo-key "$env_uri" --tag default
[ "$RC" = 0 ] || { cat "$T/bdp.out" >&2; fail "build-driver-package with the token's keys: exit $RC"; }
openssl dgst -sha256 -verify "$T/keys/repo-pub.pem" -signature "$T/repo/index.json.sig" "$T/repo/index.json" >/dev/null ||
    fail "the index signature does not verify with the token key's public half"
pkg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]["path"])' "$T/repo/index.json")
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" --zstd -xf "$T/repo/$pkg"
# Byte for byte what sign-file makes with the same (RSA) key in a file.
for ko in "$T/unpacked/kernel/"*.ko; do
    python3 - "$ko" "$T/resigned.ko" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
magic = b"~Module signature appended~\n"
assert data.endswith(magic), sys.argv[1] + ": not signed"
end = len(data) - len(magic) - 12 - int.from_bytes(data[-len(magic) - 4:-len(magic)], "big")
open(sys.argv[2], "wb").write(data[:end])
EOF
    "$SIGN_FILE" sha256 "$T/secret/mod.key" "$T/secret/mod.crt" "$T/resigned.ko"
    cmp -s "$ko" "$T/resigned.ko" || fail "$(basename "$ko") differs from sign-file's signature with the key in a file"
done
expect_rc 0 verify-module --kernel-release "$KERNEL" --module-cert "$T/keys/mod.crt" "$T/unpacked/kernel/nvidia.ko"
expect_out "signer:   Token modkey"
# The installer: the index with the token key's public half, the modules with the certificate.
expect_rc 0 install --repo "file://$T/repo" --repo-key "$T/keys/repo-pub.pem" --kernel-release "$KERNEL" \
    --module-cert "$T/keys/mod.crt" --fetch-timeout 20
assert_eq "$(installed_version)" "$V_NEW" "the version installed from the token-signed repository"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "the live driver"
cp "$T/err" "$T/install.err"
# Another key's certificate: the modules are refused; another index key: the index is.
expect_rc 5 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
cp "$T/err" "$T/list-otherkey.err"
expect_rc 5 verify-module --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" "$T/unpacked/kernel/nvidia.ko"

# make-signing-key --key: the certificate of the token's key, made by the token, in the
# kernel key's shape; with a wrong PIN nothing is written.
set +e
PATH="$T/bin:$PATH" "$SRC/scripts/make-signing-key" --subject "/CN=Token-made certificate" --key "$bad_uri" "$T/keys/made" >"$T/msk-badpin.out" 2>&1
rc=$?
set -e
assert_eq "$rc" 1 "make-signing-key with a wrong PIN"
assert_eq "$(wc -l <"$T/msk-badpin.out")" 1 "make-signing-key's lines for a wrong PIN: $(cat "$T/msk-badpin.out")"
grep -qF "the token refused the PIN (CKR_PIN_INCORRECT)" "$T/msk-badpin.out" || fail "make-signing-key: $(cat "$T/msk-badpin.out")"
[ ! -e "$T/keys/made.crt" ] && [ ! -e "$T/keys/made.der" ] || fail "make-signing-key wrote a certificate with a wrong PIN"
PATH="$T/bin:$PATH" "$SRC/scripts/make-signing-key" --subject "/CN=Token-made certificate" --key "$MOD_URI" "$T/keys/made" >"$T/msk.out" 2>&1 ||
    fail "make-signing-key --key: $(cat "$T/msk.out")"
grep -q "^make-signing-key: $T/keys/made.crt, $T/keys/made.der (the key stays on the token)$" "$T/msk.out" || fail "$(cat "$T/msk.out")"
[ ! -e "$T/keys/made.key" ] || fail "make-signing-key --key wrote a key file"
cmp -s <(openssl x509 -in "$T/keys/made.crt" -noout -pubkey) <(openssl pkey -in "$T/secret/mod.key" -pubout) ||
    fail "the token-made certificate is not the token key's"
openssl verify -CAfile "$T/keys/made.crt" "$T/keys/made.crt" >/dev/null || fail "the token-made certificate's self-signature"
openssl x509 -in "$T/keys/made.crt" -noout -text | grepq -F "Code Signing, 1.3.6.1.4.1.2312.16.1.2" ||
    fail "the token-made certificate lacks the module-signing key usage"

# make-repo alone, the PIN from the environment too; then from pin-source.
PATH="$T/bin:$PATH" NVIDIA_PKCS11_PIN=$PIN "$SRC/scripts/make-repo" sign --repo "$T/repo" --key "$env_uri" >"$T/mr-env.out" 2>&1 ||
    fail "make-repo sign with the PIN in the environment: $(cat "$T/mr-env.out")"
openssl dgst -sha256 -verify "$T/keys/repo-pub.pem" -signature "$T/repo/index.json.sig" "$T/repo/index.json" >/dev/null ||
    fail "the index signed with the PIN from the environment does not verify"
PATH="$T/bin:$PATH" "$SRC/scripts/make-repo" sign --repo "$T/repo" --key "$REPO_URI" >"$T/mr-file.out" 2>&1 ||
    fail "make-repo sign with pin-source: $(cat "$T/mr-file.out")"
openssl dgst -sha256 -verify "$T/keys/repo-pub.pem" -signature "$T/repo/index.json.sig" "$T/repo/index.json" >/dev/null ||
    fail "the index signed with the PIN from pin-source does not verify"
grep -q "ARGV .*-passin fd:[0-9]" "$T/exec.log" || fail "openssl got the PIN otherwise than through a pipe"
grep -q "ARGV -s .*\.p7s sha256 " "$T/exec.log" || fail "sign-file did not attach the token's signatures"

# make-repo publish, the locked path build-fleet and the supply pass take, signs with the
# token's key too: a build staged with --stage-to (no --repo, no --repo-key), published
# with the PIN from pin-source; with a wrong PIN, exit 1 in one line before a package is
# placed.
PATH="$T/bin:$PATH" "$BDP" --kernel "$KERNEL" --source "$T/src" \
    --prebuilt-modules "$FIX/drv-$V_NEW/kernel" --installer "$BIN" --sign-file "$T/bin/sign-file" \
    --work "$T/work" --sign-key "$MOD_URI" --sign-cert "$T/keys/mod.crt" --stage-to "$T/stage" \
    --tag default >"$T/bdp-stage.out" 2>&1 || fail "build-driver-package --stage-to: $(cat "$T/bdp-stage.out")"
set +e
PATH="$T/bin:$PATH" "$SRC/scripts/make-repo" publish --repo "$T/repo-pub" \
    --key "${REPO_URI/secret\/pin/secret/badpin}" "$T/stage" >"$T/mrp-badpin.out" 2>&1
rc=$?
set -e
assert_eq "$rc" 1 "make-repo publish with a wrong PIN"
assert_eq "$(wc -l <"$T/mrp-badpin.out")" 1 "make-repo publish's lines for a wrong PIN: $(cat "$T/mrp-badpin.out")"
grep -qF "the token refused the PIN (CKR_PIN_INCORRECT)" "$T/mrp-badpin.out" || fail "make-repo publish: $(cat "$T/mrp-badpin.out")"
[ ! -e "$T/repo-pub" ] || fail "make-repo publish wrote $(ls "$T/repo-pub") before finding the PIN wrong"
PATH="$T/bin:$PATH" "$SRC/scripts/make-repo" publish --repo "$T/repo-pub" --key "$REPO_URI" "$T/stage" \
    >"$T/mrp.out" 2>&1 || fail "make-repo publish with the token's key: $(cat "$T/mrp.out")"
[ -L "$T/repo-pub/index.json" ] || fail "make-repo publish did not serve the index through index.gen/current"
openssl dgst -sha256 -verify "$T/keys/repo-pub.pem" -signature "$T/repo-pub/index.json.sig" "$T/repo-pub/index.json" >/dev/null ||
    fail "the index make-repo publish signed with the token's key does not verify"
expect_rc 0 list-versions --repo "file://$T/repo-pub" --repo-key "$T/keys/repo-pub.pem" --kernel-release "$KERNEL"
expect_out "$V_NEW"
cp "$T/err" "$T/list-pub.err"

# Neither the PIN nor the keys' bytes anywhere the tools wrote or showed (the shims' log
# holds openssl's and sign-file's command lines and environments).
python3 - "$PIN" "$T/secret" "$T"/*.out "$T"/*.err "$T/exec.log" "$T/work" "$T/repo" "$T/unpacked" "$T/root" \
    "$T/stage" "$T/repo-pub" <<'EOF'
import base64, os, sys
pin, secret, places = sys.argv[1].encode(), sys.argv[2], sys.argv[3:]
needles = {"the PIN": pin}
for name in ("mod.key", "repo.key"):
    pem = open(os.path.join(secret, name)).read().splitlines()
    body = "".join(l for l in pem if not l.startswith("-----"))
    der = base64.b64decode(body)
    for i, line in enumerate(l for l in pem if len(l) >= 40):
        needles["%s PEM line %d" % (name, i)] = line.encode()
    for off in range(0, len(der) - 24, 24):
        needles["%s DER bytes %d" % (name, off)] = der[off:off + 24]
files = []
for p in places:
    if os.path.isdir(p):
        files += [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs]
    else:
        files.append(p)
n = 0
for f in files:
    if os.path.islink(f) or not os.path.isfile(f):
        continue
    data = open(f, "rb").read()
    n += 1
    for what, needle in needles.items():
        if needle in data:
            sys.exit("%s is in %s: %r" % (what, f, [l for l in data.splitlines() if needle in l][:3]))
if n < 20:
    sys.exit("only %d files looked at" % n)
EOF
