# The node agent's driver upgrade when things go wrong (docs/design.md, "Upgrades that finish
# by themselves"), against the API server stand-in on the fake kernel:
#   1. the agent killed (SIGKILL) while the node waits, cordoned: a new agent resumes from
#      the node's record (its slot, its cordon) and does nothing twice;
#   2. the API server failing (503) for a while: nothing changes while it does, not even
#      once the GPU pod is gone (api_up 0, said once), and the upgrade finishes after;
#   3. the activation failing (the kernel refuses the new version): the installer rolls
#      back, and the agent stops at failed, the node left cordoned with the reason on it,
#      a Warning event, the slot kept (a bad version halts a rollout), the old version
#      serving and the node ready;
#   4. the new version never ready (a fatal Xid): past the validation timeout the version
#      before is installed again and the upgrade fails with the cause.
FAKE_KERNEL=1
# The upgrade's own writes and Events: the Node's condition and taints, which the agent
# keeps beside them, are t_agent_condition's and t_agent_taints'.
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
upgrade_node --pending
cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}],
 "pods": [{"metadata": {"name": "train", "namespace": "ml"}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
   "status": {"phase": "Running"}}]}
EOF
kube_stub "$T/cluster.json"
agent_said() { grep -q -- "$1" "$T/agent.log"; }
start() {
    : >"$T/agent.log"
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" FAKE_KERNEL_FAIL="${FAIL:-}" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
        --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" ${EXTRA:-} 2>"$T/agent.log" &
    apid=$!
    wait_for "the agent's start" 30 agent_said "agent: watching the node"
    port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
}
trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
metric() { curl -s "http://127.0.0.1:$port/metrics" | grepq -x "$1"; }

# 1. Killed while waiting: resumed, nothing twice.
start
wait_for "waiting, cordoned" 30 upgrade_node_has 'state == "waiting" and unsched'
kill -KILL "$apid"
wait "$apid" 2>/dev/null || true
start
wait_for "the new agent's look" 30 metric 'nvidia_driver_installer_agent_upgrade_state{state="waiting"} 1'
metric 'nvidia_driver_installer_agent_upgrade_slot_held 1' || fail "the slot not known again"
upgrade_node_has 'events.count("DriverUpgradeCordoned") == 1 and holders == {"nvidia-driver-upgrade-slot-0": "gpu-node-1"}' ||
    fail "done twice: $(cat "$KUBE_STATE")"
python3 - "$KUBE_LOG" <<'PY' || fail "cordoned twice"
import json, sys
cordons = [l for l in map(json.loads, open(sys.argv[1])) if l["method"] == "PATCH" and '"unschedulable":true' in l["body"]]
assert len(cordons) == 1, cordons
PY

# 2. The API server fails for a while: nothing changes, then the upgrade finishes.
echo '{"faults": [{"method": "GET", "path": "/api/v1/nodes/gpu-node-1", "status": 503, "times": 100000}]}' >"$KUBE_FAULTS"
wait_for "api_up 0" 30 metric 'nvidia_driver_installer_agent_upgrade_api_up 0'
kube_api DELETE /api/v1/namespaces/ml/pods/train >/dev/null
sleep 3
[ "$(installed_version)" = "$V_OLD" ] && [ -f "$(idir)/.pending.json" ] || fail "changed while the API server failed"
upgrade_node_has 'state == "waiting" and unsched' || fail "the node changed while the API server failed"
[ "$(grep -c "a call to the API server failed" "$T/agent.log")" = 1 ] || fail "the outage not said once: $(grep -c "API server failed" "$T/agent.log")"
rm -f "$KUBE_FAULTS"
wait_for "the upgrade done after the outage" 30 upgrade_node_has 'state == "done" and not unsched'
agent_said "driver upgrade: the API server answers again" || fail "the recovery not said"
assert_eq "$(installed_version)" "$V_NEW" "the version after the outage"

# 3. The activation fails: rolled back, stopped at failed, cordoned, the reason on the node.
kill "$apid"
wait "$apid" 2>/dev/null || true
leave_pending "$V_OLD"
FAIL=nvidia@$V_OLD:EKEYREJECTED start
wait_for "failed" 30 upgrade_node_has 'state == "failed"'
upgrade_node_has 'unsched and rec["cordoned"] and holders["nvidia-driver-upgrade-slot-0"] == "gpu-node-1"' ||
    fail "not left cordoned with its slot: $(cat "$KUBE_STATE")"
upgrade_node_has '"activating '"$V_OLD"' failed; '"$V_NEW"' serves" in rec["reason"] and "rejected the signature of module nvidia" in rec["reason"]' ||
    fail "the reason: $(cat "$KUBE_STATE")"
# The Event follows the state's PATCH (agent/upgrader.c, record): it may land just after,
# and then its posting is recorded.
wait_for "the failure event" 30 upgrade_node_has 'events[-1] == "DriverUpgradeFailed" and rec["event"] == "failed"'
python3 - "$KUBE_STATE" <<'PY' || fail "the failure event"
import json, sys
e = json.load(open(sys.argv[1]))["events"][-1]
assert e["type"] == "Warning" and "rejected the signature" in e["message"], e
PY
assert_eq "$(installed_version)" "$V_NEW" "the version serving after the failed activation"
wait_for "ready on the version before" 30 metric "nvidia_driver_installer_agent_ready{version=\"$V_NEW\"} 1"
# Stopped: no more changes to the node.
before=$(wc -l <"$KUBE_LOG")
sleep 2.2
python3 - "$KUBE_LOG" "$before" <<'PY' || fail "writes after failed"
import json, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
assert all(json.loads(l)["method"] in ("GET", "PUT") for l in lines), lines  # reads, the slot's renewal
PY

# 4. The new version never becomes ready (a fatal Xid in effect, no driver reload line):
#    past --upgrade-validate-timeout the version before is installed again, and the upgrade
#    stops at failed with the cause. First a person releases the node of step 3 with
#    runbook 2's commands (kubectl itself): the annotation removed, the node uncordoned.
kill "$apid"
wait "$apid" 2>/dev/null || true
NODE=gpu-node-1
run_doc_block agent-release || fail "agent-release: $(cat "$T/agent-release.out")"
upgrade_node_has 'not unsched and "nvidia.com/gpu.driver-installer.upgrade" not in n["metadata"].get("annotations", {})' ||
    fail "not released by kubectl: $(cat "$T/agent-release.out")"
# Nothing pending: the agent takes the node as idle, and the label the annotation's removal
# left behind goes too.
start
wait_for "the failed label gone" 30 upgrade_node_has 'state == "" and "nvidia-driver-installer.upgrade" not in str(n["metadata"].get("annotations"))'
kill "$apid"
wait "$apid" 2>/dev/null || true
leave_pending "$V_OLD"
echo "3,1202,52000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=0, name=none, GPU has fallen off the bus." >"$T/root/dev/kmsg"
EXTRA="--upgrade-validate-timeout 10" start
wait_for "failed after validation" 40 upgrade_node_has 'state == "failed"'
upgrade_node_has '"'"$V_OLD"' not ready within 10s: Xid 79" in rec["reason"] and "rolled back to '"$V_NEW"'" in rec["reason"] and unsched' ||
    fail "the reason: $(cat "$KUBE_STATE")"
wait_for "the rollback run" 30 agent_said "driver upgrade: the installer ended (what=rollback how=exit 0)"
assert_eq "$(installed_version)" "$V_NEW" "the version after the rollback"
wait_for "the validation's failure event" 30 upgrade_node_has 'events.count("DriverUpgradeValidating") >= 1 and events[-1] == "DriverUpgradeFailed"'
