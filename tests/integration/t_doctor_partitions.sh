# doctor and a pool's GPU partitioning request (GKE's /etc/nvidia/gpu_config.json): a MIG
# size the node's GPUs have is named with what it means (instances, GPU-instance profile)
# and reported as not applied (the GPUs are served whole: warn), or, where another tool
# made partitions, whether their number matches (ok) or not (warn); a size the GPU lacks
# fails naming the sizes it has; a GPU without known MIG sizes, a file GKE's plugin would
# not take, MPS (no daemon run here) warn or fail with their cause; no file, no line.
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

# GKE writes Go's field names; its plugin matches them in any case.
conf '{"GPUPartitionSize": "1g.10gb"}'
doc 0
line warn "MIG 1g.10gb asked for: 7 instances of GPU-instance profile 19 on each of 2 H100 80GB; this installer does not partition GPUs yet: they are served whole"
grep -q "fix: create the partitions after the driver" "$T/out" || fail "no fix for the unapplied partitions"
# Partitions made outside the installer (NVIDIA's MIG manager): as the driver lists them
# (/proc/driver/nvidia/capabilities/gpuN/mig/giM, which GKE's device plugin reads).
caps=$T/root/proc/driver/nvidia/capabilities
for g in 0 1; do for i in 1 2 3 4 5 6 7; do mkdir -p "$caps/gpu$g/mig/gi$i/ci0"; done; done
doc 0
line ok "MIG 1g.10gb asked for: .*; the driver has 14 GPU instances, made outside this installer"
rm -rf "$caps/gpu1/mig"
doc 0
line warn "MIG 1g.10gb asked for: .*; the driver has 7 GPU instances, made outside this installer"
grep -q "fix: make the partitions match the request" "$T/out" || fail "no fix for partitions that do not match"
rm -rf "$caps"
conf '{"gpupartitionsize": "3g.40gb", "GPUSharingConfig": {"GPUSharingStrategy": "time-sharing", "MaxSharedClientsPerGPU": 2}}'
doc 0
line warn "MIG 3g.40gb asked for: 2 instances of GPU-instance profile 9"
line ok "MIG 3g.40gb .*; time-sharing with 2 clients per GPU"

# A size the H100 does not have (an H200's): fails, naming the ones it has.
conf '{"GPUPartitionSize": "1g.18gb"}'
doc 9
line fail "the H100 80GB \(nvidia-h100-80gb\) has no MIG partition size 1g.18gb; it has 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"

# Whole GPUs, shared: time-sharing is the device plugin's; MPS needs a daemon not run here.
conf '{"GPUSharingConfig": {"GPUSharingStrategy": "time-sharing", "MaxSharedClientsPerGPU": 4}}'
doc 0
line ok "whole GPUs \(no partition size asked for\); time-sharing with 4 clients per GPU"
conf '{"GPUSharingConfig": {"GPUSharingStrategy": "mps", "MaxSharedClientsPerGPU": 4}}'
doc 0
line warn "whole GPUs .*; MPS with 4 clients per GPU: this installer does not run the MPS control daemon yet"
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
