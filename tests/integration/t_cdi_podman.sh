# plain build: the hook podman runs is a static helper, built alike for both; the ASan installer writes this spec as in t_cdi_dirs and t_cdi_hook, which run under ASan
# The CDI spec in a real runtime: Debian's podman 4.3 (its CDI library is older than spec
# 0.6.0) with runc, on a tiny image built here from the host's glibc and busybox. The
# image sets its own LD_LIBRARY_PATH. In a private mount namespace (nothing of it reaches
# the host): the fake root's install dir at /home/kubernetes/bin/nvidia, its spec dir at
# /var/run/cdi, the fake root's /etc/cdi, and a private /dev with the GPUs' nodes.
#   --device nvidia.com/gpu=all, =0, =1, =<UUID>: the device nodes, dlopen of libcuda.so.1
#     and libnvidia-ml.so.1 (through the ld-cache hook), nvidia-smi runs, the image's
#     LD_LIBRARY_PATH survives;
#   an unknown device is refused;
#   a second producer's spec of kind nvidia.com/gpu (nvidia-ctk's YAML): ours is withdrawn
#     by default and podman still gives the other producer's devices; --cdi-kind gives
#     ours under a kind of its own beside theirs; --cdi-replace sets theirs aside;
#   GKE's device plugin's way (no CDI): the install dir bind-mounted at /usr/local/nvidia,
#     no environment: nvidia-smi finds its library.
command -v podman >/dev/null && command -v runc >/dev/null || fail "podman and runc are needed (make deps)"
[ "$(id -u)" = 0 ] || fail "needs root (podman as root, mount namespaces)"

FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args)
spec="$T/root/var/run/cdi/nvidia-driver-installer.json"
[ -s "$spec" ] || fail "no spec"

# The image (busybox, the host's glibc, a probe that dlopens what it is given) and the
# namespace's script, where everything podman does runs.
. "$SRC/tests/tools/probe-image.sh"
probe_ns_setup "$T" 2
# The spec directories the CDI library reads must exist to be mounted over; made for the
# test's namespace only when the host has none, and removed after.
probe_cdi_dirs_take
cleanup() {
    probe_cdi_dirs_release
    rm -rf "$T/storage" 2>/dev/null || true
}
trap cleanup EXIT
in_ns() { probe_in_ns "$T" "$1"; }

# Each device as a workload asks for it.
uuid0=GPU-00000000-0000-0000-0000-000000000000
check_device() {
    local dev=$1 want=$2
    in_ns "run --device 'nvidia.com/gpu=$dev' localhost/ndi-cdi-probe:1 sh -c 'ls /dev; probe libcuda.so.1 libnvidia-ml.so.1; /usr/local/nvidia/bin/nvidia-smi; echo smi=\$?'" ||
        fail "podman --device nvidia.com/gpu=$dev: $(cat "$T/ns.err")"
    grep -qx "LD_LIBRARY_PATH=/opt/conda/lib" "$T/ns.out" || fail "=$dev: the image's LD_LIBRARY_PATH was replaced: $(cat "$T/ns.out")"
    grep -qx "dlopen libcuda.so.1: ok" "$T/ns.out" || fail "=$dev: libcuda.so.1 not found: $(cat "$T/ns.out")"
    grep -qx "dlopen libnvidia-ml.so.1: ok" "$T/ns.out" || fail "=$dev: libnvidia-ml.so.1 not found"
    grep -qx "smi=0" "$T/ns.out" || fail "=$dev: nvidia-smi: $(cat "$T/ns.out")"
    for n in nvidiactl nvidia-uvm nvidia-uvm-tools $want; do
        grep -qx "$n" "$T/ns.out" || fail "=$dev: /dev/$n missing: $(cat "$T/ns.out")"
    done
    case $dev in 0 | "$uuid0") ! grep -qx nvidia1 "$T/ns.out" || fail "=$dev: got nvidia1 too" ;; esac
    [ "$dev" != 1 ] || ! grep -qx nvidia0 "$T/ns.out" || fail "=1: got nvidia0 too"
}
check_device all "nvidia0 nvidia1"
check_device 0 nvidia0
check_device 1 nvidia1
check_device "$uuid0" nvidia0

# An unknown device: podman refuses to create the container.
in_ns "run --device nvidia.com/gpu=7 localhost/ndi-cdi-probe:1 true" && fail "an unknown CDI device was accepted"
grep -q "nvidia.com/gpu=7" "$T/ns.err" || fail "unknown device: $(cat "$T/ns.err")"

# GKE's device plugin: the install dir at /usr/local/nvidia, no CDI, no environment.
in_ns "run -v /home/kubernetes/bin/nvidia:/usr/local/nvidia:ro localhost/ndi-cdi-probe:1 sh -c '/usr/local/nvidia/bin/nvidia-smi; echo smi=\$?'" ||
    fail "GKE-style mount: $(cat "$T/ns.err")"
grep -qx "smi=0" "$T/ns.out" || fail "nvidia-smi under GKE's plugin's mount: $(cat "$T/ns.out")"

# Another producer's spec of our kind (nvidia-ctk cdi generate's YAML, in /etc/cdi).
mkdir -p "$T/root/etc/cdi"
cat >"$T/root/etc/cdi/nvidia.yaml" <<'EOF'
---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  env:
  - NVIDIA_CTK_SPEC=yes
  deviceNodes:
  - path: /dev/nvidiactl
EOF
# Both present: podman drops the conflicting devices (what users met).
in_ns "run --device nvidia.com/gpu=0 localhost/ndi-cdi-probe:1 true" &&
    fail "podman accepted two specs defining nvidia.com/gpu=0: the conflict this test guards against is gone"
# Our re-run leaves the node to the other producer, and says so.
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "another producer's CDI spec declares our kind: not writing ours"
[ ! -e "$spec" ] || fail "our spec stayed beside theirs"
expect_rc 0 status
grep -q "cdi_conflict:.*/etc/cdi/nvidia.yaml" "$T/out" || fail "status: $(cat "$T/out")"
inst doctor
grep -q "^\[warn\] cdi .*/etc/cdi/nvidia.yaml, another producer's spec" "$T/out" || fail "doctor: $(cat "$T/out")"
in_ns "run --device nvidia.com/gpu=0 localhost/ndi-cdi-probe:1 sh -c 'echo ctk=\$NVIDIA_CTK_SPEC'" ||
    fail "the other producer's device after ours withdrew: $(cat "$T/ns.err")"
grep -qx "ctk=yes" "$T/ns.out" || fail "not the other producer's device: $(cat "$T/ns.out")"
# Ours under a kind of its own, beside theirs: both work.
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-kind example.com/gpu
in_ns "run --device example.com/gpu=1 --device nvidia.com/gpu=0 localhost/ndi-cdi-probe:1 sh -c 'ls /dev; probe libcuda.so.1; echo ctk=\$NVIDIA_CTK_SPEC'" ||
    fail "our own kind beside theirs: $(cat "$T/ns.err")"
grep -qx "ctk=yes" "$T/ns.out" && grep -qx nvidia1 "$T/ns.out" && grep -qx "dlopen libcuda.so.1: ok" "$T/ns.out" ||
    fail "our own kind beside theirs: $(cat "$T/ns.out")"
# --cdi-replace: theirs set aside, ours serves nvidia.com/gpu; uninstall puts theirs back.
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-replace
expect_err "another producer's CDI spec set aside"
[ -e "$T/root/etc/cdi/nvidia.yaml.replaced-by-nvidia-driver-installer" ] || fail "theirs not set aside"
check_device 0 nvidia0
expect_rc 0 uninstall
[ -e "$T/root/etc/cdi/nvidia.yaml" ] || fail "uninstall did not put their spec back"

# MIG devices (the node pool's partitions, made through NVML by the install): each by
# GPU:INDEX and by its MIG UUID, with its GPU's node and its two instances' capability
# nodes (nothing of the other GPU); a GPU in MIG mode is no device of its own any more.
rm -f "$T/root/etc/cdi/nvidia.yaml"
mkdir -p "$T/root/etc/nvidia"
echo '{"GPUPartitionSize": "1g.10gb"}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "$R" $(kernel_args)
in_ns "run --device 'nvidia.com/gpu=1:0' localhost/ndi-cdi-probe:1 sh -c 'ls /dev /dev/nvidia-caps; probe libcuda.so.1'" ||
    fail "podman --device nvidia.com/gpu=1:0: $(cat "$T/ns.err")"
for n in nvidia1 nvidia-cap147 nvidia-cap148 nvidiactl "dlopen libcuda.so.1: ok"; do
    grep -qx "$n" "$T/ns.out" || fail "=1:0: $n missing: $(cat "$T/ns.out")"
done
! grep -qx nvidia0 "$T/ns.out" && ! grep -qx nvidia-cap12 "$T/ns.out" || fail "=1:0: got GPU 0's nodes: $(cat "$T/ns.out")"
mig=$(python3 -c 'import json,sys; print(next(d["name"] for d in json.load(open(sys.argv[1]))["devices"] if d["name"].startswith("MIG-") and any(n["path"].endswith("/nvidia-cap12") for n in d["containerEdits"]["deviceNodes"])))' "$spec")
in_ns "run --device 'nvidia.com/gpu=$mig' localhost/ndi-cdi-probe:1 ls /dev /dev/nvidia-caps" ||
    fail "podman --device nvidia.com/gpu=$mig: $(cat "$T/ns.err")"
grep -qx nvidia0 "$T/ns.out" && grep -qx nvidia-cap12 "$T/ns.out" && grep -qx nvidia-cap13 "$T/ns.out" ||
    fail "=$mig: $(cat "$T/ns.out")"
in_ns "run --device nvidia.com/gpu=0 localhost/ndi-cdi-probe:1 true" && fail "a GPU in MIG mode was given whole"
grep -q "nvidia.com/gpu=0" "$T/ns.err" || fail "the whole GPU in MIG mode: $(cat "$T/ns.err")"
