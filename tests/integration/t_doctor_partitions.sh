# doctor and the GPU layout asked for (--mig-layout; by default the pool's
# /etc/nvidia/gpu_config.json): a MIG size the node's GPUs have is named with what it means
# (instances, GPU-instance profile) and judged by what NVML shows: in place (ok), not (yet)
# in place (warn: the installer's next run makes it), a mode waiting for a GPU reset
# (fail: reboot); a size the GPU lacks fails naming the sizes it has; a GPU without known
# MIG sizes, a file GKE's plugin would not take, MPS warn or fail with their cause; no
# layout and no sharing asked for, no line.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args)
doc() { expect_rc "$1" doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"; }
line() { grep -E "^\[$1 *\] partitions +$2" "$T/out" || fail "no [$1] partitions line with '$2': $(cat "$T/out")"; }
conf() { mkdir -p "$T/root/etc/nvidia" && printf '%s\n' "$1" >"$T/root/etc/nvidia/gpu_config.json"; }

doc 0
! grep -q "partitions" "$T/out" || fail "a partitions line without gpu_config.json"

# GKE writes Go's field names; its plugin matches them in any case. Asked for, not yet made
# (the installer makes it at its next run): warn, with the fix.
conf '{"GPUPartitionSize": "1g.10gb"}'
doc 0
line warn "MIG 1g.10gb: 7 instances of GPU-instance profile 19 on each of 2 H100 80GB asked for \(/etc/nvidia/gpu_config.json\); not in place: 0 of 2 GPUs in MIG mode, 0 MIG devices, 0 of them as asked"
grep -q "fix: run the installer again" "$T/out" || fail "no fix for the layout not in place"
expect_rc 0 install --repo "$R" $(kernel_args)
doc 0
line ok "MIG 1g.10gb: 7 instances of GPU-instance profile 19 on each of 2 H100 80GB \(/etc/nvidia/gpu_config.json\); in place: 2 GPU\(s\) in MIG mode, 14 MIG devices"
# Another tool changed it behind the installer's back (one GPU's instances gone).
for f in "$T/root/proc/driver/nvidia/gpus/0000:00:05.0/standin-mig"; do echo "mode 1 1" >"$f"; done
doc 0
line warn "MIG 1g.10gb: .* not in place: 2 of 2 GPUs in MIG mode, 7 MIG devices, 7 of them as asked"
# A mode that waits for a GPU reset: fails, the fix a reboot.
echo "mode 0 1" >"$T/root/proc/driver/nvidia/gpus/0000:00:05.0/standin-mig"
doc 9
line fail "MIG 1g.10gb: .*; MIG mode waits for a GPU reset on 1 GPU\(s\)"
grep -q "fix: reboot the node" "$T/out" || fail "no fix for the pending reset"
# --mig-layout over the file; all-disabled undoes it.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled
expect_rc 0 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --mig-layout all-disabled
line ok "whole GPUs \(--mig-layout\); in place: 0 GPU\(s\) in MIG mode, 0 MIG devices"
# A layout per GPU (--mig-layout over the file): GPU 0 partitioned, GPU 1 whole.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled,0=all-3g.40gb
expect_rc 0 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --mig-layout all-disabled,0=all-3g.40gb
line ok "all-disabled,0=all-3g.40gb \(--mig-layout\); in place: 1 GPU\(s\) in MIG mode, 2 MIG devices"
expect_rc 0 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --mig-layout 1=all-3g.40gb
line warn "1=all-3g.40gb asked for \(--mig-layout\); not in place: 1 of 2 GPUs in MIG mode, 2 MIG devices, 0 of them as asked"
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled
conf '{"gpupartitionsize": "3g.40gb", "GPUSharingConfig": {"GPUSharingStrategy": "time-sharing", "MaxSharedClientsPerGPU": 2}}'
doc 0
line warn "MIG 3g.40gb: 2 instances of GPU-instance profile 9"
line ok "MIG 3g.40gb: .*; time-sharing with 2 clients per GPU"

# A size the H100 does not have (an H200's): fails, naming the ones it has.
conf '{"GPUPartitionSize": "1g.18gb"}'
doc 9
line fail "the H100 80GB \(nvidia-h100-80gb\) has no MIG partition size 1g.18gb; it has 1g.10gb, 1g.10gb\+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"

# Whole GPUs, shared: time-sharing is the device plugin's; MPS needs the agent's daemon (t_agent_mps).
conf '{"GPUSharingConfig": {"GPUSharingStrategy": "time-sharing", "MaxSharedClientsPerGPU": 4}}'
doc 0
line ok "whole GPUs \(no partition size asked for\); time-sharing with 4 clients per GPU"
conf '{"GPUSharingConfig": {"GPUSharingStrategy": "mps", "MaxSharedClientsPerGPU": 4}}'
doc 0
line warn "whole GPUs .*; MPS with 4 clients per GPU: no control daemon serves \(/tmp/nvidia-mps/control\)"
# The deprecated field still means time-sharing.
conf '{"MaxTimeSharedClientsPerGPU": 3}'
doc 0
line ok ".*time-sharing with 3 clients per GPU"

# Files GKE's plugin would not take either: warned, with the cause.
for bad in '{"GPUPartitionSize": 7}|GPUPartitionSize is not a string' \
    '{"GPUSharingConfig": {"GPUSharingStrategy": "mps"}}|GPU sharing .mps. needs MaxSharedClientsPerGPU between 1 and 1024' \
    '{"GPUSharingConfig": {"GPUSharingStrategy": "vgpu", "MaxSharedClientsPerGPU": 2}}|unknown GPUSharingStrategy .vgpu.' \
    '{"GPUSharingConfig": {"MaxSharedClientsPerGPU": 2}}|MaxSharedClientsPerGPU without a GPUSharingStrategy' \
    '[1]|is not a JSON object'; do
    conf "${bad%%|*}"
    doc 0
    line warn ".*${bad#*|}.*; GKE's device plugin ignores such a file too"
done

# A GPU with no MIG sizes known here (an L4) asked for one: a node of its own.
rm -rf "$T/root"
mkroot "$T/root" cos 17800.66.78 --gpu 10de:27b8
mkkernel "$T/root"
conf '{"GPUPartitionSize": "1g.10gb"}'
doc 9
line fail "GPU 10de:27b8 has no MIG partition sizes known here \(A100, H100, H200, B200, GB200 do\)"
