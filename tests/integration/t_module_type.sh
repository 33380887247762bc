# Kernel module flavours (docs/repository-format.md, "Module flavours"): one repository
# with both flavours of one version; --kernel-module-type chooses; a flavour change at the
# same version goes through the whole atomic path (a refused load rolls back to the other
# flavour, loaded again), and the manifest, status, labels, metrics, doctor and mirror
# carry the flavour. The fake kernel marks a module whose license is not GPL-compatible
# with P in /sys/module/NAME/taint, as the kernel does: the open stand-in is "Dual MIT/GPL".
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
V=$V_OLD

# The open flavour of $V.
open_standin_pkg "$V" "$T/open.tar.zst"
printf '10de:2330 NVIDIA H100 80GB HBM3\n10de:1db1  Tesla V100-SXM2-16GB\n' >"$T/prop.ids"
printf '# GPUs of the open modules\n10de:2330 NVIDIA H100 80GB HBM3\n10de:2901 NVIDIA B200\n' >"$T/open.ids"
mr() { "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --kernel "$KERNEL" "$@" >/dev/null; }
# The open package first: make-repo still lists the proprietary one first.
mr --version "$V" --tag default --module-type open --supported-pci-ids "$T/open.ids" "$T/open.tar.zst"
mr --version "$V" --module-type proprietary --supported-pci-ids "$T/prop.ids" "$FIX/spkg-$V.tar.zst"
python3 - "$T/repo/index.json" "$V" <<'EOF'
import json, sys
idx = json.load(open(sys.argv[1]))
(d,) = [d for d in idx["drivers"] if d["version"] == sys.argv[2]]
assert [p["module_type"] for p in d["packages"]] == ["proprietary", "open"], d["packages"]
assert d["supported_pci_ids"] == ["10de:1db1", "10de:2330"], d
assert d["module_types"]["open"]["supported_pci_ids"] == ["10de:2330", "10de:2901"], d
assert d["gpu_names"]["10de:1db1"] == "Tesla V100-SXM2-16GB", d
EOF
# An open package more specific than the proprietary one would be taken by older installers.
set +e
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --kernel "$KERNEL" \
    --version "$V" --os cos --module-type open "$T/open.tar.zst" >/dev/null 2>"$T/mr.err"
rc=$?
set -e
assert_eq "$rc" 2 "make-repo with an open package more specific than the proprietary one"
grep -q "older installers would take it" "$T/mr.err" || fail "make-repo: $(cat "$T/mr.err")"
R="file://$T/repo"
status_key() { "$BIN" --root "$T/root" status --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
labels="$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"

# Hopper on 535 (before the open default): auto takes the proprietary modules, says why not
# the open ones, and install --kernel-module-type takes either.
expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "$V .*installable (default) (latest): proprietary"
expect_out "open modules excluded: $V is of branch 535: before 560 NVIDIA installs the proprietary modules where the GPUs support both"
expect_rc 0 install --repo "$R" $(kernel_args) --dry-run
expect_out "request:     default -> driver $V, proprietary modules"
expect_rc 0 install --repo "$R" $(kernel_args) --kernel-module-type proprietary --metrics-file /var/lib/node_exporter/m.prom
assert_eq "$(status_key module_type)" proprietary "installed flavour"
assert_eq "$(status_key loaded_module_type)" proprietary "loaded flavour"
ls "$T/root/$IDIR_REL/.versions" | grepq "^$V-proprietary-" || fail "version id: $(ls "$T/root/$IDIR_REL/.versions")"
grep -qx "nvidia.com/gpu.driver-installer.kernel-module-type=proprietary" "$labels" || fail "labels: $(cat "$labels")"
grep -qF "nvidia_driver_installer_driver_info{version=\"$V\",kernel=\"$KERNEL\",module_type=\"proprietary\"} 1" \
    "$T/root/var/lib/node_exporter/m.prom" || fail "metrics: $(grep driver_info "$T/root/var/lib/node_exporter/m.prom")"

# The same version in the open flavour: a flavour change is a version change. The kernel
# refuses the open nvidia.ko: the proprietary driver is current and loaded again.
FAKE_KERNEL_FAIL="nvidia@$V~open:ENODEV" expect_rc 6 install --repo "$R" $(kernel_args) --kernel-module-type open
expect_err "unloading the loaded driver (version=$V module_type=proprietary)"
expect_err "rolled back (current=$V)"
assert_eq "$(status_key module_type)" proprietary "installed flavour after a refused switch"
assert_eq "$(status_key loaded_module_type)" proprietary "loaded flavour after a refused switch"
assert_eq "$(ls "$T/root/$IDIR_REL/.versions" | wc -l)" 1 "versions after a refused switch"
# Then it loads.
expect_rc 0 install --repo "$R" $(kernel_args) --kernel-module-type open --metrics-file /var/lib/node_exporter/m.prom
expect_err "unloading the loaded driver (version=$V module_type=proprietary)"
assert_eq "$(status_key module_type)" open "installed flavour after the switch"
assert_eq "$(status_key loaded_module_type)" open "loaded flavour after the switch"
assert_eq "$(cat "$T/root/sys/module/nvidia/taint")" O "the open module's taint"
ls "$T/root/$IDIR_REL/.versions" | grepq "^$V-open-" || fail "version id: $(ls "$T/root/$IDIR_REL/.versions")"
grep -qx "nvidia.com/gpu.driver-installer.kernel-module-type=open" "$labels" || fail "labels: $(cat "$labels")"
grep -qF 'module_type="open"' "$T/root/var/lib/node_exporter/m.prom" || fail "metrics: $(grep driver_info "$T/root/var/lib/node_exporter/m.prom")"
# Their consumers: NFD keeps the label (its rules: tests/tools/nfd-local.py), promtool the metric.
python3 "$SRC/tests/tools/nfd-local.py" "$(dirname "$labels")" 2>"$T/ignored" >"$T/node-labels"
grep -qx "nvidia.com/gpu.driver-installer.kernel-module-type=open" "$T/node-labels" ||
    fail "NFD drops the flavour label: $(cat "$T/ignored")"
promtool check metrics <"$T/root/var/lib/node_exporter/m.prom" >"$T/promtool" 2>&1 ||
    fail "promtool: $(cat "$T/promtool")"
# A re-run in the same flavour changes nothing in the kernel.
expect_rc 0 install --repo "$R" $(kernel_args) --kernel-module-type open
expect_err "driver already loaded"
if grep -q "unloading the loaded driver" "$T/err"; then fail "a re-run reloaded the driver"; fi

# doctor: a loaded flavour that is not the installed one (the kernel's taint says P).
echo PO >"$T/root/sys/module/nvidia/taint"
expect_rc 9 doctor --kernel-release "$KERNEL"
expect_out "the proprietary modules of $V are loaded, the open ones are installed"
echo O >"$T/root/sys/module/nvidia/taint"
inst doctor --kernel-release "$KERNEL"
if grep -q "module type" "$T/out"; then fail "doctor: $(grep "module type" "$T/out")"; fi
# doctor: the open modules loaded while a Volta sits on the bus (which they do not drive).
add_pci "$T/root" 0000:00:05.0 10de 1db1 0x030200
expect_rc 9 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "the open modules of $V are loaded: GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of $V"
# Hopper and Volta: auto takes proprietary (Volta decides); open is refused with its reason.
expect_rc 3 install --repo "$R" $(kernel_args) --kernel-module-type open --dry-run
expect_err "GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of $V"
expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --json
python3 - "$T/out" "$V" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["kernel_module_type"] == "auto", o
(v,) = [v for v in o["versions"] if v["version"] == sys.argv[2]]
assert v["module_type"] == "proprietary", v
assert v["excluded_module_types"] == [{"module_type": "open", "reason": "GPU 10de:1db1 (Tesla V100-SXM2-16GB) is not supported by the open modules of %s" % sys.argv[2]}], v
EOF

# Blackwell: only the open modules drive it; a GPU neither flavour lists is refused outright.
rm "$T/root/sys/bus/pci/devices/0000:00:05.0"
add_pci "$T/root" 0000:00:05.0 10de 2901 0x030200
expect_rc 0 install --repo "$R" $(kernel_args) --dry-run
expect_out "request:     default -> driver $V, open modules"
expect_rc 3 install --repo "$R" $(kernel_args) --kernel-module-type proprietary --dry-run
expect_err "GPU 10de:2901 (NVIDIA B200) is not supported by the proprietary modules of $V"
add_pci "$T/root" 0000:00:06.0 10de 2b85 0x030200
expect_rc 3 install --repo "$R" $(kernel_args) --dry-run
expect_err "GPU 10de:2b85 is not supported by $V in any flavour"
expect_err "fix: see each flavour's GPUs with list-versions"
rm "$T/root/sys/bus/pci/devices/0000:00:06.0"
# Without the open package, Blackwell says what it needs.
mkdir "$T/propo"
"$SRC/scripts/make-repo" add --repo "$T/propo" --key "$FIX/keys/key.pem" --kernel "$KERNEL" --version "$V" \
    --tag default --module-type proprietary --supported-pci-ids "$T/prop.ids" "$FIX/spkg-$V.tar.zst" >/dev/null
edit_index "$T/propo" 'idx["drivers"][0]["module_types"]["open"] = {"supported_pci_ids": ["10de:2330", "10de:2901"]}; idx["drivers"][0]["gpu_names"]["10de:2901"] = "NVIDIA B200"'
NVIDIA_KERNEL_MODULE_TYPE=auto expect_rc 3 install --repo "file://$T/propo" $(kernel_args) --dry-run
expect_err "GPU 10de:2901 (NVIDIA B200) needs the open modules; this repository has only proprietary modules of $V for kernel $KERNEL"

# A value that is not a flavour is a usage error.
NVIDIA_KERNEL_MODULE_TYPE=opne expect_rc 2 install --repo "$R" $(kernel_args) --dry-run
expect_err "'opne' is not auto, open or proprietary"

# mirror: both flavours, or the one asked for.
expect_rc 0 mirror --repo "$R" --repo-key "$FIX/keys/pub.pem" --to "$T/m-all" --json
assert_eq "$(ls "$T/m-all/packages/$KERNEL/x86_64" | sort | tr '\n' ' ')" \
    "nvidia-$V-open.tar.zst nvidia-$V-proprietary.tar.zst " "mirror of both flavours"
expect_rc 0 mirror --repo "$R" --repo-key "$FIX/keys/pub.pem" --to "$T/m-open" --kernel-module-type open --json
assert_eq "$(ls "$T/m-open/packages/$KERNEL/x86_64")" "nvidia-$V-open.tar.zst" "mirror of the open flavour"
grep -q '"module_type": "open"' "$T/out" || fail "mirror --json: $(cat "$T/out")"
