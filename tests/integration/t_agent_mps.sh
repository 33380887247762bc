# MPS for a node pool that asks for it (GKE's gpu_config.json, GPUSharingConfig
# GPUSharingStrategy "mps"): the CDI spec mounts MPS's pipe directory (read-write, at
# /tmp/nvidia-mps, where GKE's device plugin mounts it from), and the node agent runs the
# MPS control daemon from the installed bin/ in the foreground with that directory and
# MPS's log directory in its environment (tests/standin/daemon.c built as
# nvidia-cuda-mps-control makes its control socket there); GKE's plugin's own check (the
# control program asked get_default_active_thread_percentage) then answers; doctor says
# it serves; killed, it is started again; the pool no longer asking for MPS stops it; a
# pipe directory another user made first (or one others may write) is refused by the
# installer, the agent and doctor, and made again, root's alone, once removed; a pipe
# directory planted as a link to /etc is refused, nothing made there. On an SELinux
# host the agent labels the pipe directory for containers (host/selinux.h).
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
: >"$T/root/dev/kmsg"
"$SRC/scripts/make-standin-driver" "$V_OLD" "$T/drv" 4
cc -O1 -DSTANDIN_MPS -o "$T/drv/bin/nvidia-cuda-mps-control" "$SRC/tests/standin/daemon.c"
sign_modules "$T/drv/kernel"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/pkg.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" "$T/pkg.tar.zst" >/dev/null
mkdir -p "$T/root/etc/nvidia" "$T/root/tmp"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
echo '{"GPUSharingConfig": {"GPUSharingStrategy": "mps", "MaxSharedClientsPerGPU": 4}}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
spec=$T/root/var/run/cdi/nvidia-driver-installer.json
python3 - "$spec" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = [x for x in s["containerEdits"]["mounts"] if x["containerPath"] == "/tmp/nvidia-mps"]
assert m == [{"hostPath": "/tmp/nvidia-mps", "containerPath": "/tmp/nvidia-mps",
              "options": ["rw", "nosuid", "nodev", "bind"]}], s["containerEdits"]["mounts"]
PY
[ -d "$T/root/tmp/nvidia-mps" ] && [ ! -L "$T/root/tmp/nvidia-mps" ] || fail "no pipe directory for the runtime to mount"
schema=$(cdi_schema_dir)
[ -z "$schema" ] || python3 "$SRC/tests/tools/validate-cdi.py" "$schema" "$spec"

dlog=$T/daemons.log
: >"$dlog"
start_agent
trap 'rc=$?; kill "$apid" 2>/dev/null || true; sleep 0.2; kill_leftovers
[ $rc = 0 ] || { tail -8 "$T/agent.log"; cat "$dlog"; }' EXIT
count() { grep -c "^$1 nvidia-cuda-mps-control" "$dlog" || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
mps_pid() { sed -n 's/^start nvidia-cuda-mps-control pid=\([0-9]*\) .*/\1/p' "$dlog" | tail -1; }
# What GKE's plugin runs to know MPS serves (manager.go isMpsHealthy), with MPS's default pipe
# directory as the node's /tmp/nvidia-mps.
plugin_check() { echo get_default_active_thread_percentage | CUDA_MPS_PIPE_DIRECTORY=$T/root/tmp/nvidia-mps "$T/drv/bin/nvidia-cuda-mps-control" >"$T/check.out" 2>&1; }
wait_for "the MPS control daemon" 30 at_least start 1
grep -qx "start nvidia-cuda-mps-control pid=[0-9]* args=-f" "$dlog" || fail "its arguments: $(cat "$dlog")"
[ -S "$T/root/tmp/nvidia-mps/control" ] || fail "no control socket in the host's /tmp/nvidia-mps: $(ls -la "$T/root/tmp/nvidia-mps")"
grep -q "Starting control daemon" "$T/root/var/log/nvidia-mps/control.log" || fail "no control.log in /var/log/nvidia-mps"
plugin_check && grep -qx "100.0" "$T/check.out" || fail "GKE's plugin's check: $(cat "$T/check.out")"
[ -d "$T/root/proc/$(mps_pid)/fd" ] || fail "the stand-in does not hold the driver"
expect_rc 0 doctor --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_OLD"
grep -Eq "^\[ok  \] partitions +whole GPUs \(no partition size asked for\); MPS with 4 clients per GPU: the control daemon serves \(/tmp/nvidia-mps\)" "$T/out" ||
    fail "doctor: $(grep partitions "$T/out")"
# Killed: started again after the backoff. The host now runs SELinux (a fake selinuxfs):
# the pipe directory, which containers mount, gets the container label at the restart.
mkdir -p "$T/root/sys/fs/selinux"
echo 1 >"$T/root/sys/fs/selinux/enforce"
echo 1 >"$T/root/sys/fs/selinux/mls"
: >"$T/root/sys/fs/selinux/context"
pid=$(mps_pid)
kill -KILL "$pid"
rm -rf "$T/root/proc/$pid" "$T/root/tmp/nvidia-mps/control"
wait_for "the restart" 30 at_least start 2
[ "$(getfattr --only-values -n security.selinux "$T/root/tmp/nvidia-mps" 2>/dev/null | tr -d '\0')" = \
    system_u:object_r:container_file_t:s0 ] || fail "the pipe directory is not labelled for containers"
# The pool no longer asks for MPS: the daemon stops, and GKE's plugin's check fails.
echo '{"GPUSharingConfig": {"GPUSharingStrategy": "time-sharing", "MaxSharedClientsPerGPU": 4}}' >"$T/root/etc/nvidia/gpu_config.json"
agent_said() { grep -q -- "$1" "$T/agent.log"; }
wait_for "the daemon's stop, said" 30 agent_said "the MPS control daemon stopped: the node pool no longer asks for MPS"
at_least stop 1 || fail "the daemon did not stop: $(cat "$dlog")"
! plugin_check || fail "MPS still answers"
stop_agent
# A pipe directory another user made first (anyone may, in a sticky /tmp), with mode 0777:
# that user could replace the daemon's sockets in it. The installer refuses it (the spec
# names none), so does the agent (no daemon started), and doctor fails with the fix; the
# same for one of root's that others may write. Removed, it is made again, root's alone.
rm -rf "$T/root/tmp/nvidia-mps"
mkdir -m 0777 "$T/root/tmp/nvidia-mps"
chown 65534:65534 "$T/root/tmp/nvidia-mps"
echo '{"GPUSharingConfig": {"GPUSharingStrategy": "mps", "MaxSharedClientsPerGPU": 4}}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_err "MPS's pipe directory cannot be made: not in the spec (dir=/tmp/nvidia-mps error='/tmp/nvidia-mps' is uid 65534's with mode 0777, not root's alone: another user could replace what is made in it; remove the directory, it is made again"
! grep -q nvidia-mps "$spec" || fail "the spec mounts another user's pipe directory"
: >"$T/agent.log"
n=$(count start)
start_agent
wait_for "the agent's refusal" 30 agent_said "MPS's directories cannot be made: no MPS control daemon (error='/tmp/nvidia-mps' is uid 65534's with mode 0777"
stop_agent
[ "$(count start)" = "$n" ] || fail "the daemon started with another user's pipe directory: $(cat "$dlog")"
expect_rc 9 doctor --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --driver-version "$V_OLD"
grep -Eq "^\[fail\] partitions +whole GPUs \(no partition size asked for\); MPS with 4 clients per GPU: '/tmp/nvidia-mps' is uid 65534's with mode 0777, not root's alone" "$T/out" ||
    fail "doctor: $(grep partitions "$T/out")"
grep -q "fix: remove the directory (rm -r /tmp/nvidia-mps)" "$T/out" || fail "doctor's fix: $(cat "$T/out")"
chown 0:0 "$T/root/tmp/nvidia-mps"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_err "error='/tmp/nvidia-mps' is uid 0's with mode 0777, not root's alone"
rm -rf "$T/root/tmp/nvidia-mps"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
[ "$(stat -c '%u %a' "$T/root/tmp/nvidia-mps")" = "0 755" ] || fail "the pipe directory made again: $(stat -c '%u %a' "$T/root/tmp/nvidia-mps")"
grep -q nvidia-mps "$spec" || fail "the spec lacks the pipe directory made again"
# A pipe directory planted as a link to /etc: refused (the spec names none), nothing made there.
rm -rf "$T/root/tmp/nvidia-mps"
ln -s /etc "$T/root/tmp/nvidia-mps"
echo '{"GPUSharingConfig": {"GPUSharingStrategy": "mps", "MaxSharedClientsPerGPU": 4}}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_err "MPS's pipe directory cannot be made: not in the spec (dir=/tmp/nvidia-mps error='/tmp/nvidia-mps' resolves to '/etc', not a directory of MPS's own"
! grep -q nvidia-mps "$spec" || fail "the spec mounts the planted link"
