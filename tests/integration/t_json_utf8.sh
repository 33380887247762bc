# Every --json document and every JSON log line is UTF-8, whatever bytes came in: a module
# argument or a host path that is not UTF-8 is refused where it enters (exit 2, naming it),
# and a byte that is not UTF-8 in anything else shown (a kernel release, a file name, a
# host record's text) is written as the escape of U+FFFD. Each document is parsed as a
# strict consumer parses it: the bytes decoded as UTF-8, no lone surrogate escape.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
X=$'\xff'
contract() { python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" "$@" || fail "$*: $(cat -v "$T/err" | tail -3)"; }
# strict FILE [--lines]: FILE holds one JSON document (or one a line), strictly UTF-8.
strict() {
    python3 - "$@" <<'PY' || fail "$1 is not strict UTF-8 JSON: $(head -c 600 "$1" | cat -v) (stderr: $(tail -3 "$T/err" | cat -v))"
import json, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if "--lines" in sys.argv else [json.loads(text)]
assert docs, "empty"
def walk(v):
    if isinstance(v, str):
        v.encode("utf-8")
    elif isinstance(v, dict):
        for k, x in v.items():
            walk(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
for d in docs:
    walk(d)
PY
}
has_fffd() { grep -q '\\ufffd' "$T/out" || fail "no U+FFFD escape in: $(cat -v "$T/out")"; }

# config --json shows what it was given, refused bytes included, and names each problem.
expect_rc 2 config --repo "$R" --repo-key "$FIX/keys/pub.pem" --module-arg "nvidia.NVreg_X=1$X" \
    --install-dir "/opt/nv$X" --kernel-release "6.1$X" --driver-version "550$X"
strict "$T/out"
has_fffd
expect_err "install-dir (NVIDIA_INSTALL_DIR_HOST) is not UTF-8; give the path in UTF-8"
expect_err "module-arg (NVIDIA_MODULE_ARGS): module argument 'nvidia.NVreg_X=1"
[ "$(grep -c "is not UTF-8" "$T/err")" = 2 ] || fail "config did not name both: $(cat -v "$T/err")"
# ... and in the JSON log format, its problem lines are strict JSON too.
expect_rc 2 --log-format json config --repo "$R" --repo-key "$FIX/keys/pub.pem" \
    --module-arg "nvidia.NVreg_X=1$X" --cache-dir "/var/cache/x$X"
strict "$T/out"
strict "$T/err" --lines
tail -1 "$T/err" >"$T/last"
contract "Log lines" --lines "$T/last"
# Refused where they enter: install changes nothing, not even the cache.
for a in --cache-dir --install-dir --cdi-dir --metrics-file --host-mount --container-dir; do
    expect_rc 2 install --repo "$R" $(kernel_args) $a "/var/lib/x$X"
    expect_err "is not UTF-8"
done
NVIDIA_MODULE_ARGS="nvidia.NVreg_DeviceFileMode=4$X" expect_rc 2 install --repo "$R" $(kernel_args)
expect_err "module argument 'nvidia.NVreg_DeviceFileMode=4"
expect_err "' is not UTF-8"
expect_rc 2 install --repo "$R" $(kernel_args) --module-arg "nvidia.NVreg_RegistryDwords=$(printf 'a\001')"
expect_err "values cannot hold control characters"
[ ! -e "$T/root/var/cache/nvidia-driver-installer" ] || fail "a refused argument left a cache"
[ ! -e "$(idir)" ] || fail "a refused argument left an install dir"

# What the documents echo of other input, and of the host's records, is escaped.
expect_rc 0 install --repo "$R" $(kernel_args)
python3 - "$(idir)" <<'PY'
import glob, sys
# The manifest of the installed version, damaged on the host: a byte that is not UTF-8.
ms = glob.glob(sys.argv[1] + "/.install.json") + glob.glob(sys.argv[1] + "/.versions/*/.install.json")
assert ms, "no manifest"
for m in ms:
    raw = open(m, "rb").read()
    open(m, "wb").write(raw.replace(b'"kernel_release": "', b'"kernel_release": "\xfe', 1))
PY
set +e
inst status --json
contract '`status --json`' "$T/out"
has_fffd
inst status --json --kernel-release "6.1$X"
contract '`status --json`' "$T/out"
inst doctor --json --kernel-release "6.1$X"
contract '`doctor --json`' "$T/out"
has_fffd
ln -s repo "$T/repo$X"
inst list-versions --json --repo "file://$T/repo$X" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
contract '`list-versions --json`' "$T/out"
has_fffd
inst install --dry-run --json --repo "file://$T/repo$X" $(install_args)
contract '`install --dry-run --json`' "$T/out"
has_fffd
cp "$FIX/drv-$V_OLD/kernel/nvidia-uvm.ko" "$T/uvm$X.ko"
inst verify-module --json --kernel-release "$KERNEL" "$T/uvm$X.ko"
contract '`verify-module --json FILE.ko...`' "$T/out"
has_fffd
inst coverage --json --repo "$R" --repo-key "$FIX/keys/pub.pem" --os "cos$X" --kernel "6.1$X"
contract '`coverage --os ID --kernel R --json`' "$T/out"
has_fffd
inst mirror --json --repo "$R" --repo-key "$FIX/keys/pub.pem" --to "$T/mirror$X"
contract '`mirror --json`' "$T/out"
has_fffd
set -e
