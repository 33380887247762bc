# build-driver-package --stage-to DIR builds as --repo does but touches no index: it leaves
# each flavour's package and its record (DIR/stage.json: digest, sizes, version, kernel,
# arch, os, flavour, GPUs with their names, signer, tags, repository), and make-repo
# publish puts them into the repository as --repo would have: the same index but for its
# time, which the installer reads.
BDP=$SRC/scripts/build-driver-package
mkroot "$T/root" debian 12
mkdir -p "$T/src/supported-gpus"
run_source "$FIX/drv-$V_NEW"
flavour_modules
cat >"$T/src/supported-gpus/supported-gpus.json" <<'JSON'
{"chips": [
 {"name": "NVIDIA H100 80GB HBM3", "devid": "0x2330", "features": ["kernelopen"]},
 {"name": "Tesla V100-SXM2-16GB", "devid": "0x1DB1", "features": []}
]}
JSON
bdp() {
    set +e
    "$BDP" --kernel "$KERNEL" --source "$T/src" --os debian --tag default \
        --repository drivers.example.com/nvidia --flavour both \
        --prebuilt-modules "proprietary=$T/mods-proprietary" --prebuilt-modules "open=$T/mods-open" \
        --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" \
        --installer "$BIN" "$@" >"$T/bdp.out" 2>&1
    RC=$?
    set -e
}

# --stage-to with --repo is one destination too many; neither is none.
bdp --work "$T/work0" --stage-to "$T/stage" --repo "$T/repo-a" --repo-key "$FIX/keys/key.pem"
assert_eq "$RC" 2 "exit with --stage-to and --repo"
assert_eq "$(cat "$T/bdp.out")" "build-driver-package: --stage-to leaves the index alone: leave out --repo and --repo-key, or --stage-to (try --help)" "refusal"
bdp --work "$T/work0"
assert_eq "$RC" 2 "exit with no destination"
grep -q "^build-driver-package: give --repo DIR and --repo-key KEY.pem (publish), or --stage-to DIR" "$T/bdp.out" || fail "$(cat "$T/bdp.out")"

bdp --work "$T/work-a" --repo "$T/repo-a" --repo-key "$FIX/keys/key.pem"
assert_eq "$RC" 0 "build into the repository: $(cat "$T/bdp.out")"
bdp --work "$T/work-b" --stage-to "$T/stage"
assert_eq "$RC" 0 "build staged: $(cat "$T/bdp.out")"
grep -q "^build-driver-package: staged packages/$KERNEL/x86_64/nvidia-$V_NEW-debian-open.tar.zst in $T/stage$" "$T/bdp.out" ||
    fail "$(cat "$T/bdp.out")"
[ ! -e "$T/repo-b" ] || fail "--stage-to made a repository"
python3 - "$T/stage" "$KERNEL" "$V_NEW" <<'PY'
import hashlib, json, os, sys
stage, kernel, version = sys.argv[1:]
rec = json.load(open(os.path.join(stage, "stage.json")))
assert rec["stage"] == 1, rec
assert [p["module_type"] for p in rec["packages"]] == ["proprietary", "open"], rec
for p in rec["packages"]:
    f = os.path.join(stage, p["file"])
    assert p["file"] == "packages/%s/x86_64/nvidia-%s-debian-%s.tar.zst" % (
        kernel, version, p["module_type"]), p
    assert p["sha256"] == hashlib.sha256(open(f, "rb").read()).hexdigest(), p
    assert p["size"] == os.path.getsize(f) and p["unpacked_size"] > p["size"], p
    assert (p["version"], p["kernel"], p["arch"], p["os"], p["tags"], p["repository"]) == (
        version, kernel, "x86_64", "debian", ["default"], "drivers.example.com/nvidia"), p
    assert set(p["signer"]) == {"subject", "key_id", "sha256"}, p
gpus = {p["module_type"]: p["gpus"] for p in rec["packages"]}
assert gpus == {"proprietary": [["10de:1db1", "Tesla V100-SXM2-16GB"],
                                ["10de:2330", "NVIDIA H100 80GB HBM3"]],
                "open": [["10de:2330", "NVIDIA H100 80GB HBM3"]]}, gpus
PY
"$SRC/scripts/make-repo" publish --repo "$T/repo-b" --key "$FIX/keys/key.pem" "$T/stage" >"$T/pub.out"
assert_eq "$(cat "$T/pub.out")" "packages/$KERNEL/x86_64/nvidia-$V_NEW-debian-proprietary.tar.zst
packages/$KERNEL/x86_64/nvidia-$V_NEW-debian-open.tar.zst" "publish's paths"
# The same index as --repo made, but for its time (the packages are the same bytes).
python3 - "$T/repo-a/index.json" "$T/repo-b/index.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a.pop("generated") and b.pop("generated")
assert a == b, (a, b)
PY
expect_rc 0 list-versions --repo "file://$T/repo-b" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "^$V_NEW "
