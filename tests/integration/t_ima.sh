# security.ima travels in the package as a pax xattr and lands on the installed file:
# make-repo pack takes COS's raw values from FILE.sig beside the GSP firmware, the
# installer sets them while unpacking, and getfattr reads them back. The install dir is
# on the scratch file system (ext4 here, where root may set security.*; the test says so
# and stops when it cannot). Every other attribute is refused by the archive policy
# (exit 5); a host that cannot store the value gets a warning, or exit 6 where it
# enforces IMA appraisal (docs/design.md, "IMA signatures").
command -v getfattr >/dev/null || fail "getfattr missing: install the attr package (scripts/deps.sh)"
touch "$T/probe"
setfattr -n security.ima -v 0x0301 "$T/probe" 2>/dev/null ||
    fail "the scratch file system ($(stat -f -c %T "$T")) cannot store security.ima as root"
echo "scratch file system: $(stat -f -c %T "$T"), security.ima settable"

V=$V_NEW
FW=firmware/nvidia/$V/gsp_ga10x.bin
cp -a "$FIX/drv-$V" "$T/drv"
# A raw IMA signature as evmctl writes it: type 3, version 2, sha256, key id, length, sig.
python3 -c '
import os, sys
sig = os.urandom(256)
sys.stdout.buffer.write(bytes([3, 2, 4]) + bytes.fromhex("a1b2c3d4") + len(sig).to_bytes(2, "big") + sig)
' >"$T/drv/$FW.sig"
printf '\x03\x02\x04\x11\x22\x33\x44\x00\x02\x0a\xff' >"$T/drv/kernel/nvidia.ko.sig"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/ima.tar.zst"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/ima2.tar.zst"
assert_eq "$(sha256sum <"$T/ima2.tar.zst")" "$(sha256sum <"$T/ima.tar.zst")" "the package's digest"
zstd -dcq "$T/ima.tar.zst" | tar -t 2>/dev/null | grepq '\.sig$' && fail "a .sig file was packed"

mkroot "$T/root"
new_repo "$T/repo"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V" \
    --kernel "$KERNEL" "$T/ima.tar.zst" >/dev/null
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V"
value() { getfattr --absolute-names --only-values -n security.ima "$1" | od -An -tx1 | tr -d ' \n'; }
assert_eq "$(value "$(idir)/$FW")" "$(od -An -tx1 "$T/drv/$FW.sig" | tr -d ' \n')" "$FW security.ima"
assert_eq "$(value "$(idir)/drivers/nvidia.ko")" "$(od -An -tx1 "$T/drv/kernel/nvidia.ko.sig" | tr -d ' \n')" \
    "nvidia.ko security.ima"
getfattr --absolute-names -n security.ima "$(idir)/firmware/nvidia/$V/gsp_tu10x.bin" 2>/dev/null &&
    fail "a file without a .sig got security.ima"
[ ! -e "$(idir)/$FW.sig" ] || fail "the .sig was installed"

# pack refuses a value for a file outside firmware/ and kernel/, and bytes that are no IMA value.
cp -a "$FIX/drv-$V" "$T/bad"
printf '\x03\x02' >"$T/bad/bin/nvidia-smi.sig"
"$SRC/scripts/make-repo" pack "$T/bad" "$T/bad.tar.zst" 2>"$T/err" && fail "pack took bin/nvidia-smi.sig"
expect_err "only files under firmware/ and kernel/ may carry one"
rm "$T/bad/bin/nvidia-smi.sig"
printf '\x30\x82\x01' >"$T/bad/kernel/nvidia.ko.sig"
"$SRC/scripts/make-repo" pack "$T/bad" "$T/bad.tar.zst" 2>"$T/err" && fail "pack took a PKCS#7 .sig"
expect_err "is not a raw security.ima value (3 bytes, type 48"

# Other attributes, and security.ima where it does not belong: refused, naming both.
n=0
for kind in xattr-user xattr-capability xattr-ima-bin xattr-ima-big xattr-ima-type; do
    n=$((n + 1))
    python3 "$SRC/tests/tools/evil-tar.py" "$kind" | zstd -q -c >"$T/$kind.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "610.$n.1" \
        --kernel "$KERNEL" "$T/$kind.tar.zst" >/dev/null
    expect_rc 5 install --repo "file://$T/repo" $(install_args) --driver-version "610.$n.1"
    echo "$kind: $(grep ERROR "$T/err")"
    case $kind in
    xattr-user) expect_err "member 'firmware/gsp.bin' carries extended attribute 'user.foo'" ;;
    xattr-capability) expect_err "member 'bin/nvidia-smi' carries extended attribute 'security.capability'" ;;
    xattr-ima-bin) expect_err "member 'bin/nvidia-smi' carries extended attribute 'security.ima'; it is allowed only on files under firmware/ and kernel/" ;;
    xattr-ima-big) expect_err "member 'firmware/gsp.bin' carries a security.ima of 1025 bytes" ;;
    xattr-ima-type) expect_err "member 'firmware/gsp.bin' carries a security.ima of type 48" ;;
    esac
done
assert_eq "$(installed_version)" "$V" "still installed"

# A host that cannot store it: without CAP_SYS_ADMIN, setting security.* is EPERM.
nocap() { setpriv --inh-caps=-sys_admin --ambient-caps=-sys_admin --bounding-set=-sys_admin "$@"; }
setpriv --bounding-set=-sys_admin setfattr -n security.ima -v 0x0301 "$T/probe" 2>/dev/null &&
    fail "setfattr security.ima without CAP_SYS_ADMIN worked: the EPERM case cannot be made"
mkroot "$T/r2"
run_nocap() {
    set +e
    setpriv --bounding-set=-sys_admin "$BIN" --root "$T/r2" install --repo "file://$T/repo" \
        $(install_args) --driver-version "$V" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
# No appraisal on this host: a warning, and the install goes on without the value.
run_nocap
[ "$RC" = 0 ] || { cat "$T/err"; fail "no CAP_SYS_ADMIN, no appraisal: exit $RC"; }
expect_err "WARN  unpack: security.ima not stored; the files are installed without it, which this host does not check"
expect_err "(first=kernel/nvidia.ko files=2 cause=no CAP_SYS_ADMIN, which setting security.\* needs host=neither"
getfattr --absolute-names -n security.ima "$T/r2/$IDIR_REL/$FW" 2>/dev/null && fail "a value was stored without CAP_SYS_ADMIN"
# A host whose kernel command line enforces appraisal: refused, before anything changes.
rm -rf "$T/r2"
mkroot "$T/r2"
mkdir -p "$T/r2/proc"
echo "BOOT_IMAGE=/vmlinuz ro ima_policy=appraise_tcb" >"$T/r2/proc/cmdline"
run_nocap
[ "$RC" = 6 ] || { cat "$T/err"; fail "no CAP_SYS_ADMIN under appraise_tcb: exit $RC, expected 6"; }
expect_err "cannot store security.ima on 'kernel/nvidia.ko' and 1 more (Operation not permitted: no CAP_SYS_ADMIN, which setting security.\* needs), and this host enforces IMA appraisal (ima_policy=appraise_tcb on the kernel command line)"
expect_err "fix: run the installer with CAP_SYS_ADMIN"
[ ! -e "$T/r2/$IDIR_REL/$FW" ] || fail "the refused package was installed"
# The policy, where readable, decides over the command line.
mkdir -p "$T/r2/sys/kernel/security/ima"
printf 'measure func=BPRM_CHECK\n' >"$T/r2/sys/kernel/security/ima/policy"
run_nocap
[ "$RC" = 0 ] || { cat "$T/err"; fail "a policy without appraise rules: exit $RC"; }
expect_err "host=the IMA policy appraises neither firmware nor modules)"

# A hostile policy. The installer reads it whole, without waiting: a NUL before the
# appraise rule hides nothing, and a policy it cannot read whole (a FIFO, one past its
# limit) is not one that does not appraise: exit 6. A FIFO at proc/cmdline makes nobody
# wait either. (timeout: the old reader waited on a FIFO for a writer forever.)
run_nocap_bounded() {
    set +e
    rm -rf "$T/r2/$IDIR_REL" "$T/r2/var/cache"
    timeout 60 setpriv --bounding-set=-sys_admin "$BIN" --root "$T/r2" install \
        --repo "file://$T/repo" $(install_args) --driver-version "$V" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
POL="$T/r2/sys/kernel/security/ima/policy"
printf 'measure func=BPRM_CHECK\n\0appraise func=MODULE_CHECK appraise_type=imasig\n' >"$POL"
run_nocap_bounded
[ "$RC" = 6 ] || { cat "$T/err"; fail "a NUL before the appraise rule: exit $RC, expected 6"; }
expect_err "this host enforces IMA appraisal (the IMA policy has 'appraise func=MODULE_CHECK appraise_type=imasig')"
rm "$POL"
mkfifo "$POL"
run_nocap_bounded
[ "$RC" = 6 ] || { cat "$T/err"; fail "a FIFO at the IMA policy: exit $RC, expected 6"; }
expect_err "this host enforces IMA appraisal (the IMA policy cannot be read whole ('/sys/kernel/security/ima/policy' is not a regular file"
rm "$POL"
python3 -c 'import sys; sys.stdout.write("measure func=BPRM_CHECK\n" * 50000 + "appraise func=MODULE_CHECK\n")' >"$POL"
run_nocap_bounded
[ "$RC" = 6 ] || { cat "$T/err"; fail "an oversized IMA policy: exit $RC, expected 6"; }
expect_err "the IMA policy cannot be read whole ('/sys/kernel/security/ima/policy': file larger than 1048576 bytes)"
[ ! -e "$T/r2/$IDIR_REL/$FW" ] || fail "a package refused for its IMA values was installed"
rm "$POL" "$T/r2/proc/cmdline"
mkfifo "$T/r2/proc/cmdline"
run_nocap_bounded
[ "$RC" = 0 ] || { cat "$T/err"; fail "a FIFO at proc/cmdline: exit $RC, expected 0"; }
expect_err "host=neither the kernel command line nor a readable IMA policy appraises)"
