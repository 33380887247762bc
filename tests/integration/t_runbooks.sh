# plain build: docs/operations.md followed as written; each command it runs has a test of its own
# docs/operations.md, followed as written: each ```sh test=NAME block of the document is
# extracted and run here, unchanged, in a shell where only the document's variables (REPO,
# KEY, IMAGE, MANIFEST, GPU_NODES, NODE, VERSION, MIRROR_DIR) take this test's values.
# `nvidia-driver-installer` is this build; `kubectl` is a stand-in cluster of one node whose
# host is the fake root (tests/tools/runbook.py): `apply` and `debug` are kubectl itself
# against tests/tools/kube-stub.py (dry run; the debug pod kubectl makes is decoded, and its
# command run with its /host mount mapped to the fake root), `set env` and `patch` are
# kubectl --local on the applied DaemonSet (with a kubectl older than the runbooks' 1.30,
# see below), and the DaemonSet's pod runs its init container with the manifest's env and
# mounts mapped the same way. Every block must be run by a scenario below; a command the
# stand-in does not know fails.
FAKE_KERNEL=1
RB=$SRC/tests/tools/runbook.py
DOC=$SRC/docs/operations.md
# The kubectl: $KUBECTL, else PATH's (run.sh puts /usr/bin first).
export KUBECTL=${KUBECTL:-kubectl}
command -v "$KUBECTL" >/dev/null || fail "kubectl is needed (scripts/deps.sh installs kubernetes-client)"
# The runbooks are written for kubectl 1.30 or later: debug's sysadmin profile (1.30), `set
# env -c` reaching an init container (1.22). With an older one (Debian 12's
# kubernetes-client is 1.20.2) the stand-in asks kubectl which of the two it lacks and
# carries out only that, as kubectl 1.30+ does (tests/tools/runbook.py cites the source),
# saying so on stderr; everything else is that kubectl's own work.
echo "kubectl: $("$KUBECTL" version --client 2>/dev/null | sed -n 1p)"
python3 -c 'import yaml' || fail "python3-yaml is needed (scripts/deps.sh)"

exec {kfd}< <(exec python3 "$SRC/tests/tools/kube-stub.py" "$T/debug-pods.json" 300)
kpid=$!
# Stopped however the test ends (a failing step exits early).
trap 'kill "$kpid" 2>/dev/null' EXIT
read -r KUBE_PORT <&"$kfd" || fail "the API stand-in did not start"
export KUBE_PORT KUBE_PODS=$T/debug-pods.json CLUSTER=$T/cluster HOST_ROOT=$T/root
export IMAGE=registry.example.com/nvidia-driver-installer:1 NODE=gpu-node-1 NODE_KERNEL=$KERNEL
KEY=$FIX/keys/pub.pem
GPU_NODES=nvidia.com/gpu.present=true
MANIFEST=daemonset-generic.yaml
# The kubelet labels every node with its architecture (kubernetes.io/arch).
export NODE_LABELS='{"nvidia.com/gpu.present": "true", "cloud.google.com/gke-nodepool": "training", "kubernetes.io/arch": "amd64"}'
GKE_LABELS='{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "cloud.google.com/gke-nodepool": "training", "kubernetes.io/arch": "amd64"}'

kubectl() { python3 "$RB" kubectl "$@"; }
nvidia-driver-installer() { "$BIN" "$@"; }

# A scratch node (fake root with a GPU and a kernel), an empty cluster, and the operator's
# working directory with both manifests adapted as the README says: the repository's URL,
# its public key and the fleet's exact driver version in place of the placeholders.
# fresh_cluster REPO_URL VERSION
fresh_cluster() {
    rm -rf "$T/root" "$CLUSTER" "$T/ws"
    mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
    mkkernel "$T/root"
    echo 'include /etc/ld.so.conf.d/*.conf' >"$T/root/etc/ld.so.conf"
    mkdir -p "$CLUSTER/ds" "$CLUSTER/pods" "$CLUSTER/home" "$T/ws"
    ln -s "$SRC/scripts" "$T/ws/scripts"
    for m in daemonset-generic.yaml daemonset-preloaded.yaml; do
        python3 - "$SRC/$m" "$T/ws/$m" "$1" "$KEY" "$2" <<'PY'
import sys
src, dst, url, key, version = sys.argv[1:]
t = open(src).read()
assert "https://drivers.example.com/nvidia" in t
t = t.replace("https://drivers.example.com/nvidia", url)
pinned = 'value: "550.90.07" #'
assert pinned in t, "the manifest pins no version"
t = t.replace(pinned, 'value: "%s" #' % version)
pem = "".join("    " + l + "\n" for l in open(key).read().strip().split("\n"))
old = "    -----BEGIN PUBLIC KEY-----\n    REPLACE-WITH-YOUR-REPOSITORY-PUBLIC-KEY\n    -----END PUBLIC KEY-----\n"
assert old in t
open(dst, "w").write(t.replace(old, pem))
PY
    done
    NODE_KERNEL=$KERNEL
}

ran=""
# run_block NAME [RC]: the document's block NAME, run as written; its exit status must be RC.
run_block() {
    local name=$1 want=${2:-0} rc
    python3 "$RB" block "$DOC" "$name" >"$T/block.sh"
    echo "+ docs/operations.md test=$name (expect exit $want)"
    set +e
    (set -e; cd "$T/ws"; . "$T/block.sh") >"$T/block.out" 2>&1
    rc=$?
    set -e
    cat "$T/block.out"
    ran="$ran $name"
    assert_eq "$rc" "$want" "docs/operations.md test=$name: $(tail -3 "$T/block.out")"
}
block_out() { grep -q -- "$1" "$T/block.out" || fail "test=$(echo "$ran" | awk '{print $NF}') output lacks '$1'"; }
pod_runs() { if [ -f "$CLUSTER/pods/runs" ]; then wc -l <"$CLUSTER/pods/runs"; else echo 0; fi; }
# The last pod run: "DAEMONSET EXIT"; a failed one shows its log's end.
last_run() {
    local r
    r=$(tail -1 "$CLUSTER/pods/runs")
    [ "${r##* }" = 0 ] || tail -3 "$CLUSTER/pods/${r% *}.log" >&2
    echo "$r"
}
# A GPU workload on the node: a process with /dev/nvidiactl open, as /proc shows it.
gpu_workload() {
    mkdir -p "$T/root/proc/4242/fd"
    ln -sfn /dev/nvidiactl "$T/root/proc/4242/fd/3"
    echo cuda-app >"$T/root/proc/4242/comm"
}
reboot_node() { # the node restarts: modules and /run are gone, the disk stays
    rm -rf "$T/root/sys/module/nvidia"* "$T/root/proc/driver" "$T/root/proc/modules" "$T/root/run"
}

# ---- 1, 2, 3: a fleet pinned to one version; upgrade, then rollback; a node debugged ----
fresh_cluster "file://$T/repo" "$V_OLD"
REPO=file://$T/repo
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 0" "the first install on the node"
assert_eq "$(installed_version)" "$V_OLD" "installed by the DaemonSet's pod"
# With kubectl 1.30+ at hand, what stands in for it with an older one gives the same.
python3 "$RB" emulation-check "$CLUSTER/ds/DaemonSet-nvidia-driver-installer.yaml"
# Pinned, the fleet changes driver only by a rollout: the repository's default tag moves,
# the node reboots and its pod starts again, and it keeps its version.
rm -rf "$T/repo"
new_signed_repo "$T/repo" "$V_OLD" "$V_NEW:default"
reboot_node
kubectl -n kube-system delete pod --field-selector spec.nodeName=$NODE -l k8s-app=nvidia-driver-installer >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 0" "the pod after a reboot"
assert_eq "$(installed_version)" "$V_OLD" "the pinned node after the default tag moved"
rm -rf "$T/repo"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
gpu_workload

run_block debug-doctor 0
block_out "\[ok *\] *loaded"
# kubectl made the pod the runbook describes.
python3 - "$T/debug-pods.json" <<'PY'
import json, sys
p = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = p["containers"][0]
assert p["nodeName"] == "gpu-node-1" and p["hostPID"] and p["hostNetwork"] and p["hostIPC"], p
assert c["privileged"] and c["command"][:3] == ["nvidia-driver-installer", "--root", "/host"], c
assert {"key": "", "operator": "Exists"} in p["tolerations"], p
assert [m["mountPath"] for m in c["volumeMounts"]] == ["/host"], c
assert [v["hostPath"] for v in p["volumes"]] == ["/"], p
PY
run_block debug-status 0
block_out "driver_version\": \"$V_OLD\""

VERSION=$V_NEW
run_block upgrade-coverage 0
runs=$(pod_runs)
run_block upgrade-set 0
assert_eq "$(pod_runs)" "$runs" "pods replaced by upgrade-set (OnDelete must come first)"
python3 -c 'import sys, yaml; u = yaml.safe_load(open(sys.argv[1]))["spec"]["updateStrategy"]
assert u == {"type": "OnDelete"}, u' "$CLUSTER/ds/DaemonSet-nvidia-driver-installer.yaml"
assert_eq "$(installed_version)" "$V_OLD" "the node after upgrade-set"
# Without the drain the new pod's install does not unload a driver in use: the manifests'
# NVIDIA_WHEN_BUSY=defer stages and verifies the new version, keeps the old one serving
# (exit 0, the pod Ready) and leaves the new one pending until the drain.
kubectl -n kube-system delete pod --field-selector spec.nodeName=$NODE -l k8s-app=nvidia-driver-installer >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 0" "an undrained node"
assert_eq "$(installed_version)" "$V_OLD" "the undrained node's driver"
# pending_is VERSION: status --json says VERSION waits for the busy driver (status exits 8
# here: NVML is not faked outside the pod; its document still says).
pending_is() {
    local st rc=0
    st=$("$BIN" --root "$T/root" status --json 2>"$T/status.err") || rc=$?
    [ $rc = 0 ] || [ $rc = 8 ] || fail "status exited $rc: $(cat "$T/status.err")"
    ! grep -q Sanitizer "$T/status.err" || fail "status: $(cat "$T/status.err")"
    python3 -c 'import json, sys
p = json.loads(sys.argv[1])["pending_upgrade"]
assert p and p["driver_version"] == sys.argv[2] and p["reason"] == "driver_in_use", p' "$st" "$1"
}
pending_is "$V_NEW"
run_block upgrade-node 0
block_out "condition met"
assert_eq "$(installed_version)" "$V_NEW" "the node after upgrade-node"
run_block upgrade-check 0
block_out "driver_version: $V_NEW"
runs=$(pod_runs)
run_block upgrade-done 0
assert_eq "$(pod_runs)" "$runs" "pods replaced by upgrade-done (the template did not change)"
# The strategy is the manifest's again, as tests/k8s/check-manifest.mjs requires it.
python3 -c 'import sys, yaml; u = yaml.safe_load(open(sys.argv[1]))["spec"]["updateStrategy"]
assert u == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, u' \
    "$CLUSTER/ds/DaemonSet-nvidia-driver-installer.yaml"

# Rollback: runbook 2 from step 3 with the previous version. The node's cache keeps only
# the current package: the repository must still serve the old one (the runbook says so).
VERSION=$V_OLD
gpu_workload
mv "$T/repo/packages" "$T/packages.away"
run_block upgrade-set 0
run_block upgrade-node 1
assert_eq "$(last_run)" "nvidia-driver-installer 4" "a rollback whose package the repository lost"
mv "$T/packages.away" "$T/repo/packages"
run_block upgrade-node 0
assert_eq "$(installed_version)" "$V_OLD" "the node after the rollback"
run_block upgrade-done 0

# The node reboots and its pod has not run yet: doctor says so, a new pod fixes it.
reboot_node
run_block debug-doctor 9
block_out "\[fail\] *loaded"
run_block debug-rerun 0
block_out "\"msg\""
run_block debug-doctor 0

# ---- 2 on GKE: a pool where we run GKE's plugin, so the node's pod is the second
# DaemonSet's; the upgrade's loops change both DaemonSets ----
fresh_cluster "file://$T/repo" "$V_OLD"
MANIFEST=daemonset-preloaded.yaml
NODE_LABELS='{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "gke-no-default-nvidia-gpu-device-plugin": "true", "kubernetes.io/arch": "amd64"}'
kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer-plugin 0" "GKE: the plugin DaemonSet's first install"
assert_eq "$(installed_version)" "$V_OLD" "GKE: before the upgrade"
gpu_workload
VERSION=$V_NEW
runs=$(pod_runs)
run_block upgrade-set 0
assert_eq "$(pod_runs)" "$runs" "GKE: pods replaced by upgrade-set"
for ds in nvidia-driver-installer nvidia-driver-installer-plugin; do
    python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1]))["spec"]
u, e = d["updateStrategy"], d["template"]["spec"]["initContainers"][0]["env"]
assert u == {"type": "OnDelete"}, u
assert {"name": "NVIDIA_DRIVER_VERSION", "value": sys.argv[2]} in e, e' "$CLUSTER/ds/DaemonSet-$ds.yaml" "$V_NEW"
done
run_block upgrade-node 0
assert_eq "$(last_run)" "nvidia-driver-installer-plugin 0" "GKE: the plugin DaemonSet's upgrade"
assert_eq "$(installed_version)" "$V_NEW" "GKE: after the upgrade"
run_block upgrade-done 0
MANIFEST=daemonset-generic.yaml
NODE_LABELS='{"nvidia.com/gpu.present": "true", "cloud.google.com/gke-nodepool": "training", "kubernetes.io/arch": "amd64"}'

# ---- 2, the plain rollout under the manifests' defer, on both manifests: the busy node's
# new pod keeps the old driver serving with the new version pending, exits 0 and is Ready,
# so the rollout goes on; the node is finished as step 3 says. A pod that is not Ready stops
# the rollout there. ----
for MANIFEST in daemonset-generic.yaml daemonset-preloaded.yaml; do
    fresh_cluster "file://$T/repo" "$V_OLD"
    [ "$MANIFEST" = daemonset-generic.yaml ] || NODE_LABELS=$GKE_LABELS
    kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
    assert_eq "$(last_run)" "nvidia-driver-installer 0" "$MANIFEST: before the plain rollout"
    gpu_workload
    VERSION=$V_NEW
    runs=$(pod_runs)
    run_block rollout-plain 0
    assert_eq "$(pod_runs)" "$((runs + 1))" "$MANIFEST: pods replaced by the plain rollout (the node's one)"
    assert_eq "$(last_run)" "nvidia-driver-installer 0" "$MANIFEST: the busy node's new pod"
    block_out 'daemon set "nvidia-driver-installer" successfully rolled out'
    # Each DaemonSet: the version set on its init container, still rolling one node at a time
    # under defer.
    for f in "$CLUSTER"/ds/DaemonSet-*.yaml; do
        python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1]))["spec"]
u, e = d["updateStrategy"], d["template"]["spec"]["initContainers"][0]["env"]
assert u == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, u
assert {"name": "NVIDIA_DRIVER_VERSION", "value": sys.argv[2]} in e, e
assert {"name": "NVIDIA_WHEN_BUSY", "value": "defer"} in e, e' "$f" "$V_NEW"
    done
    [ "$MANIFEST" = daemonset-generic.yaml ] ||
        block_out 'daemon set "nvidia-driver-installer-plugin" successfully rolled out'
    assert_eq "$(installed_version)" "$V_OLD" "$MANIFEST: the busy node's driver"
    pending_is "$V_NEW"
    # Step 3: the node finished now, with "Node by node" step 4 as written.
    run_block upgrade-node 0
    block_out "condition met"
    assert_eq "$(installed_version)" "$V_NEW" "$MANIFEST: the node after its drain"
    # A pod that does not become Ready (here the policy turned to fail: exit 7 on the busy
    # node) stops the rollout: rollout status does not finish, and the loop stops.
    kubectl -n kube-system set env daemonset/nvidia-driver-installer -c nvidia-driver-installer NVIDIA_WHEN_BUSY=fail >/dev/null
    assert_eq "$(last_run)" "nvidia-driver-installer 0" "$MANIFEST: the same version under fail"
    gpu_workload
    VERSION=$V_OLD
    run_block rollout-plain 1
    assert_eq "$(last_run)" "nvidia-driver-installer 7" "$MANIFEST: the busy node under fail"
    block_out 'Waiting for daemon set "nvidia-driver-installer" rollout to finish: 0 of 1 updated pods are available'
    grep -q "timed out waiting for the condition" "$T/block.out" || fail "$MANIFEST: rollout status did not fail"
done
MANIFEST=daemonset-generic.yaml
NODE_LABELS='{"nvidia.com/gpu.present": "true", "cloud.google.com/gke-nodepool": "training", "kubernetes.io/arch": "amd64"}'

# ---- 4: a new kernel coming ----
fresh_cluster "file://$T/repo2" "$V_NEW"
new_signed_repo "$T/repo2" "$V_NEW:default"
REPO=file://$T/repo2
kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
assert_eq "$(installed_version)" "$V_NEW" "before the node image upgrade"
# Without the check: the node comes back on a kernel the repository has no package for.
KERNEL=$OTHER_KERNEL mkkernel "$T/root"
reboot_node
export NODE_KERNEL=$OTHER_KERNEL
run_block kernel-coverage 3
block_out "has no package for kernel $OTHER_KERNEL"
# The fleet: the image the node now runs, and the one it ran.
printf '{"fleet": 1, "images": [{"name": "old-image", "os": "cos", "build": "17800.66.78", "kernel": "%s", "driver_versions": ["%s"]},
 {"name": "new-image", "os": "cos", "build": "17800.66.78", "kernel": "%s", "driver_versions": ["%s"]}]}\n' \
    "$KERNEL" "$V_NEW" "$OTHER_KERNEL" "$V_NEW" >"$T/ws/fleet.json"
run_block fleet-coverage 3
block_out "served: old-image: '$V_NEW' (auto) is driver $V_NEW"
block_out "not served: new-image: '$V_NEW' (auto): driver $V_NEW has no package for kernel $OTHER_KERNEL"
# The manifests' installer (NVIDIA_WAIT_FOR_PACKAGE=yes) waits for the package, its pod in
# init: the kubelet's part (the stand-in's delete, which runs the init container) goes on in
# the background until it ends.
kubectl -n kube-system delete pod --field-selector spec.nodeName=$NODE -l k8s-app=nvidia-driver-installer \
    >/dev/null &
initpid=$!
pod_log_has() { grep -q -- "$1" "$CLUSTER/pods/nvidia-driver-installer.log" 2>/dev/null; }
wait_for "the installer waiting for its package" 30 pod_log_has "waiting for the repository to serve this node's package"
pod_log_has "has no package for kernel $OTHER_KERNEL" ||
    fail "the install on the new kernel: $(tail -2 "$CLUSTER/pods/nvidia-driver-installer.log")"
# Step 3: the package for that kernel is built and published; the check then passes, and the
# waiting installer installs it at its next check, with no restart of the pod.
"$SRC/scripts/make-repo" add --repo "$T/repo2" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" "$FIX/opkg.tar.zst" >/dev/null
run_block kernel-coverage 0
run_block fleet-coverage 0
block_out "served: new-image: '$V_NEW' (auto) is driver $V_NEW"
wait "$initpid" || fail "the stand-in's pod deletion"
assert_eq "$(last_run)" "nvidia-driver-installer 0" "the node on the new kernel, after its wait"
pod_log_has "the repository serves this node's package" || fail "no wait: $(tail -3 "$CLUSTER/pods/nvidia-driver-installer.log")"
kubectl -n kube-system delete pod --field-selector spec.nodeName=$NODE -l k8s-app=nvidia-driver-installer >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 0" "the node on the new kernel, once covered"
export NODE_KERNEL=$KERNEL

# ---- 5: per-node-pool pinning, on both manifests ----
for MANIFEST in daemonset-generic.yaml daemonset-preloaded.yaml; do
    fresh_cluster "file://$T/repo3" "$V_NEW"
    [ -d "$T/repo3" ] || new_signed_repo "$T/repo3" "$V_NEW:default" "$V_OLD"
    [ "$MANIFEST" = daemonset-generic.yaml ] || NODE_LABELS=$GKE_LABELS
    kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
    assert_eq "$(installed_version)" "$V_NEW" "$MANIFEST: before pinning"
    VERSION=$V_OLD
    run_block pools-derive 0
    python3 "$RB" covers "$T/ws/$MANIFEST" "$T/ws/pools"
    # The checker refuses an overlap: the fleet's manifest as it was, beside a pool's.
    if python3 "$RB" exclusive "$T/ws/$MANIFEST" "$T/ws/pools/${MANIFEST%.yaml}-pool-training.yaml" 2>"$T/err"; then
        fail "two DaemonSets selecting one node passed the check"
    fi
    expect_err "two DaemonSets select one node"
    # The derivation refuses its own output (pinned twice), the original's directory as
    # --out, and a pool name that cannot name an object.
    pd() { (cd "$T/ws" && scripts/pool-daemonsets "$@") >/dev/null 2>"$T/err" && fail "pool-daemonsets $*: accepted"; true; }
    pd --label cloud.google.com/gke-nodepool --pool other=550 --out again "pools/$MANIFEST"
    expect_err "already selects on cloud.google.com/gke-nodepool: derive from the original manifest"
    pd --label cloud.google.com/gke-nodepool --pool other=550 --out . "$MANIFEST"
    expect_err "is the manifest's own directory"
    pd --label cloud.google.com/gke-nodepool --pool Other_1=550 "$MANIFEST"
    expect_err "want VALUE=VERSION"
    run_block pools-apply 0
    block_out "daemonset.apps/nvidia-driver-installer-pool-training created (dry run)"
    assert_eq "$(last_run)" "nvidia-driver-installer-pool-training 0" "$MANIFEST: the pool's DaemonSet ran"
    assert_eq "$(installed_version)" "$V_OLD" "$MANIFEST: the pinned pool's node"
    # The pinned DaemonSet runs the same installer as the fleet's, but for the version
    # (tests/k8s/check-manifest.mjs on the pool's DaemonSets beside the shared objects).
    k8s_node_modules
    python3 - "$T/ws/pools/$MANIFEST" "$T/ws/pools/${MANIFEST%.yaml}-pool-training.yaml" "$T/check.yaml" <<'PY'
import sys
import yaml
main = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] != "DaemonSet"]
pool = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
yaml.safe_dump_all(main + pool, open(sys.argv[3], "w"))
PY
    profile=generic
    [ "$MANIFEST" = daemonset-generic.yaml ] || profile=gke
    node "$SRC/tests/k8s/check-manifest.mjs" "$profile" "$T/check.yaml" >"$T/pool.json"
    python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; assert e["NVIDIA_DRIVER_VERSION"] == sys.argv[2], e' \
        "$T/pool.json" "$V_OLD"
done
NODE_LABELS='{"nvidia.com/gpu.present": "true", "cloud.google.com/gke-nodepool": "training", "kubernetes.io/arch": "amd64"}'
MANIFEST=daemonset-generic.yaml

# ---- 6: air-gapped mirror: a host directory, as the container sees it ----
fresh_cluster "http://127.0.0.1:$(dead_port)/nvidia" "$V_NEW"
new_signed_repo "$T/repo4" "$V_NEW:default"
REPO=file://$T/repo4
VERSION=$V_NEW
MIRROR_DIR=$T/root/var/lib/nvidia-mirror
kubectl apply -f "$T/ws/$MANIFEST" >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 4" "a node that cannot reach the repository"
run_block airgap-mirror 0
[ -f "$MIRROR_DIR/index.json" ] || fail "the mirror holds no index"
# The host's path as a file:// URL is a path of the image, where nothing is (the README's
# old file:///mnt/nvidia-mirror): exit 4.
kubectl -n kube-system set env daemonset/nvidia-driver-installer -c nvidia-driver-installer \
    NVIDIA_DRIVER_REPO=file:///var/lib/nvidia-mirror >/dev/null
assert_eq "$(last_run)" "nvidia-driver-installer 4" "file:// with the host's path"
run_block airgap-hostpath 0
assert_eq "$(last_run)" "nvidia-driver-installer 0" "file:// under ROOT_MOUNT_DIR"
assert_eq "$(installed_version)" "$V_NEW" "installed from the mirror"
# The volume's way, on a node without a cache (else the cache would serve it).
expect_rc 0 uninstall
rm -rf "$T/root/var/cache/nvidia-driver-installer"
run_block airgap-volume 0
assert_eq "$(last_run)" "nvidia-driver-installer 0" "file:// at the mirror's own mount"
# The last run (the volume's URL; the patch before it rolled the node onto the mirror by
# its host path) verified the index from the mirror through the volume, found the same
# version installed, and changed nothing.
log=$CLUSTER/pods/nvidia-driver-installer.log
grep -q "\"source\":\"file://$MIRROR_DIR\"" "$log" ||
    fail "not served by the mirror: $(grep index "$log" | tail -2)"
! grep -q "using the cached index" "$log" || fail "the volume's URL fell back to the cache"
grep -q "already installed" "$log" || fail "the same version again: $(tail -2 "$log")"

# ---- 7: uninstall across the fleet ----
gpu_workload
run_block uninstall-delete 0
[ ! -e "$CLUSTER/ds/DaemonSet-nvidia-driver-installer.yaml" ] || fail "the DaemonSet is still there"
run_block uninstall-nodes 0
block_out "driver removed"
expect_rc 3 status
assert_eq "$(loaded_modules)" "drm drm_kms_helper " "modules after uninstall (the kernel's own stay)"
[ ! -e "$T/root/var/cache/nvidia-driver-installer" ] || fail "the cache is still there"

# Every block of the document was followed: here, or (agent-*) by the agent's upgrade
# tests, with kubectl against the API server stand-in the agent worked on.
for b in $(python3 "$RB" blocks "$DOC"); do
    case " $ran " in *" $b "*) continue ;; esac
    case $b in
    agent-*) grep -Eq "^run_doc_block $b( |$)" "$SRC"/tests/integration/t_agent_upgrade*.sh ||
        fail "docs/operations.md test=$b is run by no agent upgrade test" ;;
    *) fail "docs/operations.md test=$b is not run by t_runbooks" ;;
    esac
done
