# The Node's condition nvidia.com/GPUDriverReady through its whole life (docs/design.md, "The
# Node's condition and taints"), against the API server stand-in (tests/tools/kube-api.py) on
# the fake kernel:
# 1. the install says Installing; the agent then True (CUDAReady), with an Event; a fatal Xid
#    in the kernel log: False (FatalXid, the Xid as message), its write meeting another
#    writer's change first (the stand-in's race fault: a 409, read again, written); the
#    driver loaded again: True; the heartbeat moves lastHeartbeatTime and nothing else;
#    SIGTERM: Unknown (AgentStopped), the agent's last call, its Event.
# 2. a pending version upgraded by the agent: DriverUpgrading while it activates and
#    validates, then True with the new version; SIGKILL: the condition stays as it was,
#    its heartbeat stops, and design.md's reader (kubectl and jq) calls it stale.
# 3. every write through nodes/status with the resourceVersion read, the times RFC 3339,
#    lastTransitionTime moved only with the status; the Events' reasons in order; the
#    bodies against the Kubernetes schemas (tests/k8s/check-requests.mjs); the series
#    against docs/metrics.md.
# 4. a status write the API server refuses (403: an old ClusterRole): tried again after 1,
#    2, 4, 8, then 10 s (the heartbeat), not at every look, the startup taint looked for
#    on its own schedule; written once the server takes it again.
# 5. an install run by hand while the agent runs: its Installing, written under the lock,
#    not overwritten by the agent's heartbeat while the run holds the lock.
FAKE_KERNEL=1
NODE=gpu-node-1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$NODE"}, "spec": {},
  "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
   "message": "kubelet is posting ready status", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}]}
EOF
kube_stub "$T/cluster.json"
: >"$T/root/dev/kmsg"
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) --node-name "$NODE" --kube-sa-dir "$KUBE_SA"

trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
# cond PY-EXPR: the expression holds of the stored Node: c (our condition, {} when none),
# ready (the kubelet's), events (the Events' reasons, in order).
cond() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
n = db["nodes"][0]
cs = {x["type"]: x for x in n.get("status", {}).get("conditions", [])}
c, ready = cs.get("nvidia.com/GPUDriverReady", {}), cs.get("Ready", {})
events = [e["reason"] for e in db.get("events", []) if e.get("action") == "NodeCondition"]
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}
# writes PY-EXPR: the expression holds of the status writes logged, in order: w (each as
# {"code": its answer's status, "c": our condition as sent, "rv": the resourceVersion it
# carried, "keys": its top-level keys, "after": the Node stored after it}), ours (the 200s).
writes() {
    python3 - "$KUBE_LOG" "$1" <<'PY'
import json, sys
w = []
for r in map(json.loads, open(sys.argv[1])):
    if r["method"] == "PATCH" and r["path"] == "/api/v1/nodes/gpu-node-1/status":
        b = json.loads(r["body"])
        c = [x for x in b["status"]["conditions"] if x["type"] == "nvidia.com/GPUDriverReady"][0]
        w.append({"code": r["status"], "c": c, "rv": b.get("metadata", {}).get("resourceVersion"),
                  "keys": set(b), "after": r.get("node_after")})
ours = [x for x in w if x["code"] == 200]
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}
metric() { curl -s "http://127.0.0.1:$port/metrics" | grepq -x -- "$1"; }

# 1. The install's word, then the agent's.
cond 'c["status"] == "False" and c["reason"] == "Installing"' ||
    fail "the install's condition: $(cat "$KUBE_STATE")"
start_agent --node-name "$NODE" --kube-sa-dir "$KUBE_SA" --upgrades off --condition-heartbeat 10
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
agent_said "keeping the Node's condition (node=$NODE condition=nvidia.com/GPUDriverReady heartbeat_s=10" ||
    fail "not keeping the condition"
wait_for "True, and its Event" 30 cond 'c.get("status") == "True" and c["reason"] == "CUDAReady" and events'
cond '"'"$V_OLD"'" in c["message"] and ready["reason"] == "KubeletReady" and events == ["GPUDriverReady"]' ||
    fail "ready: $(cat "$KUBE_STATE")"

# A fatal Xid; its write meets another writer first: 409, read again, written.
cat >"$KUBE_FAULTS" <<EOF
{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/$NODE/status", "body": "FatalXid",
  "race": {"labels": {"example.com/other-writer": "was-here"}}, "times": 1}]}
EOF
echo "3,1301,61000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=0, name=none, GPU has fallen off the bus." >>"$T/root/dev/kmsg"
wait_for "False (FatalXid), and its Event" 30 cond 'c.get("reason") == "FatalXid" and len(events) == 2'
cond 'c["status"] == "False" and "Xid 79" in c["message"] and events[-1] == "GPUDriverNotReady"' ||
    fail "the Xid's condition: $(cat "$KUBE_STATE")"
cond 'n["metadata"]["labels"]["example.com/other-writer"] == "was-here"' || fail "the other writer's label lost"
# (The stand-in stores a write, then logs it: the log is waited for.)
wait_for "the write logged" 30 writes 'any(x["c"]["reason"] == "FatalXid" and x["code"] == 200 for x in w)'
writes '[x["code"] for x in w if x["c"]["reason"] == "FatalXid"][:2] == [409, 200]' ||
    fail "no 409 met and retried: $(grep /status "$KUBE_LOG" | tail -3)"
wait_for "the conflict counted" 30 metric 'nvidia_driver_installer_agent_node_condition_conflicts_total 1'
# The driver loaded again (a reload resets the GPUs): True.
echo "6,1302,62000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  $V_OLD" >>"$T/root/dev/kmsg"
wait_for "True again" 30 cond 'c.get("reason") == "CUDAReady" and events[-1] == "GPUDriverReady"'
# The heartbeat: a write of the same condition, lastHeartbeatTime moved, nothing else.
n0=$(python3 -c 'import json, sys; print(sum(1 for r in map(json.loads, open(sys.argv[1])) if r["path"].endswith("/status") and r["status"] == 200))' "$KUBE_LOG")
wait_for "a heartbeat" 30 writes "len(ours) > $n0"
writes 'ours[-1]["c"]["reason"] == "CUDAReady" and ours[-1]["c"]["message"] == ours[-2]["c"]["message"] and
        ours[-1]["c"]["lastHeartbeatTime"] > ours[-2]["c"]["lastHeartbeatTime"] and
        ours[-1]["c"]["lastTransitionTime"] == ours[-2]["c"]["lastTransitionTime"]' ||
    fail "the heartbeat's write: $(grep /status "$KUBE_LOG" | tail -2)"
cond 'len(events) == 3' || fail "an Event for the heartbeat: $(cat "$KUBE_STATE")"
# A reader of the live agent's condition: current.
python3 "$SRC/tests/tools/runbook.py" block "$SRC/docs/design.md" condition-stale >"$T/stale.sh" ||
    fail "design.md has no block test=condition-stale"
reader() { env HEARTBEAT="$1" NODE="$NODE" KUBECONFIG="$KUBE_DIR/kubeconfig" HOME="$KUBE_DIR" bash -e "$T/stale.sh"; }
reader 10 >"$T/reader.out" 2>&1 || fail "the reader: $(cat "$T/reader.out")"
grep -q "^True CUDAReady: a CUDA job can run" "$T/reader.out" || fail "the reader: $(cat "$T/reader.out")"
# SIGTERM: Unknown, the agent's last call, and its Event.
curl -s "http://127.0.0.1:$port/metrics" >"$T/metrics"
promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"
grep -qx 'nvidia_driver_installer_agent_node_condition_enabled 1' "$T/metrics" || fail "enabled: $(cat "$T/metrics")"
grep -qx 'nvidia_driver_installer_agent_node_condition_writes_total{result="failed"} 0' "$T/metrics" ||
    fail "failed writes: $(cat "$T/metrics")"
grep -E '^nvidia_driver_installer_agent_node_condition_(writes|conflicts)' "$T/metrics" >"$T/cond.prom"
stop_agent
cond 'c["status"] == "Unknown" and c["reason"] == "AgentStopped" and "SIGTERM" in c["message"]' ||
    fail "after SIGTERM: $(cat "$KUBE_STATE")"
cond 'events[-1] == "GPUDriverUnknown"' || fail "the Event of the stop: $(cat "$KUBE_STATE")"
python3 - "$KUBE_LOG" <<'PY' || fail "the stop's write is not the agent's last call"
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if "nvidia-driver-installer" in r["user_agent"]]
last_patch = max(i for i, r in enumerate(rs) if r["method"] == "PATCH")
assert "AgentStopped" in rs[last_patch]["body"] and rs[last_patch]["status"] == 200, rs[last_patch]
assert all(r["method"] == "POST" and r["path"].endswith("/events") for r in rs[last_patch + 1:]), rs[last_patch + 1:]
PY
agent_said "agent: stopping (signal=SIGTERM)" || fail "the agent's stop not said"

# 2. An upgrade, then SIGKILL.
leave_pending "$V_NEW"
: >"$T/agent.log"
start_agent --node-name "$NODE" --kube-sa-dir "$KUBE_SA" --condition-heartbeat 10
wait_for "the upgrade done" 60 upgrade_node_has 'state == "done"'
wait_for "True with the new version, and its Event" 30 cond 'c.get("reason") == "CUDAReady" and "'"$V_NEW"'" in c["message"] and len(events) == 7'
writes '"DriverUpgrading" in [x["c"]["reason"] for x in ours]' ||
    fail "no DriverUpgrading written: $(grep /status "$KUBE_LOG" | tail -5)"
writes 'any(x["c"]["message"] == "driver upgrade to '"$V_NEW"': activating" for x in ours)' ||
    fail "the upgrade's message: $(grep /status "$KUBE_LOG" | tail -5)"
cond 'events[4:] == ["GPUDriverReady", "GPUDriverNotReady", "GPUDriverReady"]' ||
    fail "the Events of the upgrade: $(cat "$KUBE_STATE")"
kill -KILL "$apid"
wait "$apid" 2>/dev/null || true
kill_leftovers
cond 'c["status"] == "True" and c["reason"] == "CUDAReady"' || fail "after SIGKILL: $(cat "$KUBE_STATE")"
# Nothing keeps it: the reader calls it stale once its heartbeat is old (0 s, here).
stale() { reader 0 >"$T/reader.out" 2>&1 && grep -q "^stale since .*: no agent keeps it (last True CUDAReady)" "$T/reader.out"; }
wait_for "the reader to call it stale" 30 stale

# 3. The writes as the API server took them.
writes 'all(x["code"] in (200, 409) for x in w) and all(x["rv"] for x in w) and
        all(x["keys"] == {"metadata", "status"} for x in w)' ||
    fail "the status writes: $(grep /status "$KUBE_LOG" | sed -n 1,3p)"
python3 - "$KUBE_LOG" <<'PY' || fail "the condition's times"
import json, re, sys
rfc3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
last = None
for r in map(json.loads, open(sys.argv[1])):
    if r["method"] != "PATCH" or not r["path"].endswith("/status") or r["status"] != 200:
        continue
    c = [x for x in r["node_after"]["status"]["conditions"] if x["type"] == "nvidia.com/GPUDriverReady"][0]
    assert rfc3339.match(c["lastHeartbeatTime"]) and rfc3339.match(c["lastTransitionTime"]), c
    if last and last["status"] == c["status"]:
        assert c["lastTransitionTime"] == last["lastTransitionTime"], (last, c)
    elif last:
        assert c["lastTransitionTime"] >= last["lastHeartbeatTime"], (last, c)
    last = c
PY
python3 - "$KUBE_STATE" <<'PY' || fail "the Events: $(cat "$KUBE_STATE")"
import json, sys
db = json.load(open(sys.argv[1]))
evs = [e for e in db["events"] if e["action"] == "NodeCondition"]
assert [e["reason"] for e in evs] == ["GPUDriverReady", "GPUDriverNotReady", "GPUDriverReady",
    "GPUDriverUnknown", "GPUDriverReady", "GPUDriverNotReady", "GPUDriverReady"], evs
for e in evs:
    assert e["involvedObject"] == {"kind": "Node", "apiVersion": "v1", "name": "gpu-node-1"}, e
    assert e["type"] == ("Warning" if e["reason"] == "GPUDriverNotReady" else "Normal"), e
    assert e["reportingComponent"] == "nvidia-driver-installer" and e["metadata"]["namespace"] == "kube-system", e
    assert e["message"].startswith("nvidia.com/GPUDriverReady ("), e
PY
python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "The Node's condition" "$T/cond.prom" \
    >"$T/doc.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/doc.out")"
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
grep -q "Event [0-9]" "$T/schema.out" || fail "no Event checked: $(cat "$T/schema.out")"
grep -q "Node/status [0-9]" "$T/schema.out" && grep -q "Node [0-9]" "$T/schema.out" ||
    fail "no Node or Node/status checked: $(cat "$T/schema.out")"

# 4. The status write refused at every try: it waits, doubling up to the heartbeat.
cat >"$KUBE_FAULTS" <<EOF
{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/$NODE/status", "status": 403, "times": 1000}]}
EOF
n0=$(wc -l <"$KUBE_LOG")
: >"$T/agent.log"
t0=$(date +%s)
start_agent -v --node-name "$NODE" --kube-sa-dir "$KUBE_SA" --upgrades off --condition-heartbeat 10
looks() { [ "$(grep -c 'agent: looked' "$T/agent.log")" -ge "$1" ]; }
wait_for "12 looks" 60 looks 12
elapsed=$(($(date +%s) - t0))
# calls METHOD PATH-SUFFIX: the agent's requests since it started.
calls() {
    tail -n +"$((n0 + 1))" "$KUBE_LOG" | python3 -c '
import json, sys
rs = [r for r in map(json.loads, sys.stdin) if "nvidia-driver-installer" in r["user_agent"]]
print(sum(1 for r in rs if r["method"] == sys.argv[1] and r["path"].endswith(sys.argv[2])))' "$@"
}
tries=$(calls PATCH /status)
# Tries at 0, 1, 3, 7 s, then each 10 s: at most 4 + ELAPSED/10 (at every look: 12 or more).
[ "$tries" -ge 2 ] && [ "$tries" -le $((4 + elapsed / 10)) ] ||
    fail "$tries status writes in $elapsed s of $(grep -c 'agent: looked' "$T/agent.log") looks"
# Each try reads the Node first; the startup taint's check reads it at most every heartbeat.
reads=$(calls GET "/nodes/$NODE")
[ "$reads" -le $((tries + 2 + elapsed / 10)) ] ||
    fail "$reads reads of the Node for $tries tries in $elapsed s"
[ "$(grep -c 'a call to the API server failed' "$T/agent.log")" = 1 ] ||
    fail "the failure not said once: $(grep 'API server' "$T/agent.log")"
# The server takes it again: written at the next try, and said.
: >"$KUBE_FAULTS"
wait_for "the write taken again" 30 agent_said "the API server answers again"
wait_for "True written" 30 writes 'ours[-1]["c"]["reason"] == "CUDAReady"'

# 5. An install by hand (the lock held) while the agent runs: its Installing stays. Its
# Installing write is answered late (its client gives up after 10 s, the write stored) and
# its last call stalls, so the run holds the lock past the agent's heartbeat (10 s).
cat >"$KUBE_FAULTS" <<EOF
{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/$NODE/status", "body": "Installing", "delay": 30, "times": 1},
  {"method": "PATCH", "path": "/api/v1/nodes/$NODE", "body": "driver-installer.wants\":null", "stall": 30, "times": 1}]}
EOF
(expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) --node-name "$NODE" --kube-sa-dir "$KUBE_SA") &
ipid=$!
wait_for "the hand run's Installing" 30 cond 'c.get("reason") == "Installing"'
held() { [ "$(grep -c 'an installer run holds the lock' "$T/agent.log")" -ge "$1" ]; }
wait_for "12 looks skipped" 60 held 12
cond 'c["reason"] == "Installing"' || fail "the hand run's Installing overwritten: $(cat "$KUBE_STATE")"
wait "$ipid" || fail "the install by hand: $(tail -5 "$T/err")"
wait_for "True again after the run" 30 cond 'c.get("reason") == "CUDAReady" and "'"$V_OLD"'" in c["message"]'
stop_agent
