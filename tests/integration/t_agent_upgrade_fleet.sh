# plain build: its code paths run under ASan in t_agent_upgrade and t_agent_upgrade_faults; three agents a second at a time are only slower there
# A fleet's rollout finishes by itself, a node at a time (docs/design.md, "Upgrades that
# finish by themselves"): three nodes (three host roots on the fake kernel), each with the
# new version pending, their three agents against one API server stand-in with the default
# limit of one slot. Every node ends on the new version, uncordoned, the slot free; and in
# the order the API server saw the requests, no node was cordoned, activated or validating
# while another was: each node's span from its first state past pending to its last before
# done (its slot is given back before done is recorded) is apart from the others'.
FAKE_KERNEL=1
# The upgrade's own writes and Events: the Node's condition and taints, which the agent
# keeps beside them, are t_agent_condition's and t_agent_taints'.
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
nodes=(gpu-a gpu-b gpu-c)
pending_fleet "$V_OLD" "$V_NEW" "${nodes[@]}"
pids=()
for n in "${nodes[@]}"; do
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/$n" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/$n" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
        --node-name "$n" --kube-sa-dir "$KUBE_SA" 2>"$T/$n.log" &
    pids+=($!)
done
logs=$T
trap 'rc=$?; kill "${pids[@]}" 2>/dev/null || true; [ $rc = 0 ] || for f in "$logs"/gpu-*.log; do tail -n 5 "$f"; done' EXIT
all_done() {
    python3 - "$KUBE_STATE" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
sys.exit(0 if all(n["metadata"].get("labels", {}).get("nvidia.com/gpu.driver-installer.upgrade-state") == "done"
                  and not n.get("spec", {}).get("unschedulable") for n in db["nodes"])
         and all(not l["spec"].get("holderIdentity") for l in db["leases"]) else 1)
PY
}
wait_for "every node upgraded" 90 all_done
for n in "${nodes[@]}"; do
    assert_eq "$("$BIN" --root "$T/$n" status --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["driver_version"] or "")')" \
        "$V_NEW" "$n's version"
done
python3 - "$KUBE_LOG" "$KUBE_STATE" <<'PY' || fail "two nodes upgrading at once"
import json, sys
spans, order = {}, 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    order += 1
    if r["method"] != "PATCH" or r["status"] != 200:
        continue
    node = r["path"].rsplit("/", 1)[1]
    ann = json.loads(r["body"])["metadata"]["annotations"]["nvidia.com/gpu.driver-installer.upgrade"]
    state = json.loads(ann)["state"] if ann else ""
    if state not in ("", "pending", "done"):
        s = spans.setdefault(node, [order, order])
        s[1] = order
spans = sorted(spans.items(), key=lambda x: x[1][0])
assert len(spans) == 3, spans
for (a, (_, a_end)), (b, (b_start, _)) in zip(spans, spans[1:]):
    assert a_end < b_start, "%s until %d, %s from %d" % (a, a_end, b, b_start)
slot = json.load(open(sys.argv[2]))["leases"]
assert len(slot) == 1 and slot[0]["spec"]["leaseTransitions"] == 2, slot
print("spans:", spans)
PY
