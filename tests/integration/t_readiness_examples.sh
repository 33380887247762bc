# plain build: documents against the Node Readiness Controller's CRD; no code of the binary runs
# The NodeReadinessRule examples (docs/examples/node-readiness): valid as creates and as
# updates of themselves against the controller's CRD (tests/k8s/crd/, its openAPIV3Schema
# with unknown fields refused, every x-kubernetes-validations rule evaluated by a CEL
# implementation) and its webhook's rules (tests/k8s/check-readiness.mjs); both watch the
# condition the agent writes (installer/kube/kube.h). Broken once each, refused with the
# CRD's own message or the webhook's: the autoscaler's startup-taint prefix as the rule's key
# (the CRD allows readiness.k8s.io/ only: one gate or the other), the key and the mode
# changed on an update (transition rules), a defaultStatus in bootstrap-only mode, an unknown
# field, both rules on one key, a condition the agent does not write.
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
EX=$SRC/docs/examples/node-readiness
DRIVER=$EX/nvidia-gpu-driver.yaml
HEALTH=$EX/nvidia-gpu-health.yaml
nrr() { node "$SRC/tests/k8s/check-readiness.mjs" "$@" >"$T/nrr.out" 2>&1; }

nrr "$DRIVER" "$HEALTH" || fail "the examples: $(cat "$T/nrr.out")"
for r in nvidia-gpu-driver nvidia-gpu-health; do
    grep -Eq ": NodeReadinessRule $r: valid \([1-9][0-9]* CEL rules\)$" "$T/nrr.out" || fail "$r: $(cat "$T/nrr.out")"
done
for f in "$DRIVER" "$HEALTH"; do
    nrr --update "$f" "$f" || fail "$f as an update of itself: $(cat "$T/nrr.out")"
    grep -q "valid as an update" "$T/nrr.out" || fail "$(cat "$T/nrr.out")"
done
grep -q "^  enforcementMode: bootstrap-only$" "$DRIVER" || fail "nvidia-gpu-driver.yaml is not bootstrap-only"
grep -q "^  enforcementMode: continuous$" "$HEALTH" || fail "nvidia-gpu-health.yaml is not continuous"
# The condition the rules (and the check) name is the one the agent writes.
want=$(sed -n 's/^#define KUBE_CONDITION_TYPE "\(.*\)"$/\1/p' "$SRC/installer/kube/kube.h")
if [ -n "$want" ]; then
    for f in "$DRIVER" "$HEALTH" "$SRC/tests/k8s/check-readiness.mjs"; do
        grep -qF "$want" "$f" || fail "$f does not name the agent's condition $want"
    done
else
    echo "installer/kube/kube.h defines no KUBE_CONDITION_TYPE yet: its name not compared" >&2
fi

# Broken once each: refused, with the CRD's or the webhook's message.
# edit IN OLD NEW OUT: OUT is IN with the first OLD replaced by NEW (OLD must be there).
edit() {
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t, sys.argv[2]
open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3], 1))' "$@"
}
refused() { # WHAT MESSAGE CHECK-ARGS...
    local what=$1 msg=$2
    shift 2
    ! nrr "$@" || fail "$what passed: $(cat "$T/nrr.out")"
    grep -qF "$msg" "$T/nrr.out" || fail "$what refused for another reason: $(cat "$T/nrr.out")"
    echo "REJECT $what: $(grep -m1 -F "$msg" "$T/nrr.out")" >&2
}
edit "$DRIVER" "key: readiness.k8s.io/nvidia-gpu-driver" \
    "key: startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver" "$T/ca.yaml"
refused "the autoscaler's prefix as the rule's key" \
    "spec.taint: taint key must start with 'readiness.k8s.io/'" "$T/ca.yaml"
edit "$DRIVER" "key: readiness.k8s.io/nvidia-gpu-driver" "key: readiness.k8s.io/nvidia-gpu" "$T/rekey.yaml"
nrr "$T/rekey.yaml" || fail "another readiness.k8s.io key, created: $(cat "$T/nrr.out")"
refused "the key changed on an update" "spec.taint: taint key is immutable" --update "$DRIVER" "$T/rekey.yaml"
edit "$HEALTH" "enforcementMode: continuous" "enforcementMode: bootstrap-only" "$T/mode.yaml"
refused "the mode changed on an update" "spec.enforcementMode: enforcementMode is immutable" \
    --update "$HEALTH" "$T/mode.yaml"
edit "$DRIVER" 'requiredStatus: "True"' 'requiredStatus: "True"
      defaultStatus: "False"' "$T/default.yaml"
refused "a defaultStatus in bootstrap-only mode" \
    "spec.conditions[0].defaultStatus: defaultStatus should not be used with bootstrap-only" "$T/default.yaml"
edit "$HEALTH" "  enforcementMode: continuous" "  enforcementMode: continuous
  dryrn: true" "$T/unknown.yaml"
refused "an unknown field" "spec: must NOT have additional properties: dryrn" "$T/unknown.yaml"
edit "$HEALTH" "key: readiness.k8s.io/nvidia-gpu-unready" "key: readiness.k8s.io/nvidia-gpu-driver" "$T/twin.yaml"
refused "two rules on one taint" "conflicts with existing rule 'nvidia-gpu-driver'" "$DRIVER" "$T/twin.yaml"
edit "$DRIVER" "type: nvidia.com/GPUDriverReady" "type: nvidia.com/GPUReady" "$T/other.yaml"
refused "a condition the agent does not write" "no nvidia.com/GPUDriverReady required True" "$T/other.yaml"
