# coverage --gpu with a GPU of a multi-node NVLink domain (GB200 10de:2941, GB300 10de:31c2):
# the answer says when the chosen package carries no IMEX (the index's packages[].imex),
# why (the driver is older than the GPU's first release, by the full version: 535, and
# 570.86.16 before GB200's 570.123.01; or the package was built without it) and the fix, in
# text, --json and --fleet rows; the exit status stays 0 (a package without IMEX still
# serves single-node jobs; the index's supported_pci_ids judge the GPU itself). No note for a
# package with IMEX or a GPU that needs none; a note beside "imex": true for a 570.133.20
# with IMEX, older than 570.158.01 (the DRA driver's default gate IMEXDaemonsWithDNSNames
# needs it: host_imex_gate).
# NVLink 5 telemetry: an HGX B200 (10de:2901) on x86_64 gets a note, exit 0, while the chosen
# package carries no lib64/libnvsdm.so.1 (packages[].nvsdm, which make-repo add sets from a
# package whose libnvsdm.so.1 is a link to NVIDIA's file, as build-driver-package --nvsdm
# packs it), none with it, and none for other GPUs; in text, --json and a --fleet row.
mkroot "$T/root"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 20)
add() {
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" "$@" >/dev/null
}
add --version "$V_OLD" --kernel "$KERNEL" --tag default "$FIX/pkg-$V_OLD.tar.zst"
add --version 570.86.16 --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst"
add --version 570.133.20 --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst"
add --version 580.82.07 --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst"
# The 580 package carries IMEX (make-repo add sets it from the package's content; here the
# index says so directly).
edit_index "$T/repo" '
for d in idx["drivers"]:
    for p in d["packages"]:
        if d["version"] == "580.82.07":
            p["imex"] = True
' >/dev/null
Q=(coverage "${R[@]}" --os cos --kernel "$KERNEL")
FIX_TEXT="fix: a driver"
FIX_END=" or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version)"

# 535 on a GB200: served (exit 0), and the note says the driver does not drive the GPU; the
# fix names 570.158.01, which ComputeDomains need too.
expect_rc 0 "${Q[@]}" --gpu 10de:2941
expect_out "^served: cos, kernel $KERNEL (x86_64): 'default' is driver $V_OLD"
expect_out "^note: GPU 10de:2941 (GB200) needs IMEX for jobs across nodes (multi-node NVLink); driver $V_OLD does not drive the GB200 (570.123.01 or later does); $FIX_TEXT 570.158.01$FIX_END$"
assert_eq "$(wc -l <"$T/out")" 2 "lines of the answer"
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --json
python3 - "$T/out" "$V_OLD" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["served"] is True, o
assert o["imex"] is False, o["imex"]
assert o["package"]["imex"] is False, o["package"]
assert "driver 535.261.03 does not drive the GB200 (570.123.01 or later does)" in o["imex_note"], o["imex_note"]
assert "fix: a driver 570.158.01 or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version)" in o["imex_note"], o["imex_note"]
PY

# 570.133.20 (the newest 570 here) built without IMEX: the package, not the driver.
expect_rc 0 "${Q[@]}" --gpu 10de:2330 --gpu 10de:2941 --driver-version 570
expect_out "^note: GPU 10de:2941 (GB200) .*; driver 570.133.20's package: it carries no nvidia-imex and nvidia-imex-ctl, so the node serves single-node jobs only; $FIX_TEXT 570.158.01$FIX_END$"
# A GB300 needs 580.82.07: 570 does not drive it.
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570
expect_out "^note: GPU 10de:31c2 (GB300) .*; driver 570.133.20 does not drive the GB300 (580.82.07 or later does); $FIX_TEXT 580.82.07$FIX_END$"

# 580 with IMEX: no note; --json says true.
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --driver-version 580
! grep -q "^note:" "$T/out" || fail "a note for a package with IMEX: $(cat "$T/out")"
expect_rc 0 "${Q[@]}" --gpu 10de:31C2 --driver-version 580 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is True and o["imex_note"] is None and o["package"]["imex"] is True, o' "$T/out"

# No GPU that needs IMEX: no note, "imex" null.
expect_rc 0 "${Q[@]}" --gpu 10de:2330
! grep -q "^note:" "$T/out" || fail "a note for an H100: $(cat "$T/out")"
expect_rc 0 "${Q[@]}" --gpu 10de:2330 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is None and o["imex_note"] is None, o' "$T/out"

# The table's packages say which carry IMEX.
expect_rc 0 coverage "${R[@]}" --json
python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
got = sorted((p["driver_version"], p["imex"]) for p in o["packages"])
assert got == [("535.261.03", False), ("570.133.20", False), ("570.86.16", False), ("580.82.07", True)], got' "$T/out"

# --fleet: a GB200 row with 535 and 580, an H100 row with 535: all served (exit 0), the
# note on the one answer that lacks IMEX.
printf '{"fleet": 1, "images": [
  {"name": "a4x", "os": "cos", "kernel": "%s", "gpus": ["10de:2941"], "driver_versions": ["535", "580"]},
  {"name": "a3", "os": "cos", "kernel": "%s", "gpus": ["10de:2330"], "driver_versions": ["535"]}]}\n' \
    "$KERNEL" "$KERNEL" >"$T/fleet.json"
expect_rc 0 coverage "${R[@]}" --fleet "$T/fleet.json"
expect_out "^served: a4x: '535' (auto) is driver $V_OLD, package [^;]*; note: GPU 10de:2941 (GB200) needs IMEX .*$FIX_TEXT 570.158.01$FIX_END$"
expect_out "^served: a4x: '580' (auto) is driver 580.82.07, package [^;]*$"
expect_out "^served: a3: '535' (auto) is driver $V_OLD, package [^;]*$"
expect_rc 0 coverage "${R[@]}" --fleet "$T/fleet.json" --json
python3 - "$T/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["answers"]
assert [x["imex"] for x in a] == [False, True, None], [x["imex"] for x in a]
assert a[0]["imex_note"] and a[1]["imex_note"] is None and a[2]["imex_note"] is None, a
PY

# Packages with IMEX of a driver older than the GPU's first release: the version decides,
# in full (570 built with --imex on a GB300, which needs 580.82.07; 570.86.16 with it on a
# GB200, which 570.123.01 first drives): a note, "imex" false, as doctor fails the same node.
edit_index "$T/repo" '
for d in idx["drivers"]:
    for p in d["packages"]:
        if d["version"] in ("570.86.16", "570.133.20"):
            p["imex"] = True
' >/dev/null
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570
expect_out "^note: GPU 10de:31c2 (GB300) .*; driver 570.133.20 does not drive the GB300 (580.82.07 or later does); $FIX_TEXT 580.82.07$FIX_END$"
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is False and "driver 570.133.20 does not drive the GB300" in o["imex_note"] and o["package"]["imex"] is True, o' "$T/out"
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --driver-version 570.86.16
expect_out "^note: GPU 10de:2941 (GB200) needs IMEX for jobs across nodes (multi-node NVLink); driver 570.86.16 does not drive the GB200 (570.123.01 or later does); $FIX_TEXT 570.158.01$FIX_END$"
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --driver-version 570.86.16 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is False and "driver 570.86.16 does not drive the GB200" in o["imex_note"] and o["package"]["imex"] is True, o' "$T/out"
# 570.133.20 with IMEX on a GB200: IMEX served ("imex" true), but older than 570.158.01,
# which the DRA driver's default gate IMEXDaemonsWithDNSNames needs: a note.
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --driver-version 570
expect_out "^note: GPU 10de:2941 (GB200) needs IMEX for jobs across nodes (multi-node NVLink); driver 570.133.20 is older than 570.158.01, which NVIDIA's DRA driver needs for its default feature gate IMEXDaemonsWithDNSNames: its ComputeDomain kubelet plugin refuses to start; fix: install 570.158.01 or later, or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false$"
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --driver-version 570 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is True and "IMEXDaemonsWithDNSNames" in o["imex_note"], o' "$T/out"

# NVLink 5 telemetry: 575.57.08 carries libnvsdm (a stand-in file, its soname link), set in
# the index by make-repo add from the content alone.
mkdir -p "$T/p575" && tar -C "$T/p575" -xf "$FIX/pkg-$V_NEW.tar.zst"
echo stand-in >"$T/p575/lib64/libnvsdm.so.575.57.08"
ln -s libnvsdm.so.575.57.08 "$T/p575/lib64/libnvsdm.so.1"
"$SRC/scripts/make-repo" pack "$T/p575" "$T/p575.tar.zst" >/dev/null
add --version 575.57.08 --kernel "$KERNEL" "$T/p575.tar.zst"
python3 -c '
import json, sys
got = {d["version"]: [p.get("nvsdm") for p in d["packages"]] for d in json.load(open(sys.argv[1]))["drivers"]}
assert got["575.57.08"] == [True] and all(v == [None] for k, v in got.items() if k != "575.57.08"), got' \
    "$T/repo/index.json" || fail "the index's packages[].nvsdm"
expect_rc 0 "${Q[@]}" --gpu 10de:2901
expect_out "^note: GPU 10de:2901 (B200): NVLink 5 switches, which DCGM (dcgm-exporter) reads through libnvsdm.so.1; driver $V_OLD's package carries none, so DCGM reports no NVSwitch metrics (the GPUs are served); fix: install a driver of branch 560 or later built with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)$"
# 570 without it: the branch has libnvsdm, so the package built again is the fix (doctor's
# words, host_nvsdm_fix).
expect_rc 0 "${Q[@]}" --gpu 10de:2901 --driver-version 570
expect_out "^note: GPU 10de:2901 (B200): .*driver 570.133.20's package carries none, .*; fix: build the driver's package with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)$"
expect_rc 0 "${Q[@]}" --gpu 10de:2901 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["served"] and o["nvsdm"] is False and "build-driver-package --nvsdm" in o["nvsdm_note"] and o["package"]["nvsdm"] is False and o["imex"] is None, o' "$T/out"
expect_rc 0 "${Q[@]}" --gpu 10de:2901 --driver-version 575
! grep -q "^note:" "$T/out" || fail "a note for a package with libnvsdm: $(cat "$T/out")"
expect_rc 0 "${Q[@]}" --gpu 10de:2901 --driver-version 575 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["nvsdm"] is True and o["nvsdm_note"] is None and o["package"]["nvsdm"] is True, o' "$T/out"
expect_rc 0 "${Q[@]}" --gpu 10de:2330 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["nvsdm"] is None and o["nvsdm_note"] is None, o' "$T/out"
printf '{"fleet": 1, "images": [{"name": "b200", "os": "cos", "kernel": "%s", "gpus": ["10de:2901"], "driver_versions": ["535", "575"]}]}\n' \
    "$KERNEL" >"$T/fleet5.json"
expect_rc 0 coverage "${R[@]}" --fleet "$T/fleet5.json"
expect_out "^served: b200: '535' (auto) is driver $V_OLD, package [^;]*; note: GPU 10de:2901 (B200): NVLink 5 switches, .*fix: install a driver of branch 560 or later built with build-driver-package --nvsdm .*$"
expect_out "^served: b200: '575' (auto) is driver 575.57.08, package [^;]*$"
