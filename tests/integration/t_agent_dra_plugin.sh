# NVIDIA's DRA kubelet plugin after a driver switch (docs/design.md, "NVIDIA's DRA driver"),
# against the API server stand-in (tests/tools/kube-api.py) on the fake kernel, with the
# plugin's start stood in by tests/tools/dra-plugin-standin.py (libnvidia-ml.so.1 resolved
# under the driver root once, as its root.go does, and kept):
# 1. Before the switch: the plugin's pod dra/kp-1 started after the install's switch is left
#    alone, as are ml/train (app=train) and dra/controller (the chart's controller);
#    the stand-in names the old version's libnvidia-ml.
# 2. The agent upgrades the node: once the switch is over (never while it activates), while
#    the upgrade validates and before its uncordon (kube-api.py's log shows the order), it
#    evicts dra/kp-1, once, the reason in the log, counted; nothing else. kp-1 has a grace
#    period (30 s): evicted, it stays listed, leaving (deletionTimestamp), and the agent
#    keeps the cordon through three more pod lists, saying it waits for kp-1, until the
#    supervisor, as the kubelet, has it removed. The supervisor, as the DaemonSet controller
#    and the kubelet, restarts the stand-in only once kp-1 is gone from the API server and
#    makes the pod again (dra/kp-2, a new UID, started now): the stand-in then names the new
#    version's libnvidia-ml; with no eviction, the old one. kp-1's removal comes before the
#    uncordon.
# 3. --dra-plugin-selector "": a pod started before the switch (dra/kp-3) is left alone. A
#    selector that matches no pod (app=nvidia-dra-driver-kubelet-plugin, the GPU Operator's,
#    on a node of the chart's plugin): a WARNING names a pod with the chart's label and the
#    selector to set, once; nothing is evicted.
# 4. The default selector again, the agent restarted after the switch: dra/kp-3 evicted at
#    its first look; dra/kp-2 (started after the switch) left alone; dra/kp-4, whose budget
#    refuses, asked again 10 s or more after the first (kube-api.py's times), each refusal
#    counted.
# 5. Every call the agent made is one the shipped manifests' RBAC rules allow.
FAKE_KERNEL=1
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
upgrade_node --pending

# The switch's time, as the agent reads it: .current's mtime, in whole seconds.
switched() { stat -c %Y "$(idir)/.current"; }
utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
t_old=$(switched)
after_old=$(utc $((t_old + 1)))
# pod NS NAME UID LABELS STARTED [META [SPEC]]: a pod on gpu-node-1, a DaemonSet's, running
# since STARTED, with more metadata members META and spec members SPEC.
pod() {
    printf '{"metadata": {"namespace": "%s", "name": "%s", "uid": "%s", "labels": {%s}%s, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "ds", "controller": true}]}, "spec": {"nodeName": "gpu-node-1"%s, "containers": [{"name": "gpus"}, {"name": "compute-domains"}]}, "status": {"phase": "Running", "containerStatuses": [{"name": "gpus", "state": {"running": {"startedAt": "%s"}}}, {"name": "compute-domains", "state": {"running": {"startedAt": "%s"}}}]}}' \
        "$1" "$2" "$3" "$4" "${6:-}" "${7:-}" "$5" "$5"
}
# The chart's labels (kubeletplugin.yaml:40-41): the selector labels, then the fixed one.
PLUGIN='"dra-driver-nvidia-gpu-component": "kubelet-plugin", "nvidia-dra-driver-gpu-component": "kubelet-plugin"'
cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}],
 "pods": [$(pod dra kp-1 uid-kp-1 "$PLUGIN" "$after_old" "" ', "terminationGracePeriodSeconds": 30'),
          $(pod ml train uid-train '"app": "train"' 2026-01-01T00:00:00Z),
          $(pod dra controller uid-controller '"nvidia-dra-driver-gpu-component": "controller"' 2026-01-01T00:00:00Z)]}
EOF
python3 -m json.tool "$T/cluster.json" >/dev/null || fail "cluster.json is not JSON"
kube_stub "$T/cluster.json"

# The plugin's start on the node (the DaemonSet's kubelet): the stand-in (its pid in
# $T/standin.pid), and what it kept.
standin() {
    python3 "$SRC/tests/tools/dra-plugin-standin.py" "$(idir)" "$T/plugin.json" &
    echo $! >"$T/standin.pid"
    wait_for "the plugin stand-in's report" 60 reported "$!"
}
reported() { python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["pid"] != int(sys.argv[2]))' "$T/plugin.json" "$1" 2>/dev/null; }
kept() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["libnvidia_ml"])' "$T/plugin.json"; }
kept_new() { case $(kept) in "$(idir)"/.versions/"$V_NEW"-*/lib64/libnvidia-ml.so.*) ;; *) false ;; esac; }
# The DaemonSet controller and the kubelet for pod OLD: once it is leaving (evicted, its grace
# period running) and the agent has listed the pods three times since, the kubelet has it
# removed; then the plugin's container stops, a new start of it follows, and pod NEW is made
# (a new UID, started in a second after the switch).
leaving() { upgrade_node_has "any(p['metadata']['name'] == '$1' and 'deletionTimestamp' in p['metadata'] for p in db['pods'])"; }
supervise() {
    local n
    until leaving "$1"; do sleep 0.1; done
    n=$(wc -l <"$KUBE_LOG")
    until listed "$n" 3; do sleep 0.1; done
    kube_api DELETE "/api/v1/namespaces/dra/pods/$1" >/dev/null
    while upgrade_node_has "'$1' in pods"; do sleep 0.1; done
    kill -TERM "$(cat "$T/standin.pid")"
    until clock_past "$(switched)"; do sleep 0.1; done
    standin
    kube_api POST /api/v1/namespaces/dra/pods -H 'Content-Type: application/json' \
        -d "$(pod dra "$2" "uid-$2" "$PLUGIN" "$(utc "$(date +%s)")")" >/dev/null
    [ "$(cat "$KUBE_DIR/status")" = 201 ] || fail "$2 not made: $(cat "$KUBE_DIR/status")"
}
trap 'rc=$?; kill "${apid:-}" "${dspid:-}" "$(cat "$T/standin.pid" 2>/dev/null)" 2>/dev/null || true; [ $rc = 0 ] || grep -a "agent:" "$T/agent.log" | tail -25' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
said_times() { grep -c -- "$1" "$T/agent.log" || true; }
evicted() { [ "$(evictions_of "$1")" = "$2" ]; }
listed() { [ "$(lists_after "$1")" -ge "$2" ]; }
clock_past() { [ "$(date +%s)" -gt "$1" ]; }
metric() { curl -s "http://127.0.0.1:$port/metrics" | grepq -x -- "$1"; }
has_pod() { upgrade_node_has "'$1' in pods"; }
# The agent's pod lists since its start (kube-api.py's log: their line numbers after $1).
lists_after() {
    python3 - "$KUBE_LOG" "$1" <<'PY'
import json, sys
rs = list(map(json.loads, open(sys.argv[1])))[int(sys.argv[2]):]
print(sum(1 for r in rs if r["method"] == "GET" and r["path"] == "/api/v1/pods"
          and r["user_agent"].startswith("nvidia-driver-installer/")))
PY
}

# 1. Before the switch.
standin
case $(kept) in "$(idir)"/.versions/"$V_OLD"-*/lib64/libnvidia-ml.so.*) ;;
    *) fail "the stand-in before the switch: $(cat "$T/plugin.json")" ;; esac
# The switch comes in a later second than the one kp-1 started in.
wait_for "the clock past kp-1's start" 30 clock_past $((t_old + 1))
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA"
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
agent_said "restarting NVIDIA's DRA kubelet plugin after a switch (selector=nvidia-dra-driver-gpu-component=kubelet-plugin)" ||
    fail "the agent does not say it restarts the plugin"

# 2. The switch, by the agent's upgrade; the plugin's pod evicted, once, before the uncordon.
supervise kp-1 kp-2 &
dspid=$!
wait_for "the upgrade done" 90 upgrade_node_has 'state == "done"'
wait_for "the plugin started again on the new version's files" 30 kept_new
wait "$dspid" || fail "the supervisor: kp-2 not made"
wait_for "dra/kp-1 evicted" 30 evicted dra/kp-1 1
t_new=$(switched)
[ "$t_new" -gt $((t_old + 1)) ] || fail "the switch at $t_new, kp-1 started at $((t_old + 1))"
agent_said "its running pods on the node all started after the driver's switch (switch=$(utc "$t_old") pods=1 not_running=0)" ||
    fail "kp-1 not judged before the switch"
# (The stand-in logs a request before it answers: the agent's line is waited for.)
wait_for "the eviction's line" 30 agent_said "evicted a pod of NVIDIA's DRA kubelet plugin, for its DaemonSet to start it on the new driver's files (pod=kp-1 namespace=dra reason=its container gpus started at $after_old, not after the driver's switch at $(utc "$t_new")"
# Never while the upgrade activated; before the Node's uncordon (its spec.unschedulable
# patched false), so that no pod scheduled there meets the old plugin.
python3 - "$KUBE_LOG" <<'PY' || fail "kp-1 not evicted between the switch and the uncordon"
import json, sys
rs = list(map(json.loads, open(sys.argv[1])))
def patch(r):
    if r["method"] != "PATCH" or not r["path"].startswith("/api/v1/nodes/"):
        return {}
    return json.loads(r["body"])
def state(r):
    labels = patch(r).get("metadata", {}).get("labels") or {}
    return labels.get("nvidia.com/gpu.driver-installer.upgrade-state")
validating = min(i for i, r in enumerate(rs) if state(r) == "validating")
cordon = min(i for i, r in enumerate(rs) if (patch(r).get("spec") or {}).get("unschedulable"))
uncordon = min(i for i, r in enumerate(rs)
               if (patch(r).get("spec") or {}).get("unschedulable") is False)
evict = [i for i, r in enumerate(rs) if r["path"].endswith("/kp-1/eviction")]
# kp-1 removed (the kubelet's DELETE at the end of its grace period) before the uncordon: a
# pod leaving still prepares claims on the old files.
gone = [i for i, r in enumerate(rs) if r["method"] == "DELETE" and r["path"].endswith("/pods/kp-1")]
assert cordon < validating and evict and validating < evict[0] < uncordon, \
    (cordon, validating, evict, uncordon)
assert gone and evict[0] < gone[0] < uncordon, (evict, gone, uncordon)
PY
agent_said "the switch waits for a pod of it to be gone or to run on the new files (pod=kp-1 namespace=dra reason=leaving: until it is gone" ||
    fail "the wait for kp-1 to leave not said"
[ "$(said_times "evicted a pod of NVIDIA")" = 1 ] || fail "evictions said: $(grep "evicted a pod" "$T/agent.log")"
wait_for "the eviction counted" 30 metric 'nvidia_driver_installer_agent_dra_plugin_evictions_total{result="evicted"} 1'
curl -s "http://127.0.0.1:$port/metrics" >"$T/metrics"
metric 'nvidia_driver_installer_agent_dra_plugin_restarts_enabled 1' || fail "the gauge: $(cat "$T/metrics")"
grep '^nvidia_driver_installer_agent_dra_plugin_evictions' "$T/metrics" >"$T/dra.prom"
python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "NVIDIA's DRA kubelet plugin" \
    "$T/dra.prom" >"$T/doc.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/doc.out")"
assert_eq "$(evictions_of ml/train) $(evictions_of dra/controller)" "0 0" "pods the selector does not match"

# 3. An empty selector: nothing is evicted, a pod started before the switch included.
stop_agent
kube_api POST /api/v1/namespaces/dra/pods -H 'Content-Type: application/json' \
    -d "$(pod dra kp-3 uid-kp-3 "$PLUGIN" "$after_old")" >/dev/null
n0=$(wc -l <"$KUBE_LOG")
: >"$T/agent.log"
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" --dra-plugin-selector ""
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
agent_said "NVIDIA's DRA kubelet plugin is not restarted after a switch (--dra-plugin-selector none)" ||
    fail "the empty selector not said"
# Three looks that listed the node's pods (the upgrader's): none asked kp-3 to leave.
wait_for "three looks" 30 listed "$n0" 3
metric 'nvidia_driver_installer_agent_dra_plugin_restarts_enabled 0' || fail "the gauge with the selector empty"
assert_eq "$(evictions_of dra/kp-3)" 0 "kp-3 with the selector empty"
stop_agent
: >"$T/agent.log"
n0=$(wc -l <"$KUBE_LOG")
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" --dra-plugin-selector app=nvidia-dra-driver-kubelet-plugin
wait_for "the selector's miss said" 30 agent_said "WARN  agent: NVIDIA's DRA kubelet plugin: --dra-plugin-selector matches no pod on the node, but a pod carries a label of the plugin's: it is not restarted after the switch and may keep the replaced version's files (pod=kp-2 namespace=dra selector=app=nvidia-dra-driver-kubelet-plugin fix=--dra-plugin-selector nvidia-dra-driver-gpu-component=kubelet-plugin (NVIDIA_DRA_PLUGIN_SELECTOR=nvidia-dra-driver-gpu-component=kubelet-plugin))"
wait_for "three looks" 30 listed "$n0" 3
assert_eq "$(said_times "matches no pod on the node")/$(evictions_of dra/kp-3)" 1/0 "the selector's miss"
stop_agent

# 4. The agent restarted after the switch, the default selector: kp-3 evicted at once, kp-2 left;
# kp-4, whose disruption budget refuses, asked again after the backoff (10 s), not at each look.
kube_api POST /api/v1/namespaces/dra/pods -H 'Content-Type: application/json' \
    -d "$(pod dra kp-4 uid-kp-4 "$PLUGIN" "$after_old" ', "annotations": {"test.invalid/pdb-blocks": "true"}')" >/dev/null
[ "$(cat "$KUBE_DIR/status")" = 201 ] || fail "kp-4 not made: $(cat "$KUBE_DIR/status")"
: >"$T/agent.log"
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA"
wait_for "dra/kp-3 evicted" 30 evicted dra/kp-3 1
wait_for "kp-4's refusal said" 30 agent_said "a disruption budget refused the eviction of a pod of NVIDIA's DRA kubelet plugin: asked again later (pod=kp-4 namespace=dra reason=its container gpus started at $after_old"
wait_for "kp-4 asked again" 60 evicted dra/kp-4 2
# Its backoff (DRAPLUGIN_BACKOFF_FIRST_S): the second ask 10 s or more after the first.
python3 - "$KUBE_LOG" <<'PY' || fail "kp-4 asked again within its backoff"
import json, sys
at = [r["at"] for r in map(json.loads, open(sys.argv[1]))
      if r["method"] == "POST" and r["path"].endswith("/pods/kp-4/eviction")]
assert len(at) == 2 and at[1] - at[0] >= 10, at
PY
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
metric 'nvidia_driver_installer_agent_dra_plugin_evictions_total{result="refused"} 2' ||
    fail "the refusals counted: $(curl -s "http://127.0.0.1:$port/metrics" | grep dra_plugin)"
kube_api DELETE /api/v1/namespaces/dra/pods/kp-4 >/dev/null
wait_for "the pods judged again" 30 agent_said "its running pods on the node all started after the driver's switch (switch=$(utc "$t_new") pods=1 not_running=0)"
assert_eq "$(evictions_of dra/kp-2) $(evictions_of dra/kp-1) $(evictions_of ml/train) $(evictions_of dra/controller)" \
    "0 1 0 0" "evictions after the agent's restart"
upgrade_node_has "pods == ['train', 'controller', 'kp-2']" || fail "the pods left: $(cat "$KUBE_STATE")"
stop_agent

# 5. The calls are the shipped manifests' to make.
for m in daemonset-generic.yaml daemonset-preloaded.yaml; do
    python3 "$SRC/tests/tools/rbac-check.py" --calls-only "$SRC/$m" nvidia-driver-installer "$KUBE_LOG" \
        >"$T/rbac.out" 2>&1 || fail "$m: $(cat "$T/rbac.out")"
done
kill -TERM "$(cat "$T/standin.pid")"
