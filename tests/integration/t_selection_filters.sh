# default/latest/branch/exact, OS and build filters, and supported_pci_ids against the GPUs.
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
# A non-GPU NVIDIA function (audio) and a non-NVIDIA GPU are not counted.
add_pci "$T/root" 0000:00:09.1 10de 22a3 0x040300
add_pci "$T/root" 0000:00:0a.0 1af4 1050 0x030000
new_repo "$T/repo" "$V_OLD:default" "$V_BRANCH_OLD" "$V_NEW"
R="file://$T/repo"

expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --json
python3 - "$T/out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["gpus"] == 2, s
assert s["default"] == "535.261.03" and s["latest"] == "550.90.07", s
assert [v["version"] for v in s["versions"]] == ["550.90.07", "535.261.03", "535.183.01"], s
PY

expect_rc 0 install --repo "$R" $(install_args) --dry-run --driver-version 535
expect_out "request:     535 -> driver $V_OLD"
expect_rc 0 install --repo "$R" $(install_args) --dry-run --driver-version 535.183
expect_out "driver $V_BRANCH_OLD"
expect_rc 0 install --repo "$R" $(install_args) --dry-run --driver-version 550.90.7
expect_out "driver $V_NEW"

# supported_pci_ids: the newest driver lacks the host's GPU.
edit_index "$T/repo" '
for d in idx["drivers"]:
    d["supported_pci_ids"] = ["10de:2330", "10de:20b0"] if d["version"] != "550.90.07" else ["10de:20b0"]
'
expect_rc 3 install --repo "$R" $(install_args) --driver-version "$V_NEW"
expect_err "driver $V_NEW does not support GPU 10de:2330 at 0000:00:04.0"
expect_rc 0 install --repo "$R" $(install_args) --dry-run --driver-version latest
expect_out "latest -> driver $V_OLD"
expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "$V_NEW.*excluded: does not support GPU 10de:2330"

# OS filters: a package for another OS is not a candidate; the most specific one wins.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version 560.1.1 \
    --kernel "$KERNEL" --os ubuntu "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
expect_rc 3 install --repo "$R" $(install_args) --driver-version 560.1.1
expect_err "no package for kernel $KERNEL (x86_64, os cos build 17800.66.78)"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" --os cos --os-build 17800.66.78 "$FIX/pkg-$V_OLD.tar.zst" >/dev/null
expect_rc 0 install --repo "$R" $(install_args) --dry-run --driver-version "$V_OLD"
expect_out "nvidia-$V_OLD-cos-17800.66.78"
