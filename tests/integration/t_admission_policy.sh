# plain build: a document against the Kubernetes schemas and rules; no code of the binary runs
# admission-policy.yaml (the agent's writes held to its own Node): the policy and its binding
# valid against Kubernetes' own admissionregistration.k8s.io/v1 schemas (unknown fields
# refused: tests/k8s/kubeschema.mjs) and the API server's own validation rules, every CEL
# expression compiled and run by a CEL implementation (@bufbuild/cel) over AdmissionRequests
# (tests/k8s/admission-requests/: the agent's own writes allowed, another node's refused, a token without a node name refused, a foreign
# label, annotation, taint or condition refused, other users untouched) and over the node
# writes a stand-in API server log records, replayed as the agent's own node and as another
# (tests/k8s/check-admission.mjs); held to both manifests' service accounts and taint keys;
# accepted by kubectl's `apply --dry-run=client`.
# Each kind of fault put in once is refused: an expression that lets another node through,
# one that errs, a function outside standard CEL, a reason or binding the server refuses, a
# misspelt field, a recorded agent write that changes a label not its own.
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
P=$SRC/admission-policy.yaml
REQ=$SRC/tests/k8s/admission-requests
adm() {
    node "$SRC/tests/k8s/check-admission.mjs" "$1" "$REQ" --log "$REQ/standin.log" \
        --log "$REQ/agent-upgrade.log" \
        --manifest "$SRC/daemonset-generic.yaml" --manifest "$SRC/daemonset-preloaded.yaml" \
        >"$T/adm.out" 2>&1
}
adm "$P" || fail "admission-policy.yaml: $(cat "$T/adm.out")"
grep -q "^node.json: \([0-9]*\) of \1 requests as expected$" "$T/adm.out" || fail "$(cat "$T/adm.out")"
grep -q "standin.log: 3 agent node writes replayed" "$T/adm.out" || fail "$(cat "$T/adm.out")"
grep -q "agent-upgrade.log: 21 agent node writes replayed" "$T/adm.out" || fail "$(cat "$T/adm.out")"
grep -q "daemonset-preloaded.yaml: 2 agent(s) as the policy expects" "$T/adm.out" ||
    fail "$(cat "$T/adm.out")"
# kubectl takes it (apply --dry-run=client against tests/k8s/discovery.py, offline).
KUBECTL=${KUBECTL:-kubectl}
command -v "$KUBECTL" >/dev/null || fail "kubectl is needed (scripts/deps.sh installs kubernetes-client)"
exec {kfd}< <(exec python3 "$SRC/tests/k8s/discovery.py")
kpid=$!
read -r kport <&"$kfd" || fail "the discovery server did not start"
HOME=$T/kube "$KUBECTL" --server "http://127.0.0.1:$kport" apply --dry-run=client --validate=false \
    -f "$P" >"$T/kubectl.out" 2>&1 || fail "kubectl: $(cat "$T/kubectl.out")"
kill "$kpid"
assert_eq "$(cat "$T/kubectl.out")" \
    "validatingadmissionpolicy.admissionregistration.k8s.io/nvidia-driver-installer-own-node created (dry run)
validatingadmissionpolicybinding.admissionregistration.k8s.io/nvidia-driver-installer-own-node created (dry run)" \
    "kubectl on admission-policy.yaml"
# The manifests apply it: their headers say so.
for m in daemonset-generic.yaml daemonset-preloaded.yaml; do
    grep -q "kubectl apply -f admission-policy.yaml" "$SRC/$m" || fail "$m does not apply the policy"
done

# Broken once each: refused, with the reason.
broken() { # SED WHAT EXPECTED
    sed "$1" "$P" >"$T/bad.yaml"
    cmp -s "$P" "$T/bad.yaml" && fail "$2: the edit changed nothing"
    ! adm "$T/bad.yaml" || fail "$2: passed"
    grep -qF "$3" "$T/adm.out" || fail "$2: $(cat "$T/adm.out")"
}
broken "s/request.name == variables.node)/request.name != '')/" "another node let through" \
    "its own label on another node: expected deny: may only update its own Node, got allow"
broken "s/has(request.userInfo.extra) &&//" "an expression that errs" \
    "a token without a node name: validations[0] errs"
broken "s/size(request.userInfo.extra/quantity(request.userInfo.extra/" "a Kubernetes library" \
    "variable node: quantity is not standard CEL"
broken "0,/reason: Forbidden/s//reason: Unauthorised/" "a reason the server refuses" \
    "Unauthorised is not one of Forbidden"
broken "s/validationActions: \[Deny\]/validationActions: [Deny, Warn]/" "Deny and Warn" \
    "binding: not both Deny and Warn"
broken "s/^  failurePolicy: Fail/&\n  auditAnotations: []/" "a misspelt field (tests/k8s/kubeschema.mjs)" \
    "ValidatingAdmissionPolicy nvidia-driver-installer-own-node: spec: must NOT have additional properties: auditAnotations"
broken "/^  validations:\$/a\\    - expression: \"variables.node != '' || variables.node == ''\"\n      message: void" \
    "a validation that refuses nothing" "validations[0] refuses nothing the others would let through"
# A recorded write of the agent's that changes a label not its own: refused as its own node.
sed 's/"nvidia.com\/gpu.driver-installer.upgrade-state": "cordoned"/&, "topology.kubernetes.io\/zone": "x"/' \
    "$REQ/standin.log" >"$T/standin.log"
node "$SRC/tests/k8s/check-admission.mjs" "$P" "$REQ" --log "$T/standin.log" >"$T/adm.out" 2>&1 &&
    fail "a foreign label in a recorded write passed"
grep -q "as its own node: expected allow, got deny: the agent may change only its own labels" \
    "$T/adm.out" || fail "$(cat "$T/adm.out")"
