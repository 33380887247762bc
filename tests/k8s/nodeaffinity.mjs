// SPDX-License-Identifier: Apache-2.0
// Which nodes a pod template lands on, by their labels, as the scheduler decides it for a
// DaemonSet's pods (kubernetes, staging/src/k8s.io/component-helpers/scheduling/corev1/
// nodeaffinity/nodeaffinity.go: GetRequiredNodeAffinity, whose Match is the nodeSelector's
// labels AND any one of requiredDuringSchedulingIgnoredDuringExecution's nodeSelectorTerms;
// a term is the AND of its matchExpressions; an empty term list matches nothing, no
// affinity everything. staging/src/k8s.io/apimachinery/pkg/labels/selector.go,
// Requirement.Matches: NotIn and DoesNotExist hold on a node without the key, In and Exists
// need it; Gt and Lt compare integers), and every label set that tells the templates apart;
// which taints a pod's tolerations let it through, and the taints a GPU node of ours carries.
// tests/tools/runbook.py's `exclusive` holds the same rules for the runbooks' stand-in cluster.

function expressionMatches(e, labels) {
  const has = Object.hasOwn(labels, e.key);
  const v = labels[e.key];
  switch (e.operator) {
    case "In": return has && e.values.includes(v);
    case "NotIn": return !has || !e.values.includes(v);
    case "Exists": return has;
    case "DoesNotExist": return !has;
    case "Gt":
    case "Lt": {
      if (!has || !/^-?[0-9]+$/.test(v)) return false;
      const [a, b] = [BigInt(v), BigInt(e.values[0])];
      return e.operator === "Gt" ? a > b : a < b;
    }
    default: throw new Error(`node selector operator ${e.operator}`);
  }
}

const termsOf = (spec) =>
  spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

// Whether a pod of pod spec SPEC may run on a node with LABELS (an object).
export function selects(spec, labels) {
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms = termsOf(spec);
  if (terms === undefined) return true;
  return terms.some((t) => (t.matchExpressions ?? []).every((e) => expressionMatches(e, labels)));
}

// Every label set that matters to SPECS: per key their nodeSelectors and expressions name,
// absent, each value they name, and one value none names. EXTRA: {key: [values]} added to
// the keys (labels a caller reasons about that no spec names). A generator of objects.
export function* labelSets(specs, extra = {}) {
  const keys = new Map(Object.entries(extra).map(([k, vs]) => [k, new Set(vs)]));
  const add = (k, vs) => {
    if (!keys.has(k)) keys.set(k, new Set());
    for (const v of vs) keys.get(k).add(v);
  };
  for (const s of specs) {
    for (const [k, v] of Object.entries(s.nodeSelector ?? {})) add(k, [v]);
    for (const t of termsOf(s) ?? []) for (const e of t.matchExpressions ?? []) add(e.key, e.values ?? []);
  }
  const names = [...keys.keys()].sort();
  const choices = names.map((k) => [undefined, "x-other", ...[...keys.get(k)].sort()]);
  const at = names.map(() => 0);
  for (;;) {
    const labels = {};
    names.forEach((k, i) => {
      if (choices[i][at[i]] !== undefined) labels[k] = choices[i][at[i]];
    });
    yield labels;
    let i = 0;
    while (i < names.length && ++at[i] === choices[i].length) at[i++] = 0;
    if (i === names.length) return;
  }
}

// The agent's default startup taint (cluster-autoscaler's startup-taint prefix,
// utils/taints/taints.go StartupTaintPrefix, and its own name), the health taint
// docs/configuration.md gives as the example, and the NodeReadinessRules' taints.
export const STARTUP_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver";
export const HEALTH_TAINT_EXAMPLE = "nvidia.com/gpu-unhealthy:NoSchedule";
export const READINESS_TAINTS = [
  { key: "readiness.k8s.io/nvidia-gpu-driver", effect: "NoSchedule" },
  { key: "readiness.k8s.io/nvidia-gpu-unready", effect: "NoSchedule" },
];
// Whether toleration T tolerates TAINT, as the scheduler and the taint manager decide
// (kubernetes, staging/src/k8s.io/api/core/v1/toleration.go, ToleratesTaint): an effect
// and a key that are given must match; Exists matches any value, Equal (or no operator)
// only the same value.
export function tolerates(t, taint) {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === "Exists") return true;
  if (!t.operator || t.operator === "Equal") return (t.value ?? "") === (taint.value ?? "");
  return false;
}
