# install's word on its Node's condition nvidia.com/GPUDriverReady (docs/configuration.md,
# --node-condition), against the API server stand-in (tests/tools/kube-api.py) on the fake
# kernel, always through nodes/NAME/status:
# 1. a node that serves no driver: False/Installing before the download, left so after the
#    run (only the agent says True); a re-run on the node serving its version writes nothing;
#    after the agent's True, a re-run still writes nothing (the condition does not flap).
# 2. a switch to a new version: Installing at the switch (a transition from True), through a
#    409 another writer causes between the read and the patch, read again and written.
# 3. a run that fails: InstallFailed with its error line and exit code, from the plan and from
#    before the host is probed; the transition time kept while the status stays False.
# 4. --wait-for-package: WaitingForPackage at every check (its heartbeat moves, its
#    transition does not); SIGTERM ends the wait without InstallFailed.
# 5. --node-condition=no and NVIDIA_NODE_CONDITION=no: no status write at all; an API
#    server that does not answer: one try, no condition write after it, the run not failed.
# Every body sent is valid against Kubernetes' schemas (tests/k8s/check-requests.mjs) and
# every call one the manifests' RBAC grants the installer's service account.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
cat >"$T/cluster.json" <<'JSON'
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"},
  "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True",
  "reason": "KubeletReady", "message": "kubelet is posting ready status",
  "lastHeartbeatTime": "2026-01-02T03:04:05Z", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}}]}
JSON
kube_stub "$T/cluster.json"
node=(--node-name gpu-node-1 --kube-sa-dir "$KUBE_SA")
C=nvidia.com/GPUDriverReady

# cond PY-EXPR over c (our condition, {} when none), ready (the kubelet's), labels.
cond() {
    python3 - "$KUBE_STATE" "$C" "$1" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["nodes"][0]
cs = {c["type"]: c for c in n.get("status", {}).get("conditions", [])}
c, ready = cs.get(sys.argv[2], {}), cs.get("Ready", {})
labels = n["metadata"].get("labels", {})
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
}
# field NAME: our condition's field.
field() {
    python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"][0]
print(next(c for c in n["status"]["conditions"] if c["type"] == sys.argv[2])[sys.argv[3]])' \
        "$KUBE_STATE" "$C" "$1"
}
# node_gets: the installer's reads of its Node (only a condition write reads it).
node_gets() {
    grep -c '"method": "GET", "path": "/api/v1/nodes/gpu-node-1"' "$KUBE_LOG" || true
}
# writes [STATUS]: the requests made to nodes/gpu-node-1/status (answered STATUS, if given).
writes() {
    python3 - "$KUBE_LOG" "${1:-}" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r["path"] == "/api/v1/nodes/gpu-node-1/status"]
print(sum(1 for r in rs if not sys.argv[2] or str(r["status"]) == sys.argv[2]))
PY
}
# agent_says_ready: what the node agent writes once a CUDA job runs (agent/nodecond.c), True
# since $T_READY, so that a transition time kept is told from one set now.
T_READY=2026-01-01T00:00:00Z
agent_says_ready() {
    kube_api PATCH /api/v1/nodes/gpu-node-1/status \
        -H 'Content-Type: application/strategic-merge-patch+json' \
        -d '{"status": {"conditions": [{"type": "'"$C"'", "status": "True", "reason": "CUDAReady", "message": "a CUDA job can run", "lastHeartbeatTime": "'"$T_READY"'", "lastTransitionTime": "'"$T_READY"'"}]}}' \
        >/dev/null
    assert_eq "$(cat "$KUBE_DIR/status")" 200 "the agent's condition write"
}

said_at() { grep -n -- "$1" "$T/err" | sed -n 1p | cut -d: -f1; }

# 1. A node that serves no driver: Installing, said before the download and the load.
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) "${node[@]}"
cond 'c["status"] == "False" and c["reason"] == "Installing" and c["message"] == "installing driver '"$V_OLD"'"' ||
    fail "no Installing: $(cat "$KUBE_STATE")"
cond 'c["lastTransitionTime"] == c["lastHeartbeatTime"]' || fail "the first write's times: $(cat "$KUBE_STATE")"
# The kubelet's condition is as it was (a merge by type).
cond 'ready["lastHeartbeatTime"] == "2026-01-02T03:04:05Z" and ready["reason"] == "KubeletReady"' ||
    fail "the kubelet's condition changed: $(cat "$KUBE_STATE")"
assert_eq "$(writes)" 1 "status writes of a fresh install"
[ "$(said_at "the Node's condition set")" -lt "$(said_at "package downloaded and verified")" ] ||
    fail "Installing came after the download: $(cat "$T/err")"
grep -q "the Node's condition set.*reason=Installing was=none conflicts=0" "$T/err" ||
    fail "the write not logged: $(cat "$T/err")"
# A re-run on the node serving its version: nothing written, the condition as it was.
before=$(field lastHeartbeatTime)
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) "${node[@]}"
expect_err "already installed"
assert_eq "$(writes)" 1 "status writes after a no-op re-run"
assert_eq "$(field lastHeartbeatTime)" "$before" "the heartbeat after a no-op re-run"
# The agent says True; a re-run leaves it so.
agent_says_ready
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) "${node[@]}"
assert_eq "$(writes 200)" 2 "status writes after the agent's and a no-op re-run"
cond 'c["status"] == "True" and c["reason"] == "CUDAReady"' || fail "the re-run flapped: $(cat "$KUBE_STATE")"

# 2. A switch: Installing when it begins, a transition from True. Another writer changes the
# Node between the installer's read and its patch: 409, read again, written.
printf '{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/gpu-node-1/status", "race": {"labels": {"other-writer": "was-here"}}, "times": 1}]}\n' \
    >"$KUBE_FAULTS"
expect_rc 0 install --driver-version "$V_NEW" $(kernel_args) "${node[@]}"
grep -q "the Node's condition set.*reason=Installing was=CUDAReady conflicts=1" "$T/err" ||
    fail "the conflict not logged: $(cat "$T/err")"
[ "$(said_at "the Node's condition set")" -gt "$(said_at "package downloaded and verified")" ] ||
    fail "a node serving a driver said Installing before the switch: $(cat "$T/err")"
cond 'c["status"] == "False" and c["reason"] == "Installing" and c["message"] == "switching from driver '"$V_OLD"' to '"$V_NEW"'"' ||
    fail "no Installing at the switch: $(cat "$KUBE_STATE")"
cond 'c["lastTransitionTime"] != "'"$T_READY"'" and c["lastTransitionTime"] == c["lastHeartbeatTime"]' ||
    fail "no transition from True: $(cat "$KUBE_STATE")"
cond 'labels.get("other-writer") == "was-here"' || fail "the other writer's change lost: $(cat "$KUBE_STATE")"
assert_eq "$(writes 409)" 1 "409s met"
assert_eq "$(installed_version)" "$V_NEW" "the version after the switch"
agent_says_ready

# 3. A run that fails: InstallFailed, the error line and the exit code.
expect_rc 3 install --driver-version 999.1.1 $(kernel_args) "${node[@]}"
cond 'c["status"] == "False" and c["reason"] == "InstallFailed" and "no driver in the repository matches version '"'"'999.1.1'"'"'" in c["message"] and c["message"].endswith("(exit 3)")' ||
    fail "no InstallFailed: $(cat "$KUBE_STATE")"
cond 'c["lastTransitionTime"] != "'"$T_READY"'" and c["lastTransitionTime"] == c["lastHeartbeatTime"]' ||
    fail "no transition from True: $(cat "$KUBE_STATE")"
since=$(field lastTransitionTime)
# Refused where the host is probed (a usage error): said all the same; still False, so the
# transition time stays.
expect_rc 2 install --driver-version "$V_NEW" $(kernel_args) "${node[@]}" --skip-verify
cond 'c["reason"] == "InstallFailed" and c["message"].startswith("--skip-verify is for hosts without a GPU") and c["message"].endswith("(exit 2)")' ||
    fail "the early failure: $(cat "$KUBE_STATE")"
assert_eq "$(field lastTransitionTime)" "$since" "the transition time while False"

# 4. --wait-for-package: WaitingForPackage at each check; SIGTERM is not a failure.
env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$BIN" --root "$T/root" install $(kernel_args) --kernel-release 6.1.0-99-amd64 \
    --driver-version latest --wait-for-package --wait-for-package-interval 1 "${node[@]}" \
    >"$T/wait.out" 2>"$T/wait.log" &
wpid=$!
trap 'rc=$?; kill ${wpid:-} 2>/dev/null || true; [ $rc = 0 ] || tail -20 "$T/wait.log"' EXIT
n0=$(writes 200)
waited() { [ "$(writes 200)" -ge $((n0 + ${1})) ]; }
wait_for "WaitingForPackage" 30 waited 1
cond 'c["status"] == "False" and c["reason"] == "WaitingForPackage" and "waiting for the repository to serve kernel 6.1.0-99-amd64" in c["message"]' ||
    fail "no WaitingForPackage: $(cat "$KUBE_STATE")"
beat=$(field lastHeartbeatTime)
# The heartbeat moves with the checks (each at least 1 s apart), the transition does not.
heartbeat_moved() { [ "$(field lastHeartbeatTime)" != "$beat" ]; }
wait_for "a later check's heartbeat" 30 heartbeat_moved
assert_eq "$(field lastTransitionTime)" "$since" "the transition time while waiting"
n1=$(writes 200)
kill -TERM "$wpid"
set +e
wait "$wpid"
rc=$?
set -e
wpid=
assert_eq "$rc" 143 "the exit on SIGTERM while waiting"
cond 'c["reason"] == "WaitingForPackage"' || fail "SIGTERM said more: $(cat "$KUBE_STATE")"
[ "$(writes 200)" -le $((n1 + 1)) ] || fail "writes after SIGTERM: $(writes 200) after $n1"

# 5. --node-condition=no, NVIDIA_NODE_CONDITION=no: no status write, whatever the run does.
n=$(writes)
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args) "${node[@]}" --node-condition=no
assert_eq "$(installed_version)" "$V_OLD" "the version after the switch back"
NVIDIA_NODE_CONDITION=no expect_rc 3 install --driver-version 999.1.1 $(kernel_args) "${node[@]}"
assert_eq "$(writes)" "$n" "status writes with --node-condition=no"
grep -q '"PATCH", "path": "/api/v1/nodes/gpu-node-1"' "$KUBE_LOG" || fail "no annotation either"
# An API server that answers 503 to everything: the first call gives up within its deadline,
# no condition write is tried after it, and the run (a switch, which would say Installing,
# then a failure) goes on as without one.
printf '{"faults": [{"path": "/api/v1/nodes/gpu-node-1.*", "status": 503, "times": 1000}]}\n' >"$KUBE_FAULTS"
n=$(node_gets)
expect_rc 0 install --driver-version "$V_NEW" $(kernel_args) "${node[@]}"
[ "$(grep -c "the Node could not be told" "$T/err")" = 1 ] || fail "not said once: $(cat "$T/err")"
assert_eq "$(node_gets)" "$n" "condition writes tried after a call had no answer"
assert_eq "$(installed_version)" "$V_NEW" "the switch with the API server down"
printf '{"faults": []}\n' >"$KUBE_FAULTS"

# Every body against the Kubernetes schemas; every call one the RBAC rules grant.
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
grep -q "Node/status [0-9]" "$T/schema.out" || fail "no status patch checked: $(cat "$T/schema.out")"
for m in daemonset-preloaded.yaml daemonset-generic.yaml; do
    python3 "$SRC/tests/tools/rbac-check.py" --calls-only "$SRC/$m" nvidia-driver-installer "$KUBE_LOG" \
        >"$T/rbac.out" 2>&1 || fail "RBAC ($m): $(cat "$T/rbac.out")"
done
