// SPDX-License-Identifier: Apache-2.0
// The bodies the node agent and the supply pass sent to the API server
// (tests/tools/kube-api.py's request log), each validated offline against the Kubernetes
// OpenAPI schema of the object the call takes (kubernetes-models): a Lease created or
// replaced (coordination.k8s.io/v1), an Eviction (policy/v1), an Event (core/v1), a Node
// merge patch, validated as the Node it describes (RFC 7386: a null deletes, so the patch
// less its nulls is what must be a valid Node), a Job created (batch/v1, and what
// kube-apiserver's own validation adds: jobRules) and the DeleteOptions of a DELETE. Only
// the agent's and the pass's requests count (their User-Agents); a body of a call not listed
// here fails, as does a log with none of theirs.
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

const CALLS = [
  { method: "POST", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases$/, model: Lease },
  { method: "PUT", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases\/[^/]+$/, model: Lease },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/eviction$/, model: Eviction },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/events$/, model: Event },
  { method: "PATCH", path: /^\/api\/v1\/nodes\/[^/]+$/, model: Node, patch: true },
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
    if (call.patch) {
      assert.equal(r.content_type, "application/merge-patch+json", `${r.method} ${r.path}: a merge patch`);
      body = { apiVersion: "v1", kind: "Node", ...withoutNulls(body) };
    }
    try {
      new call.model(body).validate(); // throws on a schema violation
      if (call.rules) call.rules(body);
    } catch (e) {
      throw new Error(`${r.method} ${r.path}: ${e.message}\n${r.body}`);
    }
    seen[call.model.name] = (seen[call.model.name] ?? 0) + 1;
  }
}
assert.ok(Object.keys(seen).length > 0, "no body of the agent's or the pass's in the logs");
console.log(Object.entries(seen).map(([k, n]) => `${k} ${n}`).join(", "));
