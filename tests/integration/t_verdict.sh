# What the node publishes agrees with the verification's verdict: after a failed NVML check
# (exit 8) no label, CDI spec or readiness marker says that a working driver is there, and
# a later successful check publishes them again.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
labels="$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"
spec="$T/root/var/run/cdi/nvidia-driver-installer.json"
ready="$T/root/run/nvidia/validations/driver-ready"
published() { for f in "$labels" "$spec" "$ready"; do [ -e "$f" ] && echo "${f#$T/root}"; done; true; }

expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(published | wc -l)" 3 "published after a good install: $(published)"

# NVML cannot talk to the driver.
NVML_STANDIN_FAIL=init expect_rc 8 install --repo "$R" $(kernel_args)
expect_err "NVML initialisation failed"
assert_eq "$(published)" "" "published after a failed check"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(published | wc -l)" 3 "published after the check passes again: $(published)"

# NVML sees fewer GPUs than the PCI bus.
add_pci "$T/root" 0000:00:07.0 10de 2330 0x030200
expect_rc 8 install --repo "$R" $(kernel_args)
assert_eq "$(published)" "" "published after a GPU went missing"
