# plain build: the manifests against the Kubernetes schemas and kubectl; the binary paths
# they take (the configuration, a first install) have tests of their own
# daemonset-preloaded.yaml (GKE) and daemonset-generic.yaml (other clusters): valid against
# Kubernetes' own schemas (offline, unknown fields refused: tests/k8s/kubeschema.mjs), with
# the scheduling, tolerations, privilege, mounts, env and device plugin each kind of cluster
# needs
# (tests/k8s/check-manifest.mjs, which cites the plugins' sources), every command runnable
# by its image, accepted by kubectl's `apply --dry-run=client`, and every flag and variable
# the installer gets accepted by the binary's own parser (the config command).
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
# The kubectl: $KUBECTL, else PATH's (run.sh puts /usr/bin first).
KUBECTL=${KUBECTL:-kubectl}
command -v "$KUBECTL" >/dev/null || fail "kubectl is needed (scripts/deps.sh installs kubernetes-client)"
k8s_node_modules
check() { node "$SRC/tests/k8s/check-manifest.mjs" "$@"; }
gke=$SRC/daemonset-preloaded.yaml
generic=$SRC/daemonset-generic.yaml
check gke "$gke" >"$T/manifest.json"
check generic "$generic" >"$T/generic.json"
cat "$T/manifest.json"
cmp "$T/manifest.json" "$T/generic.json" || fail "the two manifests run different installers"

# kubectl, offline: tests/k8s/discovery.py answers discovery, and 404 for every object.
exec {kfd}< <(exec python3 "$SRC/tests/k8s/discovery.py")
kpid=$!
read -r kport <&"$kfd" || fail "the discovery server did not start"
kube() {
    HOME=$T/kube "$KUBECTL" --server "http://127.0.0.1:$kport" apply --dry-run=client --validate=false -f "$1"
}
kube "$gke" >"$T/kubectl.out"
assert_eq "$(cat "$T/kubectl.out")" "configmap/nvidia-driver-installer-keys created (dry run)
serviceaccount/nvidia-driver-installer-plugin created (dry run)
clusterrole.rbac.authorization.k8s.io/nvidia-driver-installer-plugin created (dry run)
clusterrolebinding.rbac.authorization.k8s.io/nvidia-driver-installer-plugin created (dry run)
serviceaccount/nvidia-driver-installer created (dry run)
clusterrole.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
clusterrolebinding.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
role.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
rolebinding.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
daemonset.apps/nvidia-driver-installer created (dry run)
daemonset.apps/nvidia-driver-installer-plugin created (dry run)" "kubectl on the GKE manifest"
kube "$generic" >"$T/kubectl.out"
assert_eq "$(cat "$T/kubectl.out")" "configmap/nvidia-driver-installer-keys created (dry run)
serviceaccount/nvidia-driver-installer created (dry run)
clusterrole.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
clusterrolebinding.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
role.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
rolebinding.rbac.authorization.k8s.io/nvidia-driver-installer created (dry run)
daemonset.apps/nvidia-driver-installer created (dry run)
daemonset.apps/nvidia-driver-installer-dra created (dry run)" "kubectl on the generic manifest"
# kubectl can refuse: a kind it does not know, a document it cannot parse.
sed 's/^kind: DaemonSet$/kind: DaemonSett/' "$gke" >"$T/kind.yaml"
kube "$T/kind.yaml" >/dev/null 2>"$T/err" && fail "kubectl accepted an unknown kind"
grep -q 'no matches for kind "DaemonSett"' "$T/err" || fail "kubectl: $(cat "$T/err")"
sed 's/^  namespace: kube-system$/  namespace: [kube-system/' "$generic" >"$T/parse.yaml"
kube "$T/parse.yaml" >/dev/null 2>&1 && fail "kubectl accepted a torn document"
kill "$kpid"

# The binary parses exactly what the manifest gives it, knows every variable, and passes
# its pre-flight check (config) once the operator has put a real key in the ConfigMap:
# the key file is the ConfigMap's repo.pem, at a path of this test's.
mkdir -p "$T/keys"
python3 - "$gke" "$T/keys/repo.pem" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"\n  repo\.pem: \|\n((?:    .*\n)+)", text)
assert m, "no repo.pem in the ConfigMap"
open(sys.argv[2], "w").write("".join(l[4:] + "\n" for l in m.group(1).splitlines()))
PY
python3 - "$T/manifest.json" "$T/keys/repo.pem" >"$T/cmd" <<'PY'
import json, shlex, sys
m = json.load(open(sys.argv[1]))
assert m["args"][0] == "install", m["args"]
key = m["env"]["NVIDIA_DRIVER_REPO_KEY"]
assert key == "/etc/nvidia-driver-installer/keys/repo.pem", key
m["env"]["NVIDIA_DRIVER_REPO_KEY"] = sys.argv[2]
env = " ".join(shlex.quote("%s=%s" % kv) for kv in m["env"].items())
print("env -i PATH=/usr/bin:/bin %s \"$BIN\" config %s" % (env, " ".join(map(shlex.quote, m["args"][1:]))))
PY
# As shipped, the ConfigMap holds a placeholder: config refuses it, naming the variable.
set +e
eval "$(cat "$T/cmd")" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "config with the manifest's placeholder key"
expect_err "NVIDIA_DRIVER_REPO_KEY): '$T/keys/repo.pem' is the manifest's placeholder, not a key"
cp "$FIX/keys/pub.pem" "$T/keys/repo.pem"
set +e
eval "$(cat "$T/cmd")" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 0 "config under the manifest's env: $(cat "$T/err")"
python3 - "$T/out" "$T/manifest.json" <<'PY'
import json, sys
c, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c["environment_unknown"] == [], c
assert sorted(c["environment_read"]) == sorted(m["env"]), (c["environment_read"], m["env"])
assert c["root"] == "/root" and c["log_format"] == "json", c
assert c["repos"] == [m["env"]["NVIDIA_DRIVER_REPO"]], c
PY

# The checks can fail: a misspelt variable, a lost Bidirectional, a missing toleration.
# (A misspelt NVIDIA_DRIVER_VERSION is the manifest check's own refusal, below.)
sed 's/NVIDIA_INSTALL_DIR_CONTAINER$/NVIDIA_INSTAL_DIR_CONTAINER/' "$gke" >"$T/typo.yaml"
check gke "$T/typo.yaml" >"$T/typo.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(" ".join("%s=%s" % kv for kv in m["env"].items()))' \
    "$T/typo.json" >"$T/typo.env"
set +e
env -i PATH=/usr/bin:/bin $(cat "$T/typo.env") "$BIN" config >/dev/null 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "a misspelt variable"
expect_err "unknown environment variable NVIDIA_INSTAL_DIR_CONTAINER"

# A broken copy of a manifest fails its check on an assertion (not on a crash).
rejects() { # PROFILE FILE WHAT
    check "$1" "$2" >/dev/null 2>"$T/err" && fail "$3 passed the manifest check"
    echo "REJECT $3: $(grep -m1 -o "Error.*" "$T/err")" >&2
    grep -q "AssertionError\|ValidationError\|must be" "$T/err" || fail "$3: $(cat "$T/err")"
}
# edit IN OLD NEW OUT: OUT is IN with the first OLD replaced by NEW (OLD must be there).
edit() {
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t, sys.argv[2]
open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3], 1))' "$@"
}
edit "$gke" "mountPropagation: Bidirectional" "mountPropagation: HostToContainer" "$T/noprop.yaml"
rejects gke "$T/noprop.yaml" "HostToContainer"
edit "$gke" "        - operator: Exists
" "" "$T/notol.yaml"
rejects gke "$T/notol.yaml" "a manifest without the catch-all toleration"
# Wrong types, and formats the API server's decoding refuses (kubeschema.mjs, FORMATS): a
# ConfigMap's binaryData not base64, a containerPort out of int32, an overhead not a quantity.
sed 's/priorityClassName: system-node-critical/priorityClassName: 5/; s/maxUnavailable: 1/maxUnavailable: {a: b}/
s/^data:$/binaryData: {blob: not-base64!}\ndata:/; 0,/containerPort: 9470$/s//containerPort: 99999999999/
0,/priorityClassName: 5$/s//&\n      overhead: {cpu: lots}/' "$gke" >"$T/schema.yaml"
rejects gke "$T/schema.yaml" "a schema violation"
for e in "ConfigMap nvidia-driver-installer-keys: binaryData.blob: must match format \"byte\"" \
    "DaemonSet nvidia-driver-installer: spec.template.spec.priorityClassName: must be string" \
    "spec.template.spec.overhead.cpu: must match format \"quantity\"" \
    "ports.0.containerPort: must match format \"int32\""; do
    grep -qF "$e" "$T/err" || fail "a schema violation not refused with '$e': $(cat "$T/err")"
done
# Unknown fields, refused as kubectl's strict field validation refuses them
# (tests/k8s/kubeschema.mjs, Kubernetes' own schemas): a misspelt field of a DaemonSet's
# pod spec and of a ClusterRoleBinding, in one copy.
edit "$gke" "priorityClassName: system-node-critical" "priorityClass: system-node-critical" "$T/unknown.yaml"
edit "$T/unknown.yaml" "roleRef:" "roleref:" "$T/unknown.yaml"
rejects gke "$T/unknown.yaml" "misspelt fields"
grep "ClusterRoleBinding nvidia-driver-installer-plugin: " "$T/err" |
    grepq -F "(root): must NOT have additional properties: roleref" ||
    fail "a misspelt roleRef is refused for another reason: $(cat "$T/err")"
sed 's/roleref:/roleRef:/' "$T/unknown.yaml" >"$T/unknown2.yaml"
rejects gke "$T/unknown2.yaml" "a misspelt priorityClassName"
grep -q "DaemonSet nvidia-driver-installer: spec.template.spec: must NOT have additional properties: priorityClass$" "$T/err" ||
    fail "a misspelt priorityClassName is refused for another reason: $(cat "$T/err")"
# kubeschema.mjs's own check held to Ajv's over the same definitions, formats checked:
# both manifests, every DRA example's pods and the GKE ResourceQuota, the supply pass's
# manifests, the admission policy, the formats no manifest uses and the nulls kubectl writes
# (tests/k8s/testdata/formats.yaml), and every variant of them with one change.
node "$SRC/tests/k8s/kubeschema-vs-ajv.mjs" "$gke" "$generic" "$SRC"/docs/examples/dra/claim-*.yaml \
    "$SRC"/docs/examples/dra/compute-domain*.yaml "$SRC/docs/examples/dra/resourcequota-gke.yaml" \
    "$SRC"/deploy/supply*.yaml "$SRC/admission-policy.yaml" \
    "$SRC/tests/k8s/testdata/formats.yaml" >"$T/vs.out" 2>&1 ||
    fail "$(cat "$T/vs.out")"
cat "$T/vs.out"

# The old readiness probe: a shell in GKE's distroless plugin image.
edit "$gke" "            - --enable-health-monitoring
" "            - --enable-health-monitoring
          readinessProbe:
            exec:
              command: [\"/bin/sh\", \"-c\", \"test -s /run/nvidia/validations/driver-ready\"]
" "$T/shell.yaml"
rejects gke "$T/shell.yaml" "a shell probe in a distroless image"
grep -q "readinessProbe runs /bin/sh, which image gcr.io/gke-release/nvidia-gpu-device-plugin" "$T/err" ||
    fail "the shell probe is refused for another reason: $(cat "$T/err")"
# A second plugin beside GKE's own: the plugin's DaemonSet no longer asks for the pool label.
edit "$gke" "no device plugin here: the pool was labelled so.
                  - key: gke-no-default-nvidia-gpu-device-plugin
                    operator: In" "no device plugin here: the pool was labelled so.
                  - key: gke-no-default-nvidia-gpu-device-plugin
                    operator: NotIn" "$T/twoplugins.yaml"
rejects gke "$T/twoplugins.yaml" "a second plugin beside GKE's"
# The DRA pool (docs/dra.md): a device plugin on its nodes, GKE's or NVIDIA's, beside the DRA
# driver; a DRA term that no longer asks for GKE's plugin to be off; a GPU node no
# DaemonSet serves (a nodeSelector the terms do not show); two DaemonSets on one node (the
# fleet's manifest beside a pool's, scripts/pool-daemonsets).
edit "$gke" "                  # Not a DRA pool (nvidia-driver-installer serves those, without a plugin).
                  - key: nvidia.com/gpu.deploy.device-plugin
                    operator: NotIn
                    values: [\"false\"]
" "" "$T/gkedra.yaml"
rejects gke "$T/gkedra.yaml" "GKE's plugin on a DRA pool"
grep -q "nvidia-driver-installer-plugin: no device plugin on DRA nodes" "$T/err" || fail "$(cat "$T/err")"
edit "$gke" "                  - key: gke-no-default-nvidia-gpu-device-plugin
                    operator: In
                    values: [\"true\"]
                  - key: nvidia.com/gpu.deploy.device-plugin" \
    "                  - key: nvidia.com/gpu.deploy.device-plugin" "$T/gkedra.yaml"
rejects gke "$T/gkedra.yaml" "a DRA term beside GKE's plugin"
grep -q "no plugin beside GKE's, or a DRA pool's term" "$T/err" || fail "$(cat "$T/err")"
edit "$generic" "                  # not a DRA node (nvidia-driver-installer-dra serves those)
                  - key: nvidia.com/gpu.deploy.device-plugin
                    operator: NotIn
                    values: [\"false\"]
" "" "$T/dra.yaml"
rejects generic "$T/dra.yaml" "NVIDIA's plugin on a DRA node"
grep -q "nvidia-driver-installer: no device plugin on DRA nodes" "$T/err" || fail "$(cat "$T/err")"
python3 - "$generic" "$T/gap.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
i = t.index("affinity:\n", t.index("  name: nvidia-driver-installer-dra\n"))
open(sys.argv[2], "w").write(t[:i] + "nodeSelector:\n        kubernetes.io/arch: amd64\n      " + t[i:])
PY
rejects generic "$T/gap.yaml" "arm64 DRA nodes left out"
grep -q 'a GPU node labelled {.*"kubernetes.io/arch":"arm64","nvidia.com/gpu.deploy.device-plugin":"false"} gets no DaemonSet' \
    "$T/err" || fail "$(cat "$T/err")"
(cd "$T" && "$SRC/scripts/pool-daemonsets" --label cloud.google.com/gke-nodepool --pool training=550.54.15 "$generic") >/dev/null
{ cat "$generic" && echo --- && cat "$T/pools/daemonset-generic-pool-training.yaml"; } >"$T/twice.yaml"
rejects generic "$T/twice.yaml" "the fleet's DaemonSets beside a pool's"
grep -q "two DaemonSets select one node: nvidia-driver-installer and nvidia-driver-installer-pool-training" "$T/err" ||
    fail "$(cat "$T/err")"
# Confidential nodes no longer excluded.
edit "$gke" "                  - key: cloud.google.com/gke-confidential-nodes-instance-type
                    operator: DoesNotExist
" "" "$T/confidential.yaml"
rejects gke "$T/confidential.yaml" "a manifest reaching confidential nodes"
# GKE's plugin without /etc/nvidia (GPU sharing), health monitoring or pod-resources.
edit "$gke" "mountPath: /etc/nvidia
" "mountPath: /etc/nvidia-config
" "$T/noconfig.yaml"
rejects gke "$T/noconfig.yaml" "GKE's plugin without /etc/nvidia"
edit "$gke" "- --enable-health-monitoring" "- --v=2" "$T/nohealth.yaml"
rejects gke "$T/nohealth.yaml" "GKE's plugin without health monitoring"
edit "$gke" "mountPath: /var/lib/kubelet/pod-resources" "mountPath: /pod-resources" "$T/nopodres.yaml"
rejects gke "$T/nopodres.yaml" "GKE's plugin without pod-resources"
# NVIDIA's plugin looking for the driver elsewhere than the install dir.
edit "$generic" "- name: NVIDIA_DRIVER_ROOT
              value: /home/kubernetes/bin/nvidia" "- name: NVIDIA_DRIVER_ROOT
              value: /run/nvidia/driver" "$T/root.yaml"
rejects generic "$T/root.yaml" "NVIDIA's plugin with another driver root"
# NVIDIA's plugin counting on NVIDIA's container runtime.
edit "$generic" "value: cdi-cri" "value: envvar" "$T/envvar.yaml"
rejects generic "$T/envvar.yaml" "the envvar device list strategy"
# The generic manifest on GKE nodes too.
edit "$generic" "                  - key: cloud.google.com/gke-accelerator
                    operator: DoesNotExist" "                  - key: cloud.google.com/gke-accelerator
                    operator: Exists" "$T/ongke.yaml"
rejects generic "$T/ongke.yaml" "the generic manifest on GKE nodes"
# An image the table of known images does not hold.
edit "$generic" "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" "example.com/plugin:1" "$T/image.yaml"
rejects generic "$T/image.yaml" "an unknown image"
# The metrics file dropped, out of node-exporter's textfile directory, not a *.prom file.
edit "$generic" "            - name: NVIDIA_METRICS_FILE
              value: /var/lib/node_exporter/textfile_collector/nvidia-driver-installer.prom
" "" "$T/nometrics.yaml"
rejects generic "$T/nometrics.yaml" "an installer without a metrics file"
edit "$gke" "value: /var/lib/node_exporter/textfile_collector/nvidia-driver-installer.prom" \
    "value: /var/lib/nvidia-driver-installer/nvidia-driver-installer.prom" "$T/metricsdir.yaml"
rejects gke "$T/metricsdir.yaml" "a metrics file node-exporter does not read"
grep -q "is not in a node-exporter textfile directory" "$T/err" || fail "metrics dir: $(cat "$T/err")"
edit "$generic" "textfile_collector/nvidia-driver-installer.prom" "textfile_collector/nvidia-driver-installer.txt" \
    "$T/metricsname.yaml"
rejects generic "$T/metricsname.yaml" "a metrics file the textfile collector skips"
# A version that moves by itself: the repository's tags, a branch. A node would switch at its
# next reboot or pod restart, outside the DaemonSet's rollout.
for v in default latest '"550"' '"550.90"'; do
    edit "$gke" 'value: "550.90.07"' "value: $v" "$T/moving.yaml"
    rejects gke "$T/moving.yaml" "NVIDIA_DRIVER_VERSION $v"
    grep -q "NVIDIA_DRIVER_VERSION must be an exact version" "$T/err" || fail "$v refused for another reason: $(cat "$T/err")"
done
sed 's/NVIDIA_DRIVER_VERSION$/NVIDIA_DRIVR_VERSION/' "$gke" >"$T/moving.yaml"
rejects gke "$T/moving.yaml" "a misspelt NVIDIA_DRIVER_VERSION"
edit "$generic" 'value: "550.90.07"' 'value: default' "$T/moving.yaml"
rejects generic "$T/moving.yaml" "the generic manifest on default"
edit "$generic" 'args: ["install"]' 'args: ["install", "--driver-version=latest"]' "$T/moving.yaml"
rejects generic "$T/moving.yaml" "a --driver-version beside the pinned variable"
# The agent's readiness gate lost, its view of the node not the installer's, its textfile
# over the installer's.
edit "$generic" "path: /readyz" "path: /healthz" "$T/nogate.yaml"
rejects generic "$T/nogate.yaml" "a pod Ready whatever the agent judged"
grep -q "the agent's readiness probe is GET /readyz on 9470" "$T/err" || fail "$(cat "$T/err")"
python3 - "$gke" "$T/agentroot.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
i = t.index("args: [\"agent\"]")
j = t.index("value: /root", i)
open(sys.argv[2], "w").write(t[:j] + "value: /host" + t[j + len("value: /root"):])
PY
rejects gke "$T/agentroot.yaml" "an agent looking at another root than the installer's"
grep -q "the agent's ROOT_MOUNT_DIR is the installer's" "$T/err" || fail "$(cat "$T/err")"
edit "$generic" "nvidia-driver-installer-agent.prom" "nvidia-driver-installer.prom" "$T/sameprom.yaml"
rejects generic "$T/sameprom.yaml" "the agent's textfile over the installer's"
# The registry's Secret: the kubelet's image pull Secret, and the installer's and the agent's
# credentials for an oci:// repository, optional (a cluster without one still starts).
edit "$gke" "      imagePullSecrets:
        - name: nvidia-driver-installer-registry
" "" "$T/nopull.yaml"
rejects gke "$T/nopull.yaml" "a manifest whose installer reads a Secret the kubelet does not pull with"
grep -q "nvidia-driver-installer reads the image pull Secret, whole, optional" "$T/err" || fail "$(cat "$T/err")"
edit "$generic" "            optional: true
" "            optional: false
" "$T/required.yaml"
rejects generic "$T/required.yaml" "a registry Secret the pods cannot start without"
# containerd's hosts.toml directory, uncommented as the manifest says: accepted, the node's
# directory read-only at its path in the installer; the variable without its mount: refused.
python3 - "$generic" "$T/hosts.yaml" <<'PY'
import sys
out, on = [], None
for line in open(sys.argv[1]).read().split("\n"):
    s = line.lstrip()
    ind = line[:len(line) - len(s)]
    if s in ("# - name: containerd-certs", "# - name: NVIDIA_REGISTRY_HOSTS"):
        on = ind
        out.append(ind + s[2:])
    elif on is not None and line.startswith(on + "#   "):
        out.append(on + line[len(on) + 2:])
    else:
        on = None
        out.append(line)
open(sys.argv[2], "w").write("\n".join(out))
PY
check generic "$T/hosts.yaml" --pods >"$T/hosts.json"
python3 - "$T/hosts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["daemonsets"][0]
for c in (d["init"], [c for c in d["containers"] if c["name"] == "agent"][0]):
    assert c["env"]["NVIDIA_REGISTRY_HOSTS"] == "/etc/containerd/certs.d", c["env"]
    m = [m for m in c["mounts"] if m["path"] == "/etc/containerd/certs.d"]
    assert m == [{"path": "/etc/containerd/certs.d", "readOnly": True, "hostPath": "/etc/containerd/certs.d",
                  "hostPathType": "Directory", "configMap": None}], m
PY
edit "$T/hosts.yaml" "            - name: containerd-certs
              mountPath: /etc/containerd/certs.d
              readOnly: true
" "" "$T/nohosts.yaml"
rejects generic "$T/nohosts.yaml" "NVIDIA_REGISTRY_HOSTS without the node's directory"
grep -q "NVIDIA_REGISTRY_HOSTS /etc/containerd/certs.d is the node's" "$T/err" || fail "$(cat "$T/err")"
true
