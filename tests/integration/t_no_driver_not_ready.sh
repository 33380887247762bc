# No readiness without a driver. The modules go without a reboot (a manual rmmod, a run
# killed during a reload), so /run keeps the readiness marker: a run that then fails to
# load the driver (exit 6), or fails before it could load one (exit 4), withdraws the
# marker, the driver's labels and the CDI spec, as a failed NVML check (exit 8) does; a
# failed run with the driver loaded (exit 7, busy) changes none of them, and the next run
# that loads the driver writes them again.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
features=$T/root/etc/kubernetes/node-feature-discovery/features.d
notices=("$T/root/run/nvidia/validations/driver-ready" "$features/00-nvidia-driver"
    "$T/root/var/run/cdi/nvidia-driver-installer.json")
published() { for f in "${notices[@]}"; do [ -e "$f" ] && echo "${f#$T/root} $(sha256sum <"$f")" || echo "${f#$T/root} missing"; done; }
withdrawn() { for f in "${notices[@]}"; do [ ! -e "$f" ] || fail "$1: ${f#$T/root} left: $(cat "$f")"; done; }
rmmod_all() { # what `rmmod` of every nvidia module leaves: no module, /run and /dev as they were
    rm -rf "$T/root/sys/module/"nvidia* "$T/root/proc/driver/nvidia"
    sed -i '/^nvidia/d' "$T/root/proc/modules"
    [ ! -e "$T/root/sys/module/nvidia" ] || fail "nvidia still loaded"
}

expect_rc 0 install --repo "$R" $(kernel_args)
ready=$(published)
case "$ready" in *missing*) fail "not all published after the install: $ready" ;; esac

# Busy, and the upgrade refused: the driver is loaded, nothing is withdrawn.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(published)" "$ready" "marker, labels and CDI spec after a refused upgrade"
rm -rf "$T/root/proc/4242"

# The modules removed by hand; the load fails (exit 6): nothing says a driver is ready.
rmmod_all
FAKE_KERNEL_FAIL=nvidia:ENOMEM expect_rc 6 install --repo "$R" $(kernel_args)
expect_err "no nvidia module is loaded: the readiness marker, the labels and the CDI spec are withdrawn"
withdrawn "a failed load without a driver"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(published)" "$ready" "marker, labels and CDI spec once the driver loads again"

# The modules removed by hand; the run fails before it loads anything (no repository
# answers, no cached index: exit 4).
rmmod_all
mv "$T/root/var/cache/nvidia-driver-installer/index.json" "$T/index.json.kept"
expect_rc 4 install --repo "http://127.0.0.1:$(dead_port)/repo" $(kernel_args) --fetch-timeout 3
withdrawn "a run that failed before its load"
mv "$T/index.json.kept" "$T/root/var/cache/nvidia-driver-installer/index.json"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(published)" "$ready" "marker, labels and CDI spec after the repository answers"
