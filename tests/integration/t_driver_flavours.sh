# build-driver-package puts both flavours of one driver into one repository in one call:
# one driver entry, the proprietary package first, each package's module_type, each
# flavour's supported GPUs from the driver's own data (supported-gpus.json, where
# "kernelopen" marks the GPUs of the open modules) with their names; an open package whose
# GPUs nobody states is refused before anything is published, --pci-ids open=FILE states
# them; per-flavour options name their flavour.
BDP=$SRC/scripts/build-driver-package
mkroot "$T/root" debian 12
# A driver source in the .run layout (the stand-in's user space), and each flavour's
# modules (the stand-in's, signed again here).
mkdir -p "$T/src/supported-gpus"
run_source "$FIX/drv-$V_NEW"
flavour_modules
assert_eq "$(modinfo -F license "$T/mods-open/nvidia.ko")" "Dual MIT/GPL" "open stand-in's license"
cat >"$T/src/supported-gpus/supported-gpus.json" <<'EOF'
{"chips": [
 {"name": "NVIDIA H100 80GB HBM3", "devid": "0x2330", "features": ["kernelopen"]},
 {"name": "Tesla V100-SXM2-16GB", "devid": "0x1DB1", "features": []},
 {"name": "NVIDIA A100-SXM4-40GB", "devid": "0x20B0", "features": ["kernelopen"]},
 {"name": "GeForce GTX 680", "devid": "0x1180", "features": [], "legacybranch": "470.xx"}
]}
EOF
bdp() {
    set +e
    "$BDP" --kernel "$KERNEL" --source "$T/src" --repo "$T/repo" --repo-key "$FIX/keys/key.pem" \
        --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" \
        --installer "$BIN" --work "$T/work" "$@" >"$T/bdp.out" 2>&1
    RC=$?
    set -e
}
bdp_has() { grep -q -- "$1" "$T/bdp.out" || { cat "$T/bdp.out" >&2; fail "build-driver-package output lacks '$1'"; }; }
index() { python3 -c 'import json,sys; print(eval(sys.argv[2], {"i": json.load(open(sys.argv[1]))}))' "$T/repo/index.json" "$1"; }
both=(--prebuilt-modules "proprietary=$T/mods-proprietary" --prebuilt-modules "open=$T/mods-open")

# Per-flavour options say whose they are.
bdp --flavour both --prebuilt-modules "$T/mods-open"
assert_eq "$RC" 1 "exit with one --prebuilt-modules for two flavours"
bdp_has "--prebuilt-modules $T/mods-open: two flavours are built; say whose (open=$T/mods-open)"
bdp --flavour both --prebuilt-modules "open=$T/mods-open"
bdp_has "--prebuilt-modules gives no modules for the proprietary flavour: add proprietary=DIR"
bdp --flavour open --prebuilt-modules "proprietary=$T/mods-open"
bdp_has "--prebuilt-modules proprietary=$T/mods-open: the proprietary flavour is not built (--flavour open)"
# The proprietary nvidia.ko offered as the open flavour: its license says otherwise.
bdp --flavour open --prebuilt-modules "$T/mods-proprietary" --pci-ids 10de:2330
assert_eq "$RC" 1 "exit for proprietary modules called open"
bdp_has "nvidia.ko carries license 'NVIDIA': it is the proprietary flavour's module, not the open one; build them as --flavour proprietary"
[ ! -e "$T/repo/index.json" ] || fail "a refused build reached the index"
bdp --flavour turing "${both[@]}"
bdp_has "--flavour 'turing': proprietary, open, proprietary,open or both"

# Nobody says which GPUs the open modules drive: refused, nothing published, not even
# the proprietary package of the same call.
mv "$T/src/supported-gpus" "$T/gpus.off"
bdp --flavour proprietary,open "${both[@]}"
assert_eq "$RC" 1 "exit for an open package without its GPUs"
bdp_has "the source does not say which GPUs the open modules of $V_NEW support (no supported-gpus/supported-gpus.json, supported-pci-ids-open or Debian's nvidia-detect of that version): pass --pci-ids open=FILE"
[ ! -e "$T/repo/index.json" ] || fail "a refused build reached the index"

# --pci-ids open=FILE states them (with a name for messages).
printf '10de:20b0 NVIDIA A100-SXM4-40GB\n# comment\n10de:2330\n' >"$T/open.ids"
bdp --flavour proprietary,open "${both[@]}" --pci-ids "open=$T/open.ids"
[ "$RC" = 0 ] || { cat "$T/bdp.out" >&2; fail "build-driver-package --pci-ids open=FILE: exit $RC"; }
assert_eq "$(index 'i["drivers"][0]["module_types"]["open"]["supported_pci_ids"]')" "['10de:20b0', '10de:2330']" "open GPUs from --pci-ids"
assert_eq "$(index '"proprietary" in i["drivers"][0]["module_types"]')" False "proprietary GPUs nobody stated"
bdp_has "note: the source does not say which GPUs the proprietary modules support"
printf '10de:20b0\nH100\n' >"$T/bad.ids"
rm -rf "$T/repo"
bdp --flavour open --prebuilt-modules "$T/mods-open" --pci-ids "$T/bad.ids"
bdp_has "--pci-ids: 'H100' is not a PCI id like 10de:2330"
mv "$T/gpus.off" "$T/src/supported-gpus"

# Both flavours from NVIDIA's data: one entry, proprietary first, each flavour's GPUs.
bdp --flavour both "${both[@]}" --tag default
[ "$RC" = 0 ] || { cat "$T/bdp.out" >&2; fail "build-driver-package --flavour both: exit $RC"; }
bdp_has "open flavour: 2 supported GPUs (supported-gpus.json), 2 named"
assert_eq "$(index 'len(i["drivers"])')" 1 "driver entries"
assert_eq "$(index '[p["module_type"] for p in i["drivers"][0]["packages"]]')" "['proprietary', 'open']" "packages"
assert_eq "$(index 'i["drivers"][0]["module_types"]["proprietary"]["supported_pci_ids"]')" \
    "['10de:1db1', '10de:20b0', '10de:2330']" "proprietary GPUs (not the legacy one)"
assert_eq "$(index 'i["drivers"][0]["module_types"]["open"]["supported_pci_ids"]')" "['10de:20b0', '10de:2330']" "open GPUs (kernelopen)"
assert_eq "$(index 'i["drivers"][0]["supported_pci_ids"]')" "['10de:1db1', '10de:20b0', '10de:2330']" "the entry's list is the proprietary one"
assert_eq "$(index 'i["drivers"][0]["gpu_names"]["10de:1db1"]')" "Tesla V100-SXM2-16GB" "GPU name"
for f in proprietary open; do
    p=$(index "[p['path'] for p in i['drivers'][0]['packages'] if p['module_type'] == '$f'][0]")
    rm -rf "$T/u" && mkdir -p "$T/u"
    tar -C "$T/u" --zstd -xf "$T/repo/$p"
    python3 - "$T/u/share/nvidia/build-info.json" "$f" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
assert info["flavour"] == sys.argv[2], info["flavour"]
want = {"source": "supported-gpus.json", "count": 3 if sys.argv[2] == "proprietary" else 2}
assert info["supported_gpus"] == want, info["supported_gpus"]
EOF
done
expect_rc 0 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "$V_NEW"
