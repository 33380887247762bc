# The readiness marker is what the GPU Operator's driver validator writes for our layout,
# and the Operator settings docs/configuration.md gives (driver.enabled=false,
# hostPaths.driverInstallDir = the marker's NVIDIA_DRIVER_ROOT) let the validator find our
# driver: tests/tools/operator-validator.py restates its rules (from its source).
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
ready="$T/root/run/nvidia/validations/driver-ready"
validator() { python3 "$SRC/tests/tools/operator-validator.py" "$T/root" "$1"; }

# COS: nothing in the standard paths, the driver in /home/kubernetes/bin/nvidia.
expect_rc 0 install --repo "$R" $(kernel_args)
root=$(sed -n 's/^NVIDIA_DRIVER_ROOT=//p' "$ready")
assert_eq "$root" /home/kubernetes/bin/nvidia "the marker's driver root"
validator "$root" >"$T/validator" || fail "the validator finds no driver with driverInstallDir=$root"
assert_eq "$(head -5 "$ready")" "$(cat "$T/validator")" "the marker against what the validator writes"
# Consumers source the marker with sh (the Operator's toolkit and device-plugin entrypoints).
assert_eq "$(sh -c '. "$1" && echo "$IS_HOST_DRIVER $NVIDIA_DRIVER_ROOT $NVIDIA_DRIVER_VERSION"' sh "$ready")" \
    "false /home/kubernetes/bin/nvidia $V_OLD" "the marker sourced"

# The restatement is no rubber stamp: the host root alone (the Operator's default when the
# marker says NVIDIA_DRIVER_ROOT=/) finds nothing, nor does a nvidia-smi that cannot run.
validator / 2>/dev/null && fail "the validator found a driver under /"
# It finds usr/bin/nvidia-smi first (NVIDIA's program itself, installer/stage/locate.h),
# then bin/nvidia-smi (the launcher, installer/stage/wrap.h).
ib=$T/root/home/kubernetes/bin/nvidia
chmod -x "$ib/usr/bin/nvidia-smi" "$ib/bin/nvidia-smi"
validator "$root" 2>/dev/null && fail "the validator accepted a nvidia-smi without execute bits"
chmod +x "$ib/usr/bin/nvidia-smi" "$ib/bin/nvidia-smi"
# It runs what it found with the library on LD_PRELOAD: with NVIDIA's program gone from
# usr/bin and from behind the launcher, the launcher it finds next fails, and so does it.
real=$(realpath "$ib/bin")/.real/nvidia-smi
mv "$real" "$T/smi.real"
mv "$ib/usr/bin/nvidia-smi" "$T/smi.usr"
validator "$root" 2>/dev/null && fail "the validator accepted a nvidia-smi that does not run"
mv "$T/smi.real" "$real"
mv "$T/smi.usr" "$ib/usr/bin/nvidia-smi"

# A host whose /usr/bin/nvidia-smi is ours (a link into the install dir): a host driver.
mkdir -p "$T/root/usr/bin"
ln -s /home/kubernetes/bin/nvidia/bin/nvidia-smi "$T/root/usr/bin/nvidia-smi"
expect_rc 0 install --repo "$R" $(kernel_args)
validator /home/kubernetes/bin/nvidia >"$T/validator" || fail "the validator finds no host driver"
assert_eq "$(head -5 "$ready")" "$(cat "$T/validator")" "the marker of a host driver"
grep -qx IS_HOST_DRIVER=true "$ready" || fail "marker: $(cat "$ready")"
