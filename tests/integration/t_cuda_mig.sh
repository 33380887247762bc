# CUDA readiness on MIG nodes. CUDA enumerates no GPU in MIG mode and at most one MIG device
# per process, and cuInit says CUDA_ERROR_NO_DEVICE where MIG mode is on and no instance
# exists (NVIDIA's MIG user guide, "CUDA Device Enumeration"); the stand-in libcuda
# enumerates so from the NVML stand-in's MIG state (tests/standin/mig.h). The check asks
# CUDA what it can answer, after the layout is made: the GPUs outside MIG mode in one
# process, each MIG device in its own (CUDA_VISIBLE_DEVICES=MIG-<uuid>).
#   1. A partitioned 2-GPU node stays ready at every run after the one that partitioned it
#      (a pod restart, a DaemonSet update): exit 0, the marker, CDI spec and labels kept;
#      a layout change refused while a job holds a GPU (exit 7) keeps them too.
#   2. GPUs that come up in MIG mode with no instance (after the reboot that turned MIG mode
#      on): the run makes the instances, then CUDA answers for each; ready.
#   3. A MIG device whose context fails is named by its UUID: exit 8, nothing says ready.
#   4. GPU 0 partitioned, GPU 1 whole: GPU 1 by its UUID in one process, 7 MIG devices.
#   5. MIG mode on without instances and no layout asked (another tool partitions): nothing
#      there CUDA could open; the driver is ready and the run says why CUDA was not asked.
#   6. The node agent judges as the installer does: ready on the partitioned node; a MIG
#      device of GPU 1 failing makes it not ready, naming that device.
#   7. An A100 pool whose MIG mode waits for a reboot: exit 10, then after the reboot the
#      instances made and the node ready.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
: >"$T/root/dev/kmsg"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
gpus=$T/root/proc/driver/nvidia/gpus
marker=$T/root/run/nvidia/validations/driver-ready
spec=$T/root/var/run/cdi/nvidia-driver-installer.json
labels=$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver
instances() { cat "$gpus"/*/standin-mig 2>/dev/null | grep -c '^ci ' || true; }
# uuid_of NAME: the MIG device the CDI spec names NAME ("1:3"), by its UUID.
uuid_of() {
    python3 - "$spec" "$1" <<'PY'
import json, sys
devs = json.load(open(sys.argv[1]))["devices"]
edits = {d["name"]: d["containerEdits"] for d in devs}
print(next(d["name"] for d in devs if d["name"].startswith("MIG-") and d["containerEdits"] == edits[sys.argv[2]]))
PY
}

# 1. The pool asks for 1g.10gb: the first run partitions, every run after it stays ready.
mkdir -p "$T/root/etc/nvidia"
echo '{"GPUPartitionSize":"1g.10gb"}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(instances)" 14 "MIG devices after the first run"
expect_err "verify: CUDA ready: a context on every GPU outside MIG mode and on every MIG device, each MIG device in a process of its own (cuda_driver_version=12020 devices=0 mig_devices=14 mig_gpus_without_instances=0 processes=14 "
[ -f "$marker" ] && [ -f "$spec" ] && [ -f "$labels" ] || fail "not ready after the first run"
spec_before=$(cat "$spec")
labels_before=$(cat "$labels")
for run in restart update; do
    expect_rc 0 install --repo "$R" $(kernel_args)
    expect_err "GPU layout already in place (layout=all-1g.10gb"
    expect_err "mig_devices=14 "
    [ -f "$marker" ] || fail "the readiness marker withdrawn at the $run"
    assert_eq "$(cat "$spec")" "$spec_before" "the CDI spec at the $run"
    assert_eq "$(cat "$labels")" "$labels_before" "the labels at the $run"
done
# Another layout while a job holds a GPU: refused (exit 7), the node as it was and ready.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidia0 "$T/root/proc/4242/fd/3"
echo trainer >"$T/root/proc/4242/comm"
expect_rc 7 install --repo "$R" $(kernel_args) --mig-layout all-3g.40gb
expect_err "GPU partitioning refused: the GPUs are in use: /dev/nvidia0 open in pid 4242 (trainer)"
[ -f "$marker" ] || fail "the readiness marker withdrawn at a busy refusal"
assert_eq "$(cat "$spec")" "$spec_before" "the CDI spec at a busy refusal"
assert_eq "$(cat "$labels")" "$labels_before" "the labels at a busy refusal"
rm -rf "$T/root/proc/4242"

# 2. After the reboot that activates MIG mode: mode on, no instance (what a reset leaves).
for d in "$gpus"/*/; do echo "mode 1 1" >"$d/standin-mig"; done
rm -rf "$T/root/proc/driver/nvidia/capabilities/gpu0" "$T/root/proc/driver/nvidia/capabilities/gpu1"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "GPU layout applied (layout=all-1g.10gb from=/etc/nvidia/gpu_config.json changed=2 unchanged=0"
expect_err "mig_devices=14 "
assert_eq "$(instances)" 14 "MIG devices made after the reboot"
[ -f "$marker" ] || fail "not ready after the instances were made"
! grep -q CUDA_ERROR_NO_DEVICE "$T/err" || fail "CUDA asked before the instances: $(grep NO_DEVICE "$T/err")"

# 3. One MIG device of GPU 1 failing: named, exit 8, nothing says ready.
bad=$(uuid_of 1:3)
CUDA_STANDIN_FAIL=ctx:$bad expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "ERROR install: verify: CUDA cuCtxCreate failed on MIG device $bad (GPU 1, 1g.10gb, GPU instance 4, compute instance 0): CUDA_ERROR_UNKNOWN: unknown error (999)"
[ ! -e "$marker" ] && [ ! -e "$spec" ] || fail "ready with a MIG device CUDA cannot use"
expect_rc 0 install --repo "$R" $(kernel_args)
[ -f "$marker" ] || fail "not ready again"

# 4. GPU 0 partitioned, GPU 1 whole: GPU 1 asked by its UUID beside the MIG devices.
rm "$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled,0=all-1g.10gb
expect_err "(cuda_driver_version=12020 devices=1 mig_devices=7 mig_gpus_without_instances=0 processes=8 "
CUDA_STANDIN_FAIL=ctx:GPU-00000000-0000-0000-0000-000000000001 expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "ERROR install: verify: CUDA cuCtxCreate failed on device 0 (0000:00:05.0): CUDA_ERROR_UNKNOWN: unknown error (999)"

# 5. MIG mode on, no instance, no layout asked: CUDA has nothing to open; the driver serves.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled
for d in "$gpus"/*/; do echo "mode 1 1" >"$d/standin-mig"; done
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "verify: CUDA check skipped: every GPU is in MIG mode without a MIG device, none CUDA could open (the instances are the layout's or another tool's to make) (mig_gpus_without_instances=2)"
[ -f "$marker" ] || fail "not ready with MIG mode on and no instance"
# GPU 0 whole again beside GPU 1 in MIG mode without instances: GPU 0 asked, GPU 1 counted.
echo "mode 0 0" >"$gpus/0000:00:04.0/standin-mig"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "(cuda_driver_version=12020 devices=1 mig_devices=0 mig_gpus_without_instances=1 processes=1 "

# 6. The node agent on the partitioned node.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-1g.10gb
bad=$(uuid_of 1:6)
trap 'rc=$?; [ -z "${apid:-}" ] || kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -8 "$T/agent.log"' EXIT
said() { grep -q -- "$1" "$T/agent.log"; }
start_agent --cuda-interval 1
wait_for "the agent's judgement" 60 said "agent: node"
said "agent: node ready: a CUDA job can run" || fail "the agent: $(grep 'agent: node' "$T/agent.log")"
stop_agent
: >"$T/agent.log"
CUDA_STANDIN_FAIL=ctx:$bad start_agent
wait_for "the agent's judgement" 60 said "agent: node"
said "agent: node not ready (reason=cuda cause=CUDA cuCtxCreate failed on MIG device $bad (GPU 1, 1g.10gb, GPU instance 7, compute instance 0)" ||
    fail "the agent: $(grep 'agent: node' "$T/agent.log")"
stop_agent

# 7. An A100 pool, where entering MIG mode waits for a reboot (GKE's A100 nodes): the first
#    run ends with exit 10, the run after the reboot makes the instances and is ready.
rm -rf "$T/root"
mkroot "$T/root" cos 17800.66.78 --gpu 10de:20b0 --gpu 10de:20b0
mkkernel "$T/root"
mkdir -p "$T/root/etc/nvidia"
echo '{"GPUPartitionSize":"1g.5gb"}' >"$T/root/etc/nvidia/gpu_config.json"
NVML_STANDIN_MIG=reset-required expect_rc 10 install --repo "$R" $(kernel_args)
expect_err "MIG mode waits for a GPU reset on GPU 0"
[ ! -e "$marker" ] || fail "ready while MIG mode waits for the reboot"
sed -i 's/^mode 0 1/mode 1 1/' "$gpus"/*/standin-mig # the reboot
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "GPU layout applied (layout=all-1g.5gb from=/etc/nvidia/gpu_config.json changed=2 unchanged=0"
expect_err "mig_devices=14 "
assert_eq "$(instances)" 14 "A100 MIG devices after the reboot"
[ -f "$marker" ] || fail "the A100 node not ready after the reboot"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "GPU layout already in place (layout=all-1g.5gb"
[ -f "$marker" ] || fail "the A100 node not ready at the run after"
