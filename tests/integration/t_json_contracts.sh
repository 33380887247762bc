# The --json outputs against their key tables in docs/json.md (read from the doc, so that
# doc and code cannot drift): every documented key and no other, null when unknown, arrays
# in their documented order; status never says ready (nor exits 0) while NVML fails;
# doctor's verdict; usage errors under --log-format json are JSON log lines.
FAKE_KERNEL=1
DOC="$SRC/docs/json.md"
contract() { python3 "$SRC/tests/tools/json-contract.py" "$DOC" "$@"; }
# j PYTHON [ARG...]: asserts over the last stdout, parsed as d; ARGs in sys.argv[1:].
j() {
    local code=$1
    shift
    python3 -c "import json,sys; d=json.load(open('$T/out')); $code" "$@"
}
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"

# The checker is not a rubber stamp: a key the doc lacks, a key the output lacks, a null
# where none is allowed, an unsorted array, each fail.
expect_rc 3 status --json
contract '`status --json`' "$T/out"
j 'assert d["installed"] is False and d["ready"] is False and d["nvml"] is None and d["driver_version"] is None, d'
mutate() { python3 -c "import json,sys; d=json.load(open('$T/out')); $1; json.dump(d, open('$T/bad.json','w'))"; }
mutate 'd["extra"] = 1'
contract '`status --json`' "$T/bad.json" 2>"$T/why" && fail "an undocumented key passed"
grep -q "undocumented key 'extra'" "$T/why" || fail "$(cat "$T/why")"
mutate 'del d["loaded_version"]'
contract '`status --json`' "$T/bad.json" 2>/dev/null && fail "a missing key passed"
mutate 'd["install_dir"] = None'
contract '`status --json`' "$T/bad.json" 2>/dev/null && fail "a null install_dir passed"
mutate 'd["device_nodes"] = ["/dev/nvidiactl", "/dev/nvidia0"]'
contract '`status --json`' "$T/bad.json" 2>/dev/null && fail "unsorted device_nodes passed"
# ... and a row missing from the doc fails a true output.
grep -v '^| `nvml.error`' "$DOC" >"$T/short.md"
expect_rc 0 install --repo "$R" $(kernel_args) --metrics-file /var/lib/node_exporter/nvidia.prom
expect_rc 0 status --json
python3 "$SRC/tests/tools/json-contract.py" "$T/short.md" '`status --json`' "$T/out" 2>/dev/null &&
    fail "a key missing from the doc passed"

# Installed, loaded, answering: every nested object present and exact, arrays sorted.
contract '`status --json`' "$T/out"
j 'assert d["ready"] is True and d["nvml"]["answers"] is True and d["nvml"]["error"] is None, d
assert [g["minor"] for g in d["nvml"]["gpus"]] == [0, 1], d["nvml"]
assert d["device_nodes"] == sorted(d["device_nodes"]) and "/dev/nvidiactl" in d["device_nodes"], d
assert [m["name"] for m in d["modules"]] == sorted(m["name"] for m in d["modules"]) and len(d["modules"]) > 2, d
assert d["mount"] is not None and d["ready_marker"]["present"] is True, d'

# NVML fails: not ready, exit 8, the cause in nvml.error, although the marker is there.
NVML_STANDIN_FAIL=init expect_rc 8 status --json
contract '`status --json`' "$T/out"
j 'assert d["ready"] is False and d["ready_marker"]["present"] is True, d
n = d["nvml"]
assert n["answers"] is False and n["expected"] is True and "Driver Not Loaded" in n["error"], n
assert n["gpus"] == [] and n["driver_version"] is None and n["cuda_version"] is None, n'
expect_err "NVML does not answer as it should: NVML initialisation failed: Driver Not Loaded"
NVML_STANDIN_FAIL=init expect_rc 8 status
expect_out "ready:          no (the readiness marker is present, but NVML does not answer)"

# The cached index served (the repository moved away): repository_fallback in full.
mv "$T/repo" "$T/repo.gone"
expect_rc 0 install --repo "$R" $(kernel_args) --index-max-age 0
mv "$T/repo.gone" "$T/repo"
expect_rc 0 status --json
contract '`status --json`' "$T/out"
j 'f = d["repository_fallback"]; assert f["reason"] == "not_found" and f["mirrors"] == [sys.argv[1]], f' "$R"

# doctor: the verdict beside the checks, healthy and not.
expect_rc 0 doctor --json --kernel-release "$KERNEL"
contract '`doctor --json`' "$T/out"
j 'assert d["verdict"] in ("ok", "warn") and d["failed"] == 0 and len(d["checks"]) > 5, d'
NVML_STANDIN_FAIL=init expect_rc 9 doctor --json --kernel-release "$KERNEL"
contract '`doctor --json`' "$T/out"
j 'assert d["verdict"] == "fail" and d["failed"] == sum(c["status"] == "fail" for c in d["checks"]) >= 1, d
assert [c for c in d["checks"] if c["check"] == "nvml"][0]["status"] == "fail", d'

# install --dry-run --json: installed and not, with and without the kernel part.
expect_rc 0 install --repo "$R" $(kernel_args) --dry-run --json --driver-version "$V_NEW"
contract '`install --dry-run --json`' "$T/out"
j 'assert d["action"] == "install" and d["driver_version"] == sys.argv[1], d
assert d["installed"]["driver_version"] == sys.argv[2] and d["kernel"]["loaded_version"] == sys.argv[2], d
assert d["repository"]["source"] == "mirror" and d["package"]["cached"] is False, d
assert [g["bdf"] for g in d["host"]["gpus"]] == ["0000:00:04.0", "0000:00:05.0"], d["host"]' "$V_NEW" "$V_OLD"
mkroot "$T/fresh"
inst_fresh() { "$BIN" --root "$T/fresh" "$@" >"$T/out" 2>"$T/err"; }
inst_fresh install --repo "$R" $(install_args) --dry-run --json || fail "dry run: $(cat "$T/err")"
contract '`install --dry-run --json`' "$T/out"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["installed"] is None and d["kernel"] is None and d["action"] == "install", d' "$T/out"
expect_rc 2 install --repo "$R" $(kernel_args) --json
expect_err "install: --json goes with --dry-run"

# verify-module --json: a pass and a failure, in argument order.
cp "$T/root/$IDIR_REL/drivers/nvidia.ko" "$T/signed.ko"
cp "$FIX/drv-$V_NEW/kernel/nvidia-uvm.ko" "$T/unsigned.ko"
expect_rc 5 verify-module --json --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" \
    "$T/signed.ko" "$T/unsigned.ko"
contract '`verify-module --json FILE.ko...`' "$T/out"
python3 - "$T/out" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "fail" and d["failed"] == 1, d
m = d["modules"]
assert [x["file"] for x in m] == [sys.argv[2] + "/signed.ko", sys.argv[2] + "/unsigned.ko"], m
assert m[0]["pass"] and m[0]["verified"] and m[0]["signer"] == "Test modkey", m[0]
assert not m[1]["pass"] and not m[1]["signed"] and m[1]["signer"] is None, m[1]
PY

# mirror --json: packages sorted by path, copied then kept.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" "$FIX/spkg-$V_NEW.tar.zst" >/dev/null
expect_rc 0 mirror --json --repo "$R" --repo-key "$FIX/keys/pub.pem" --to "$T/mirror"
contract '`mirror --json`' "$T/out"
j 'assert d["copied"] == 3 and d["kept"] == 0 and [p["action"] for p in d["packages"]] == ["copied"] * 3, d'
expect_rc 0 mirror --json --repo "$R" --repo-key "$FIX/keys/pub.pem" --to "$T/mirror"
contract '`mirror --json`' "$T/out"
j 'assert d["copied"] == 0 and d["kept"] == 3 and d["network_bytes"] == 0, d'

# Usage errors are JSON log lines under --log-format json, wherever it stands, and under
# NVIDIA_INSTALLER_LOG_FORMAT=json; the same keys as the line that ends a failed run.
usage_json() {
    contract "Log lines" --lines "$T/err"
    python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert len(l) == 1 and l[0]["level"] == "error" and l[0]["exit_code"] == 2 and sys.argv[2] in l[0]["msg"], l' "$T/err" "$1"
}
expect_rc 2 --log-format json install --bogus
usage_json "unrecognized or incomplete option '--bogus'"
expect_rc 2 install --bogus --log-format=json
usage_json "'--bogus'"
expect_rc 2 --log-format json frobnicate
usage_json "unknown command 'frobnicate'"
NVIDIA_INSTALLER_LOG_FORMAT=json expect_rc 2 install --driver-version v550
usage_json "is not 'default', 'latest'"
set +e
NVIDIA_INSTALLER_LOG_FORMAT=json NVIDIA_FETCH_TIMEOUT=soon "$BIN" --root "$T/root" status 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "a bad environment variable under JSON"
usage_json "NVIDIA_FETCH_TIMEOUT"
# The line that ends a failed run has the same keys.
expect_rc 3 --log-format json status --install-dir /opt/none
tail -1 "$T/err" >"$T/last"
contract "Log lines" --lines "$T/last"
# Text stays text.
expect_rc 2 install --bogus
expect_err "Try 'nvidia-driver-installer install --help'"
