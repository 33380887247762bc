# build-driver-package --keep-signatures: a vendor's signed modules go into the package byte
# for byte, verified against the vendor's certificate; a module that does not verify is
# refused naming module and signer; the signer is recorded in build-info.json and in the
# index, and verify-module and list-versions show it.
BDP=$SRC/scripts/build-driver-package
mkroot "$T/root" debian 12
# A driver source in the .run layout, from the stand-in driver.
mkdir -p "$T/vendor"
run_source "$FIX/drv-$V_NEW"
# The vendor's modules: signed by "Test modkey" (the vendor here), one of them compressed.
cp "$FIX/sdrv-$V_NEW/kernel/"*.ko "$T/vendor/"
xz "$T/vendor/nvidia-uvm.ko"
bdp() {
    set +e
    "$BDP" --kernel "$KERNEL" --source "$T/src" --prebuilt-modules "$T/vendor" --repo "$T/repo" \
        --repo-key "$FIX/keys/key.pem" --installer "$BIN" --work "$T/work" "$@" >"$T/bdp.out" 2>&1
    RC=$?
    set -e
}
bdp_has() { grep -q -- "$1" "$T/bdp.out" || { cat "$T/bdp.out" >&2; fail "build-driver-package output lacks '$1'"; }; }

sha=$(openssl x509 -in "$FIX/keys/modkey.crt" -outform DER | sha256sum | cut -c1-64)
# sign-file names the signer by issuer and serial: verify-module's key id is the serial.
key_id=$(openssl x509 -in "$FIX/keys/modkey.crt" -noout -serial | cut -d= -f2 |
    python3 -c 'import sys; h = sys.stdin.read().strip(); h = ("0" * (len(h) % 2)) + h; print(":".join(h[i:i + 2] for i in range(0, len(h), 2)))')

# The wrong vendor certificate: refused, naming the module and who did sign it.
bdp --keep-signatures --vendor-cert "$FIX/keys/othermodkey.crt"
assert_eq "$RC" 1 "exit with the wrong vendor certificate"
bdp_has "nvidia-drm.ko does not verify with --vendor-cert $FIX/keys/othermodkey.crt: signature rejected: signed by 'Test modkey' (key $key_id), which is not a pinned certificate; 4 more module(s) fail"
[ ! -e "$T/repo/index.json" ] || fail "a refused package reached the index"
# A module with no signature at all.
mkdir -p "$T/unsigned"
cp "$FIX/drv-$V_NEW/kernel/"*.ko "$T/unsigned/"
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --prebuilt-modules "$T/unsigned"
assert_eq "$RC" 1 "exit with unsigned modules"
bdp_has "nvidia.ko from $T/unsigned has no appended signature: --keep-signatures takes modules the vendor signed"
# Modules that cannot be the vendor's as shipped, each named for what it is: cut short
# (not "no appended signature"), signed again after signing (the kernel checks only the
# last signature), one module signed by a foreign key among the vendor's.
spoilt() { rm -rf "$T/$1" && cp -a "$T/vendor" "$T/$1"; }
spoilt cut
size=$(stat -c %s "$T/cut/nvidia.ko")
unsigned=$(stat -c %s "$FIX/drv-$V_NEW/kernel/nvidia.ko")
truncate -s $((size - 100)) "$T/cut/nvidia.ko"
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --prebuilt-modules "$T/cut"
assert_eq "$RC" 1 "exit with a cut signature"
bdp_has "nvidia.ko from $T/cut has $((size - 100 - unsigned)) bytes after its ELF data but no signature trailer: its appended signature is cut short"
truncate -s $((unsigned - 100)) "$T/cut/nvidia.ko"
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --prebuilt-modules "$T/cut"
assert_eq "$RC" 1 "exit with a truncated module"
bdp_has "nvidia.ko from $T/cut is truncated ($((unsigned - 100)) bytes; its ELF section headers end at byte $unsigned)"
spoilt twice
"$SIGN_FILE" sha256 "$FIX/keys/modkey.pem" "$FIX/keys/modkey.crt" "$T/twice/nvidia.ko"
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --prebuilt-modules "$T/twice"
assert_eq "$RC" 1 "exit with a module signed twice"
bdp_has "nvidia.ko from $T/twice carries 2 appended signatures (signed again after it was signed): the kernel checks only the last one"
spoilt foreign
cp "$FIX/drv-$V_NEW/kernel/nvidia-drm.ko" "$T/foreign/"
"$SIGN_FILE" sha256 "$FIX/keys/othermodkey.pem" "$FIX/keys/othermodkey.crt" "$T/foreign/nvidia-drm.ko"
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --prebuilt-modules "$T/foreign"
assert_eq "$RC" 1 "exit with a foreign signature"
bdp_has "nvidia-drm.ko does not verify with --vendor-cert $FIX/keys/modkey.crt: signature rejected: signed by 'Test othermodkey'"
[ ! -e "$T/repo/index.json" ] || fail "a refused package reached the index"

# Options that do not go together.
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt"
bdp_has "keeps the vendor's signatures: drop --sign-key"
bdp --keep-signatures
bdp_has "needs --vendor-cert CERT"

# The right one: kept byte for byte.
bdp --keep-signatures --vendor-cert "$FIX/keys/modkey.crt" --tag default
[ "$RC" = 0 ] || { cat "$T/bdp.out" >&2; fail "build-driver-package --keep-signatures: exit $RC"; }
bdp_has "signatures kept: nvidia, nvidia-drm, nvidia-modeset, nvidia-peermem, nvidia-uvm signed by 'Test modkey' (key $key_id)"
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" --zstd -xf "$T/repo/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]["path"])' "$T/repo/index.json")"
n=0
for ko in "$FIX/sdrv-$V_NEW/kernel/"*.ko; do
    cmp "$ko" "$T/unpacked/kernel/$(basename "$ko")" || fail "$(basename "$ko") was not kept byte for byte"
    n=$((n + 1))
done
assert_eq "$n" 5 "modules compared"

# The signer, in build-info.json and in the index.
signer_is() { # FILE PYTHON-EXPRESSION-FOR-THE-SIGNER
    python3 - "$1" "$2" "$key_id" "$sha" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = eval(sys.argv[2])
want = {"subject": "Test modkey", "key_id": sys.argv[3], "sha256": sys.argv[4]}
if s != want:
    sys.exit("%s: signer %r, expected %r" % (sys.argv[1], s, want))
EOF
}
signer_is "$T/unpacked/share/nvidia/build-info.json" 'd["signer"]'
assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["signatures"])' \
    "$T/unpacked/share/nvidia/build-info.json")" kept "build-info signatures"
signer_is "$T/repo/index.json" 'd["drivers"][0]["packages"][0]["signer"]'

# verify-module shows who signed and which certificate verified it.
expect_rc 0 verify-module --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" "$T/unpacked/kernel/nvidia.ko"
expect_out "signer:   Test modkey"
expect_out "key id:   $key_id"
expect_out "cert:     $sha"
expect_rc 0 verify-module --json --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" "$T/unpacked/kernel/nvidia.ko"
expect_out "\"signer_cert_sha256\": \"$sha\""

# list-versions shows the signer before anything is downloaded.
list=(list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL")
expect_rc 0 "${list[@]}"
expect_out "modules signed by 'Test modkey' (key $key_id, certificate sha256 $sha)"
expect_rc 0 "${list[@]}" --json
python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`list-versions --json`' "$T/out"
python3 - "$T/out" "$key_id" "$sha" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["versions"][0]["package"]["signer"]
assert s == {"subject": "Test modkey", "key_id": sys.argv[2], "sha256": sys.argv[3]}, s
EOF

# A malformed signer refuses the index, as every field this installer knows (exit 5).
cp -a "$T/repo" "$T/repo-bad"
edit_index "$T/repo-bad" 'idx["drivers"][0]["packages"][0]["signer"]["sha256"] = "ABC"'
expect_rc 5 list-versions --repo "file://$T/repo-bad" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_err '"signer" must be an object with "subject" (printable), "key_id" (hex pairs) and "sha256" (64 lower-case hex digits)'

# Signing with the operator's key records that signer the same way.
rm -rf "$T/repo" "$T/unpacked" && mkdir -p "$T/unpacked"
bdp --sign-key "$FIX/keys/othermodkey.pem" --sign-cert "$FIX/keys/othermodkey.crt"
[ "$RC" = 0 ] || { cat "$T/bdp.out" >&2; fail "build-driver-package --sign-key: exit $RC"; }
tar -C "$T/unpacked" --zstd -xf "$T/repo/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]["path"])' "$T/repo/index.json")"
python3 - "$T/unpacked/share/nvidia/build-info.json" "$T/repo/index.json" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
pkg = json.load(open(sys.argv[2]))["drivers"][0]["packages"][0]
assert info["signatures"] == "ours", info["signatures"]
assert info["signer"]["subject"] == "Test othermodkey", info["signer"]
assert pkg["signer"] == info["signer"], (pkg["signer"], info["signer"])
EOF
