# The node agent's daemons (tests/standin/daemon.c stands in for NVIDIA's: it
# forks into the background as the real one does, holds /dev/nvidiactl in the fake kernel's
# /proc, and records its starts and stops):
#   1. the agent starts the persistence daemon from the installed bin/ once the driver is
#      loaded (--persistence-mode), though it forks away from its first process;
#   2. killed, it is started again after the 1 s backoff and the restart is reported
#      (log, daemon_restarts_total); readiness is never withdrawn for it;
#   3. an upgrade: the installer has the agent stop it before its idle check (the control
#      socket) and does not exit 7 because of it; the new version's starts after the run;
#   4. a daemon that cannot start is retried with a doubling backoff (1, 2, 4 s);
#   5. uninstall stops it too, and nothing starts without an install; the agent restarted
#      finds the node as it is; SIGTERM stops the daemon, then the agent, exit 0.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
: >"$T/root/dev/kmsg"
# Two versions of a driver whose bin/ has the persistence daemon.
for v in "$V_OLD" "$V_NEW"; do
    "$SRC/scripts/make-standin-driver" "$v" "$T/drv-$v" 4
    cc -O1 -o "$T/drv-$v/bin/nvidia-persistenced" "$SRC/tests/standin/daemon.c"
    sign_modules "$T/drv-$v/kernel"
    "$SRC/scripts/make-repo" pack "$T/drv-$v" "$T/pkg-$v.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$KERNEL" "$T/pkg-$v.tar.zst" >/dev/null
done
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
marker=$T/root/run/nvidia/validations/driver-ready
dlog=$T/daemons.log
: >"$dlog"

start_agent
# Stopped however the test ends; a failing test shows the end of the agent's log.
trap 'rc=$?; kill "$apid" 2>/dev/null || true; sleep 0.2; kill_leftovers
[ $rc = 0 ] || { tail -8 "$T/agent.log"; cat "$dlog"; }' EXIT
said() { grep -c -- "$1" "$T/agent.log" || true; }
count() { grep -c "^$1 " "$dlog" || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
said_at_least() { [ "$(said "$1")" -ge "$2" ]; }
daemon_pid() { sed -n 's/^start nvidia-persistenced pid=\([0-9]*\) .*/\1/p' "$dlog" | tail -1; }
port() { sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log" | tail -1; }
metric() { curl -s "http://127.0.0.1:$(port)/metrics" | grep -F -- "$1" >/dev/null; }

# 1. Started, forked away, known by its pid.
wait_for "the daemon's start" 30 at_least start 1
grep -qx "start nvidia-persistenced pid=[0-9]* args=--persistence-mode" "$dlog" || fail "its arguments: $(cat "$dlog")"
wait_for "the agent to know it" 30 said_at_least "daemon running (daemon=nvidia-persistenced pid=$(daemon_pid) restarts=0)" 1
[ -d "$T/root/proc/$(daemon_pid)/fd" ] || fail "the stand-in does not hold the driver"
metric 'nvidia_driver_installer_agent_daemon_up{daemon="nvidia-persistenced"} 1' || fail "daemon_up"

# 2. Killed: the agent says so and starts it again; readiness stays.
pid=$(daemon_pid)
kill -KILL "$pid"
rm -rf "$T/root/proc/$pid" # what the kernel's /proc does for a process that is gone
wait_for "the crash reported" 30 said_at_least "daemon ended: starting it again after the backoff (daemon=nvidia-persistenced how=signal 9" 1
wait_for "the restart" 30 at_least start 2
wait_for "the agent to know the new one" 30 said_at_least "daemon running (daemon=nvidia-persistenced pid=$(daemon_pid) restarts=1)" 1
metric 'nvidia_driver_installer_agent_daemon_restarts_total{daemon="nvidia-persistenced"} 1' || fail "restarts_total"
[ -f "$marker" ] || fail "readiness withdrawn for the persistence daemon"
grep -q "node not ready" "$T/agent.log" && fail "not ready for the persistence daemon: $(grep 'node not ready' "$T/agent.log")"

# 3. An upgrade while it runs: stopped for the idle check, not a user of the driver.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
expect_err "kernel: the node agent's daemons are stopped for this run (stopped=1)"
[ "$(count stop)" = 1 ] || fail "not stopped once: $(cat "$dlog")"
grep -q "^stop nvidia-persistenced pid=[0-9]* signal=TERM$" "$dlog" || fail "$(cat "$dlog")"
assert_eq "$(installed_version)" "$V_NEW" "the upgrade"
wait_for "the new version's daemon" 30 at_least start 3
wait_for "ready on the new version" 30 metric "nvidia_driver_installer_agent_ready{version=\"$V_NEW\"} 1"

# 4. A daemon that cannot start: retried, the backoff doubling.
stop_agent
[ "$(count stop)" = 2 ] || fail "the agent's SIGTERM did not stop the daemon: $(cat "$dlog")"
STANDIN_DAEMON_FAIL=start start_agent
wait_for "three failed starts" 30 at_least fail 3
# The agent says a failure once it has reaped it, after the stand-in's line: waited for.
backoffs() {
    grep -q "how=exit 1 up_s=0 backoff_s=1 " "$T/agent.log" && grep -q "how=exit 1 up_s=[0-9]* backoff_s=2 " "$T/agent.log" &&
        grep -q "how=exit 1 up_s=[0-9]* backoff_s=4 " "$T/agent.log"
}
wait_for "the three failures' backoffs said (1, 2, 4 s)" 30 backoffs
stop_agent

# 5. The agent again (the node as it is): the daemon; then uninstall stops it, and with
#    nothing installed none starts.
start_agent
wait_for "the daemon under a new agent" 30 at_least start 4
expect_rc 0 uninstall --kernel-release "$KERNEL"
expect_err "kernel: the node agent's daemons are stopped for this run (stopped=1)"
[ "$(count stop)" = 3 ] || fail "uninstall did not stop the daemon: $(cat "$dlog")"
sleep 2.5
[ "$(count start)" = 4 ] || fail "a daemon started without an install: $(cat "$dlog")"
# Without an agent: nothing to stop, and the run says nothing of one.
stop_agent
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
grep -q "daemons are stopped" "$T/err" && fail "a hold without an agent: $(cat "$T/err")"
true
