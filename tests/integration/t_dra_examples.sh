# plain build: documents against the Kubernetes schemas; no code of the binary runs
# The DRA examples (docs/examples/dra, docs/dra.md): a ResourceClaimTemplate for NVIDIA's
# DRA driver's DeviceClass (gpu.nvidia.com) and a pod that uses it, in resource.k8s.io/v1
# and v1beta1, valid against Kubernetes' own OpenAPI schemas with unknown fields refused;
# the ComputeDomain jobs valid against the ComputeDomain CRD's schema and rules (restated,
# tests/k8s/computedomain.mjs) and their pods tied to its channel template
# (tests/k8s/check-dra.mjs). The chart's values: accepted by the chart's own rules
# (restated, tests/k8s/drachart.mjs), the driver root the installer's install dir, the
# kubelet plugin on the DRA pool exactly (values-dra.yaml) or only on our nodes
# (values-compute-domains.yaml), against both manifests, and with ComputeDomains on the
# driver floor (570.158.01) stated and met by the manifests set to it; the ResourceQuota for
# GKE; a ResourceClaim shared by a pod. Each example broken once is
# refused, and each of the chart's rules seen to refuse. With NDI_DRA_CHART set to an
# unpacked chart (deployments/helm/dra-driver-nvidia-gpu of k8s-dra-driver-gpu) and HELM to
# a helm binary, the chart itself is rendered with the values (tests/k8s/render-dra-chart.sh).
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
EX=$SRC/docs/examples/dra
MANIFESTS=("$SRC/daemonset-generic.yaml" "$SRC/daemonset-preloaded.yaml")
dra() { node "$SRC/tests/k8s/check-dra.mjs" "$@" >"$T/dra.out" 2>&1; }
for v in v1 v1beta1; do
    dra "$EX/claim-$v.yaml" || fail "claim-$v.yaml: $(cat "$T/dra.out")"
    grep -q "claim-$v.yaml: 2 objects valid" "$T/dra.out" || fail "claim-$v.yaml: $(cat "$T/dra.out")"
    grep -q "^apiVersion: resource.k8s.io/$v$" "$EX/claim-$v.yaml" || fail "claim-$v.yaml is not $v"
done
dra "$EX/compute-domain.yaml" "$EX/compute-domain-a4x.yaml" "$EX/claim-shared-v1.yaml" "$EX/resourcequota-gke.yaml" ||
    fail "$(cat "$T/dra.out")"
for f in compute-domain.yaml:4 compute-domain-a4x.yaml:3 claim-shared-v1.yaml:2 resourcequota-gke.yaml:1; do
    grep -q "${f%:*}: ${f#*:} objects valid" "$T/dra.out" || fail "$(cat "$T/dra.out")"
done
dra --update "$EX/compute-domain-a4x.yaml" "$EX/compute-domain-a4x.yaml" ||
    fail "compute-domain-a4x.yaml as an update of itself: $(cat "$T/dra.out")"
grep -q "ComputeDomain imex-job: valid as an update" "$T/dra.out" || fail "$(cat "$T/dra.out")"
# An update that writes out what the CRD defaults (allocationMode: Single) changes no spec:
# compute-domain.yaml as an update of itself without that line (the API server defaults both).
grep -v '^    allocationMode: Single$' "$EX/compute-domain.yaml" >"$T/old.yaml"
! cmp -s "$T/old.yaml" "$EX/compute-domain.yaml" || fail "compute-domain.yaml has no allocationMode: Single line"
dra --update "$T/old.yaml" "$EX/compute-domain.yaml" ||
    fail "compute-domain.yaml as an update of itself with the default unwritten: $(cat "$T/dra.out")"
grep -q "ComputeDomain imex-job: valid as an update" "$T/dra.out" || fail "$(cat "$T/dra.out")"
# The values: the chart's rules, the driver root the installer's default install dir. The
# files with ComputeDomains on need driver 570.158.01 or later (their comment says so): they
# go against the manifests with the pools' NVIDIA_DRIVER_VERSION set to it, as they instruct.
idir=$("$BIN" config --json --repo file:///nowhere --repo-key "$FIX/keys/pub.pem" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["install_dir"])')
M570=()
for m in "${MANIFESTS[@]}"; do
    grep -q 'value: "550.90.07"' "$m" || fail "$m pins no 550.90.07"
    sed 's/value: "550.90.07"/value: "570.158.01"/' "$m" >"$T/570-${m##*/}"
    M570+=("$T/570-${m##*/}")
done
for v in values-dra:"(gpus) lands exactly on the DRA pool" \
    values-dra-gb200:"(compute-domains, gpus) lands exactly on the DRA pool" \
    values-compute-domains:"(compute-domains) lands only where our DaemonSets run"; do
    [ "$(sed -n 's/^nvidiaDriverRoot: //p' "$EX/${v%%:*}.yaml")" = "$idir" ] ||
        fail "${v%%:*}.yaml's nvidiaDriverRoot is not the install dir ($idir)"
    if [ "${v%%:*}" = values-dra ]; then m=("${MANIFESTS[@]}"); else m=("${M570[@]}"); fi
    dra --values "$EX/${v%%:*}.yaml" "${m[@]}" || fail "${v%%:*}.yaml: $(cat "$T/dra.out")"
    grep -qF "${v#*:}" "$T/dra.out" || fail "${v%%:*}.yaml: $(cat "$T/dra.out")"
    cat "$T/dra.out"
done

# Broken once each: refused, with the schema's, the CRD's, the chart's or the check's reason.
refused() { # WHAT MESSAGE CHECK-ARGS...
    local what=$1 msg=$2
    shift 2
    ! dra "$@" || fail "$what passed: $(cat "$T/dra.out")"
    grep -qF -- "$msg" "$T/dra.out" || fail "$what refused for another reason: $(cat "$T/dra.out")"
    ! grep -q "the chart's rules hold" "$T/dra.out" || fail "$what refused, yet reported to hold: $(cat "$T/dra.out")"
    echo "REJECT $what: $(grep -m1 -F -- "$msg" "$T/dra.out")" >&2
}
# edit IN OLD NEW OUT: OUT is IN with the first OLD replaced by NEW (OLD must be there).
edit() {
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t, sys.argv[2]
open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3], 1))' "$@"
}
sed 's|^apiVersion: resource.k8s.io/v1beta1$|apiVersion: resource.k8s.io/v1|' "$EX/claim-v1beta1.yaml" >"$T/bad.yaml"
refused "a v1beta1 request as v1" "requests/0 must NOT have additional properties" "$T/bad.yaml"
sed 's|^          - name: gpu$|          - name: gpus|' "$EX/claim-v1.yaml" >"$T/bad.yaml"
refused "a container's claim the pod lacks" "container smi uses claim gpus, not the pod's" "$T/bad.yaml"
sed 's|deviceClassName: gpu.nvidia.com|deviceClassName: gpu.example.com|' "$EX/claim-v1beta1.yaml" >"$T/bad.yaml"
refused "another device class" "request gpu asks for gpu.example.com" "$T/bad.yaml"
# The pods against Kubernetes' core/v1 schema (tests/k8s/kubeschema.mjs), in one run: a
# misspelt field of a container and of the pod spec refused as unknown, a wrong type, an
# init container's claim the pod lacks, a Quantity not in apimachinery's grammar, a port
# out of int32; Quantities and IntOrStrings as numbers pass, as the
# API server takes them.
edit "$EX/claim-v1.yaml" "        claims:" "        claimz:" "$T/claimz.yaml"
edit "$EX/compute-domain.yaml" "  affinity:" "  afinity:" "$T/afinity.yaml"
edit "$EX/claim-v1.yaml" "  restartPolicy: Never" "  restartPolicy: Never
  activeDeadlineSeconds: soon" "$T/type.yaml"
edit "$EX/claim-v1.yaml" "  containers:" "  initContainers:
    - name: prep
      image: busybox
      resources:
        claims:
          - name: gpus
  containers:" "$T/init.yaml"
edit "$EX/claim-v1.yaml" "      resources:" "      resources:
        limits: {cpu: lots, memory: 1e, ephemeral-storage: 1.2.3, hugepages-2Mi: 1KI}" "$T/qty.yaml"
edit "$EX/claim-v1.yaml" "      resources:" "      ports: [{containerPort: 99999999999}]
      resources:" "$T/port.yaml"
! dra "$T/claimz.yaml" "$T/afinity.yaml" "$T/type.yaml" "$T/init.yaml" "$T/qty.yaml" "$T/port.yaml" ||
    fail "broken pods passed: $(cat "$T/dra.out")"
while IFS='|' read -r what msg; do
    grep -qF -- "$msg" "$T/dra.out" || fail "$what not refused as such: $(cat "$T/dra.out")"
    echo "REJECT $what: $(grep -m1 -F -- "$msg" "$T/dra.out")" >&2
done <<'EOF'
a container's misspelt claims|claimz.yaml: Pod cuda-smi: spec.containers.0.resources: must NOT have additional properties: claimz
a pod's misspelt affinity|afinity.yaml: Pod imex-job-0: spec: must NOT have additional properties: afinity
a pod field of the wrong type|type.yaml: Pod cuda-smi: spec.activeDeadlineSeconds: must be integer
an init container's claim the pod lacks|init.yaml: Pod cuda-smi: init container prep uses claim gpus, not the pod's
a quantity that is none|qty.yaml: Pod cuda-smi: spec.containers.0.resources.limits.cpu: must match format "quantity"
an exponent without digits|qty.yaml: Pod cuda-smi: spec.containers.0.resources.limits.memory: must match format "quantity"
two decimal points|qty.yaml: Pod cuda-smi: spec.containers.0.resources.limits.ephemeral-storage: must match format "quantity"
a suffix of the wrong case|qty.yaml: Pod cuda-smi: spec.containers.0.resources.limits.hugepages-2Mi: must match format "quantity"
a port out of int32|port.yaml: Pod cuda-smi: spec.containers.0.ports.0.containerPort: must match format "int32"
EOF
# (a Quantity's string fails its format and the number branch of its oneOf: three lines each)
[ "$(grep -c "^check-dra: " "$T/dra.out")" = 17 ] || fail "broken pods refused for more than their fault: $(cat "$T/dra.out")"
# As kubectl reads YAML (tests/k8s/kubeyaml.mjs): an unquoted date a string, yes a boolean;
# a null absent (creationTimestamp: null, as kubectl create --dry-run -o yaml writes it, in
# the template, checked by Ajv, and in the pod, by kubeschema.mjs).
edit "$EX/claim-v1.yaml" "      resources:" "      ports: [{containerPort: 8080}]
      livenessProbe: {httpGet: {port: 8080}}
      stdin: yes
      resources:
        limits: {cpu: 1, memory: 1.5Gi, ephemeral-storage: \"5e3\"}
        requests: {cpu: +.5, memory: 1E, ephemeral-storage: 2k}" "$T/num.yaml"
edit "$T/num.yaml" "  namespace: gpu-test" "  namespace: gpu-test
  creationTimestamp: null" "$T/num.yaml"
edit "$T/num.yaml" "  name: cuda-smi
  namespace: gpu-test" "  name: cuda-smi
  namespace: gpu-test
  creationTimestamp: null
  labels: {since: 2024-01-01}" "$T/num.yaml"
dra "$T/num.yaml" || fail "a pod with numeric quantities and ports, a date, yes and a null: $(cat "$T/dra.out")"
# The ComputeDomain against its CRD: an unknown field, an enum, a required field, a bound,
# its namespace, the immutable spec on an update; a pod whose channel template no
# ComputeDomain makes.
CD=$EX/compute-domain.yaml
edit "$CD" "    allocationMode: Single" "    allocationMode: Single
    name: imex" "$T/bad.yaml"
refused "an unknown field of a ComputeDomain" "spec.channel: must NOT have additional properties: name" "$T/bad.yaml"
edit "$CD" "allocationMode: Single" "allocationMode: Many" "$T/bad.yaml"
refused "an allocationMode the CRD does not have" "spec.channel.allocationMode: must be equal to one of the allowed values: All, Single" "$T/bad.yaml"
edit "$CD" "    resourceClaimTemplate:
      name: imex-job-channel
" "" "$T/bad.yaml"
refused "a channel without its template" "spec.channel: must have required property 'resourceClaimTemplate'" "$T/bad.yaml"
edit "$EX/compute-domain-a4x.yaml" "numNodes: 2" "numNodes: -1" "$T/bad.yaml"
refused "a negative numNodes" "spec.numNodes: must be >= 0" "$T/bad.yaml"
edit "$CD" "  name: imex-job
  namespace: gpu-test
" "  name: imex-job
" "$T/bad.yaml"
refused "a ComputeDomain without a namespace" "metadata.namespace: a ComputeDomain is namespaced" "$T/bad.yaml"
refused "a ComputeDomain's spec changed" "spec: A computeDomain.spec is immutable" --update "$CD" "$EX/compute-domain-a4x.yaml"
edit "$CD" "      name: imex-job-channel" "      name: imex-channel" "$T/bad.yaml"
refused "a channel template no ComputeDomain makes" \
    "claim channel names template gpu-test/imex-job-channel, neither in the file nor a ComputeDomain's channel" "$T/bad.yaml"
# More broken copies, in one run: each refused, in its own file, for its own reason.
# refused_all FILE MESSAGE ...
refused_all() {
    local files=() a
    for ((a = 1; a <= $#; a += 2)); do files+=("${!a}"); done
    ! dra "${files[@]}" || fail "broken copies passed: $(cat "$T/dra.out")"
    for ((a = 1; a <= $#; a += 2)); do
        local f=${!a} m=$((a + 1))
        grep -F "check-dra: $f: " "$T/dra.out" | grepq -F -- "${!m}" ||
            fail "${f##*/} not refused with '${!m}': $(cat "$T/dra.out")"
        echo "REJECT ${f##*/}: $(grep -F "check-dra: $f: " "$T/dra.out" | grep -F -- "${!m}" | sed -n 1p)" >&2
    done
}
A4X=$EX/compute-domain-a4x.yaml
edit "$CD" '    kubernetes.io/arch: arm64' '' "$T/amd64.yaml"
# The list emptied, its key left: null, which the API server takes as no tolerations
# (kubeschema.mjs), so the Arm-taint rule, not the schema, refuses it.
edit "$A4X" "    - key: kubernetes.io/arch
      operator: Equal
      value: arm64
      effect: NoSchedule
" "" "$T/taint.yaml"
edit "$A4X" "topologyKey: cloud.google.com/gke-nodepool" "topologyKey: topology.kubernetes.io/zone" "$T/domain.yaml"
edit "$CD" "# Needs GPU Feature Discovery" "# Wants GPU Feature Discovery" "$T/gfd.yaml"
edit "$CD" "count: 4" "count: 100000000000000000000" "$T/count.yaml"
edit "$EX/claim-shared-v1.yaml" "resourceClaimName: shared-gpu" "resourceClaimName: gpu" "$T/claim.yaml"
edit "$EX/resourcequota-gke.yaml" "namespace: dra-driver-nvidia-gpu" "namespace: kube-system" "$T/quota-ns.yaml"
edit "$EX/resourcequota-gke.yaml" "          - system-cluster-critical
" "" "$T/quota-class.yaml"
edit "$EX/resourcequota-gke.yaml" "  scopeSelector:" "  scopeSelectors:" "$T/quota-field.yaml"
edit "$EX/resourcequota-gke.yaml" "scopeName: PriorityClass" "scopName: PriorityClass" "$T/quota-deep.yaml"
refused_all "$T/amd64.yaml" 'imex-job-0: it may land on a node labelled {"nvidia.com/gpu.deploy.device-plugin":"false"}' \
    "$T/taint.yaml" "imex-job-0: it does not tolerate GKE's Arm taint kubernetes.io/arch=arm64:NoSchedule" \
    "$T/domain.yaml" "imex-job-0: it may land in another NVLink domain than the other pods of ComputeDomain imex-job" \
    "$T/gfd.yaml" "imex-job-1: its podAffinity keys on nvidia.com/gpu.clique, which only GPU Feature Discovery sets" \
    "$T/count.yaml" 'ResourceClaimTemplate four-gpus: data/spec/spec/devices/requests/0/exactly/count must match format "int64"' \
    "$T/claim.yaml" "claim gpu names ResourceClaim gpu-test/gpu, not in the file" \
    "$T/quota-ns.yaml" "metadata.namespace kube-system is not the chart's namespace dra-driver-nvidia-gpu" \
    "$T/quota-class.yaml" "no PriorityClass In expression of spec.scopeSelector names all of the chart's classes" \
    "$T/quota-field.yaml" "spec: must NOT have additional properties: scopeSelectors" \
    "$T/quota-deep.yaml" "matchExpressions.0: must NOT have additional properties: scopName"
! grep -F "taint.yaml: " "$T/dra.out" | grepq "must be" || fail "a null tolerations refused by the schema: $(cat "$T/dra.out")"

# The chart's rules (templates/validation.yaml, restated in tests/k8s/drachart.mjs), each
# seen to refuse: values-dra.yaml with YAML merged over it (null deletes a key, as Helm's
# merge does), under helm's namespace and API versions.
vals() { # OUT YAML: values-dra.yaml with YAML merged over it
    python3 -c 'import sys, yaml
v = yaml.safe_load(open(sys.argv[1]))
def merge(a, b):
    for k, x in b.items():
        if x is None:
            a.pop(k, None)
        elif isinstance(x, dict) and isinstance(a.get(k), dict):
            merge(a[k], x)
        else:
            a[k] = x
merge(v, yaml.safe_load(sys.argv[3]))
yaml.safe_dump(v, open(sys.argv[2], "w"))' "$EX/values-dra.yaml" "$1" "$2"
}
while IFS='|' read -r lines opts over; do
    vals "$T/v.yaml" "$over"
    # shellcheck disable=SC2086
    refused "the chart's rule at validation.yaml:$lines" "the chart refuses it: validation.yaml:$lines:" \
        $opts --values "$T/v.yaml" "${MANIFESTS[@]}"
done <<'EOF'
15-22||{namespace: gpu}
24-31|--namespace default|{}
33-43||{gpuResourcesEnabledOverride: false}
45-53||{nvidiaCtkPath: /usr/bin/nvidia-ctk}
56-61||{webhook: {enabled: true, tls: null}}
63-68||{webhook: {enabled: true, tls: {mode: ""}}}
70-75||{webhook: {enabled: true, tls: {mode: vault}}}
78-83||{webhook: {enabled: true, tls: {certManager: null}}}
85-90||{webhook: {enabled: true, tls: {certManager: {issuerType: ""}}}}
92-97||{webhook: {enabled: true, tls: {certManager: {issuerType: acme}}}}
99-104||{webhook: {enabled: true, tls: {certManager: {issuerType: issuer}}}}
108-113||{webhook: {enabled: true, tls: {mode: secret, secret: null}}}
115-120||{webhook: {enabled: true, tls: {mode: secret}}}
124-130|--api-versions resource.k8s.io/v1alpha3|{}
EOF
# The old docs/examples/dra/values.yaml, nvidiaDriverRoot alone, as the issue reports.
printf 'nvidiaDriverRoot: %s\n' "$idir" >"$T/old.yaml"
refused "the old values.yaml" "the chart refuses it: validation.yaml:33-43:" --values "$T/old.yaml" "${MANIFESTS[@]}"
# Where the kubelet plugin lands, what it tolerates, where it looks for the driver.
vals "$T/v.yaml" '{kubeletPlugin: {affinity: null}}'
refused "the chart's own placement (any NVIDIA GPU node)" \
    'lands on a node labelled {"feature.node.kubernetes.io/cpu-model.vendor_id":"NVIDIA"}, where no DaemonSet of ours' \
    --values "$T/v.yaml" "${MANIFESTS[@]}"
edit "$EX/values-dra.yaml" "              - {key: cloud.google.com/gke-accelerator, operator: DoesNotExist}
              - {key: nvidia.com/gpu.deploy.device-plugin, operator: In, values: [\"false\"]}
" "              - {key: cloud.google.com/gke-accelerator, operator: DoesNotExist}
" "$T/v.yaml"
refused "GPUs from the DRA driver beside NVIDIA's plugin" "beside daemonset-generic.yaml: nvidia-driver-installer's device plugin" \
    --values "$T/v.yaml" "${MANIFESTS[@]}"
python3 - "$EX/values-dra.yaml" "$T/v.yaml" <<'PY'
import sys, yaml
v = yaml.safe_load(open(sys.argv[1]))
terms = v["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
del terms[-1]
yaml.safe_dump(v, open(sys.argv[2], "w"))
PY
refused "a GKE DRA pool without the kubelet plugin" "(daemonset-preloaded.yaml: nvidia-driver-installer) gets no kubelet plugin" \
    --values "$T/v.yaml" "${MANIFESTS[@]}"
vals "$T/v.yaml" '{kubeletPlugin: {tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]}}'
refused "the chart's tolerations" "the kubelet plugin does not tolerate the taint readiness.k8s.io/nvidia-gpu-driver:NoSchedule" \
    --values "$T/v.yaml" "${MANIFESTS[@]}"
vals "$T/v.yaml" '{nvidiaDriverRoot: /}'
refused "the chart's driver root" "nvidiaDriverRoot / is not the manifests' install dir" --values "$T/v.yaml" "${MANIFESTS[@]}"
edit "$EX/values-compute-domains.yaml" "              - {key: cloud.google.com/gke-gpu-driver-version, operator: DoesNotExist}
" "" "$T/v.yaml"
refused "ComputeDomains on GKE's own driver" "where no DaemonSet of ours installs the driver" --values "$T/v.yaml" "${M570[@]}"
# ComputeDomains and the driver: on the manifests as shipped (550.90.07) the compute-domain
# kubelet plugin would crash-loop; values-dra.yaml as it was (ComputeDomains on, no driver
# stated) is refused.
refused "ComputeDomains on the shipped driver" \
    "lands on nodes of daemonset-generic.yaml: nvidia-driver-installer-dra, which installs driver 550.90.07, below 570.158.01" \
    --values "$EX/values-dra-gb200.yaml" "${MANIFESTS[@]}"
vals "$T/v.yaml" '{resources: {computeDomains: {enabled: true}}}'
refused "ComputeDomains with no driver stated" 'ComputeDomains need driver 570.158.01 or later' --values "$T/v.yaml" "${MANIFESTS[@]}"

# The chart itself, where it is at hand (it cannot be fetched here).
if [ -n "${NDI_DRA_CHART:-}" ]; then
    HELM=${HELM:-helm} "$SRC/tests/k8s/render-dra-chart.sh" "$NDI_DRA_CHART" >"$T/render.out" 2>&1 ||
        fail "render-dra-chart.sh: $(cat "$T/render.out")"
    cat "$T/render.out"
else
    echo "NDI_DRA_CHART unset: the chart itself not rendered (tests/k8s/render-dra-chart.sh)"
fi
