// SPDX-License-Identifier: Apache-2.0
// The bodies the node agent sent to the API server (tests/tools/kube-api.py's request log),
// each validated offline against the Kubernetes OpenAPI schema of the object the call takes
// (kubernetes-models): a Lease created or replaced (coordination.k8s.io/v1), an Eviction
// (policy/v1), an Event (core/v1), and a Node merge patch, validated as the Node it
// describes (RFC 7386: a null deletes, so the patch less its nulls is what must be a valid
// Node). Only the agent's requests count (its User-Agent); a body of a call not listed here
// fails, as does a log with none of the agent's.
//
//   node check-requests.mjs REQUEST_LOG...
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Lease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import { Eviction } from "kubernetes-models/policy/v1/Eviction";
import { Event } from "kubernetes-models/v1/Event";
import { Node } from "kubernetes-models/v1/Node";

const withoutNulls = (v) => Array.isArray(v) ? v.map(withoutNulls)
  : v && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]))
    : v;

const CALLS = [
  { method: "POST", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases$/, model: Lease },
  { method: "PUT", path: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases\/[^/]+$/, model: Lease },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/eviction$/, model: Eviction },
  { method: "POST", path: /^\/api\/v1\/namespaces\/[^/]+\/events$/, model: Event },
  { method: "PATCH", path: /^\/api\/v1\/nodes\/[^/]+$/, model: Node, patch: true },
];
const seen = {};
for (const file of process.argv.slice(2)) {
  for (const line of readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    const r = JSON.parse(line);
    if (!r.user_agent.startsWith("nvidia-driver-installer/") || !r.body) continue;
    const call = CALLS.find((c) => c.method === r.method && c.path.test(r.path));
    assert.ok(call, `a body the schema check does not know: ${r.method} ${r.path}`);
    let body = JSON.parse(r.body);
    if (call.patch) {
      assert.equal(r.content_type, "application/merge-patch+json", `${r.method} ${r.path}: a merge patch`);
      body = { apiVersion: "v1", kind: "Node", ...withoutNulls(body) };
    }
    try {
      new call.model(body).validate(); // throws on a schema violation
    } catch (e) {
      throw new Error(`${r.method} ${r.path}: ${e.message}\n${r.body}`);
    }
    seen[call.model.name] = (seen[call.model.name] ?? 0) + 1;
  }
}
assert.ok(Object.keys(seen).length > 0, "no body of the agent's in the logs");
console.log(Object.entries(seen).map(([k, n]) => `${k} ${n}`).join(", "));
