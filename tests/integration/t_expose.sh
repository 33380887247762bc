# After the kernel stage: the ld cache, the NVML check against the loaded driver, the CDI
# spec (valid against the CDI schema), the node labels, the readiness marker (last), the
# metrics textfile; re-runs change none of them; uninstall takes them all away.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args) --metrics-file /var/lib/node_exporter/nvidia.prom
expect_err "verify: GPU (index=0 name=NVIDIA H100 80GB HBM3 uuid=GPU-00000000-0000-0000-0000-000000000000 memory_mib=81559)"
expect_err "expose: driver ready (version=$V_OLD cuda=12020 gpus=2"
# The run's stage times, last: every stage of a cold install ran; the stages do not add up
# to more than the whole, nor the kernel's insertion calls to more than the kernel stage.
python3 - "$T/err" <<'PY' || fail "stage times: $(grep 'stage times' "$T/err")"
import re, sys
lines = [l for l in open(sys.argv[1]) if "install: stage times (" in l]
assert len(lines) == 1, lines
f = {k: int(v) for k, v in re.findall(r"(\w+)_us=(\d+)", lines[0])}
stages = ["host", "index", "select", "download", "unpack", "kernel", "devices", "publish", "expose"]
assert list(f) == stages + ["in_kernel", "own", "total"], list(f)
assert all(f[s] > 0 for s in stages), f
assert sum(f[s] for s in stages) <= f["total"], f
assert 0 < f["in_kernel"] <= f["kernel"], f
assert f["own"] == f["total"] - f["in_kernel"], f
PY

# The host's ld cache finds the driver.
assert_eq "$(cat "$T/root/etc/ld.so.conf.d/nvidia.conf" | tail -1)" "/home/kubernetes/bin/nvidia/lib64" "ld.so.conf.d"
ldconfig -r "$T/root" -p | grepq "libcuda.so.1 .*=> /home/kubernetes/bin/nvidia/lib64/libcuda.so.1" ||
    fail "ld cache lacks libcuda.so.1: $(ldconfig -r "$T/root" -p | grep -i nvidia)"
ldconfig -r "$T/root" -p | grepq "libnvidia-ml.so.1 .*=> /home/kubernetes/bin/nvidia/lib64/libnvidia-ml.so.1" ||
    fail "ld cache lacks libnvidia-ml.so.1"

# CDI: valid, with the GPUs by index, by UUID and all.
spec="$T/root/var/run/cdi/nvidia-driver-installer.json"
schema=$(cdi_schema_dir)
if [ -n "$schema" ]; then
    python3 "$SRC/tests/tools/validate-cdi.py" "$schema" "$spec"
    # The validator is not a rubber stamp.
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["devices"][0]["containerEdits"]["deviceNodes"]=[{"major":1}]; json.dump(s,open(sys.argv[2],"w"))' "$spec" "$T/bad.json"
    python3 "$SRC/tests/tools/validate-cdi.py" "$schema" "$T/bad.json" 2>/dev/null && fail "an invalid spec validated"
else
    echo "SKIP: CDI schema validation (no shared/reference/cdi beside the checkout; set CDI_SCHEMA_DIR)"
fi
python3 - "$spec" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
# Device names that start with a digit are what the content needs most (CDI 0.5.0).
assert s["kind"] == "nvidia.com/gpu" and s["cdiVersion"] == "0.5.0", s
names = [d["name"] for d in s["devices"]]
assert names == ["0", "GPU-00000000-0000-0000-0000-000000000000", "1",
                 "GPU-00000000-0000-0000-0000-000000000001", "all"], names
nodes = lambda d: [n["path"] for n in d["containerEdits"]["deviceNodes"]]
assert nodes(s["devices"][2]) == ["/dev/nvidia1"], s["devices"][2]
assert nodes(s["devices"][4]) == ["/dev/nvidia0", "/dev/nvidia1"]
common = s["containerEdits"]
assert [n["path"] for n in common["deviceNodes"]] == ["/dev/nvidiactl", "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"], common
mounts = {m["containerPath"]: m["hostPath"] for m in common["mounts"]}
assert mounts == {"/usr/local/nvidia/lib64": "/home/kubernetes/bin/nvidia/lib64",
                  "/usr/local/nvidia/bin": "/home/kubernetes/bin/nvidia/bin"}, mounts
# No environment: the workload's LD_LIBRARY_PATH is its own. The ld-cache hook instead.
assert "env" not in common, common
assert common["hooks"] == [{"hookName": "createContainer",
    "path": "/home/kubernetes/bin/nvidia/.helpers/nvidia-cdi-hook",
    "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", "/usr/local/nvidia/lib64",
             "--timeout", "20"], "timeout": 30}], common
# The hook's own deadline for ldconfig comes before the runtime's for the hook.
assert int(common["hooks"][0]["args"][-1]) < common["hooks"][0]["timeout"], common
PY
# The hook and the ldconfig it runs are in the install dir, static (the host may be COS).
for h in nvidia-cdi-hook ldconfig; do
    f="$T/root/home/kubernetes/bin/nvidia/.helpers/$h"
    [ -x "$f" ] || fail "$h not shipped in the install dir"
    readelf -l "$f" >"$T/elf"
    grep -q INTERP "$T/elf" && fail "$h is not static"
done

# Labels, as GFD names them.
labels="$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"
for l in nvidia.com/gpu.present=true nvidia.com/gpu.count=2 nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 \
    nvidia.com/gpu.memory=81559 nvidia.com/gpu.compute.major=9 nvidia.com/gpu.compute.minor=0 \
    "nvidia.com/cuda.driver-version.full=$V_OLD" nvidia.com/cuda.driver-version.major=535 \
    nvidia.com/cuda.driver-version.minor=261 nvidia.com/cuda.driver-version.revision=03 \
    nvidia.com/cuda.runtime-version.full=12.2 nvidia.com/cuda.runtime-version.major=12 \
    nvidia.com/cuda.runtime-version.minor=2 "nvidia.com/gpu.driver-installer.version=$V_OLD"; do
    grep -qx "$l" "$labels" || fail "label $l missing: $(cat "$labels")"
done

# Readiness: the GPU Operator validator's keys for our layout (t_operator checks them).
ready="$T/root/run/nvidia/validations/driver-ready"
grep -qx IS_HOST_DRIVER=false "$ready" && grep -qx NVIDIA_DRIVER_ROOT=/home/kubernetes/bin/nvidia "$ready" &&
    grep -qx "NVIDIA_DRIVER_VERSION=$V_OLD" "$ready" || fail "driver-ready: $(cat "$ready")"

# Metrics: success and the time per stage.
prom="$T/root/var/lib/node_exporter/nvidia.prom"
grep -qx "nvidia_driver_installer_success 1" "$prom" || fail "metrics: $(cat "$prom")"
for stage in host index download unpack kernel devices publish expose; do
    grep -q "nvidia_driver_installer_stage_duration_seconds{stage=\"$stage\"} [0-9.]*" "$prom" ||
        fail "no duration for $stage"
done
# The insertion time is in seconds, part of the kernel stage (the kernel's insertion calls
# lie inside the kernel stage's time, both in whole microseconds): at most that stage's time,
# a bound load cannot break, where a time in milliseconds or a sum counted twice would not hold.
gauge() { sed -n "s/^nvidia_driver_installer_$1 \\([0-9]*\\.[0-9]\\{6\\}\\)\$/\\1/p" "$prom"; }
insert=$(gauge module_insert_duration_seconds)
kernel=$(gauge 'stage_duration_seconds{stage="kernel"}')
[ -n "$insert" ] && [ -n "$kernel" ] || fail "no module insertion or kernel stage time: $(cat "$prom")"
[ $((10#${insert/./})) -le $((10#${kernel/./})) ] ||
    fail "module insertion ($insert s) longer than the kernel stage ($kernel s)"
grep -q "nvidia_driver_installer_driver_info{version=\"$V_OLD\",kernel=\"$KERNEL\"} 1" "$prom" || fail "driver_info"

# Re-run: nothing changes (the metrics file's own timestamps aside).
notices() { for f in "$spec" "$labels" "$ready" "$T/root/etc/ld.so.conf.d/nvidia.conf"; do stat -c '%n %s %Y' "$f"; done; }
before=$(notices)
# Not a synchronisation: %Y counts whole seconds, so a file rewritten within the second
# would keep its mtime. The pause is what lets the comparison see a rewrite.
sleep 1.1
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "CDI spec unchanged"
assert_eq "$(notices)" "$before" "notices after a re-run"
# A run killed between a helper's temporary copy and its rename (t_crash found it) leaves
# the copy behind; the next run removes it and whatever else is not a helper there.
helpers="$T/root/home/kubernetes/bin/nvidia/.helpers"
cp "$helpers/ldconfig" "$helpers/.ldconfig.tmp-8uer2i8q"
mkdir "$helpers/old-helper"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(ls -A "$helpers" | tr '\n' ' ')" "ldconfig nvidia-cdi-hook " "the helpers after a re-run over leftovers"
expect_err "removing a leftover helper file"

# NVML disagrees: exit 8, and the node is no longer ready.
NVML_STANDIN_FAIL=init expect_rc 8 install --repo "$R" $(kernel_args) --metrics-file /var/lib/node_exporter/nvidia.prom
expect_err "NVML initialisation failed: Driver Not Loaded"
expect_err "fix: the kernel module and the user-space libraries must be the same version"
[ ! -e "$ready" ] || fail "still ready after a failed check"
grep -qx "nvidia_driver_installer_success 0" "$prom" && grep -qx "nvidia_driver_installer_exit_code 8" "$prom" ||
    fail "metrics after a failure: $(cat "$prom")"
# A GPU the driver does not see.
add_pci "$T/root" 0000:00:07.0 10de 2330 0x030200
expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "NVML sees 2 GPU(s), but 3 NVIDIA GPU(s) are on the PCI bus"
rm "$T/root/sys/bus/pci/devices/0000:00:07.0"
expect_rc 2 install --repo "$R" $(kernel_args) --skip-verify
expect_err "skip-verify is for hosts without a GPU"
expect_rc 0 install --repo "$R" $(kernel_args)
[ -e "$ready" ] || fail "not ready again"

# An upgrade withdraws readiness while it works, and restores it for the new version.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
grep -qx "NVIDIA_DRIVER_VERSION=$V_NEW" "$ready" || fail "readiness after the upgrade"
grep -qx "nvidia.com/cuda.runtime-version.full=12.4" "$labels" || fail "labels after the upgrade"

# Uninstall: everything it published goes.
expect_rc 0 uninstall
for f in "$spec" "$labels" "$ready" "$T/root/etc/ld.so.conf.d/nvidia.conf" \
    "$T/root/home/kubernetes/bin/nvidia/.helpers"; do
    [ ! -e "$f" ] || fail "$f left after uninstall"
done
ldconfig -r "$T/root" -p | grepq "libcuda.so.1" && fail "ld cache still lists libcuda"
true
