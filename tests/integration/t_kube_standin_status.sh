# The API server stand-in's Node writes (tests/tools/kube-api.py, kubenode.py), the ground the
# node agent's conditions and taints are tested on, driven by curl: a status patch's
# conditions merged by type, its spec dropped and a status in a Node patch dropped, a stale
# resourceVersion answered 409 with the API server's message, the "race" fault's other
# writer, taints kube-apiserver refuses answered 422, a write that changes nothing keeping
# the resourceVersion; then tests/k8s/check-requests.mjs over the log, green, and red for a
# condition status and a taint the server takes but the agent must never write.
python3 >"$T/cluster.json" <<'PY'
import json
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}},
    "spec": {"taints": [{"key": "startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver",
                         "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "lastHeartbeatTime": "2026-12-07T00:00:00Z",
                               "lastTransitionTime": "2026-12-07T00:00:00Z"}]}}]}))
PY
kube_stub "$T/cluster.json"
AGENT=(-A nvidia-driver-installer/standin-test)
N=/api/v1/nodes/gpu-1
SMP=(-H 'Content-Type: application/strategic-merge-patch+json')
MP=(-H 'Content-Type: application/merge-patch+json')
# node_has PY-EXPR: the expression holds of the stored Node n (c: its conditions by type, rv
# its resourceVersion).
node_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["nodes"][0]
c = {x["type"]: x for x in n.get("status", {}).get("conditions", [])}
rv = n["metadata"]["resourceVersion"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
rv() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"][0]["metadata"]["resourceVersion"])' "$KUBE_STATE"; }
# cond STATUS REASON TIME: the agent's condition, as a status patch's body, with RV.
cond() {
    printf '{"metadata": {"resourceVersion": "%s"}, "status": {"conditions": [{"type": "nvidia.com/GPUDriverReady", "status": "%s", "reason": "%s", "message": "m", "lastHeartbeatTime": "%s", "lastTransitionTime": "2026-12-07T00:01:00Z"}]}}' \
        "$4" "$1" "$2" "$3"
}
status_is() { assert_eq "$(cat "$KUBE_DIR/status")" "$1" "$2"; }

# 1. Conditions merged by type: the kubelet's Ready kept, ours added, then changed in place.
rv0=$(rv)
kube_api PATCH $N/status "${AGENT[@]}" "${SMP[@]}" -d "$(cond False Installing 2026-12-07T00:01:00Z "$rv0")" >"$T/out"
status_is 200 "the first status patch"
node_has 'list(c) == ["Ready", "nvidia.com/GPUDriverReady"] and c["nvidia.com/GPUDriverReady"]["reason"] == "Installing" and rv != "'"$rv0"'"' ||
    fail "conditions after the first patch: $(cat "$KUBE_STATE")"
rv1=$(rv)
kube_api PATCH $N/status "${AGENT[@]}" "${SMP[@]}" -d "$(cond True CUDAReady 2026-12-07T00:02:00Z "$rv1")" >/dev/null
status_is 200 "the second status patch"
node_has 'len(c) == 2 and c["nvidia.com/GPUDriverReady"]["status"] == "True" and c["Ready"]["reason"] == "KubeletReady"' ||
    fail "conditions after the second patch: $(cat "$KUBE_STATE")"
# The same write again changes nothing: no new resourceVersion (GuaranteedUpdate's no-op).
rv2=$(rv)
kube_api PATCH $N/status "${AGENT[@]}" "${SMP[@]}" -d "$(cond True CUDAReady 2026-12-07T00:02:00Z "$rv2")" >/dev/null
status_is 200 "a write that changes nothing"
assert_eq "$(rv)" "$rv2" "the resourceVersion after a write that changes nothing"
# A merge patch replaces the list whole.
kube_api PATCH $N/status "${MP[@]}" -d '{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}' >/dev/null
status_is 200 "a merge patch of the conditions"
node_has 'list(c) == ["Ready"]' || fail "a merge patch's conditions: $(cat "$KUBE_STATE")"
kube_api PATCH $N/status "${SMP[@]}" -d "$(cond True CUDAReady 2026-12-07T00:02:00Z "")" >/dev/null

# 2. What each subresource drops: spec in a status write (its labels kept, as the real server
# keeps them), status in a write of the Node.
kube_api PATCH $N/status "${SMP[@]}" -d '{"metadata": {"labels": {"seen": "yes"}}, "spec": {"unschedulable": true, "taints": []}}' >/dev/null
status_is 200 "a status patch with spec"
node_has 'not n["spec"].get("unschedulable") and len(n["spec"]["taints"]) == 1 and n["metadata"]["labels"]["seen"] == "yes"' ||
    fail "a status patch changed spec: $(cat "$KUBE_STATE")"
kube_api PATCH $N "${MP[@]}" -d '{"status": {"conditions": []}, "spec": {"unschedulable": true}}' >/dev/null
status_is 200 "a Node patch with status"
node_has 'len(c) == 2 and n["spec"]["unschedulable"] is True' || fail "a Node patch changed status: $(cat "$KUBE_STATE")"

# 3. A stale resourceVersion: 409 Conflict, the API server's message, nothing written.
rv3=$(rv)
for p in $N $N/status; do
    kube_api PATCH $p "${SMP[@]}" -d "$(cond False Stale 2026-12-07T00:03:00Z "$rv0")" >"$T/out"
    status_is 409 "a stale resourceVersion on $p"
    python3 - "$T/out" <<'PY' || fail "the 409's Status: $(cat "$T/out")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == "Status" and s["reason"] == "Conflict" and s["code"] == 409, s
assert s["message"] == ('Operation cannot be fulfilled on nodes "gpu-1": the object has been '
                        'modified; please apply your changes to the latest version and try again'), s
PY
done
assert_eq "$(rv)" "$rv3" "the resourceVersion after two conflicts"

# 4. The race fault: another writer's taints land first, the agent's PATCH with the version
# it read meets 409; read again, written.
cat >"$KUBE_FAULTS" <<'EOF'
{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/gpu-1", "times": 1,
             "race": {"taints": [{"key": "other.example.com/maintenance", "effect": "NoExecute",
                                  "timeAdded": "2026-12-07T00:04:00Z"}]}}]}
EOF
kube_api PATCH $N "${AGENT[@]}" "${MP[@]}" -d '{"metadata": {"resourceVersion": "'"$rv3"'"}, "spec": {"taints": []}}' >/dev/null
status_is 409 "a PATCH raced by another writer"
node_has 'n["spec"]["taints"][0]["key"] == "other.example.com/maintenance" and rv != "'"$rv3"'"' ||
    fail "the race's write: $(cat "$KUBE_STATE")"
grep -q '"times": 0' "$KUBE_FAULTS" || fail "the race fault not counted down: $(cat "$KUBE_FAULTS")"
python3 - "$KUBE_LOG" <<'PY' || fail "node_before/node_after of the raced PATCH: $(tail -1 "$KUBE_LOG")"
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
assert r["status"] == 409 and r["node_before"] == r["node_after"], r
assert r["node_after"]["spec"]["taints"][0]["effect"] == "NoExecute", r
PY
rv4=$(rv)
kube_api PATCH $N "${AGENT[@]}" "${MP[@]}" -d '{"metadata": {"resourceVersion": "'"$rv4"'"}, "spec": {"taints": [{"key": "nvidia.com/gpu-unhealthy", "value": "FatalXid", "effect": "NoSchedule"}]}}' >/dev/null
status_is 200 "the PATCH read again"
tail -1 "$KUBE_LOG" | grepq '"node_after": {.*"FatalXid"' || fail "node_after: $(tail -1 "$KUBE_LOG")"

# 5. Taints kube-apiserver's validateNodeTaints refuses: 422 Invalid, nothing written.
rv5=$(rv)
bad_taint() {
    kube_api PATCH $N "${MP[@]}" -d "{\"spec\": {\"taints\": $1}}" >"$T/out"
    status_is 422 "taints $1"
    grep -qF "$2" "$T/out" || fail "taints $1: $(cat "$T/out")"
}
bad_taint '[{"key": "a", "effect": "Sometimes"}]' \
    'Node \"gpu-1\" is invalid: metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"'
bad_taint '[{"key": "a", "effect": ""}]' 'metadata.taints[0].effect: Required value'
bad_taint '[{"key": "a b", "effect": "NoSchedule"}]' 'metadata.taints[0].key: Invalid value: \"a b\": name part must consist of'
bad_taint '[{"key": "a", "value": "x y", "effect": "NoSchedule"}]' 'metadata.taints[0].value: Invalid value: \"x y\": a valid label must be'
bad_taint '[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "v", "effect": "NoSchedule"}]' \
    'metadata.taints[1]: Duplicate value: core.Taint{Key:\"a\", Value:\"v\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair'
kube_api PATCH $N/status "${SMP[@]}" -d '{"status": {"conditions": [{"type": "x", "status": "True", "lastHeartbeatTime": "yesterday"}]}}' >"$T/out"
status_is 422 "a heartbeat that is no RFC 3339 time"
assert_eq "$(rv)" "$rv5" "the resourceVersion after refused writes"
# One key with two effects is two taints.
kube_api PATCH $N "${MP[@]}" -d '{"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]}}' >/dev/null
status_is 200 "one key, two effects"

# 6. The agent-like writes above against the schemas: green; then a condition status and a
# taint's timeAdded that the server stores as sent, each turning the check red.
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
grep -q "Node 5, Node/status 3" "$T/schema.out" || fail "not the 5 Node patches checked: $(cat "$T/schema.out")"
cp "$KUBE_LOG" "$T/log.green"
red() {
    cp "$T/log.green" "$T/log.$1"
    kube_api PATCH "$2" "${AGENT[@]}" "${SMP[@]}" -d "$3" >/dev/null
    status_is 200 "$1 (the server takes it)"
    tail -1 "$KUBE_LOG" >>"$T/log.$1"
    if node "$SRC/tests/k8s/check-requests.mjs" "$T/log.$1" >"$T/schema.out" 2>&1; then
        fail "check-requests.mjs took $1"
    fi
    grep -qF "$4" "$T/schema.out" || fail "$1: $(cat "$T/schema.out")"
}
red maybe $N/status "$(cond Maybe Installing 2026-12-07T00:05:00Z "")" \
    'status "Maybe": True, False or Unknown'
kube_api PATCH $N/status "${SMP[@]}" -d "$(cond True CUDAReady 2026-12-07T00:06:00Z "")" >/dev/null
red time-added $N '{"spec": {"taints": [{"key": "a", "effect": "NoSchedule", "timeAdded": "2026-12-07T00:05:00Z"}]}}' \
    'timeAdded: RFC 3339, on a NoExecute taint only'
