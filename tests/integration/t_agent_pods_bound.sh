# The node agent's memory is bounded by what it reads, not by what tenants write (issue 45):
# with upgrades on it lists its node's pods at every look, and any tenant can make that
# list large. Against the API server stand-in, which makes tenants' pods of any size
# (annotation test.invalid/env-entries: N environment entries, generated when served):
#   1. eleven pods of 75,000 entries each (a 15 MB list): the looks succeed, and the
#      agent's peak RSS (VmHWM) stays under 64 MiB (740 MiB when it parsed the whole list);
#   2. one pod far larger than the client's bound on an answer (8 MiB): each look fails
#      with a line naming the bound, the agent stays up and answers /healthz, its peak
#      RSS still bounded; the pod gone, the looks succeed again.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)

python3 - >"$T/cluster.json" <<'PY'
import json
pods = [{"metadata": {"name": "tenant-%d" % i, "namespace": "t%d" % i,
                      "annotations": {"test.invalid/env-entries": "75000"}},
         "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c", "resources":
                  {"limits": {"nvidia.com/gpu": "1"}}}]},
         "status": {"phase": "Running"}} for i in range(11)]
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": "gpu-node-1"}, "spec": {}}], "pods": pods}))
PY
kube_stub "$T/cluster.json"
# Under ASan, freed memory waits in its quarantine (256 MiB by default) before reuse: a
# small one, so that the peak measured is the agent's.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16" \
    start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA"
trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
# pod_lists: the node's pod lists asked for so far (their first pages).
pod_lists() {
    python3 - "$KUBE_LOG" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    n += r["path"] == "/api/v1/pods" and r["status"] == 200 and "continue=" not in r["query"]
print(n)
PY
}
# The bound on its peak: 64 MiB; under ASan, whose shadow and quarantine hold more, 192.
bound_kib=65536
[ -z "${NDI_SANITIZED:-}" ] || bound_kib=196608
hwm_kib() { sed -n "s/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$apid/status"; }
recorded() { [ "$(pod_lists)" -ge "$1" ]; }

# 1. A tenant-sized list: the looks go on, the memory stays small.
wait_for "three looks over the list" 60 recorded 3
! agent_said "driver upgrade: a call to the API server failed" || fail "a look failed: $(grep "API server failed" "$T/agent.log")"
hwm=$(hwm_kib); [ -n "$hwm" ] || fail "no VmHWM in /proc/$apid/status: $(cat /proc/$apid/status 2>&1 | sed -n 1,3p)"
echo "peak RSS over a 15 MB pod list: $hwm kB"
[ "$hwm" -lt "$bound_kib" ] || fail "the agent's peak RSS is $hwm kB over a 15 MB pod list"

# 2. One pod far larger than the bound: one look fails, said, and the agent stays.
python3 - >"$T/big.json" <<'PY'
import json
print(json.dumps({"metadata": {"name": "huge", "namespace": "t0",
                               "annotations": {"test.invalid/env-entries": "1500000"}},
                  "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c"}]},
                  "status": {"phase": "Running"}}))
PY
kube_api POST /api/v1/namespaces/t0/pods -d @"$T/big.json" -H 'Content-Type: application/json' >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 201 "the huge pod's creation"
# The upgrade's look (the DRA plugin's restart lists the pods too, and says so apart).
wait_for "the look's failure said" 60 agent_said "driver upgrade: .*larger than the client's bound"
grep "driver upgrade: .*larger than the client's bound" "$T/agent.log" | sed -n 1p |
    grepq "listing the node's pods: kube: GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1&limit=1[^ ]*: the answer is larger than the client's bound of 8 MiB" ||
    fail "the line: $(grep "larger than" "$T/agent.log" | sed -n 1p)"
kill -0 "$apid" || fail "the agent is gone"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" 200 "/healthz"
hwm=$(hwm_kib); [ -n "$hwm" ] || fail "no VmHWM in /proc/$apid/status: $(cat /proc/$apid/status 2>&1 | sed -n 1,3p)"
echo "peak RSS with a pod past the bound: $hwm kB"
[ "$hwm" -lt "$bound_kib" ] || fail "the agent's peak RSS is $hwm kB with a pod past the bound"
# The pod gone: the next look reads the list whole again.
kube_api DELETE /api/v1/namespaces/t0/pods/huge >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "the huge pod's deletion"
wait_for "a look over the list again" 60 agent_said "driver upgrade: the API server answers again"
kill -0 "$apid" || fail "the agent is gone"
[ -z "${VERBOSE:-}" ] || grep "larger than" "$T/agent.log" | sed -n 1,2p
