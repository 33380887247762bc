# plain build: documents against the Kubernetes schemas; no code of the binary runs
# The DRA examples (docs/examples/dra): a ResourceClaimTemplate for NVIDIA's DRA driver's
# DeviceClass (gpu.nvidia.com) and a pod that uses it, in resource.k8s.io/v1 and v1beta1,
# valid against Kubernetes' own OpenAPI schemas with unknown fields refused
# (tests/k8s/check-dra.mjs), and the DRA driver's values pointed at the install dir the
# installer uses by default. Each example broken once is refused: a v1beta1 request in v1
# (no "exactly"), a claim the pod does not have, another device class.
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
EX=$SRC/docs/examples/dra
dra() { node "$SRC/tests/k8s/check-dra.mjs" "$@" >"$T/dra.out" 2>&1; }
for v in v1 v1beta1; do
    dra "$EX/claim-$v.yaml" || fail "claim-$v.yaml: $(cat "$T/dra.out")"
    grep -q "claim-$v.yaml: 2 objects valid" "$T/dra.out" || fail "claim-$v.yaml: $(cat "$T/dra.out")"
    grep -q "^apiVersion: resource.k8s.io/$v$" "$EX/claim-$v.yaml" || fail "claim-$v.yaml is not $v"
done
# The install dir the DRA driver is pointed at is the installer's default.
idir=$("$BIN" config --json --repo file:///nowhere --repo-key "$FIX/keys/pub.pem" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["install_dir"])')
[ "$(sed -n 's/^nvidiaDriverRoot: //p' "$EX/values.yaml")" = "$idir" ] ||
    fail "values.yaml's nvidiaDriverRoot is not the install dir ($idir)"

# Broken once each: refused, with the schema's or the check's reason.
sed 's|^apiVersion: resource.k8s.io/v1beta1$|apiVersion: resource.k8s.io/v1|' "$EX/claim-v1beta1.yaml" >"$T/bad.yaml"
! dra "$T/bad.yaml" || fail "a v1beta1 request passed as v1"
grep -q "requests/0 must NOT have additional properties" "$T/dra.out" || fail "$(cat "$T/dra.out")"
sed 's|^          - name: gpu$|          - name: gpus|' "$EX/claim-v1.yaml" >"$T/bad.yaml"
! dra "$T/bad.yaml" || fail "a container's claim the pod lacks passed"
grep -q "container smi uses claim gpus, not the pod's" "$T/dra.out" || fail "$(cat "$T/dra.out")"
sed 's|deviceClassName: gpu.nvidia.com|deviceClassName: gpu.example.com|' "$EX/claim-v1beta1.yaml" >"$T/bad.yaml"
! dra "$T/bad.yaml" || fail "another device class passed"
grep -q "request gpu asks for gpu.example.com" "$T/dra.out" || fail "$(cat "$T/dra.out")"
