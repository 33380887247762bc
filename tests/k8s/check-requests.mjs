// SPDX-License-Identifier: Apache-2.0
// The bodies the node agent and the supply pass sent to the API server
// (tests/tools/kube-api.py's request log), each validated offline against the Kubernetes
// OpenAPI schema of the object the call takes (kubernetes-models): a Lease created or
// replaced (coordination.k8s.io/v1), an Eviction (policy/v1), an Event (core/v1), a Node
// patch (of nodes/NAME or nodes/NAME/status, a merge or a strategic merge patch), a Job
// created (batch/v1, and what kube-apiserver's own validation adds: jobRules) and the
// DeleteOptions of a DELETE. Only the agent's and the pass's requests count (their
// User-Agents); a body of a call not listed here fails, as does a log with none of theirs.
//
// A Node patch is validated as a Node twice: the patch less its nulls (a null deletes, in
// both kinds of patch), and the Node it yielded, the stand-in's "node_after" (when the
// write was taken); both against the schema and nodeRules: the taints as kube-apiserver's
// validateNodeTaints takes them, the conditions as NodeCondition documents them. A status
// patch that carries spec, or a patch of the Node itself that carries status, fails: the
// server drops those parts (pkg/registry/core/node/strategy.go, PrepareForUpdate of
// nodeStatusStrategy and of nodeStrategy), so a client that sends them is mistaken. The
// count printed for Node covers both; "Node/status N" counts the status patches again.
//
//   node check-requests.mjs REQUEST_LOG...
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Lease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import { Eviction } from "kubernetes-models/policy/v1/Eviction";
import { Event } from "kubernetes-models/v1/Event";
import { Node } from "kubernetes-models/v1/Node";
import { Job } from "kubernetes-models/batch/v1/Job";
import { DeleteOptions } from "@kubernetes-models/apimachinery/apis/meta/v1/DeleteOptions";

const withoutNulls = (v) => Array.isArray(v) ? v.map(withoutNulls)
  : v && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]))
    : v;

// What kube-apiserver refuses in a Job beyond its schema (kubernetes
// pkg/apis/batch/validation/validation.go, ValidateJob and validateJobSpec; the generated
// selector of pkg/registry/batch/job/strategy.go): the name becomes the pods' job-name label,
// so a DNS-1123 label of at most 63 characters; restartPolicy OnFailure or Never; no selector
// of our own without manualSelector; the retry and time limits non-negative.
function jobRules(job) {
  const name = job.metadata?.name ?? "";
  assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `Job name ${name}: a DNS-1123 label`);
  assert.ok(name.length <= 63, `Job name ${name}: at most 63 characters (the job-name label)`);
  const pod = job.spec.template.spec;
  assert.ok(["Never", "OnFailure"].includes(pod.restartPolicy), `Job ${name}: restartPolicy Never or OnFailure`);
  assert.ok(job.spec.selector === undefined || job.spec.manualSelector === true, `Job ${name}: the selector is generated`);
  for (const f of ["backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"])
    assert.ok(job.spec[f] === undefined || job.spec[f] >= 0, `Job ${name}: ${f} >= 0`);
  const vols = new Set((pod.volumes ?? []).map((v) => v.name));
  for (const c of pod.containers)
    for (const m of c.volumeMounts ?? []) assert.ok(vols.has(m.name), `Job ${name}: mount of volume ${m.name}`);
}

// kube-apimachinery's names and values (pkg/util/validation/validation.go): IsQualifiedName,
// IsValidLabelValue; Go's time.RFC3339 as metav1.Time decodes it.
const NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const qualifiedName = (s) => typeof s === "string" && NAME.test(s) && s.split("/").pop().length <= 63 &&
  (!s.includes("/") || s.split("/")[0].length <= 253);
const labelValue = (s) => typeof s === "string" && s.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(s);
const RFC3339 = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const time = (t) => typeof t === "string" && RFC3339.test(t) && !Number.isNaN(Date.parse(t));

// A Node's taints as kube-apiserver's validateNodeTaints takes them (kubernetes
// pkg/apis/core/validation/validation.go): the key a qualified name, the value a label value,
// the effect NoSchedule, PreferNoSchedule or NoExecute, no two of one key and effect; and
// timeAdded, which the server takes on any taint, RFC 3339 and on NoExecute taints only (the
// only ones it is written for: core/v1 Taint.timeAdded's documentation).
function taintRules(taints, where) {
  const seen = new Set();
  for (const [i, t] of taints.entries()) {
    const at = `${where}[${i}]`;
    assert.ok(qualifiedName(t.key), `${at}.key ${JSON.stringify(t.key)}: a qualified name`);
    assert.ok(t.value === undefined || labelValue(t.value), `${at}.value ${JSON.stringify(t.value)}: a label value`);
    assert.ok(["NoSchedule", "PreferNoSchedule", "NoExecute"].includes(t.effect), `${at}.effect ${JSON.stringify(t.effect)}: NoSchedule, PreferNoSchedule or NoExecute`);
    assert.ok(!seen.has(`${t.key}:${t.effect}`), `${at}: a second taint of key ${t.key} and effect ${t.effect}`);
    seen.add(`${t.key}:${t.effect}`);
    if (t.timeAdded !== undefined)
      assert.ok(t.effect === "NoExecute" && time(t.timeAdded), `${at}.timeAdded: RFC 3339, on a NoExecute taint only`);
  }
}

// A Node's conditions as core/v1 NodeCondition documents them (the server checks none of
// this: ValidateNodeUpdate never looks at conditions): status True, False or Unknown
// (ConditionStatus); each type once (the list's merge key); the times RFC 3339, the
// transition not after the heartbeat. MINE (the conditions a client wrote): both times
// required, and the rules k8s.io/apimachinery pkg/apis/meta/v1/validation/validation.go,
// ValidateCondition, gives metav1.Condition, the type NodeCondition's kind became: the type
// a qualified name (at most 316), the reason one CamelCase word (required, at most 1024),
// the message at most 32768.
function conditionRules(conditions, where, mine) {
  const types = new Set();
  for (const [i, c] of conditions.entries()) {
    const at = `${where}[${i}] (${c.type})`;
    assert.ok(["True", "False", "Unknown"].includes(c.status), `${at}.status ${JSON.stringify(c.status)}: True, False or Unknown`);
    assert.ok(!types.has(c.type), `${at}: a second condition of type ${c.type}`);
    types.add(c.type);
    for (const f of ["lastHeartbeatTime", "lastTransitionTime"])
      assert.ok(c[f] === undefined ? !mine : time(c[f]), `${at}.${f} ${JSON.stringify(c[f])}: RFC 3339${mine ? ", required" : ""}`);
    if (c.lastHeartbeatTime && c.lastTransitionTime)
      assert.ok(Date.parse(c.lastTransitionTime) <= Date.parse(c.lastHeartbeatTime), `${at}: lastTransitionTime after lastHeartbeatTime`);
    if (!mine) continue;
    assert.ok(qualifiedName(c.type) && c.type.length <= 316, `${at}.type: a qualified name`);
    assert.match(c.reason ?? "", /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/, `${at}.reason: one word, required`);
    assert.ok(c.reason.length <= 1024 && (c.message ?? "").length <= 32768, `${at}: reason at most 1024, message at most 32768`);
  }
}

function nodeRules(node, where, mine) {
  taintRules(node.spec?.taints ?? [], `${where} spec.taints`);
  conditionRules(node.status?.conditions ?? [], `${where} status.conditions`, mine);
}

const CALLS = [
  { method: "POST", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases$/, model: Lease },
  { method: "PUT", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases\/[^/]+$/, model: Lease },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/eviction$/, model: Eviction },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/events$/, model: Event },
  { method: "PATCH", path: /^\/api\/v1\/nodes\/[^/]+(\/status)?$/, model: Node, patch: true },
  { method: "POST", path: /^\/apis\/batch\/v1\/namespaces\/[^/]+\/jobs$/, model: Job, rules: jobRules },
  { method: "DELETE", path: /^\/apis\/[^/]+\/v1\/namespaces\/[^/]+\/jobs\/[^/]+$/, model: DeleteOptions },
];
const OURS = (ua) => ua.startsWith("nvidia-driver-installer/") || ua === "nvidia-driver-supply";
const seen = {};
for (const file of process.argv.slice(2)) {
  for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    const r = JSON.parse(line);
    if (!OURS(r.user_agent) || !r.body) continue;
    const call = CALLS.find((c) => c.method === r.method && c.path.test(r.path));
    assert.ok(call, `a body the schema check does not know: ${r.method} ${r.path}`);
    let body = JSON.parse(r.body);
    try {
      if (call.patch) {
        assert.ok(["application/merge-patch+json", "application/strategic-merge-patch+json"].includes(r.content_type),
          `a merge or strategic merge patch, not ${r.content_type}`);
        const status = r.path.endsWith("/status");
        assert.ok(status ? body.spec === undefined : body.status === undefined,
          status ? "spec in a status patch (the server drops it)" : "status in a patch of the Node (the server drops it: nodes/NAME/status)");
        body = { apiVersion: "v1", kind: "Node", ...withoutNulls(body) };
        new Node(body).validate();
        nodeRules(body, "the patch's", true);
        if (r.node_after && r.status < 300) {
          new Node(r.node_after).validate();
          nodeRules(r.node_after, "the Node it yielded:", false);
        }
      } else {
        new call.model(body).validate(); // throws on a schema violation
        if (call.rules) call.rules(body);
      }
    } catch (e) {
      throw new Error(`${r.method} ${r.path}: ${e.message}\n${r.body}`);
    }
    seen[call.model.name] = (seen[call.model.name] ?? 0) + 1;
    if (call.patch && r.path.endsWith("/status")) seen["Node/status"] = (seen["Node/status"] ?? 0) + 1;
  }
}
assert.ok(Object.keys(seen).length > 0, "no body of the agent's or the pass's in the logs");
console.log(Object.entries(seen).map(([k, n]) => `${k} ${n}`).join(", "));
