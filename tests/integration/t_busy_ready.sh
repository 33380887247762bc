# An upgrade refused because the old driver is busy (exit 7) is no change: the node keeps
# serving its driver, so the readiness marker, the CDI spec and the labels stay exactly as
# they were (the device plugin gated on the marker keeps running). Only a switch that
# really happens withdraws the marker, and the new driver's publication writes it again.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
labels="$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"
spec="$T/root/var/run/cdi/nvidia-driver-installer.json"
ready="$T/root/run/nvidia/validations/driver-ready"
# Names, inodes, times and contents: a file rewritten with the same bytes differs too.
published() {
    for f in "$ready" "$spec" "$labels"; do
        if [ -e "$f" ]; then
            echo "${f#$T/root} $(stat -c '%i %Y' "$f") $(sha256sum <"$f")"
        else
            echo "${f#$T/root} missing"
        fi
    done
}

expect_rc 0 install --repo "$R" $(kernel_args)
grep -q "$V_OLD" "$ready" || fail "the marker does not name $V_OLD: $(cat "$ready")"
before=$(published)
case "$before" in *missing*) fail "not all published after the first install: $before" ;; esac

# A workload holds the old driver: the upgrade is refused and nothing published moves.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
echo cuda-app >"$T/root/proc/4242/comm"
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
expect_err "driver in use: /dev/nvidiactl open in pid 4242 (cuda-app)"
assert_eq "$(published)" "$before" "marker, CDI spec and labels after a refused upgrade"
assert_eq "$(installed_version)" "$V_OLD" "user space after a refused upgrade"

# Idle again: the switch happens; the marker is written again for the new driver.
rm -rf "$T/root/proc/4242"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
grep -q "$V_NEW" "$ready" || fail "the marker does not name $V_NEW: $(cat "$ready")"
grep -q "\"$V_NEW\"\|$V_NEW" "$labels" || fail "labels after the switch: $(cat "$labels")"

# A switch that goes ahead and then fails (the kernel refuses the other version's module)
# had withdrawn the marker before the driver changed: nothing says a driver is ready.
FAKE_KERNEL_FAIL=nvidia:EPERM expect_rc 6 install --repo "$R" $(kernel_args) --driver-version "$V_OLD"
[ ! -e "$ready" ] || fail "a marker after a failed switch: $(cat "$ready")"
