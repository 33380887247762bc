# The fleet's limit holds while a node upgrades (docs/design.md, "Upgrades that finish by
# themselves", what the limit promises): two nodes (host roots on the fake kernel), the new
# version pending on both, the default limit of one slot, one API server stand-in. A slot's
# Lease lasts 30 s here (--interval 1: six looks, at least 30 s).
#   1. gpu-a's activation is held inside a module insertion (the fake kernel's hold FIFO)
#      for longer than the Lease: its agent renews the Lease meanwhile (four renewals while
#      the installer runs), and gpu-b, which wants the slot, does not take it.
#   2. gpu-a's agent and its installer are killed mid-activation, the node cordoned, and
#      stay down past the Lease: gpu-b finds the Lease lapsed and reads gpu-a's record on
#      its Node (every read of gpu-a's Node is gpu-b's then), and still does not take the
#      slot: one node unschedulable for an upgrade, not two.
#   3. gpu-a's agent comes back, activates again, finishes and gives the slot back; then
#      gpu-b upgrades. In the order the API server saw them, no node was past pending while
#      the other was.
FAKE_KERNEL=1
# The upgrade's own writes and Events: the Node's condition and taints, which the agent
# keeps beside them, are t_agent_condition's and t_agent_taints'.
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
nodes=(gpu-a gpu-b)
pending_fleet "$V_OLD" "$V_NEW" "${nodes[@]}"

declare -A apid=()
# start NODE: its agent in a process group of its own (as in its container), its log
# appended to $T/NODE.log.
start() {
    echo "---- agent" >>"$T/$1.log"
    setsid env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/$1" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/$1" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
        --node-name "$1" --kube-sa-dir "$KUBE_SA" 2>>"$T/$1.log" &
    apid[$1]=$!
}
# killed NODE: its agent and all it started (the installer), at once.
killed() {
    kill -KILL -- "-${apid[$1]}" 2>/dev/null || true
    wait "${apid[$1]}" 2>/dev/null || true
    apid[$1]=
}
cleanup() {
    local n
    for n in "${!apid[@]}"; do [ -z "${apid[$n]}" ] || kill -KILL -- "-${apid[$n]}" 2>/dev/null || true; done
    # An installer held in its insertion is let go, should it have outlived its group.
    for n in "${nodes[@]}"; do [ ! -p "$T/$n/.fake-hold-insert" ] || timeout 1 sh -c ': >"$1"' sh "$T/$n/.fake-hold-insert" || true; done
}
trap 'rc=$?; cleanup; [ $rc = 0 ] || for n in "${nodes[@]}"; do echo "== $n"; tail -n 8 "$T/$n.log"; done' EXIT

# fleet_has PY-EXPR: the expression holds of the stand-in's store: state(N), rec(N) and
# unsched(N) of node N, and holder (slot 0's holderIdentity).
fleet_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
nodes = {n["metadata"]["name"]: n for n in db["nodes"]}
def state(n): return nodes[n]["metadata"].get("labels", {}).get("nvidia.com/gpu.driver-installer.upgrade-state", "")
def rec(n): return json.loads(nodes[n]["metadata"].get("annotations", {}).get("nvidia.com/gpu.driver-installer.upgrade", "{}"))
def unsched(n): return bool(nodes[n].get("spec", {}).get("unschedulable"))
holder = {l["metadata"]["name"]: l["spec"].get("holderIdentity", "") for l in db["leases"]}.get("nvidia-driver-upgrade-slot-0", "")
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
# after LINE METHOD PATH-REGEX BODY-REGEX: the requests answered 2xx after line LINE of the log.
after() {
    python3 - "$KUBE_LOG" "$@" <<'PY'
import json, re, sys
log, line, method, path, body = sys.argv[1:]
rs = map(json.loads, open(log).read().splitlines()[int(line):])
print(sum(1 for r in rs if r["method"] == method and r["status"] < 300
          and re.fullmatch(path, r["path"]) and re.search(body, r["body"])))
PY
}
LEASE=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/nvidia-driver-upgrade-slot-0
renewed_or_taken() {
    [ "$(after "$mark" PUT "$LEASE" '"holderIdentity": *"gpu-a"')" -ge 4 ] || fleet_has 'holder == "gpu-b"'
}
looked_past_or_taken() {
    [ "$(after "$mark" GET /api/v1/nodes/gpu-a '')" -ge 2 ] || fleet_has 'holder == "gpu-b"'
}

# 1. A slow activation: the Lease renewed while the installer runs.
mkfifo "$T/gpu-a/.fake-hold-insert"
start gpu-a
wait_for "gpu-a activating, in the slot" 30 fleet_has 'state("gpu-a") == "activating" and holder == "gpu-a"'
wait_for "gpu-a's installer" 30 grep -q "driver upgrade: the installer runs (what=activation" "$T/gpu-a.log"
mark=$(wc -l <"$KUBE_LOG")
start gpu-b
wait_for "four renewals while gpu-a activates (or gpu-b in the slot)" 120 renewed_or_taken
fleet_has 'holder == "gpu-a" and state("gpu-a") == "activating" and state("gpu-b") == "pending" and not unsched("gpu-b")' ||
    fail "gpu-b took the slot while gpu-a activated: $(cat "$KUBE_STATE")"
[ -p "$T/gpu-a/.fake-hold-insert" ] || fail "gpu-a's installer was not held"

# 2. gpu-a's agent and installer killed mid-activation, down past the Lease.
killed gpu-a
mark=$(wc -l <"$KUBE_LOG")
wait_for "gpu-b reading gpu-a's record past its lapsed Lease (or in the slot)" 120 looked_past_or_taken
fleet_has 'holder == "gpu-a" and state("gpu-b") == "pending" and not unsched("gpu-b") and unsched("gpu-a") and rec("gpu-a")["cordoned"]' ||
    fail "a second node in an upgrade while gpu-a is cordoned for its own: $(cat "$KUBE_STATE")"

# 3. gpu-a's agent back: it finishes, then gpu-b.
rm -f "$T/gpu-a/.fake-hold-insert"
start gpu-a
all_done() {
    fleet_has 'all(state(n) == "done" and not unsched(n) for n in nodes) and holder == ""'
}
wait_for "both nodes upgraded" 120 all_done
for n in "${nodes[@]}"; do
    assert_eq "$("$BIN" --root "$T/$n" status --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["driver_version"] or "")')" \
        "$V_NEW" "$n's version"
done
python3 - "$KUBE_LOG" <<'PY' || fail "two nodes upgrading at once"
import json, sys
spans = {}
for order, r in enumerate(map(json.loads, open(sys.argv[1]))):
    if r["method"] != "PATCH" or r["status"] != 200:
        continue
    node = r["path"].rsplit("/", 1)[1]
    ann = json.loads(r["body"])["metadata"]["annotations"]["nvidia.com/gpu.driver-installer.upgrade"]
    if ann and json.loads(ann)["state"] not in ("pending", "done"):
        spans.setdefault(node, [order, order])[1] = order
(a, (_, a_end)), (b, (b_start, _)) = sorted(spans.items(), key=lambda x: x[1][0])
assert (a, b) == ("gpu-a", "gpu-b") and a_end < b_start, spans
PY
