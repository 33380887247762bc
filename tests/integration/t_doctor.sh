# doctor: a verdict and a fix per line, exit 0 when healthy and 9 otherwise; the scenarios
# an operator meets: no GPU, nouveau bound, an enforcing kernel and a signer it must trust,
# no package for the kernel (with the nearest kernels that have one), firmware unreachable.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel 6.1.0-60-amd64 "$FIX/spkg-$V_OLD.tar.zst" >/dev/null
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel 5.10.0-30-amd64 "$FIX/spkg-$V_OLD.tar.zst" >/dev/null
R="file://$T/repo"
doc() { expect_rc "$1" doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" "${@:2}"; }
line() { grep -E "^\[$1 *\] $2 " "$T/out" || fail "no [$1] $2 line: $(cat "$T/out")"; }

# Nothing installed yet.
doc 9
line fail installed
expect_err "check(s) failed"

# Healthy after an install.
expect_rc 0 install --repo "$R" $(kernel_args)
doc 0
for c in kernel gpus conflicts repository "module trust" loaded firmware "exec mount" disk \
    "device nodes" "ld cache" nvml ready; do
    line ok "$c"
done
grep -q "fix:" "$T/out" && fail "a fix on a healthy node"
doc 0 --json
python3 - "$T/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
checks = d["checks"]
assert d["verdict"] == "ok" and d["failed"] == 0, d
assert all(c["status"] in ("ok", "skip") for c in checks), checks
assert {"check", "status", "detail", "fix"} <= set(checks[0]), checks[0]
PY

# No package for the running kernel: the nearest kernels that have one.
doc 9 --kernel-release 6.1.0-58-amd64
line fail repository
grep -q "nearest kernels with one: 6.1.0-57-amd64, 6.1.0-60-amd64, 5.10.0-30-amd64" "$T/out" ||
    fail "nearest kernels: $(grep repository "$T/out")"

# Firmware the kernel cannot reach, a missing node, the ld cache emptied.
rm "$T/root/lib/firmware/nvidia/$V_OLD" "$T/root/dev/nvidiactl"
: >"$T/root/etc/ld.so.cache"
doc 9
line fail firmware
line fail "device nodes"
line fail "ld cache"
grep -q "fix: re-run install: it links the firmware" "$T/out" || fail "firmware fix"
expect_rc 0 install --repo "$R" $(kernel_args)
doc 0

# nouveau loaded and bound to the GPU.
mkdir -p "$T/root/sys/module/nouveau" "$T/root/sys/bus/pci/drivers/nouveau"
echo live >"$T/root/sys/module/nouveau/initstate"
echo "nouveau 2367488 1 - Live 0x0000000000000000" >>"$T/root/proc/modules"
ln -s ../../../../bus/pci/drivers/nouveau "$T/root/sys/devices/pci0000:00/0000:00:04.0/driver"
doc 9
line fail gpus
grep -q "0000:00:04.0 (nouveau): bound to nouveau" "$T/out" || fail "binding: $(grep gpus "$T/out")"
line fail conflicts
rm -rf "$T/root/sys/module/nouveau" "$T/root/sys/devices/pci0000:00/0000:00:04.0/driver"
sed -i '/^nouveau /d' "$T/root/proc/modules"

# An enforcing kernel, the driver not loaded (a reboot), modules signed by our key.
expect_rc 0 uninstall
expect_rc 0 install --repo "$R" $(kernel_args) --skip-modules
echo Y >"$T/root/sys/module/module/parameters/sig_enforce"
doc 9
line warn "module trust"
# No /proc/keys to read: the signer is named, and the verdict is not guessed.
grep -q "unknown (the kernel enforces signatures (sig_enforce) and its keys cannot be read (no /proc/keys): signed by 'Test modkey'" "$T/out" ||
    fail "signer: $(grep trust "$T/out")"
line fail loaded

# No GPU at all.
rm -rf "$T/root/sys/bus/pci/devices"/*
doc 9
line fail gpus
grep -q "no NVIDIA GPU on the PCI bus" "$T/out" || fail "no-GPU verdict"
