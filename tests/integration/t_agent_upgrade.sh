# The node agent finishes a deferred upgrade by itself (docs/design.md, "Upgrades that finish
# by themselves"), against the API server stand-in (tests/tools/kube-api.py) on the fake
# kernel: a busy node's new version pending, the agent takes the fleet's one slot (a Lease),
# cordons the node, waits while a GPU pod runs and while a process outside pods holds the
# driver, activates the version in place once both are gone (the installer as its child, the
# agent itself never restarted), validates it (a CUDA job can run), uncordons the node and
# gives the slot back; each state a label, an annotation, an Event and a metric. A CPU pod
# and a pod that has finished never hold it up.
# 2. A limit of 50% of the DaemonSet's 4 nodes, both slots held by other nodes, one of them
# dead (its lease not renewed): the agent waits, then takes the dead node's slot once its
# lease has expired; past the deadline (0) with the evict policy, a GPU pod is evicted
# (each has a controller: --upgrade-evict-force is off) and one whose disruption budget
# refuses is asked again at each look, never forced;
# once that job ends, the upgrade finishes.
# 3. Every call the agent made is one the shipped manifests' RBAC rules allow its service
# account, and every rule they grant was used.
FAKE_KERNEL=1
# The upgrade's own writes and Events: the Node's condition and taints, which the agent
# keeps beside them, are t_agent_condition's and t_agent_taints'.
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
upgrade_node
# A job holds the driver: the new version waits, staged and verified.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
echo cuda-app >"$T/root/proc/4242/comm"
expect_rc 0 install --when-busy defer --driver-version "$V_NEW" $(kernel_args) \
    --module-arg nvidia.NVreg_EnableGpuFirmware=1
[ -f "$(idir)/.pending.json" ] || fail "nothing pending"

cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1",
   "labels": {"nvidia.com/gpu.present": "true"}}, "spec": {}}],
 "pods": [
  {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
   "status": {"phase": "Running"}},
  {"metadata": {"name": "cpu", "namespace": "ml"}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
   "status": {"phase": "Running"}},
  {"metadata": {"name": "finished", "namespace": "ml"}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
   "status": {"phase": "Succeeded"}}]}
EOF
kube_stub "$T/cluster.json"

# The agent has the installer's repository settings in its environment, as the DaemonSet
# gives them; the version and the module parameters come from the pending record. So is
# NVIDIA_IMEX_CHANNEL0, which the agent only checks and the installer it runs acts on: the
# new driver (550, with IMEX's chrdev) gets channel0 at its load. A bad value stops the
# agent at its start (exit 2; a timeout so that an agent that starts fails, not hangs), not
# the upgrade's installer later.
INST_WRAP="timeout 60" NVIDIA_IMEX_CHANNEL0=maybe expect_rc 2 agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" \
    --kernel-release "$KERNEL" --listen 127.0.0.1:0
expect_err "NVIDIA_IMEX_CHANNEL0"
NVIDIA_IMEX_CHANNEL0=yes start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA"
trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
# requests METHOD PATH-REGEX: how many requests of this stand-in matched and were answered.
requests() {
    python3 - "$KUBE_LOG" "$@" <<'PY'
import json, re, sys
log, method, path = sys.argv[1:]
print(sum(1 for r in map(json.loads, open(log)) if r["method"] == method and r["status"] < 300
          and re.fullmatch(path, r["path"])))
PY
}
wait_for "the agent's start" 30 agent_said "agent: watching the node"
agent_said "driver upgrades on (node=gpu-node-1 namespace=kube-system limit=1" || fail "upgrades not on"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")

wait_for "the node cordoned and waiting" 30 upgrade_node_has 'state == "waiting" and unsched and slot == "gpu-node-1"'
upgrade_node_has 'rec["cordoned"] and rec["version"] == "'"$V_NEW"'" and rec["from"] == "'"$V_OLD"'" and rec["slot"] == 1' ||
    fail "the record: $(cat "$KUBE_STATE")"
upgrade_node_has '"1 GPU pod(s) and 1 process(es)" in rec["reason"]' || fail "the reason: $(cat "$KUBE_STATE")"
# The process outside pods ends: the GPU pod still holds the upgrade.
rm -rf "$T/root/proc/4242"
wait_for "the reason updated" 30 upgrade_node_has '"1 GPU pod(s) and 0 process(es)" in rec["reason"]'
[ "$(installed_version)" = "$V_OLD" ] || fail "switched while a GPU pod runs"
# The job ends: activated in place, validated, uncordoned, the slot given back.
kube_api DELETE /api/v1/namespaces/ml/pods/train >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "the pod's deletion"
wait_for "the upgrade done" 30 upgrade_node_has 'state == "done" and not unsched and slot == ""'
assert_eq "$(installed_version)" "$V_NEW" "the version after the upgrade"
imex_major=$(sed -n 's/^ *\([0-9]*\) nvidia-caps-imex-channels$/\1/p' "$T/root/proc/devices")
[ -n "$imex_major" ] || fail "550 registered no nvidia-caps-imex-channels"
assert_eq "$(devnode nvidia-caps-imex-channels/channel0)" "c $imex_major:0 666" \
    "channel0 after the agent's upgrade (NVIDIA_IMEX_CHANNEL0 on the agent)"
[ ! -e "$(idir)/.pending.json" ] || fail "still pending"
grep -q '"nvidia.NVreg_EnableGpuFirmware=1"' "$T/root/run/nvidia-driver-installer/module-args.json" ||
    fail "the pending request's module parameters not given: $(cat "$T/root/run/nvidia-driver-installer/module-args.json")"
kill -0 "$apid" || fail "the agent is gone"
agent_said "driver upgrade: the installer ended (what=activation how=exit 0)" || fail "no activation run"
[ "$(grep -c "agent: watching the node" "$T/agent.log")" = 1 ] || fail "the agent started twice"
# An Event per state, in order, about the node.
python3 - "$KUBE_STATE" <<'PY' || fail "events: $(cat "$KUBE_STATE")"
import json, sys
db = json.load(open(sys.argv[1]))
reasons = [e["reason"] for e in db["events"]]
want = ["DriverUpgradePending", "DriverUpgradeCordoned", "DriverUpgradeWaiting",
        "DriverUpgradeActivating", "DriverUpgradeValidating", "DriverUpgradeDone"]
assert reasons == want, reasons
for e in db["events"]:
    assert e["involvedObject"] == {"kind": "Node", "apiVersion": "v1", "name": "gpu-node-1"}, e
    assert e["type"] == "Normal" and e["metadata"]["namespace"] == "kube-system", e
    assert e["reportingComponent"] == "nvidia-driver-installer" and e["action"] == "DriverUpgrade", e
    assert e["reportingInstance"] == "gpu-node-1" and e["eventTime"].endswith("Z"), e
PY
curl -s "http://127.0.0.1:$port/metrics" >"$T/metrics"
promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"
grep -qx 'nvidia_driver_installer_agent_upgrade_state{state="done"} 1' "$T/metrics" || fail "metrics: $(cat "$T/metrics")"
grep -qx 'nvidia_driver_installer_agent_upgrade_slot_held 0' "$T/metrics" || fail "slot metric"
grep -qx 'nvidia_driver_installer_agent_upgrade_api_up 1' "$T/metrics" || fail "api metric"
# Done stays done: no more changes to the node, once its Event is recorded as posted.
wait_for "the done event recorded as posted" 30 upgrade_node_has 'rec["event"] == "done"'
before=$(wc -l <"$KUBE_LOG")
sleep 2.2
python3 - "$KUBE_LOG" "$before" <<'PY' || fail "writes after done"
import json, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
assert all(json.loads(l)["method"] == "GET" for l in lines), lines
PY
# What an operator reads, with kubectl itself (docs/operations.md, runbook 2, step 3).
NODE=gpu-node-1
run_doc_block agent-watch || fail "agent-watch: $(cat "$T/agent-watch.out")"
grep -Eq "^gpu-node-1 +[^ ]+ +done$" "$T/agent-watch.out" || fail "kubectl's state column: $(cat "$T/agent-watch.out")"
grep -q '^{"state":"done",.*"version":"'"$V_NEW"'"' "$T/agent-watch.out" ||
    fail "kubectl's annotation: $(cat "$T/agent-watch.out")"
[ "$(grep -Ec '^kube-system +gpu-node-1\.' "$T/agent-watch.out")" = 6 ] || fail "kubectl's events: $(cat "$T/agent-watch.out")"
# docs/metrics.md's table of the upgrade's series against what the agent served, both ways.
grep '^nvidia_driver_installer_agent_upgrade_' "$T/metrics" >"$T/upgrade.prom"
python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "Driver upgrades" "$T/upgrade.prom" \
    >"$T/doc.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/doc.out")"

# 2. A percentage limit, a dead node's slot, evictions and a disruption budget.
kill "$apid"
wait "$apid" 2>/dev/null || true
log1=$KUBE_LOG
leave_pending "$V_OLD"
cat >"$T/cluster2.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}],
 "daemonsets": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name":
   "nvidia-driver-installer", "namespace": "kube-system"}, "status": {"desiredNumberScheduled": 4}}],
 "leases": [
  {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name":
   "nvidia-driver-upgrade-slot-0", "namespace": "kube-system"}, "spec": {"holderIdentity":
   "gpu-node-2", "leaseDurationSeconds": 3600, "leaseTransitions": 0}},
  {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name":
   "nvidia-driver-upgrade-slot-1", "namespace": "kube-system"}, "spec": {"holderIdentity":
   "gpu-node-9", "leaseDurationSeconds": 3, "leaseTransitions": 4}}],
 "pods": [
  {"metadata": {"name": "batch", "namespace": "ml", "ownerReferences": [{"apiVersion":
   "batch/v1", "kind": "Job", "name": "batch", "uid": "1", "controller": true}]}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
   "status": {"phase": "Running"}},
  {"metadata": {"name": "serve", "namespace": "ml", "annotations": {"test.invalid/pdb-blocks":
   "true"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name":
   "serve", "uid": "2", "controller": true}]}, "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c", "resources":
   {"limits": {"nvidia.com/gpu": "2"}}}]}, "status": {"phase": "Running"}},
  {"metadata": {"name": "slow", "namespace": "ml", "ownerReferences": [{"apiVersion":
   "batch/v1", "kind": "Job", "name": "slow", "uid": "3", "controller": true}]}, "spec": {"nodeName": "gpu-node-1",
   "terminationGracePeriodSeconds": 600, "containers": [{"name": "c", "resources": {"limits":
   {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running"}},
  {"metadata": {"name": "static-gpu-gpu-node-1", "namespace": "kube-system", "annotations":
   {"kubernetes.io/config.mirror": "5f0c2b"}, "ownerReferences": [{"apiVersion": "v1", "kind":
   "Node", "name": "gpu-node-1", "uid": "0f4b3a52-1c1e-4a43-9d41-6a1f3c3b7e11", "controller":
   true}]}, "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c", "resources":
   {"limits": {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running"}}]}
EOF
kube_stub "$T/cluster2.json"
: >"$T/agent.log"
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" --upgrade-limit 50% \
    --upgrade-on-deadline evict --upgrade-deadline 0
wait_for "the agent's start (2)" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
wait_for "pending, both slots taken" 30 upgrade_node_has 'state == "pending" and "slot" in rec["reason"]'
wait_for "the dead node's slot taken" 60 upgrade_node_has 'holders["nvidia-driver-upgrade-slot-1"] == "gpu-node-1"'
# Not before the lease expired, on the stand-in's own clock ("at": CLOCK_MONOTONIC, the
# agent's clock too, logged as a request is answered), not the test's polls, whose lag
# under load ate the margin. The agent counts whole seconds from its clock's reading in the
# look that first read this version of the lease (slots.c): it may take it once its clock
# reads that second + 3. That look read the DaemonSet (the 50% limit: current_limit) just
# before it read its clock, then the slots; so the DaemonSet's answer before the first read
# of slot-1 came no later than that reading, and the write that took the slot comes at
# that answer's whole second + 3 or later, with no allowance for load. Taken at once, it
# would come about 0.1 s after the read.
python3 - "$KUBE_LOG" <<'PY' || fail "the dead node's slot taken before its lease expired"
import json, math, sys
lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/nvidia-driver-upgrade-slot-1"
log = list(map(json.loads, open(sys.argv[1])))
first = next(i for i, r in enumerate(log) if r["path"] == lease and r["method"] == "GET")
before = [r["at"] for r in log[:first] if r["method"] == "GET"
          and r["path"].endswith("/daemonsets/nvidia-driver-installer")][-1]
took = next(r["at"] for r in log if r["path"] == lease and r["method"] == "PUT"
            and r["status"] == 200
            and json.loads(r["body"])["spec"]["holderIdentity"] == "gpu-node-1")
print("slot-1: the DaemonSet read before its first read at %.3f, first read at %.3f, "
      "taken at %.3f" % (before, log[first]["at"], took))
sys.exit(0 if took >= math.floor(before) + 3 else 1)
PY
upgrade_node_has 'holders["nvidia-driver-upgrade-slot-0"] == "gpu-node-2" and leases["nvidia-driver-upgrade-slot-1"]["spec"]["leaseTransitions"] == 5' ||
    fail "the slots: $(cat "$KUBE_STATE")"
left='pods == ["serve", "slow", "static-gpu-gpu-node-1"] and state == "evicting"'
wait_for "the evictable pods evicted" 30 upgrade_node_has "$left"' and "deletionTimestamp" in db["pods"][1]["metadata"]'
metric2() { curl -s "http://127.0.0.1:$port/metrics" | grepq -x "$1"; }
wait_for "the budget's refusal asked again" 30 metric2 'nvidia_driver_installer_agent_upgrade_evictions_total{result="refused"} [3-9]'
metric2 'nvidia_driver_installer_agent_upgrade_evictions_total{result="evicted"} 2' || fail "evicted count"
upgrade_node_has "$left"' and unsched' || fail "forced: $(cat "$KUBE_STATE")"
# A pod already leaving is waited for, not asked again at each look; a static pod's mirror
# is never asked (kubectl drain's mirrorPodFilter): an eviction leaves the static pod there.
assert_eq "$(requests POST /api/v1/namespaces/ml/pods/slow/eviction)" 1 "evictions of the pod already leaving"
assert_eq "$(requests POST '/api/v1/namespaces/kube-system/pods/[^/]*/eviction')" 0 "evictions of the static pod"
upgrade_node_has '"evicting 1 GPU pod(s)" in rec["reason"]' ||
    fail "the reason: $(cat "$KUBE_STATE")"
[ "$(installed_version)" = "$V_NEW" ] || fail "switched while a GPU pod runs (2)"
kube_api DELETE /api/v1/namespaces/ml/pods/serve >/dev/null
# The kubelet's part: the pod that was leaving has gone, the static pod stopped.
kube_api DELETE /api/v1/namespaces/ml/pods/slow >/dev/null
kube_api DELETE /api/v1/namespaces/kube-system/pods/static-gpu-gpu-node-1 >/dev/null
wait_for "the upgrade done (2)" 30 upgrade_node_has 'state == "done" and not unsched and holders["nvidia-driver-upgrade-slot-1"] == ""'
assert_eq "$(installed_version)" "$V_OLD" "the version after the second upgrade"

# 3. RBAC: the agent's calls in both runs against both manifests' rules; listing nodes is
# --upgrade-max-unavailable's alone (t_agent_upgrade_controls), the status patch the
# condition's, off here (t_agent_condition), reading resource claims the DRA pods'
# (t_agent_upgrade_dra).
for m in daemonset-preloaded.yaml daemonset-generic.yaml; do
    python3 "$SRC/tests/tools/rbac-check.py" --unused-ok list:nodes --unused-ok patch:nodes/status \
        --unused-ok get:resource.k8s.io/resourceclaims "$SRC/$m" nvidia-driver-installer \
        "$log1" "$KUBE_LOG" \
        >"$T/rbac.out" 2>&1 || fail "RBAC ($m): $(cat "$T/rbac.out")"
done
# The bodies it sent, against the Kubernetes OpenAPI schemas (tests/k8s/check-requests.mjs).
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$log1" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
for kind in Lease Eviction Event Node; do
    grep -q "$kind [0-9]" "$T/schema.out" || fail "no $kind body checked: $(cat "$T/schema.out")"
done
