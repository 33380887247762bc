# The install dir on a noexec file system (COS mounts /home so) is bind-mounted onto itself
# with exec, keeping nosuid and nodev, and the host sees that mount: a private mount
# namespace stands in for the node, a shared tmpfs for the host's /, and its rbind at the
# host root for the DaemonSet's hostPath / with mountPropagation: Bidirectional. A second
# run adds no mount; --host-mount binds a second target; uninstall takes them away.
mkroot "$T/seed"
new_repo "$T/repo" "$V_NEW:default"
unshare -m bash -c '
    set -e
    T=$1 BIN=$2 ARGS=$3
    mounts() { findmnt -rn -o TARGET,OPTIONS | grep "^$T/host" | sort; }
    mkdir -p "$T/host" "$T/root"
    mount -t tmpfs tmpfs "$T/host"
    mount --make-shared "$T/host"
    cp -a "$T/seed/." "$T/host/"
    mkdir -p "$T/host/home"
    mount -t tmpfs -o noexec,nosuid,nodev tmpfs "$T/host/home"
    mount --rbind "$T/host" "$T/root"
    mount --make-rshared "$T/root"
    "$BIN" --root "$T/root" install --repo "file://$T/repo" $ARGS --host-mount /usr/local/nvidia 2>"$T/err1"
    mounts >"$T/mounts1"
    "$BIN" --root "$T/root" install --repo "file://$T/repo" $ARGS --host-mount /usr/local/nvidia 2>"$T/err2"
    mounts >"$T/mounts2"
    # The host runs the driver binaries from its own view of both paths.
    "$T/host/home/kubernetes/bin/nvidia/bin/nvidia-smi" >"$T/smi1"
    "$T/host/usr/local/nvidia/bin/nvidia-smi" >"$T/smi2"
    "$BIN" --root "$T/root" install --repo "file://$T/repo" $ARGS --dry-run >"$T/plan" 2>/dev/null
    "$BIN" --root "$T/root" uninstall 2>"$T/err3"
    mounts >"$T/mounts3"
' _ "$T" "$BIN" "$(install_args)"
cat "$T/mounts1"
grep -q "^$T/host/home/kubernetes/bin/nvidia rw,nosuid,nodev" "$T/mounts1" || fail "no exec mount seen by the host"
# (This test's own directory name holds "noexec": look at the options field only.)
awk -v t="$T/host/home/kubernetes/bin/nvidia" '$1 == t && $2 ~ /noexec/' "$T/mounts1" | grepq . &&
    fail "the host sees it noexec"
grep -q "^$T/host/usr/local/nvidia rw,nosuid,nodev" "$T/mounts1" || fail "--host-mount not seen by the host"
grep -q "exec bind mount in place (target=$T/root/home/kubernetes/bin/nvidia)" "$T/err1" || fail "not logged"
assert_eq "$(cat "$T/mounts2")" "$(cat "$T/mounts1")" "mounts after a second run"
grep -q "exec bind mount in place" "$T/err2" && fail "a second run mounted again"
grep -q "Driver Version: $V_NEW" "$T/smi1" || fail "nvidia-smi does not run from the host's /home"
grep -q "Driver Version: $V_NEW" "$T/smi2" || fail "nvidia-smi does not run from /usr/local/nvidia"
grep -q "mount:       $T/root/home/kubernetes/bin/nvidia (tmpfs, rw,nosuid,nodev" "$T/plan" || fail "plan: $(cat "$T/plan")"
grep -q "$T/host/home/kubernetes/bin/nvidia\|$T/host/usr/local/nvidia" "$T/mounts3" && fail "uninstall left mounts: $(cat "$T/mounts3")"
grep -q "unmounted (target=$T/root/usr/local/nvidia)" "$T/err3" || fail "uninstall did not unmount"
true
