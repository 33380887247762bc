# An installer from before module flavours (commit 47a6795, built by `make` under
# build/compat: see docs/testing.md) against an index with both flavours of one version,
# as make-repo writes it (docs/repository-format.md, "How the format evolves", rules 2-4):
# it is not stranded (the index verifies and parses), takes the proprietary package (listed
# first) and judges it by supported_pci_ids, the proprietary list. The same index with the
# version listed twice, which the rules forbid, is refused whole by it.
OLD=${NDI_OLD_BIN:-$SRC/build/compat/47a6795/obj/nvidia-driver-installer}
[ -x "$OLD" ] || fail "no old installer at $OLD: build it with 'make $OLD' (the integration target does)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:1db1
mkkernel "$T/root"
V=$V_OLD
open_standin_pkg "$V" "$T/open.tar.zst"
printf '10de:2330 NVIDIA H100 80GB HBM3\n10de:1db1 Tesla V100-SXM2-16GB\n' >"$T/prop.ids"
printf '10de:2330 NVIDIA H100 80GB HBM3\n10de:2901 NVIDIA B200\n' >"$T/open.ids"
mr() { "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --kernel "$KERNEL" --version "$V" "$@" >/dev/null; }
mr --tag default --module-type open --supported-pci-ids "$T/open.ids" "$T/open.tar.zst"
mr --module-type proprietary --supported-pci-ids "$T/prop.ids" "$FIX/spkg-$V.tar.zst"
R="file://$T/repo"
prop_sha=$(sha256sum "$T/repo/packages/$KERNEL/x86_64/nvidia-$V-proprietary.tar.zst" | cut -d' ' -f1)
old() { BIN=$OLD inst "$@"; }
expect_old() {
    local want=$1
    shift
    old "$@"
    [ "$RC" = "$want" ] || { cat "$T/err" >&2; fail "old installer: expected exit $want, got $RC: $*"; }
}

# Not stranded, and the proprietary package is its choice: listed, planned, installed.
expect_old 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --json
python3 - "$T/out" "$V" "$KERNEL" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
(v,) = [v for v in o["versions"] if v["version"] == sys.argv[2]]
assert v["installable"], v
assert v["package"]["path"] == "packages/%s/x86_64/nvidia-%s-proprietary.tar.zst" % (sys.argv[3], sys.argv[2]), v
PY
expect_old 0 install --repo "$R" $(kernel_args)
assert_eq "$("$OLD" --root "$T/root" status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["package_sha256"])')" \
    "$prop_sha" "the package the old installer installed"
assert_eq "$(cat "$T/root/sys/module/nvidia/taint")" PO "the module the old installer loaded (proprietary)"
# The new installer, on the same node and index, keeps it: Volta needs the proprietary modules.
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "driver already loaded"

# A Blackwell, which only the open modules drive: the old installer judges the proprietary
# package by supported_pci_ids and refuses (the right answer, with less to offer), never
# takes the open package by mistake.
rm "$T/root/sys/bus/pci/devices/0000:00:04.0"
add_pci "$T/root" 0000:00:04.0 10de 2901 0x030200
expect_old 3 install --repo "$R" $(kernel_args) --dry-run
grep -q "driver $V does not support GPU 10de:2901" "$T/err" || fail "old installer: $(cat "$T/err")"
expect_rc 0 install --repo "$R" $(kernel_args) --dry-run
expect_out "request:     default -> driver $V, open modules"

# Why the variants live in one entry: the same version twice strands the old installer (a
# node with no cached index to fall back on: a fresh cache dir).
edit_index "$T/repo" 'd = idx["drivers"][0]; o = dict(d, packages=[d["packages"][1]]); d["packages"] = [d["packages"][0]]; idx["drivers"].append(o)'
expect_old 5 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" \
    --cache-dir /var/cache/fresh
grep -q "driver $V is listed twice" "$T/err" || fail "old installer: $(cat "$T/err")"
