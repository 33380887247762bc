# The node agent (`agent`) keeps the node's readiness true after the install, on the fake
# kernel with the stand-in NVML and CUDA:
#   1. after an install it judges the node ready: /readyz 200, /healthz 200, /metrics
#      (checked by promtool) with ready 1 and the time to ready; the marker and labels stay;
#   2. an application Xid (13) in the kernel log is counted and changes nothing;
#   3. a fatal Xid (79) withdraws the marker and the driver's labels, /readyz says 503 and
#      why, the metrics say not_ready{reason="xid"}; the driver's "loading" line (a
#      reload resets the GPUs) restores them; the same lines written into /dev/kmsg from
#      user space (not the kernel's facility) neither withdraw nor restore anything;
#   4. the driver unloaded (a reboot's state): not ready, reason not_loaded; the
#      installer's next run loads it and the agent follows; while an installer run holds
#      the lock the agent leaves the node alone (a fatal Xid then counts once it is free);
#   5. HTTP: 404, 405, HEAD; a bad --listen is exit 2; SIGTERM stops it, exit 0.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
: >"$T/root/dev/kmsg"
marker=$T/root/run/nvidia/validations/driver-ready
labels=$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver
textfile=/var/lib/node_exporter/textfile_collector/nvidia-driver-installer-agent.prom

env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 \
    --agent-metrics-file "$textfile" --kernel-release "$KERNEL" 2>"$T/agent.log" &
apid=$!
# Stopped however the test ends; a failing test shows the end of the agent's log.
trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -8 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
[ -n "$port" ] || fail "no port in the agent's log: $(cat "$T/agent.log")"
url=http://127.0.0.1:$port
# code PATH [CURL ARGS...]: the HTTP status; the body goes to $T/body.
code() { local p=$1; shift; curl -s -o "$T/body" -w '%{http_code}' "$@" "$url$p"; }
metric() { curl -s "$url/metrics" | grep -F -- "$1" >/dev/null; }

# 1. Ready after the install.
wait_for "ready" 30 agent_said "agent: node ready: a CUDA job can run"
assert_eq "$(code /readyz)" 200 "/readyz once ready"
assert_eq "$(cat "$T/body")" ready "/readyz's body"
assert_eq "$(code /healthz)" 200 "/healthz"
assert_eq "$(code /metrics)" 200 "/metrics"
promtool check metrics <"$T/body" >"$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"
grep -q "^nvidia_driver_installer_agent_ready{version=\"$V_OLD\"} 1$" "$T/body" || fail "ready 1: $(cat "$T/body")"
grep -q '^nvidia_driver_installer_agent_time_to_ready_seconds [0-9.]*$' "$T/body" || fail "no time to ready"
wait_for "the textfile" 30 test -f "$T/root$textfile"
promtool check metrics <"$T/root$textfile" >"$T/promtool.out" 2>&1 || fail "promtool (textfile): $(cat "$T/promtool.out")"
[ -f "$marker" ] && [ -f "$labels" ] || fail "the marker or the labels went while ready"

# 2. An application Xid: counted, nothing else.
echo "4,1201,51000000,-;NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python, Graphics Exception: ESR 0x404600=0x80000002" >>"$T/root/dev/kmsg"
echo "4,1201,51000001,-;NVRM: Xid (PCI:0000:01:00): 63, pid=0, Row Remapper: New row marked for remapping, reset gpu to activate." >>"$T/root/dev/kmsg"
wait_for "the application Xid counted" 30 metric 'xid_errors_total{gpu="0000:01:00",xid="13",class="application"} 1'
wait_for "the other Xid counted" 30 metric 'xid_errors_total{gpu="0000:01:00",xid="63",class="other"} 1'
curl -s "$url/metrics" | grep -v '_mig_' >"$T/ready.prom"
agent_said "GPU error (Xid) (gpu=0000:01:00 xid=13 class=application)" || fail "the Xid not logged"
sleep 1.2
[ -f "$marker" ] || fail "an application Xid withdrew readiness"
assert_eq "$(code /readyz)" 200 "/readyz after an application Xid"
# The driver's words written from user space (echo >/dev/kmsg: facility LOG_USER, priority
# 12; "<3>..." is 11): not the kernel's, so no Xid. The kernel's Xid after it is read after it.
echo "12,1211,51500000,-;NVRM: Xid (PCI:0000:02:00): 79, pid=0, name=none, GPU has fallen off the bus." >>"$T/root/dev/kmsg"
echo "4,1212,51500001,-;NVRM: Xid (PCI:0000:01:00): 13, pid=4243, name=python, Graphics Exception" >>"$T/root/dev/kmsg"
wait_for "the kernel's Xid after the user's" 30 metric 'xid_errors_total{gpu="0000:01:00",xid="13",class="application"} 2'
[ -f "$marker" ] || fail "an Xid written from user space withdrew readiness"
assert_eq "$(code /readyz)" 200 "/readyz after an Xid written from user space"
! metric 'xid="79"' || fail "an Xid written from user space was counted"
agent_said "agent: the driver's words in a record user space wrote to the kernel log: ignored (facility=1)" ||
    fail "the ignored record not logged"

# 3. A fatal Xid: readiness withdrawn, then restored by the driver's reload.
echo "3,1202,52000000,-;NVRM: Xid (PCI:0000:02:00): 79, pid=0, name=none, GPU has fallen off the bus." >>"$T/root/dev/kmsg"
wait_for "readiness withdrawn" 30 test ! -e "$marker"
# The marker goes first, the labels right after it.
wait_for "the driver's labels withdrawn after a fatal Xid" 30 test ! -e "$labels"
assert_eq "$(code /readyz)" 503 "/readyz after a fatal Xid"
grep -q "^not ready (xid): Xid 79 on GPU 0000:02:00: the GPU needs a reset or the node a reboot$" "$T/body" ||
    fail "/readyz's cause: $(cat "$T/body")"
agent_said 'ERROR agent: node not ready (reason=xid cause=Xid 79 on GPU 0000:02:00' || fail "no error line: $(cat "$T/agent.log")"
metric 'nvidia_driver_installer_agent_not_ready{reason="xid"} 1' || fail "not_ready{reason=xid}"
metric "nvidia_driver_installer_agent_ready{version=\"$V_OLD\"} 0" || fail "ready 0"
curl -s "$url/metrics" | grep -v '_mig_' >"$T/xid.prom"
# A driver load line written from user space restores nothing.
echo "11,1213,52500000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  $V_OLD  Mon Jan  1 00:00:00 UTC 2024" >>"$T/root/dev/kmsg"
echo "4,1214,52500001,-;NVRM: Xid (PCI:0000:01:00): 13, pid=4244, name=python, Graphics Exception" >>"$T/root/dev/kmsg"
wait_for "the kernel's Xid after the user's load line" 30 metric 'xid_errors_total{gpu="0000:01:00",xid="13",class="application"} 3'
[ ! -e "$marker" ] || fail "a driver load line written from user space restored readiness"
assert_eq "$(code /readyz)" 503 "/readyz after a load line written from user space"
echo "6,1203,53000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  $V_OLD  Mon Jan  1 00:00:00 UTC 2024" >>"$T/root/dev/kmsg"
wait_for "readiness restored" 30 test -f "$marker"
wait_for "the labels restored" 30 test -f "$labels"
grep -q "^nvidia.com/gpu.driver.version=\|driver" "$labels" || fail "labels: $(cat "$labels")"
metric 'nvidia_driver_installer_agent_ready_transitions_total 2' || fail "two transitions"

# 4. The driver unloaded: not ready; the installer loads it and the agent follows.
rm -rf "$T/root/sys/module/nvidia"* "$T/root/proc/driver" "$T/root/proc/modules"
wait_for "not ready without the driver" 30 test ! -e "$marker"
assert_eq "$(code /readyz)" 503 "/readyz without the driver"
grep -q "^not ready (not_loaded): the nvidia module is not loaded (installed: $V_OLD)$" "$T/body" ||
    fail "/readyz's cause: $(cat "$T/body")"
n=$(grep -c "node ready: a CUDA job" "$T/agent.log")
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
readies() { [ "$(grep -c 'node ready: a CUDA job' "$T/agent.log")" -gt "$n" ]; }
wait_for "ready after the reinstall" 30 readies
assert_eq "$(code /readyz)" 200 "/readyz after the reinstall"
# While a run holds the installer's lock the agent neither judges nor writes: a fatal Xid
# then is seen once the lock is free.
exec {lk}>"$T/root/run/nvidia-driver-installer.lock"
flock "$lk"
echo "3,1204,54000000,-;NVRM: Xid (PCI:0000:01:00): 48, pid=0, name=none, An uncorrectable double bit error" >>"$T/root/dev/kmsg"
sleep 2.5 # two looks or more
[ -e "$marker" ] || fail "the agent withdrew readiness while an installer run held the lock"
exec {lk}>&-
wait_for "readiness withdrawn once the lock is free" 30 test ! -e "$marker"
echo "6,1205,55000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  $V_OLD" >>"$T/root/dev/kmsg"
wait_for "readiness restored" 30 test -f "$marker"

# docs/metrics.md's table of the agent's series against what it served, both ways.
python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "The node agent" "$T/ready.prom" \
    "$T/xid.prom" >"$T/doc.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/doc.out")"
sed 's/`class` = `fatal`, `application`, `other`/`class` = `fatal`, `other`/' "$SRC/docs/metrics.md" >"$T/metrics.md"
python3 "$SRC/tests/tools/metrics-doc.py" "$T/metrics.md" "The node agent" "$T/ready.prom" \
    "$T/xid.prom" >"$T/doc.out" 2>&1 && fail "an undocumented Xid class went unnoticed"
grep -q "class values written but not documented: \['application'\]" "$T/doc.out" || fail "$(cat "$T/doc.out")"

# 5. HTTP's edges, a bad address, SIGTERM.
assert_eq "$(code /nope)" 404 "an unknown path"
assert_eq "$(code /metrics -X POST)" 405 "POST"
assert_eq "$(curl -s -I -o /dev/null -w '%{http_code}' "$url/readyz")" 200 "HEAD"
inst agent --listen 127.0.0.1:99999
assert_eq "$RC" 2 "a port out of range"
grep -q "listen address '127.0.0.1:99999'" "$T/err" || fail "bad --listen: $(cat "$T/err")"
# Within 15 s: a bound for an agent that ignores SIGTERM, wide enough for this test beside
# others (ASan's leak scan at exit, a look under way on a loaded machine); the 2 s bound
# is t_agent_slow_peers', which runs alone.
kill -TERM "$apid"
t0=$(date +%s%N)
set +e
wait "$apid"
rc=$?
set -e
assert_eq "$rc" 0 "the agent's exit on SIGTERM"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 15000 ] || fail "SIGTERM took $ms ms, over 15 s"
agent_said "agent: stopping (signal=SIGTERM)" || fail "no stop line"
