# MIG instances' device nodes: partitions another tool made (NVIDIA's MIG manager, GKE's
# partition step) appear in the driver's capabilities (/proc/driver/nvidia/capabilities/
# gpuN/mig/giM/access and .../ciK/access, each with its DeviceFileMinor and Mode); GKE's
# device plugin only checks that /dev/nvidia-caps/nvidia-capMINOR exist, so a run makes
# them (major "nvidia-caps" from /proc/devices), the node agent too for partitions made
# after the install, and uninstall removes them with the rest.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
[ ! -e "$T/root/dev/nvidia-caps/nvidia-cap12" ] || fail "a MIG node before any partition"
caps=$T/root/proc/driver/nvidia/capabilities
# cap DIR MINOR: a capability file as nv-caps.c writes it (mode 292 = 0444).
cap() { mkdir -p "$caps/$1" && printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "$2" >"$caps/$1/access"; }
cap gpu0/mig/gi1 12
cap gpu0/mig/gi1/ci0 13
cap gpu0/mig/gi2 21
cap gpu0/mig/gi2/ci0 22
cap gpu1/mig/gi1 147
cap gpu1/mig/gi1/ci0 148
# Not a capability of ours: left alone.
mkdir -p "$caps/gpu1/mig/notes" && echo "DeviceFileMinor: 99" >"$caps/gpu1/mig/notes/access"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_err "device nodes in place (created=6 "
for m in 12 13 21 22 147 148; do
    assert_eq "$(devnode nvidia-caps/nvidia-cap$m)" "c 236:$m 444" "nvidia-cap$m"
    assert_eq "$(readlink "$T/root/dev/char/236:$m")" "../nvidia-caps/nvidia-cap$m" "/dev/char/236:$m"
done
[ ! -e "$T/root/dev/nvidia-caps/nvidia-cap99" ] || fail "a node for a file that is no capability"
# A second run keeps them; the driver's own two caps nodes are still there.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
expect_err "device nodes in place (created=0 "
assert_eq "$(devnode nvidia-caps/nvidia-cap1)" "c 236:1 400" nvidia-cap1
# Partitions made while the node agent runs: it makes their nodes at its next look.
dlog=$T/daemons.log
start_agent
# The instance and its compute instance appear at once, as the driver makes them (a look
# between two files would see half an instance).
mkdir -p "$caps/gpu1/mig/.new/ci0"
printf 'DeviceFileMinor: 156\nDeviceFileMode: 292\nDeviceFileModify: 1\n' >"$caps/gpu1/mig/.new/access"
printf 'DeviceFileMinor: 157\nDeviceFileMode: 292\nDeviceFileModify: 1\n' >"$caps/gpu1/mig/.new/ci0/access"
mv "$caps/gpu1/mig/.new" "$caps/gpu1/mig/gi2"
wait_for "the agent to make the new MIG instance's nodes" 30 test -c "$T/root/dev/nvidia-caps/nvidia-cap157"
assert_eq "$(devnode nvidia-caps/nvidia-cap156)" "c 236:156 444" "nvidia-cap156 by the agent"
grep -q "MIG instances' device nodes made (created=2 " "$T/agent.log" || fail "the agent did not say it: $(tail -5 "$T/agent.log")"
stop_agent
expect_rc 0 uninstall
[ ! -e "$T/root/dev/nvidia-caps" ] || fail "uninstall left /dev/nvidia-caps"
