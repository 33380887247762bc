# The node agent's upgrade on a node whose GPUs NVIDIA's DRA driver serves (docs/design.md,
# "Upgrades that finish by themselves"), against the API server stand-in: the GPU pods ask
# for no nvidia.com/gpu, they use ResourceClaims allocated by gpu.nvidia.com.
# 1. resource.k8s.io/v1 served. GPU pods: ml/train (a claim by name), ml/tmpl (a claim
#    generated from a template, named in its status), ml/ext (an extended resource DRA backs,
#    Kubernetes 1.34 on: its container asks deviceclass.resource.kubernetes.io/gpu.nvidia.com,
#    the scheduler's claim named in status.extendedResourceClaimStatus),
#    nvidia-dra/cd-daemon (the ComputeDomain's daemon, a DaemonSet's pod with a
#    compute-domain.nvidia.com claim), mon/dcgm (a DaemonSet's pod with a gpu.nvidia.com
#    device allocated for admin access: it keeps /dev/nvidia* open, so it is a GPU pod, not
#    "process(es) outside pods"). Not GPU pods: net/nic (a claim of another driver),
#    ml/young (its template's claim not generated yet), ml/stale (its claim gone), ml/done
#    (finished). With the wait policy the upgrade waits for the five; past the deadline with
#    evict, train, tmpl and ext are evicted, the two DaemonSets' pods never ("no eviction
#    moves"): they are waited for until their DaemonSets take them off the node (the test
#    deletes them, as the DaemonSet controller does once the kubelet plugin removed the
#    node's ComputeDomain label, or a person the monitoring's); only then is the version
#    activated. --upgrade-dra-drivers none counts no claim.
# 2. A server that serves only v1beta1 (Kubernetes 1.32): the agent falls back to it once and
#    asks it alone after; the upgrade waits for and evicts the claim's pod as in 1.
# 4. No version served (a claim read fails), 5. a stalled server (a look's time for claims
#    spent): the pods whose claims were not read count as GPU pods, said once. While no
#    upgrade waits (1, done), no claim is read at all.
# 3. Every call is one the shipped manifests' RBAC rules allow (resourceclaims get), and
#    every body is valid against the Kubernetes schemas, the claims the stand-in served
#    (v1 and v1beta1) too.
FAKE_KERNEL=1
export NVIDIA_NODE_CONDITION=no NVIDIA_STARTUP_TAINT=none
upgrade_node --pending

# cluster FILE VERSIONS: gpu-node-1, its pods and their claims, served in VERSIONS.
cluster() {
    python3 - "$2" >"$1" <<'PY'
import json, sys
# The DeviceClasses: NVIDIA's chart's (templates/deviceclass-*.yaml), another vendor's.
CLASSES = {"gpu.nvidia.com": "gpu.nvidia.com",
           "compute-domain.nvidia.com": "compute-domain-daemon.nvidia.com",
           "rdma.example.com": "rdma.example.com"}
def pod(ns, name, claims, statuses=None, owner="Job", phase="Running", ext=None):
    meta = {"namespace": ns, "name": name, "ownerReferences": [
        {"apiVersion": "apps/v1" if owner == "DaemonSet" else "batch/v1", "kind": owner,
         "name": "x", "uid": "1", "controller": True}]}
    st = {"phase": phase}
    if statuses is not None:
        st["resourceClaimStatuses"] = statuses
    res = {"claims": [{"name": c["name"]} for c in claims]}
    if ext:  # core/v1 types.go:4586-4609, PodExtendedResourceClaimStatus
        xr = "deviceclass.resource.kubernetes.io/gpu.nvidia.com"
        res = {"limits": {xr: "1"}, "requests": {xr: "1"}}
        st["extendedResourceClaimStatus"] = {"resourceClaimName": ext, "requestMappings": [
            {"containerName": "c", "resourceName": xr, "requestName": "container-0-request-0"}]}
    return {"metadata": meta, "status": st, "spec": {
        "nodeName": "gpu-node-1", "resourceClaims": claims,
        "containers": [{"name": "c", "resources": res}]}}
def claim(ns, name, driver, admin=False):
    # Stored in v1's shape; kube-api.py serves each version's (claim_as).
    exactly = {"deviceClassName": CLASSES[driver]}
    result = {"request": "r", "driver": driver, "pool": "gpu-node-1", "device": "d0"}
    if admin:
        exactly["adminAccess"] = result["adminAccess"] = True
    return {"metadata": {"namespace": ns, "name": name, "uid": "u-" + name},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}},
            "status": {"allocation": {"devices": {"results": [result]}}}}
pods = [
    pod("ml", "train", [{"name": "gpus", "resourceClaimName": "train-gpus"}]),
    pod("ml", "tmpl", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        [{"name": "gpu", "resourceClaimName": "tmpl-gpu-7xk2q"}]),
    pod("ml", "young", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}], [],
        phase="Pending"),
    pod("ml", "stale", [{"name": "gpus", "resourceClaimName": "deleted"}]),
    pod("ml", "done", [{"name": "gpus", "resourceClaimName": "done-gpus"}], phase="Succeeded"),
    pod("net", "nic", [{"name": "nic", "resourceClaimName": "rdma-0"}]),
    pod("ml", "ext", [], ext="ext-extended-resources-8w2dm"),
    pod("mon", "dcgm", [{"name": "gpus", "resourceClaimName": "dcgm-admin"}], owner="DaemonSet"),
    pod("nvidia-dra", "cd-daemon", [{"name": "daemon", "resourceClaimTemplateName": "cd-tmpl"}],
        [{"name": "daemon", "resourceClaimName": "cd-daemon-daemon-q9x"}], owner="DaemonSet")]
claims = [claim("ml", "train-gpus", "gpu.nvidia.com"),
          claim("ml", "tmpl-gpu-7xk2q", "gpu.nvidia.com"),
          claim("ml", "done-gpus", "gpu.nvidia.com"),
          claim("net", "rdma-0", "rdma.example.com"),
          claim("ml", "ext-extended-resources-8w2dm", "gpu.nvidia.com"),
          claim("mon", "dcgm-admin", "gpu.nvidia.com", admin=True),
          claim("nvidia-dra", "cd-daemon-daemon-q9x", "compute-domain.nvidia.com")]
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": "gpu-node-1"}, "spec": {}}],
                  "pods": pods, "resourceclaims": claims,
                  "resource_versions": [v for v in sys.argv[1].split(",") if v]}))
PY
}
# claim_gets VERSION: the agent's GETs of resourceclaims in that version.
claim_gets() { grep -c "\"path\": \"/apis/resource.k8s.io/$1/namespaces/" "$KUBE_LOG" || true; }
agent_said() { grep -q -- "$1" "$T/agent.log"; }
# pod_lists: the agent's lists of the node's pods (one a look).
pod_lists() { grep -c '"path": "/api/v1/pods"' "$KUBE_LOG" || true; }
trap 'rc=$?; kill "${apid:-}" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
logs=()

# 1. v1: waited for, then evicted, the daemon waited for until its DaemonSet takes it away.
cluster "$T/c1.json" v1,v1beta2,v1beta1
kube_stub "$T/c1.json"
logs+=("$KUBE_LOG")
restart_agent --upgrade-dra-drivers none
wait_for "the upgrade done, no claim counted" 30 upgrade_node_has 'state == "done"'
assert_eq "$(claim_gets v1)" 0 "claims read with --upgrade-dra-drivers none"
assert_eq "$(installed_version)" "$V_NEW" "the version with no claim counted"
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_OLD"
kube_stub "$T/c1.json"
logs+=("$KUBE_LOG")
restart_agent
wait_for "waiting for the claims' pods" 30 upgrade_node_has \
    'state == "waiting" and rec.get("reason", "") == "5 GPU pod(s) and 0 process(es) hold the GPUs"'
wait_for "another look" 30 eval '[ "$(claim_gets v1)" -ge 10 ]'
assert_eq "$(claim_gets v1beta2)$(claim_gets v1beta1)" 00 "claims asked of older versions"
restart_agent --upgrade-on-deadline evict --upgrade-deadline 0
wait_for "the daemons waited for" 30 upgrade_node_has \
    'rec.get("reason", "") == "past the deadline: 2 GPU pod(s) no eviction moves (DaemonSets'"'"', static pods'"'"', or already leaving) and 0 other process(es) hold the GPUs"'
for p in ml/train ml/tmpl ml/ext; do assert_eq "$(evictions_of $p)" 1 "evictions of $p"; done
for p in nvidia-dra/cd-daemon net/nic mon/dcgm ml/young ml/stale ml/done; do
    assert_eq "$(evictions_of $p)" 0 "evictions of $p"
done
[ "$(installed_version)" = "$V_NEW" ] || fail "activated while the compute-domain daemon runs"
# The ComputeDomain's workloads are gone: its DaemonSet takes the daemon off the node.
kube_api DELETE /api/v1/namespaces/nvidia-dra/pods/cd-daemon >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "the daemon's deletion"
kube_api DELETE /api/v1/namespaces/mon/pods/dcgm >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "dcgm's deletion"
wait_for "the upgrade done (1)" 30 upgrade_node_has 'state == "done" and not unsched'
assert_eq "$(installed_version)" "$V_OLD" "the version after (1)"
upgrade_node_has 'sorted(pods) == ["done", "nic", "stale", "young"]' ||
    fail "pods left (1): $(cat "$KUBE_STATE")"
# No upgrade waits: the looks read no claim (a fleet of idle nodes asks nothing of them).
gets=$(claim_gets v1) lists=$(pod_lists)
wait_for "three looks while done" 30 eval '[ "$(pod_lists)" -ge $((lists + 3)) ]'
assert_eq "$(claim_gets v1)" "$gets" "claims read while no upgrade waits"
# The claims as the stand-in serves them, in v1 and v1beta1 (schemas: tests/k8s/openapi/).
for v in v1 v1beta1; do
    for c in ml/train-gpus ml/tmpl-gpu-7xk2q ml/ext-extended-resources-8w2dm mon/dcgm-admin \
        nvidia-dra/cd-daemon-daemon-q9x net/rdma-0; do
        kube_api GET "/apis/resource.k8s.io/$v/namespaces/${c%/*}/resourceclaims/${c#*/}"
        printf '\n---\n'
    done
done >"$T/served-claims.yaml"

# 2. Only v1beta1 served: found there after v1 and v1beta2 answer the unserved path's 404.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_NEW"
cluster "$T/c2.json" v1beta1
kube_stub "$T/c2.json"
logs+=("$KUBE_LOG")
restart_agent --upgrade-on-deadline evict --upgrade-deadline 0
wait_for "the daemons waited for (2)" 30 upgrade_node_has \
    '"2 GPU pod(s) no eviction moves" in rec.get("reason", "")'
for p in ml/train ml/tmpl ml/ext; do assert_eq "$(evictions_of $p)" 1 "evictions of $p (v1beta1)"; done
assert_eq "$(claim_gets v1)/$(claim_gets v1beta2)" 1/1 "GETs of the versions not served"
[ "$(claim_gets v1beta1)" -ge 4 ] || fail "claims read in v1beta1: $(claim_gets v1beta1)"
grep -q '"path": "/apis/resource.k8s.io/v1/namespaces/[^"]*", "query": "", "content_type": "", "user_agent": "nvidia-driver-installer/[^"]*", "body": "", "status": 404' "$KUBE_LOG" ||
    fail "no 404 of v1: $(grep resource.k8s.io "$KUBE_LOG" | sed -n 1,3p)"
kube_api DELETE /api/v1/namespaces/nvidia-dra/pods/cd-daemon >/dev/null
kube_api DELETE /api/v1/namespaces/mon/pods/dcgm >/dev/null
wait_for "the upgrade done (2)" 30 upgrade_node_has 'state == "done" and not unsched'
assert_eq "$(installed_version)" "$V_NEW" "the version after (2)"

# 4. No version of resource.k8s.io served, yet pods name claims: no claim can be read, each
# pod that names one counts as a GPU pod (ml/young names none yet), said once; the look goes on.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
leave_pending "$V_OLD"
cluster "$T/c4.json" ""
kube_stub "$T/c4.json"
logs+=("$KUBE_LOG")
restart_agent
wait_for "waiting for the pods with claims not read" 30 upgrade_node_has \
    'state == "waiting" and rec.get("reason", "") == "7 GPU pod(s) and 0 process(es) hold the GPUs"'
lists=$(pod_lists)
wait_for "three looks more" 30 eval '[ "$(pod_lists)" -ge $((lists + 3)) ]'
assert_eq "$(grep -c "a resource claim could not be read" "$T/agent.log")" 1 "the failed reads said"
grep "a resource claim could not be read" "$T/agent.log" | grepq "no version of resource.k8s.io" ||
    fail "the cause not said: $(grep "could not be read" "$T/agent.log")"
[ "$(installed_version)" = "$V_NEW" ] || fail "activated with claims not read (4)"

# 5. A stalled API server: a look stops reading claims once its time (5 s at --interval 1) is
# spent; the claims not read count as GPU claims, said once.
kill "$apid"; wait "$apid" 2>/dev/null || true; apid=
cluster "$T/c5.json" v1
kube_stub "$T/c5.json"
logs+=("$KUBE_LOG")
echo '{"faults": [{"method": "GET", "path": "/apis/resource.k8s.io/.*", "stall": 8, "times": 1000}]}' \
    >"$KUBE_FAULTS"
restart_agent
wait_for "waiting, claims not read" 40 upgrade_node_has \
    'state == "waiting" and rec.get("reason", "") == "7 GPU pod(s) and 0 process(es) hold the GPUs"'
wait_for "the look's time said" 30 agent_said "more resource claims than a look reads in its bound or time"
lists=$(pod_lists)
wait_for "two looks more" 40 eval '[ "$(pod_lists)" -ge $((lists + 2)) ]'
stalls=$(grep -c '"status": "stall"' "$KUBE_LOG")
[ "$stalls" -le $(($(pod_lists) + 1)) ] || fail "claims read past the look's time: $stalls GETs in $(pod_lists) looks"

# 3. The calls against the manifests' RBAC rules (the whole set: t_agent_upgrade), the bodies
# against the schemas.
for m in daemonset-preloaded.yaml daemonset-generic.yaml; do
    python3 "$SRC/tests/tools/rbac-check.py" --calls-only "$SRC/$m" nvidia-driver-installer \
        "${logs[@]}" >"$T/rbac.out" 2>&1 || fail "RBAC ($m): $(cat "$T/rbac.out")"
done
k8s_node_modules
node "$SRC/tests/k8s/check-dra.mjs" --schema "$T/served-claims.yaml" >"$T/claims.out" 2>&1 ||
    fail "the claims served: $(cat "$T/claims.out")"
grep -q "12 objects valid" "$T/claims.out" || fail "claims checked: $(cat "$T/claims.out")"
node "$SRC/tests/k8s/check-requests.mjs" "${logs[@]}" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
grep -q "Eviction [0-9]" "$T/schema.out" || fail "no Eviction body checked: $(cat "$T/schema.out")"
