# The upgrade controls NVIDIA's upgrade policy has (k8s-operator-libs api/upgrade/v1alpha1/
# upgrade_spec.go; docs/configuration.md, "Driver upgrades"), each against the API server
# stand-in with the pods it must and must not touch, named:
# 1. --upgrade-wait-for: ml/etl (app=etl, Running) holds the upgrade, no GPU pod touched past
#    the deadline; ml/ingest-done (app=ingest, Succeeded) does not. --upgrade-wait-timeout:
#    past it the upgrade goes on without ml/etl, which is never evicted.
#    --upgrade-evict-force and --upgrade-evict-emptydir: ml/lone (no controller) and then
#    ml/scratch (an emptyDir) keep every GPU pod from eviction, the reason naming each and
#    its option, until each option allows it (the evictions_blocked metric 1 meanwhile);
#    then lone, scratch and train are evicted.
# 2. --upgrade-drain with -selector 'tier in (web)' and -force: after the GPU pod, web/front
#    and web/lone (no controller) evicted, web/slow waited for once asked, web/guarded asked
#    again while its budget refuses; web/cache (tier=cache), mon/exporter (a DaemonSet's) and
#    kube-system/static-web (a static pod's mirror) never; then activated.
# 3. --upgrade-drain-timeout: a budget that refuses past it fails the upgrade, the pod never
#    forced. 4. --upgrade-drain-emptydir no: web/tmp (an emptyDir) fails it at once, and
#    web/ok is not evicted either (kubectl drain refuses a node for one pod).
# 5. --upgrade-max-unavailable 50% of the DaemonSet's 5 nodes (3): while --upgrade-limit's
#    slot is held elsewhere the budget's lists are not read; once it is free, gpu-n2 cordoned,
#    gpu-n3 not Ready and gpu-n5 holding a slot keep the node from taking one (gpu-x, cordoned
#    but another DaemonSet's, and cpu-1, a canary the selector leaves out, do not count), the
#    lists by the DaemonSet's selector and nodeSelector only; once gpu-n2 is uncordoned it
#    takes its slot. A --upgrade-daemonset that is not there takes no slot, and says so.
# 6. Evictions answered late: a look asks for its time (5 s), the rest at the next look.
FAKE_KERNEL=1
upgrade_node --pending

# pod NS NAME LABELS EXTRA-METADATA SPEC-MEMBERS [PHASE]: a pod on gpu-node-1 as JSON.
pod() {
    printf '{"metadata": {"namespace": "%s", "name": "%s", "labels": {%s}%s}, "spec": {"nodeName": "gpu-node-1", %s}, "status": {"phase": "%s"}}' \
        "$1" "$2" "$3" "$4" "$5" "${6:-Running}"
}
GPU='"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]'
CPU='"containers": [{"name": "c"}]'
owned() { printf ', "ownerReferences": [{"apiVersion": "%s", "kind": "%s", "name": "x", "uid": "1", "controller": true}]' "${2:-batch/v1}" "$1"; }
JOB=$(owned Job)
RS=$(owned ReplicaSet apps/v1)
EMPTYDIR=', "volumes": [{"name": "s", "emptyDir": {}}]'
NODE1='{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}'
cluster() { # cluster FILE POD...: gpu-node-1 and the pods
    local f=$1
    shift
    (IFS=,; printf '{"nodes": [%s], "pods": [%s]}' "$NODE1" "$*") >"$f"
    python3 -m json.tool "$f" >/dev/null || fail "$f is not JSON"
}
agent_said() { grep -q -- "$1" "$T/agent.log"; }
evictions() {
    python3 - "$KUBE_LOG" <<'PY'
import json, sys
print(sum(1 for r in map(json.loads, open(sys.argv[1])) if r["path"].endswith("/eviction")))
PY
}
trap 'rc=$?; kill "${apid:-}" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
logs=()

# 1. Waited for, then evicted only as the options allow.
cluster "$T/c1.json" \
    "$(pod ml etl '"app": "etl"' "$JOB" "$CPU")" \
    "$(pod ml ingest-done '"app": "ingest"' "$JOB" "$CPU" Succeeded)" \
    "$(pod ml train '"app": "train"' "$JOB" "$GPU")" \
    "$(pod ml lone '' '' "$GPU")" \
    "$(pod ml scratch '' "$JOB" "$GPU$EMPTYDIR")"
kube_stub "$T/c1.json"
logs+=("$KUBE_LOG")
ev=(--upgrade-on-deadline evict --upgrade-deadline 0 --upgrade-wait-for 'app in (etl, ingest)')
restart_agent "${ev[@]}"
wait_for "waiting for ml/etl" 30 upgrade_node_has \
    'state == "waiting" and rec["reason"] == "waiting for 1 pod(s) matching --upgrade-wait-for (ml/etl)"'
assert_eq "$(evictions)" 0 "evictions while ml/etl runs"
restart_agent "${ev[@]}" --upgrade-wait-timeout 1
wait_for "past the wait's timeout, ml/lone named" 30 upgrade_node_has \
    '"no GPU pod evicted: ml/lone has no controller, so nothing makes it again: --upgrade-evict-force=yes moves it" in rec["reason"]'
# ... and shown as a metric while it blocks (earlier releases evicted such a pod).
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
metric() { curl -s "http://127.0.0.1:$port/metrics" | grepq -x "$1"; }
blocked=nvidia_driver_installer_agent_upgrade_evictions_blocked
wait_for "the blocked eviction's metric" 30 metric "$blocked 1"
restart_agent "${ev[@]}" --upgrade-wait-timeout 1 --upgrade-evict-force yes
wait_for "ml/scratch named" 30 upgrade_node_has \
    '"no GPU pod evicted: ml/scratch has an emptyDir volume, whose data is lost when it leaves: --upgrade-evict-emptydir=yes moves it" in rec["reason"]'
assert_eq "$(evictions)" 0 "evictions while a GPU pod is kept"
restart_agent "${ev[@]}" --upgrade-wait-timeout 1 --upgrade-evict-force yes --upgrade-evict-emptydir yes
wait_for "the upgrade done (1)" 30 upgrade_node_has 'state == "done" and not unsched'
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
metric "$blocked 0" || fail "$blocked after the evictions: $(curl -s "http://127.0.0.1:$port/metrics" | grep blocked)"
assert_eq "$(installed_version)" "$V_NEW" "the version after (1)"
for p in ml/lone ml/scratch ml/train; do assert_eq "$(evictions_of $p)" 1 "evictions of $p"; done
assert_eq "$(evictions_of ml/etl)" 0 "evictions of ml/etl"
upgrade_node_has 'pods == ["etl", "ingest-done"]' || fail "pods left (1): $(cat "$KUBE_STATE")"

# 2. The drain: its selector, DaemonSets' and mirrors left, budgets, pods already leaving.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_OLD"
cluster "$T/c2.json" \
    "$(pod ml train '' "$JOB" "$GPU")" \
    "$(pod web front '"tier": "web"' "$RS" "$CPU")" \
    "$(pod web lone '"tier": "web"' '' "$CPU")" \
    "$(pod web slow '"tier": "web"' "$RS" '"terminationGracePeriodSeconds": 600, '"$CPU")" \
    "$(pod web guarded '"tier": "web"' "$RS"', "annotations": {"test.invalid/pdb-blocks": "true"}' "$CPU")" \
    "$(pod web cache '"tier": "cache"' "$RS" "$CPU")" \
    "$(pod mon exporter '"tier": "web"' "$(owned DaemonSet apps/v1)" "$CPU")" \
    "$(pod kube-system static-web '"tier": "web"' ', "annotations": {"kubernetes.io/config.mirror": "1"}' "$CPU")"
kube_stub "$T/c2.json"
logs+=("$KUBE_LOG")
restart_agent --upgrade-on-deadline evict --upgrade-deadline 0 --upgrade-drain yes \
    --upgrade-drain-selector 'tier in (web)' --upgrade-drain-force yes --upgrade-drain-timeout 0
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
wait_for "draining, the budget asked again" 30 metric \
    'nvidia_driver_installer_agent_upgrade_drain_evictions_total{result="refused"} [2-9]'
upgrade_node_has 'state == "draining" and rec["reason"] == "draining: 2 pod(s) left, web/guarded first"' ||
    fail "draining: $(cat "$KUBE_STATE")"
metric 'nvidia_driver_installer_agent_upgrade_drain_evictions_total{result="evicted"} 3' ||
    fail "drained count: $(curl -s "http://127.0.0.1:$port/metrics" | grep drain)"
assert_eq "$(evictions_of ml/train)" 1 "evictions of ml/train"
for p in web/front web/lone web/slow; do assert_eq "$(evictions_of $p)" 1 "evictions of $p"; done
for p in web/cache mon/exporter kube-system/static-web; do assert_eq "$(evictions_of $p)" 0 "evictions of $p"; done
[ "$(installed_version)" = "$V_NEW" ] || fail "activated while draining"
# The budget allows it at last, and web/slow's kubelet has stopped it.
kube_api DELETE /api/v1/namespaces/web/pods/guarded >/dev/null
kube_api DELETE /api/v1/namespaces/web/pods/slow >/dev/null
wait_for "the upgrade done (2)" 30 upgrade_node_has 'state == "done" and not unsched'
assert_eq "$(installed_version)" "$V_OLD" "the version after (2)"
upgrade_node_has 'pods == ["cache", "exporter", "static-web"] and "DriverUpgradeDraining" in events' ||
    fail "pods left (2): $(cat "$KUBE_STATE")"

# 3. The drain's timeout: failed, the pod its budget keeps never forced.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_NEW"
cluster "$T/c3.json" \
    "$(pod web guarded '' "$RS"', "annotations": {"test.invalid/pdb-blocks": "true"}' "$CPU")"
kube_stub "$T/c3.json"
logs+=("$KUBE_LOG")
restart_agent --upgrade-drain yes --upgrade-drain-timeout 2
wait_for "failed past the drain's timeout" 30 upgrade_node_has \
    'state == "failed" and rec["reason"] == "the drain did not end within 2s (--upgrade-drain-timeout): 1 pod(s) left, web/guarded first"'
upgrade_node_has 'pods == ["guarded"] and unsched' || fail "after (3): $(cat "$KUBE_STATE")"
[ "$(evictions_of web/guarded)" -ge 1 ] || fail "web/guarded never asked"
assert_eq "$(installed_version)" "$V_OLD" "the version after a failed drain"

# 4. A pod the drain may not move: failed at once, nothing evicted.
cluster "$T/c4.json" "$(pod web tmp '' "$RS" "$CPU$EMPTYDIR")" "$(pod web ok '' "$RS" "$CPU")"
kube_stub "$T/c4.json"
logs+=("$KUBE_LOG")
restart_agent --upgrade-drain yes --upgrade-drain-force yes
wait_for "failed for web/tmp" 30 upgrade_node_has \
    'state == "failed" and rec["reason"] == "the drain refused: web/tmp has an emptyDir volume, whose data is lost when it leaves: --upgrade-drain-emptydir=yes moves it"'
assert_eq "$(evictions)" 0 "evictions of a refused drain"

# 5. The budget of unavailable nodes, apart from the limit.
python3 - >"$T/c5.json" <<'PY'
import json
ann = "nvidia.com/gpu.driver-installer.upgrade"
def node(name, unsched=False, ready="True", rec=None, gpu=True):
    n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {},
         "status": {"conditions": [{"type": "Ready", "status": ready}]}}
    if gpu:
        n["metadata"]["labels"] = {"gpu": "true"}
    if unsched:
        n["spec"]["unschedulable"] = True
    if rec:
        n["metadata"]["annotations"] = {ann: json.dumps(rec)}
    return n
def ds_pod(node, ds="nvidia-driver-installer", labels=None):
    return {"metadata": {"namespace": "kube-system", "name": ds + "-" + node,
                         "labels": labels or {"app": "nvidia-driver-installer"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                              "name": ds, "uid": "1", "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}}
nodes = [node("gpu-node-1"), node("gpu-n2", unsched=True), node("gpu-n3", ready="False"),
         node("gpu-n4"), node("gpu-n5", rec={"state": "pending", "slot": 2}),
         node("gpu-x", unsched=True), node("cpu-1", unsched=True, gpu=False)]
pods = [ds_pod(n) for n in ("gpu-node-1", "gpu-n2", "gpu-n3", "gpu-n4", "gpu-n5")]
# Not the DaemonSet's: another DaemonSet's pod on gpu-x, a canary its selector leaves out,
# and the namespace's other pods, none of which the agent may list.
pods += [ds_pod("gpu-x", "kube-proxy", {"app": "kube-proxy"}),
         ds_pod("cpu-1", labels={"app": "nvidia-driver-installer", "tier": "canary"})]
pods += [{"metadata": {"namespace": "kube-system", "name": "coredns-%d" % i},
          "spec": {"nodeName": "cpu-1", "containers": [{"name": "c"}]}} for i in range(30)]
ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
      "metadata": {"name": "nvidia-driver-installer", "namespace": "kube-system"},
      "spec": {"selector": {"matchLabels": {"app": "nvidia-driver-installer"},
                            "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                  "values": ["canary"]}]},
               "template": {"spec": {"nodeSelector": {"gpu": "true"}}}},
      "status": {"desiredNumberScheduled": 5}}
# Slot 0, the --upgrade-limit's only one, held by gpu-n4 for an hour.
lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "nvidia-driver-upgrade-slot-0", "namespace": "kube-system"},
         "spec": {"holderIdentity": "gpu-n4", "leaseDurationSeconds": 3600,
                  "leaseTransitions": 0}}
print(json.dumps({"nodes": nodes, "pods": pods, "daemonsets": [ds], "leases": [lease]}))
PY
kube_stub "$T/c5.json"
logs+=("$KUBE_LOG")
# budget_lists: the agent's lists of the namespace's pods and of the Nodes, one a line.
budget_lists() {
    python3 - "$KUBE_LOG" <<'PY'
import json, sys, urllib.parse
for r in map(json.loads, open(sys.argv[1])):
    q = urllib.parse.parse_qs(r["query"])
    if r["method"] == "GET" and r["path"] in ("/api/v1/namespaces/kube-system/pods",
                                              "/api/v1/nodes") and "watch" not in q:
        print(r["path"], q.get("labelSelector", ["NONE"])[0])
PY
}
slot_reads() { grep -c '/leases/nvidia-driver-upgrade-slot-0"' "$KUBE_LOG" || true; }
# A DaemonSet that is not there (a wrong name) is no budget: no slot, and the log says why.
kube_api DELETE /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/nvidia-driver-upgrade-slot-0 >/dev/null
restart_agent --upgrade-max-unavailable 50% --upgrade-daemonset other
wait_for "the missing DaemonSet said" 30 agent_said \
    "no slot is taken (daemonset=other fix=set --upgrade-daemonset to the DaemonSet the agent runs in)"
upgrade_node_has 'slot == ""' || fail "a slot taken without a budget"
# Every slot held: the budget's lists are not read while no slot could be taken.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
python3 - "$T/c5.json" >"$T/lease.json" <<'PY'
import json, sys
print(json.dumps(json.load(open(sys.argv[1]))["leases"][0]))
PY
kube_api POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases \
    -H 'Content-Type: application/json' -d @"$T/lease.json" >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 201 "slot 0 held by gpu-n4"
: >"$KUBE_LOG"
restart_agent --upgrade-max-unavailable 50%
wait_for "waiting for the limit" 30 upgrade_node_has \
    'state == "pending" and rec["reason"] == "waiting for a slot of the fleet'"'"'s limit"'
wait_for "another look" 30 eval '[ "$(slot_reads)" -ge 3 ]'
assert_eq "$(budget_lists)" "" "the budget's lists while every slot is held"
kube_api DELETE /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/nvidia-driver-upgrade-slot-0 >/dev/null
wait_for "held by the budget" 30 upgrade_node_has \
    'state == "pending" and rec["reason"] == "waiting: 3 of the DaemonSet'"'"'s other nodes unavailable (gpu-n2, gpu-n3, gpu-n5), --upgrade-max-unavailable allows 3"'
upgrade_node_has 'slot == ""' || fail "a slot taken over the budget"
# Only the DaemonSet's pods and the nodes its template selects were listed.
assert_eq "$(budget_lists | sort -u)" "/api/v1/namespaces/kube-system/pods app=nvidia-driver-installer,tier notin (canary)
/api/v1/nodes gpu=true" "the budget's lists"
kube_api PATCH /api/v1/nodes/gpu-n2 -H 'Content-Type: application/merge-patch+json' \
    -d '{"spec": {"unschedulable": false}}' >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "gpu-n2's uncordon"
wait_for "the slot taken" 30 upgrade_node_has 'slot == "gpu-node-1"'
wait_for "the upgrade done (5)" 30 upgrade_node_has 'state == "done" and not unsched'

# 6. A slow API server: a look asks pods to leave for its time (5 s at --interval 1), the
# rest at the next look, so that the agent's loop never stalls (each eviction answered 2 s
# late here; 180 s stalls /healthz).
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_OLD"
cluster "$T/c6.json" "$(pod ml a '' "$JOB" "$GPU")" "$(pod ml b '' "$JOB" "$GPU")" \
    "$(pod ml c '' "$JOB" "$GPU")" "$(pod ml d '' "$JOB" "$GPU")"
kube_stub "$T/c6.json"
logs+=("$KUBE_LOG")
echo '{"faults": [{"method": "POST", "path": "/api/v1/namespaces/ml/pods/[a-d]/eviction", "delay": 2, "times": 4}]}' >"$KUBE_FAULTS"
restart_agent --upgrade-on-deadline evict --upgrade-deadline 0
wait_for "the upgrade done (6)" 60 upgrade_node_has 'state == "done" and not unsched and pods == []'
grep -Eq "the look's time for evictions is spent; the rest are asked at the next look \(left=[12] budget_s=5\)" "$T/agent.log" ||
    fail "no look left pods for the next: $(grep -i evict "$T/agent.log")"
for p in ml/a ml/b ml/c ml/d; do assert_eq "$(evictions_of $p)" 1 "evictions of $p"; done

# Every body the agent sent in the six runs, against the Kubernetes OpenAPI schemas.
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "${logs[@]}" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
for kind in Eviction Node; do
    grep -q "$kind [0-9]" "$T/schema.out" || fail "no $kind body checked: $(cat "$T/schema.out")"
done
