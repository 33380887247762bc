# Ready means a CUDA job can run, not only that NVML answers (tests/standin/libcuda.c, a
# stand-in of the CUDA driver API, answers from the fake kernel's /proc/driver/nvidia).
#   1. A node without NVSwitch: libcuda initialises, sees both GPUs and takes a context
#      on each; the install is ready and says so.
#   2. An HGX-like node (two NVSwitches on the PCI bus, class 0x0680): NVML answers, but
#      cuInit returns 802 while the NVLink fabric is not trained. The install exits 8
#      naming the cause (802, the NVSwitches, Fabric Manager) and nothing says ready: no
#      marker, labels or CDI spec. Once the fabric is trained the next run is ready.
#   3. libcuda failing otherwise: cuInit's own error (999) and a context refused on one
#      device, each named with CUDA's error name and the device, exit 8.
FAKE_KERNEL=1
R=
setup() { # DIR [--switches]
    mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
    mkkernel "$T/root"
    if [ "${1:-}" = --switches ]; then
        add_pci "$T/root" 0000:00:0a.0 10de 22a3 0x068000
        add_pci "$T/root" 0000:00:0b.0 10de 22a3 0x068000
    fi
    [ -n "$R" ] || {
        new_signed_repo "$T/repo" "$V_OLD:default"
        R="file://$T/repo"
    }
}
ready_marker=$T/root/run/nvidia/validations/driver-ready
cdi_spec=$T/root/var/run/cdi/nvidia-driver-installer.json

# 1. No NVSwitch: ready, and the CUDA line says what was checked.
setup
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "verify: CUDA ready: a context on every GPU (cuda_driver_version=12020 devices=2 nvswitches=0"
[ -f "$ready_marker" ] || fail "no readiness marker on a node without NVSwitch"
grep -q "NVSwitch" "$T/err" && fail "an NVSwitch mentioned on a node without one: $(grep NVSwitch "$T/err")"

# 2. NVSwitches and an untrained fabric: exit 8, the cause named, nothing ready.
rm -rf "$T/root"
setup --switches
expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "host: NVSwitch system: CUDA waits for Fabric Manager (nvswitches=2)"
expect_err "ERROR install: verify: CUDA is not ready (cuInit returned 802, CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized): this node has 2 NVSwitch(es) and its NVLink fabric is not trained; fix: Fabric Manager (nv-fabricmanager) of the driver's own version must run and finish training the fabric (on NVLink 5, after NVLSM); see its log (exit 8)"
[ "$(grep -c '^ERROR' "$T/err")" = 1 ] || fail "not one error line: $(grep '^ERROR' "$T/err")"
[ ! -e "$ready_marker" ] || fail "ready with an untrained fabric"
[ ! -e "$cdi_spec" ] || fail "a CDI spec with an untrained fabric"
[ -z "$(ls "$T/root/etc/kubernetes/node-feature-discovery/features.d" 2>/dev/null)" ] ||
    fail "node labels with an untrained fabric"
# The driver itself is installed and loaded: only readiness waits.
[ "$(cat "$T/root/sys/module/nvidia/version")" = "$V_OLD" ] || fail "nvidia.ko not loaded"
[ -d "$T/root/proc/driver/nvidia-nvswitch/devices/0000:00:0a.0" ] ||
    fail "the fake kernel does not list the NVSwitch"

# The fabric trained (what the stand-in Fabric Manager records): the next run is ready.
mkdir -p "$T/root/run/nvidia-fabricmanager"
echo trained >"$T/root/run/nvidia-fabricmanager/standin-fabric"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "verify: CUDA ready: a context on every GPU (cuda_driver_version=12020 devices=2 nvswitches=2"
[ -f "$ready_marker" ] || fail "no readiness marker once the fabric is trained"
[ -f "$cdi_spec" ] || fail "no CDI spec once the fabric is trained"

# 3. libcuda's other failures, named with CUDA's words.
rm -rf "$T/root"
setup
CUDA_STANDIN_FAIL=init expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "ERROR install: verify: CUDA cuInit failed: CUDA_ERROR_UNKNOWN: unknown error (999)"
[ ! -e "$ready_marker" ] || fail "ready although cuInit failed"
CUDA_STANDIN_FAIL=ctx:1 expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "ERROR install: verify: CUDA cuCtxCreate failed on device 1 (0000:00:05.0): CUDA_ERROR_UNKNOWN: unknown error (999)"
CUDA_STANDIN_FAIL= expect_rc 0 install --repo "$R" $(kernel_args)
[ -f "$ready_marker" ] || fail "not ready once libcuda answers"
