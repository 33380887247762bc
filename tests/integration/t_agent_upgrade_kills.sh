# plain build: the agent's resume from its record runs under ASan in t_agent_upgrade_faults (killed while waiting); here the same code from the other states
# The node agent's driver upgrade survives its own death at each state, a reboot of the node
# and a policy that waits (docs/design.md, "Upgrades that finish by themselves"), against
# the API server stand-in on the fake kernel. The agent runs in a process group of its own,
# as in its container, and is killed with everything it started (SIGKILL to the group).
#   1. Killed at each state the agent records before it acts (cordoned, evicting,
#      activating, validating): the stand-in carries out the PATCH that records the state
#      and holds its answer, and the agent is killed meanwhile, so that the state is on the
#      node and its action not done. A new agent finishes the upgrade, and nothing is done
#      twice: one cordon, one eviction, one activation over both agents; and every state
#      recorded has its Event, once, the killed state's posted by the new agent.
#   2. The node reboots while it waits (a GPU pod runs): the installer at boot loads the
#      pending version, and the agent, started after it, finds the node's record done for
#      it: it uncordons and gives its slot back, and runs no installer of its own.
#   3. --upgrade-on-deadline wait: past the deadline the node keeps waiting, says so, and
#      evicts nothing; the job ends, and the upgrade finishes.
FAKE_KERNEL=1
# The upgrade's own writes and Events: the Node's condition and taints, which the agent
# keeps beside them, are t_agent_condition's and t_agent_taints'.
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
upgrade_node
NODE=gpu-node-1

# cluster [GPU_PODS]: a stand-in with the node and GPU_PODS running pods that ask a GPU.
cluster() {
    python3 - "${1:-0}" >"$T/cluster.json" <<'PY'
import json, sys
# Each a Job's (a controller: --upgrade-evict-force is off).
pods = [{"metadata": {"name": "job%d" % i, "namespace": "ml", "ownerReferences": [
         {"apiVersion": "batch/v1", "kind": "Job", "name": "job%d" % i, "uid": str(i),
          "controller": True}]}, "spec": {"nodeName": "gpu-node-1",
         "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
         "status": {"phase": "Running"}} for i in range(int(sys.argv[1]))]
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"},
                             "spec": {}}], "pods": pods}))
PY
    kube_stub "$T/cluster.json"
}
agent_said() { grep -q -- "$1" "$T/agent.log"; }
# start [OPTION...]: an agent in a process group of its own; its log appended to agent.log.
start() {
    echo "---- agent $*" >>"$T/agent.log"
    setsid env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
        --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" "$@" 2>>"$T/agent.log" &
    apid=$!
    wait_for "the agent's start" 30 started_more
    starts=$(grep -c "agent: watching the node" "$T/agent.log")
}
started_more() { [ "$(grep -c "agent: watching the node" "$T/agent.log")" -gt "${starts:-0}" ]; }
# killed: the agent and all it started, at once.
killed() {
    kill -KILL -- "-$apid" 2>/dev/null || true
    wait "$apid" 2>/dev/null || true
    apid=
}
stop() {
    kill -TERM "$apid" 2>/dev/null || true
    wait "$apid" 2>/dev/null || true
    apid=
}
trap 'rc=$?; [ -z "${apid:-}" ] || kill -KILL -- "-$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -25 "$T/agent.log"' EXIT
# requests METHOD PATH-REGEX BODY-REGEX: how many requests of this stand-in matched.
requests() {
    python3 - "$KUBE_LOG" "$@" <<'PY'
import json, re, sys
log, method, path, body = sys.argv[1:]
print(sum(1 for r in map(json.loads, open(log)) if r["method"] == method and r["status"] < 300
          and re.fullmatch(path, r["path"]) and re.search(body, r["body"])))
PY
}
# each_state_evented: every state the node recorded has its Event, once, in the order
# recorded, over both agents (one killed between a state's record and its Event).
each_state_evented() {
    python3 - "$KUBE_LOG" "$KUBE_STATE" <<'PY'
import json, sys
states = []
for r in map(json.loads, open(sys.argv[1])):
    if r["method"] == "PATCH" and r["status"] == 200:
        s = json.loads(r["body"])["metadata"]["labels"]["nvidia.com/gpu.driver-installer.upgrade-state"]
        if s and (not states or states[-1] != s):
            states.append(s)
want = ["DriverUpgrade" + s.capitalize() for s in states]
got = [e["reason"] for e in json.load(open(sys.argv[2]))["events"]]
if got != want:
    print("events %s, states recorded %s" % (got, want), file=sys.stderr)
    sys.exit(1)
PY
}
activations() { grep -c "driver upgrade: the installer ended (what=activation how=exit 0)" "$T/agent.log" || true; }
done_with() {
    wait_for "the upgrade to $1 done" 40 upgrade_node_has 'state == "done" and not unsched and not any(holders.values())'
    assert_eq "$(installed_version)" "$1" "the version after the upgrade"
    [ ! -e "$(idir)/.pending.json" ] || fail "still pending"
    # The Event follows the state's PATCH (agent/upgrader.c, record): it may land just after.
    wait_for "the done event recorded as posted" 30 upgrade_node_has 'rec["event"] == "done"'
    each_state_evented 2>"$T/events.err" || fail "$(cat "$T/events.err")"
}

# 1. Killed at each recorded state, before its action.
version=$V_OLD
for state in cordoned evicting activating validating; do
    if [ "$version" = "$V_OLD" ]; then version=$V_NEW; else version=$V_OLD; fi
    : >"$T/agent.log"
    starts=0
    leave_pending "$version"
    pods=0 opts=()
    [ "$state" != evicting ] || pods=1 opts=(--upgrade-on-deadline evict --upgrade-deadline 0)
    cluster "$pods"
    # The patch that records STATE: its label is in it as "...upgrade-state":"STATE".
    printf '{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/gpu-node-1", "body": "upgrade-state\\": *\\"%s\\"", "delay": 5, "times": 1}]}\n' \
        "$state" >"$KUBE_FAULTS"
    start "${opts[@]}"
    wait_for "$state recorded" 30 upgrade_node_has "state == '$state'"
    killed
    grep -q '"times": 0' "$KUBE_FAULTS" || fail "$state: the held PATCH did not match"
    start "${opts[@]}"
    done_with "$version"
    assert_eq "$(requests PATCH /api/v1/nodes/gpu-node-1 '"unschedulable":true')" 1 "$state: cordons"
    assert_eq "$(requests PATCH /api/v1/nodes/gpu-node-1 '"unschedulable":false')" 1 "$state: uncordons"
    assert_eq "$(requests POST '/api/v1/namespaces/ml/pods/[^/]*/eviction' .)" "$pods" "$state: evictions"
    assert_eq "$(activations)" 1 "$state: activations over both agents"
    stop
done

# 2. A reboot while the node waits: the pending version loads at boot, the agent winds down.
version=$V_NEW
leave_pending "$version"
: >"$T/agent.log"
starts=0
cluster 1
start
# (Its Event recorded as posted: a kill between the two would post it again, by design.)
wait_for "waiting, cordoned" 30 upgrade_node_has 'state == "waiting" and unsched and rec["cordoned"] and rec["event"] == "waiting"'
killed
rm -rf "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" "$T/root/sys/module/"nvidia* \
    "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" "$T/root/dev/"nvidia*
[ "$(loaded_modules)" = "" ] || fail "modules left after the simulated reboot: $(loaded_modules)"
expect_rc 0 install --when-busy defer --driver-version "$version" $(kernel_args)
assert_eq "$(installed_version)" "$version" "the version the boot loaded"
start
done_with "$version"
assert_eq "$(activations)" 0 "activations after the reboot"
upgrade_node_has 'events[-1] == "DriverUpgradeDone"' || fail "the last event: $(cat "$KUBE_STATE")"
stop

# 3. Past the deadline with the wait policy: waits, evicts nothing, then finishes.
version=$V_OLD
leave_pending "$version"
: >"$T/agent.log"
starts=0
cluster 1
start --upgrade-on-deadline wait --upgrade-deadline 0
wait_for "waiting past the deadline" 30 upgrade_node_has '"past the deadline, waiting as the policy says: 1 GPU pod(s)" in rec["reason"]'
sleep 2.2
upgrade_node_has 'state == "waiting" and pods == ["job0"]' || fail "not waiting: $(cat "$KUBE_STATE")"
assert_eq "$(requests POST '/api/v1/namespaces/ml/pods/[^/]*/eviction' .)" 0 "evictions under the wait policy"
kube_api DELETE /api/v1/namespaces/ml/pods/job0 >/dev/null
done_with "$version"
assert_eq "$(activations)" 1 "activations under the wait policy"
stop
