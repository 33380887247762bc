# Fresh install from a file:// repository: the GKE layout appears, and works.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default" "$V_OLD"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
d=$(idir)
for sub in bin lib64 drivers firmware share; do
    [ -L "$d/$sub" ] || fail "$sub is not a link"
    [ -d "$d/$sub/" ] || fail "$sub does not resolve"
done
[ -f "$d/drivers/nvidia.ko" ] || fail "kernel/ was not published as drivers/"
[ -f "$d/firmware/nvidia/$V_NEW/gsp_ga10x.bin" ] || fail "firmware missing"
readelf -d "$d/lib64/libcuda.so.1" | grepq 'SONAME.*libcuda.so.1' || fail "libcuda soname"
readelf -d "$d/lib64/libnvidia-ml.so.1" | grepq 'SONAME.*libnvidia-ml.so.1' || fail "nvml soname"
"$d/bin/nvidia-smi" | grepq "Driver Version: $V_NEW" || fail "nvidia-smi does not run"
# Permissions are normalised, and nothing is world-writable.
[ -z "$(find "$d/.current/" -perm /o+w ! -type l)" ] || fail "world-writable files"
assert_eq "$(stat -c %a "$d/bin/nvidia-smi")" 755 "nvidia-smi mode"
assert_eq "$(stat -c %a "$d/.current/")" 755 "published version dir mode"
assert_eq "$(stat -c %a "$d/firmware/nvidia/$V_NEW/gsp_ga10x.bin")" 644 "firmware mode"
# One log line per stage, with its duration.
for stage in host index select download unpack publish install; do
    grep -q "^INFO  $stage: .*duration_ms=" "$T/err" || fail "no timed log line for $stage"
done
# status --json has the contract's fields.
expect_rc 0 status --json
python3 - "$T/out" "$V_NEW" "$KERNEL" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["installed"] is True, s
assert s["driver_version"] == sys.argv[2], s
assert s["kernel_release"] == sys.argv[3], s
assert len(s["package_sha256"]) == 64, s
assert s["install_dir"] == "/home/kubernetes/bin/nvidia", s
assert s["installed_at"].endswith("Z"), s
PY
# No staging or temp files are left behind.
[ -z "$(ls -A "$d" | grep -E 'staging|tmp')" ] || fail "leftovers: $(ls -A "$d")"
