# The startup and health taints the node agent keeps on its Node (docs/design.md, "The
# Node's condition and taints"), against the API server stand-in (tests/tools/kube-api.py)
# on the fake kernel. The Node registered with the startup taint (two effects of its key)
# and with taints of others:
# 1. CUDA fails on the node (the stand-in libcuda's cuInit): the condition says CUDANotReady,
#    at its changes and heartbeats, and the startup taint is never touched.
# 2. CUDA answers: every taint of the startup key goes in exactly one PATCH, the others stay;
#    no more PATCH of the Node after it while nothing changes; put back by someone, it goes
#    again at the next heartbeat (once per appearance).
# 3. --health-taint: a fatal Xid puts it on (value FatalXid), its write meeting another
#    writer's change to the taints first (the stand-in's race fault: a 409, read again,
#    that writer's taint kept); the driver loaded again takes it off.
# 4. The options' syntax: a key that is not a qualified name, an effect that is not one of
#    the three, a heartbeat shorter than the interval: exit 2, one line naming the option.
FAKE_KERNEL=1
NODE=gpu-node-1
STARTUP=startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args)
: >"$T/root/dev/kmsg"
cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$NODE"}, "spec": {"taints": [
  {"key": "$STARTUP", "effect": "NoSchedule"},
  {"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"},
  {"key": "$STARTUP", "value": "x", "effect": "NoExecute"},
  {"key": "example.com/maintenance", "effect": "PreferNoSchedule"}]}}]}
EOF
kube_stub "$T/cluster.json"

trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
# node_has PY-EXPR: the expression holds of the stored Node: taints (KEY:EFFECT=VALUE, in
# order), c (our condition, {} when none).
node_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["nodes"][0]
taints = ["%s:%s=%s" % (t["key"], t["effect"], t.get("value", "")) for t in n["spec"].get("taints", [])]
c = {x["type"]: x for x in n.get("status", {}).get("conditions", [])}.get("nvidia.com/GPUDriverReady", {})
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
# patches PY-EXPR: the expression holds of the PATCHes of the Node itself (not its status)
# logged, in order: p (each as {"code", "before", "after": the stored taints as node_has
# shows them}), and s (the status writes' answered count).
patches() {
    python3 - "$KUBE_LOG" "$1" <<'PY'
import json, sys
def ts(n):
    return ["%s:%s=%s" % (t["key"], t["effect"], t.get("value", "")) for t in (n or {}).get("spec", {}).get("taints", [])]
rs = list(map(json.loads, open(sys.argv[1])))
p = [{"code": r["status"], "before": ts(r.get("node_before")), "after": ts(r.get("node_after"))}
     for r in rs if r["method"] == "PATCH" and r["path"] == "/api/v1/nodes/gpu-node-1"]
s = sum(1 for r in rs if r["method"] == "PATCH" and r["path"].endswith("/status") and r["status"] == 200)
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
others='"example.com/dedicated:NoSchedule=ml" in taints and "example.com/maintenance:PreferNoSchedule=" in taints'

# 1. CUDA fails: never ready, the startup taint stays, through the heartbeat.
CUDA_STANDIN_FAIL=init start_agent --node-name "$NODE" --kube-sa-dir "$KUBE_SA" --upgrades off \
    --condition-heartbeat 10
wait_for "the agent's start" 30 agent_said "agent: watching the node"
agent_said "startup_taint=$STARTUP health_taint=none" || fail "the startup taint's default"
wait_for "CUDANotReady" 30 node_has 'c.get("reason") == "CUDANotReady"'
# Wait for a heartbeat (a second write of the same condition), not for time.
wait_for "a heartbeat" 30 patches 's >= 2'
node_has 'c["reason"] == "CUDANotReady" and taints[0] == "'"$STARTUP"':NoSchedule=" and len(taints) == 4' ||
    fail "not ready: $(cat "$KUBE_STATE")"
patches 'p == []' || fail "the Node written while CUDA fails: $(grep '"PATCH", "path": "/api/v1/nodes/gpu-node-1",' "$KUBE_LOG")"
stop_agent
kill_leftovers

# 2. CUDA answers: the startup taint goes, once, whatever its effects and values.
: >"$T/agent.log"
start_agent --node-name "$NODE" --kube-sa-dir "$KUBE_SA" --upgrades off --condition-heartbeat 10 \
    --health-taint nvidia.com/gpu-unhealthy:NoSchedule
wait_for "the startup taint gone" 30 node_has 'not any(t.startswith("'"$STARTUP"':") for t in taints)'
node_has "$others"' and len(taints) == 2 and c["reason"] == "CUDAReady"' || fail "ready: $(cat "$KUBE_STATE")"
wait_for "the agent to say so" 30 agent_said "startup taint taken off: a CUDA job can run (taint=$STARTUP)"
# Exactly one PATCH of the Node, after the condition said True; none before it. (The
# stand-in stores a write, then logs it: the log is waited for.)
wait_for "the PATCH logged" 30 patches 'len(p) >= 1'
patches 'len(p) == 1 and p[0]["code"] == 200 and len(p[0]["before"]) == 4 and p[0]["after"] == ["example.com/dedicated:NoSchedule=ml", "example.com/maintenance:PreferNoSchedule="]' ||
    fail "the startup taint's PATCHes: $(grep '"PATCH", "path": "/api/v1/nodes/gpu-node-1",' "$KUBE_LOG")"
python3 - "$KUBE_LOG" <<'PY' || fail "the taint went before the condition said True"
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r["method"] == "PATCH" and r["status"] == 200]
i = next(i for i, r in enumerate(rs) if r["path"] == "/api/v1/nodes/gpu-node-1")
trues = [r for r in rs[:i] if r["path"].endswith("/status") and '"status":"True"' in r["body"]]
assert trues, rs[:i]
PY
# Its heartbeat looks again, and finds nothing to do: no second PATCH.
n=$(patches 'print(s) or True')
wait_for "a heartbeat while ready" 30 patches "s > $n"
patches 'len(p) == 1' || fail "written again with nothing to change"
# Someone puts it back: it goes again at the next heartbeat (once per appearance).
kube_api PATCH "/api/v1/nodes/$NODE" -H 'Content-Type: application/merge-patch+json' -d \
    '{"spec": {"taints": [{"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"}, {"key": "example.com/maintenance", "effect": "PreferNoSchedule"}, {"key": "'"$STARTUP"'", "effect": "NoSchedule"}]}}' >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "the taint put back"
wait_for "the startup taint gone again" 30 node_has 'len(taints) == 2'
wait_for "the PATCH logged" 30 patches 'len(p) >= 3'
patches 'len(p) == 3 and [x["code"] for x in p] == [200, 200, 200]' ||
    fail "the PATCHes: $(grep '"PATCH", "path": "/api/v1/nodes/gpu-node-1",' "$KUBE_LOG")"

# 3. The health taint, its write racing another writer's.
cat >"$KUBE_FAULTS" <<EOF
{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/$NODE", "body": "gpu-unhealthy", "race": {"taints": [
  {"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"},
  {"key": "example.com/maintenance", "effect": "PreferNoSchedule"},
  {"key": "example.com/other-writer", "effect": "NoSchedule"}]}, "times": 1}]}
EOF
echo "3,1401,71000000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=0, name=none, GPU has fallen off the bus." >>"$T/root/dev/kmsg"
wait_for "the health taint on" 30 node_has '"nvidia.com/gpu-unhealthy:NoSchedule=FatalXid" in taints'
wait_for "the PATCH logged" 30 patches 'len(p) >= 5'
node_has "$others"' and "example.com/other-writer:NoSchedule=" in taints and len(taints) == 4 and c["reason"] == "FatalXid"' ||
    fail "the other writer's taint lost: $(cat "$KUBE_STATE")"
patches '[x["code"] for x in p][3:] == [409, 200]' ||
    fail "no 409 met and retried: $(grep '"PATCH", "path": "/api/v1/nodes/gpu-node-1",' "$KUBE_LOG")"
wait_for "the agent to say so" 30 agent_said "health taint put on (taint=nvidia.com/gpu-unhealthy value=FatalXid effect=NoSchedule)"
# The driver loaded again: taken off; the others as they were.
echo "6,1402,72000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  $V_OLD" >>"$T/root/dev/kmsg"
wait_for "the health taint off" 30 node_has 'not any(t.startswith("nvidia.com/gpu-unhealthy") for t in taints)'
node_has "$others"' and "example.com/other-writer:NoSchedule=" in taints and len(taints) == 3' ||
    fail "after the Xid cleared: $(cat "$KUBE_STATE")"
stop_agent
kill_leftovers

# 4. The options' syntax.
for bad in "--startup-taint Bad_Key/x" "--startup-taint example.com/-x" \
    "--health-taint nvidia.com/gpu-unhealthy" "--health-taint nvidia.com/gpu-unhealthy:Never" \
    "--condition-heartbeat 20 --interval 30"; do
    # shellcheck disable=SC2086
    expect_rc 2 agent $bad
    [ "$(wc -l <"$T/err")" = 2 ] || fail "$bad: $(cat "$T/err")"
    expect_err "agent: ${bad%% *}"
done
expect_err "condition-heartbeat (NVIDIA_CONDITION_HEARTBEAT): 20 is shorter than --interval 30"
NVIDIA_HEALTH_TAINT=x:NoSchedule: expect_rc 2 agent
expect_err "health-taint (NVIDIA_HEALTH_TAINT): 'x:NoSchedule:' is not KEY:EFFECT"

# The bodies sent, against the Kubernetes schemas (tests/k8s/check-requests.mjs).
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
grep -q "Node/status [0-9]" "$T/schema.out" && grep -q "Node [0-9]" "$T/schema.out" ||
    fail "no Node or Node/status checked: $(cat "$T/schema.out")"
