# coverage --gpu with a GPU of a multi-node NVLink domain (GB200 10de:2941, GB300 10de:31c2):
# the answer says when the chosen package carries no IMEX (the index's packages[].imex),
# why (the branch has none, does not drive the GPU, or the package was built without it)
# and the fix, in text, --json and --fleet rows; the exit status stays 0, as such a node
# still serves single-node jobs. No note for a package with IMEX or a GPU that needs none.
mkroot "$T/root"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 20)
add() {
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" "$@" >/dev/null
}
add --version "$V_OLD" --kernel "$KERNEL" --tag default "$FIX/pkg-$V_OLD.tar.zst"
add --version 570.86.16 --kernel "$KERNEL" "$FIX/pkg-$V_NEW.tar.zst"
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
FIX_TEXT="fix: build it with build-driver-package --imex (NVIDIA's nvidia-imex package of the driver's version), branch"

# 535 on a GB200: served (exit 0), and the note says the branch has no IMEX.
expect_rc 0 "${Q[@]}" --gpu 10de:2941
expect_out "^served: cos, kernel $KERNEL (x86_64): 'default' is driver $V_OLD"
expect_out "^note: GPU 10de:2941 (GB200) needs IMEX for jobs across nodes (multi-node NVLink); driver $V_OLD's package: branch 535 has no IMEX (it came in 550), so the node serves single-node jobs only; $FIX_TEXT 570 or later$"
assert_eq "$(wc -l <"$T/out")" 2 "lines of the answer"
expect_rc 0 "${Q[@]}" --gpu 10de:2941 --json
python3 - "$T/out" "$V_OLD" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["served"] is True, o
assert o["imex"] is False, o["imex"]
assert o["package"]["imex"] is False, o["package"]
assert "branch 535 has no IMEX (it came in 550)" in o["imex_note"], o["imex_note"]
assert "build-driver-package --imex (NVIDIA's nvidia-imex package of the driver's version), branch 570 or later" in o["imex_note"], o["imex_note"]
PY

# 570 built without IMEX: the package, not the branch.
expect_rc 0 "${Q[@]}" --gpu 10de:2330 --gpu 10de:2941 --driver-version 570
expect_out "^note: GPU 10de:2941 (GB200) .*driver 570.86.16's package: it carries no nvidia-imex and nvidia-imex-ctl, .*$FIX_TEXT 570 or later$"
# A GB300 needs 580: 570 does not drive it.
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570
expect_out "^note: GPU 10de:31c2 (GB300) .*: branch 570 does not drive the GB300 (580 or later does), .*$FIX_TEXT 580 or later$"

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
assert got == [("535.261.03", False), ("570.86.16", False), ("580.82.07", True)], got' "$T/out"

# --fleet: a GB200 row with 535 and 580, an H100 row with 535: all served (exit 0), the
# note on the one answer that lacks IMEX.
printf '{"fleet": 1, "images": [
  {"name": "a4x", "os": "cos", "kernel": "%s", "gpus": ["10de:2941"], "driver_versions": ["535", "580"]},
  {"name": "a3", "os": "cos", "kernel": "%s", "gpus": ["10de:2330"], "driver_versions": ["535"]}]}\n' \
    "$KERNEL" "$KERNEL" >"$T/fleet.json"
expect_rc 0 coverage "${R[@]}" --fleet "$T/fleet.json"
expect_out "^served: a4x: '535' (auto) is driver $V_OLD, package [^;]*; note: GPU 10de:2941 (GB200) needs IMEX .*$FIX_TEXT 570 or later$"
expect_out "^served: a4x: '580' (auto) is driver 580.82.07, package [^;]*$"
expect_out "^served: a3: '535' (auto) is driver $V_OLD, package [^;]*$"
expect_rc 0 coverage "${R[@]}" --fleet "$T/fleet.json" --json
python3 - "$T/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["answers"]
assert [x["imex"] for x in a] == [False, True, None], [x["imex"] for x in a]
assert a[0]["imex_note"] and a[1]["imex_note"] is None and a[2]["imex_note"] is None, a
PY

# A package with IMEX of a branch below the GPU's: the branch decides (570 built with --imex
# on a GB300, which needs 580): a note, "imex" false, as doctor fails the same node.
edit_index "$T/repo" '
for d in idx["drivers"]:
    for p in d["packages"]:
        if d["version"] == "570.86.16":
            p["imex"] = True
' >/dev/null
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570
expect_out "^note: GPU 10de:31c2 (GB300) .*driver 570.86.16's package: branch 570 does not drive the GB300 (580 or later does), .*$FIX_TEXT 580 or later$"
expect_rc 0 "${Q[@]}" --gpu 10de:31c2 --driver-version 570 --json
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["imex"] is False and "branch 570 does not drive the GB300" in o["imex_note"] and o["package"]["imex"] is True, o' "$T/out"
