// SPDX-License-Identifier: Apache-2.0
// admission-policy.yaml held to what kube-apiserver would make of it, then run.
//
// 1. Each object against Kubernetes' own admissionregistration.k8s.io/v1 schemas, unknown
//    fields refused (kubeschema.mjs), then against the server's own validation, restated from
//    kubernetes pkg/apis/admissionregistration/validation/validation.go
//    (validateValidatingAdmissionPolicySpec and what it calls; cited per rule below).
// 2. Every CEL expression parsed with @bufbuild/cel, and held to what this test can vouch
//    for: it names only the variables a ValidatingAdmissionPolicy has (k8s.io/apiserver
//    pkg/admission/plugin/cel/compile.go, createEnvForOpts: object, oldObject, request,
//    namespaceObject, authorizer, variables; params only with a paramKind), a variable only
//    after its definition (composition: variables are compiled in order), and only functions
//    of standard CEL. Kubernetes adds libraries (k8s.io/apiserver pkg/cel/library: lists,
//    regex, quantity, url, ip, cidr, format, semver, authz; pkg/cel/environment/base.go
//    lists them with the release that brought each); @bufbuild/cel has none of them, so the
//    policy uses none, and this test refuses any function outside the STANDARD list.
// 3. The policy run over AdmissionRequest-shaped requests (admission-requests/*.json: a
//    base object and the agent's own writes, as patches, as the user it is, with and
//    without the node name in its token, and as another user), and, with --log, over the
//    node writes a stand-in API server log records (tests/tools/kube-api.py's "node_after"):
//    each agent write allowed as its own node and refused as any other. Evaluation follows
//    k8s.io/apiserver pkg/admission/plugin/policy/validating (matchConstraints, then
//    matchConditions, all true to match; then each validation in order, the first false
//    refuses with its messageExpression, else its message). A variable or expression that
//    errs is a failure of this test: under failurePolicy Fail it would refuse the request.
//
// 4. With --manifest, the policy held to each DaemonSet manifest: its username is the agent's
//    service account there, its taint keys the agent's (NVIDIA_STARTUP_TAINT and
//    NVIDIA_HEALTH_TAINT where the manifest sets them, else the defaults of SPEC49's names).
//
//   node check-admission.mjs POLICY REQUESTS_DIR [--log KUBE_LOG]... [--manifest FILE]...
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import * as yaml from "./kubeyaml.mjs"; // as kubectl reads YAML
import { parse, plan, celEnv, isCelError, isCelMap, isCelList } from "@bufbuild/cel";
import { objectErrors } from "./kubeschema.mjs";

const args = process.argv.slice(2);
const [policyFile, requestsDir] = args;
const after = (flag) => args.flatMap((a, i) => (args[i - 1] === flag ? [a] : []));
const logs = after("--log");
const manifests = after("--manifest");
assert.ok(policyFile && requestsDir,
  "usage: check-admission.mjs POLICY REQUESTS_DIR [--log FILE]... [--manifest FILE]...");
const docs = yaml.loadAll(readFileSync(policyFile, "utf8")).filter(Boolean);
const policy = docs.find((d) => d.kind === "ValidatingAdmissionPolicy");
const binding = docs.find((d) => d.kind === "ValidatingAdmissionPolicyBinding");
assert.ok(policy && binding && docs.length === 2, `${policyFile}: one policy and its binding`);
for (const d of docs) {
  const errs = objectErrors(d);
  assert.ok(!errs.length, `${policyFile}: ${d.kind} ${d.metadata?.name}: ${errs.join("; ")}`);
}

// ---- 1. The server's validation (validation.go) ----
// NameIsDNSSubdomain (k8s.io/apimachinery pkg/util/validation IsDNS1123Subdomain).
const dns1123 = (s) => s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);
// ValidateQualifiedName (IsQualifiedName): [prefix/]name, name at most 63.
const qualified = (s) => {
  const parts = s.split("/");
  const name = parts.pop();
  return parts.length <= 1 && (parts.length === 0 || (parts[0] && dns1123(parts[0]))) &&
    name.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
};
// isCELIdentifier: [_a-zA-Z][_a-zA-Z0-9]*, not a CEL reserved word.
const CEL_RESERVED = new Set(["true", "false", "null", "in", "as", "break", "const", "continue",
  "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return",
  "var", "void", "while"]);
const celIdent = (s) => /^[_a-zA-Z][_a-zA-Z0-9]*$/.test(s) && !CEL_RESERVED.has(s);
const oneOf = (v, set, what) => assert.ok(set.includes(v), `${what}: ${v} is not one of ${set}`);
const starAlone = (list, what) =>
  assert.ok(!(list.length > 1 && list.includes("*")), `${what}: if '*' is present, nothing else`);
const noBreaks = (s, what) => assert.ok(!/[\n\r]/.test(s.trim()), `${what}: a message has no line breaks`);

assert.ok(dns1123(policy.metadata.name), "policy: metadata.name is a DNS subdomain");
const spec = policy.spec;
// validateValidatingAdmissionPolicySpec: failurePolicy (defaulted to Fail in v1) Ignore|Fail.
oneOf(spec.failurePolicy, ["Ignore", "Fail"], "spec.failurePolicy");
assert.equal(spec.failurePolicy, "Fail", "spec.failurePolicy: an expression that errs refuses");
assert.equal(spec.paramKind, undefined, "spec.paramKind: the policy takes no parameters");
// validateMatchResources; matchConstraints and at least one resourceRule required.
const mc = spec.matchConstraints;
assert.ok(mc && mc.resourceRules?.length > 0, "spec.matchConstraints.resourceRules: required");
oneOf(mc.matchPolicy, ["Exact", "Equivalent"], "matchPolicy");
assert.ok(mc.namespaceSelector && mc.objectSelector, "matchConstraints: both selectors (defaulted to {})");
for (const [i, r] of [...mc.resourceRules, ...(mc.excludeResourceRules ?? [])].entries()) {
  const at = `resourceRules[${i}]`;
  // validateRuleWithOperations: operations required, '*' alone, each supported.
  assert.ok(r.operations?.length > 0, `${at}.operations: required`);
  starAlone(r.operations, `${at}.operations`);
  r.operations.forEach((o) => oneOf(o, ["*", "CREATE", "UPDATE", "DELETE", "CONNECT"], `${at}.operations`));
  // validateRule: apiGroups and apiVersions required, '*' alone, no empty version.
  assert.ok(r.apiGroups?.length > 0 && r.apiVersions?.length > 0, `${at}: apiGroups and apiVersions`);
  starAlone(r.apiGroups, `${at}.apiGroups`);
  starAlone(r.apiVersions, `${at}.apiVersions`);
  assert.ok(r.apiVersions.every((v) => v !== ""), `${at}.apiVersions: no empty version`);
  // validateResources: required, no empty entry, '*/*' alone, '*' not beside x, x/* beside x/y.
  assert.ok(r.resources?.length > 0 && r.resources.every((x) => x !== ""), `${at}.resources`);
  assert.ok(!(r.resources.length > 1 && r.resources.includes("*/*")), `${at}.resources: '*/*' alone`);
  assert.ok(!(r.resources.includes("*") && r.resources.some((x) => x !== "*" && !x.includes("/"))),
    `${at}.resources: '*' beside a resource`);
  for (const x of r.resources.filter((x) => x.includes("/"))) {
    const [res, sub] = x.split("/", 2);
    assert.ok(!(sub !== "*" && r.resources.includes(`${res}/*`)), `${at}.resources: ${res}/* and ${x}`);
    assert.ok(!(res !== "*" && r.resources.includes(`*/${sub}`)), `${at}.resources: */${sub} and ${x}`);
  }
  if (r.scope) oneOf(r.scope, ["Cluster", "Namespaced", "*"], `${at}.scope`);
  // validateNamedRuleWithOperations: resourceNames unique path segments.
  assert.equal(new Set(r.resourceNames ?? []).size, (r.resourceNames ?? []).length, `${at}.resourceNames`);
}
// validateMatchConditions: at most 64, names qualified and unique, expressions non-empty.
const conds = spec.matchConditions ?? [];
assert.ok(conds.length <= 64, "matchConditions: at most 64");
assert.equal(new Set(conds.map((c) => c.name)).size, conds.length, "matchConditions: unique names");
conds.forEach((c) => assert.ok(qualified(c.name) && c.expression.trim(), `matchCondition ${c.name}`));
// validateVariable: a CEL identifier, an expression; names unique (the composition's map).
const vars = spec.variables ?? [];
vars.forEach((v) => assert.ok(celIdent(v.name) && v.expression.trim(), `variable ${v.name}`));
assert.equal(new Set(vars.map((v) => v.name)).size, vars.length, "variables: unique names");
// validations or auditAnnotations: at least one; validateValidation per entry.
assert.ok(spec.validations?.length > 0, "spec.validations: required (no auditAnnotations here)");
for (const [i, v] of spec.validations.entries()) {
  assert.ok(v.expression.trim(), `validations[${i}].expression: required`);
  assert.ok(v.message === undefined || v.message.trim(), `validations[${i}].message: non-empty`);
  if (v.message) noBreaks(v.message, `validations[${i}].message`);
  assert.ok(v.messageExpression === undefined || v.messageExpression.trim(),
    `validations[${i}].messageExpression: non-empty if given`);
  // supportedValidationPolicyReason (Unauthorized joined in later releases; not used here).
  if (v.reason) oneOf(v.reason, ["Forbidden", "Invalid", "RequestEntityTooLarge"], `validations[${i}].reason`);
}
// validateValidatingAdmissionPolicyBindingSpec: policyName a DNS subdomain (this one's),
// validateValidationActions: required, unique, Deny|Warn|Audit, not both Deny and Warn.
assert.ok(dns1123(binding.metadata.name), "binding: metadata.name is a DNS subdomain");
assert.equal(binding.spec.policyName, policy.metadata.name, "binding: binds this policy");
const actions = binding.spec.validationActions ?? [];
assert.ok(actions.length > 0, "binding.validationActions: required");
actions.forEach((a) => oneOf(a, ["Deny", "Warn", "Audit"], "binding.validationActions"));
assert.equal(new Set(actions).size, actions.length, "binding.validationActions: unique");
assert.ok(!(actions.includes("Deny") && actions.includes("Warn")), "binding: not both Deny and Warn");
assert.ok(actions.includes("Deny"), "binding: the policy refuses, not only warns");
assert.equal(binding.spec.paramRef, undefined, "binding: no paramRef (the policy has no paramKind)");

// ---- 2. Every expression compiles, over what the test can vouch for ----
// Standard CEL's functions and operators as the parser names them (cel-spec
// doc/langdef.md, "List of Standard Definitions"), the ones this policy may use.
const STANDARD = new Set(["_&&_", "_||_", "!_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
  "_+_", "_-_", "_?_:_", "_[_]", "@in", "@not_strictly_false", "size", "startsWith", "endsWith",
  "contains", "matches", "string", "int"]);
const ROOTS = new Set(["object", "oldObject", "request", "namespaceObject", "authorizer", "variables"]);
// A messageExpression has no authorizer (validation.go, validateMessageExpression).
const MESSAGE_ROOTS = new Set([...ROOTS].filter((r) => r !== "authorizer"));
function walk(e, seen, locals, at, roots = ROOTS) {
  const k = e.exprKind;
  switch (k.case) {
    case "identExpr":
      assert.ok(roots.has(k.value.name) || locals.has(k.value.name), `${at}: unknown name ${k.value.name}`);
      break;
    case "selectExpr": {
      const op = k.value.operand;
      if (op?.exprKind.case === "identExpr" && op.exprKind.value.name === "variables")
        assert.ok(seen.has(k.value.field), `${at}: variables.${k.value.field} used before its definition`);
      walk(op, seen, locals, at, roots);
      break;
    }
    case "callExpr":
      assert.ok(STANDARD.has(k.value.function), `${at}: ${k.value.function} is not standard CEL`);
      if (k.value.target) walk(k.value.target, seen, locals, at, roots);
      k.value.args.forEach((a) => walk(a, seen, locals, at, roots));
      break;
    case "listExpr":
      k.value.elements.forEach((a) => walk(a, seen, locals, at, roots));
      break;
    case "structExpr":
      k.value.entries.forEach((en) => {
        if (en.keyKind.case === "mapKey") walk(en.keyKind.value, seen, locals, at, roots);
        walk(en.value, seen, locals, at, roots);
      });
      break;
    case "comprehensionExpr": {
      const c = k.value;
      walk(c.iterRange, seen, locals, at, roots);
      const inner = new Set([...locals, c.iterVar, c.accuVar]);
      for (const x of [c.accuInit, c.loopCondition, c.loopStep, c.result]) walk(x, seen, inner, at, roots);
      break;
    }
    case "constExpr":
      break;
    default:
      assert.fail(`${at}: unexpected expression kind ${k.case}`);
  }
}
const env = celEnv();
const compiled = new Map();
function compile(src, seen, at, roots = ROOTS) {
  let parsed;
  try {
    parsed = parse(src);
  } catch (e) {
    assert.fail(`${at}: does not compile: ${e.message}`);
  }
  walk(parsed.expr, seen, new Set(), at, roots);
  const run = plan(env, parsed);
  compiled.set(at, run);
  return run;
}
const seen = new Set();
const varPlans = vars.map((v) => {
  const p = compile(v.expression, seen, `variable ${v.name}`);
  seen.add(v.name);
  return [v.name, p];
});
const condPlans = conds.map((c) => [c.name, compile(c.expression, new Set(), `matchCondition ${c.name}`)]);
const valPlans = spec.validations.map((v, i) => ({
  expr: compile(v.expression, seen, `validations[${i}]`),
  msg: v.messageExpression
    ? compile(v.messageExpression, seen, `validations[${i}].messageExpression`, MESSAGE_ROOTS) : null,
  message: v.message,
  i,
}));

// ---- 3. The policy run ----
// A JSON value as the API server hands it to CEL: integers are int (JSON's numbers decode
// as int64 where the field is an integer), objects maps; null fields are never there (the
// typed object's omitempty).
function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v && typeof v === "object")
    return new Map(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, toCel(x)]));
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return v;
}
// Variables are evaluated when first used and kept (composition.go, lazy variables).
class Variables extends Map {
  constructor(ctx, at) {
    super();
    this.ctx = ctx;
    this.at = at;
    this.memo = new Map();
  }
  get(name) {
    if (!this.memo.has(name)) {
      const p = varPlans.find(([n]) => n === name);
      if (!p) return undefined;
      const r = p[1](this.ctx);
      assert.ok(!isCelError(r), `${this.at}: variable ${name} errs: ${r?.message}`);
      this.memo.set(name, r);
    }
    return this.memo.get(name);
  }
  has(name) {
    return varPlans.some(([n]) => n === name);
  }
}
function matches(req) {
  const r = req.resource;
  const res = req.subResource ? `${r.resource}/${req.subResource}` : r.resource;
  return mc.resourceRules.some((rule) =>
    (rule.apiGroups.includes("*") || rule.apiGroups.includes(r.group)) &&
    (rule.apiVersions.includes("*") || rule.apiVersions.includes(r.version)) &&
    (rule.operations.includes("*") || rule.operations.includes(req.operation)) &&
    (rule.resources.includes("*") || rule.resources.includes(res)));
}
// "unmatched", "allow", or "deny: MESSAGE"; OFF: a validation's index taken as true.
function admit(req, at, off = -1) {
  if (!matches(req)) return "unmatched";
  const { object = null, oldObject = null, ...request } = req;
  const ctx = { object: toCel(object), oldObject: toCel(oldObject), request: toCel(request) };
  for (const [name, p] of condPlans) {
    const r = p(ctx);
    assert.ok(!isCelError(r) && typeof r === "boolean", `${at}: matchCondition ${name}: ${r?.message ?? r}`);
    if (!r) return "unmatched";
  }
  ctx.variables = new Variables(ctx, at);
  for (const v of valPlans) {
    if (v.i === off) continue;
    const r = v.expr(ctx);
    assert.ok(!isCelError(r), `${at}: validations[${v.i}] errs: ${r?.message}`);
    assert.equal(typeof r, "boolean", `${at}: validations[${v.i}] is not a bool`);
    if (r) continue;
    let msg = v.message;
    if (v.msg) {
      const m = v.msg(ctx);
      assert.ok(typeof m === "string", `${at}: validations[${v.i}].messageExpression: ${m?.message ?? m}`);
      msg = m;
    }
    return `deny: ${msg}`;
  }
  return "allow";
}

// RFC 7386 JSON merge patch, as the API server applies application/merge-patch+json.
function mergePatch(target, patch) {
  if (!patch || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out = target && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
const AGENT = "system:serviceaccount:kube-system:nvidia-driver-installer";
const NODE_KEY = "authentication.kubernetes.io/node-name";
function userInfo(as, user = AGENT) {
  const extra = as === null ? {} : {
    "authentication.kubernetes.io/pod-name": ["nvidia-driver-installer-x7k2p"],
    "authentication.kubernetes.io/pod-uid": ["0c1d2e3f-0000-4000-8000-000000000001"],
    [NODE_KEY]: [as],
  };
  return { username: user, groups: ["system:serviceaccounts", "system:serviceaccounts:kube-system",
    "system:authenticated"], ...(as === null ? {} : { extra }) };
}
const GVR = {
  nodes: { group: "", version: "v1", resource: "nodes" },
  events: { group: "", version: "v1", resource: "events" },
  leases: { group: "coordination.k8s.io", version: "v1", resource: "leases" },
};
// A case: its base object (the file's, renamed to NAME), OPERATION, the patch the client
// sent (merge patch; a status write's patch carries the whole conditions list, the result
// of the server's strategic merge by type), as the node AS (null: a token without one).
function requestOf(file, c) {
  const kind = c.resource ?? file.resource;
  const base = c.base ?? file.base;
  const old = base && mergePatch(base, { metadata: { name: c.name ?? base.metadata.name } });
  const op = c.operation ?? "UPDATE";
  const object = op === "DELETE" ? null : c.object ?? mergePatch(old, c.patch ?? {});
  const oldObject = op === "CREATE" ? null : old;
  const meta = (object ?? oldObject).metadata;
  return {
    kind: { group: GVR[kind].group, version: "v1", kind: file.kind },
    resource: GVR[kind], subResource: c.subResource ?? "",
    requestKind: { group: GVR[kind].group, version: "v1", kind: file.kind },
    requestResource: GVR[kind], requestSubResource: c.subResource ?? "",
    name: meta.name, ...(meta.namespace ? { namespace: meta.namespace } : {}),
    operation: op, userInfo: userInfo(c.as === undefined ? "gpu-node-1" : c.as, c.user),
    dryRun: false, object, oldObject,
  };
}

let checked = 0;
const failures = [];
const all = []; // [request, expected, where]
const expect = (req, want, at) => {
  checked++;
  all.push([req, want, at]);
  const got = admit(req, at);
  const ok = want.startsWith("deny:") ? got.startsWith("deny:") && got.includes(want.slice(5).trim())
    : got === want;
  if (!ok) failures.push(`${at}: expected ${want}, got ${got}`);
  return ok;
};
for (const f of readdirSync(requestsDir).filter((f) => f.endsWith(".json")).sort()) {
  const file = JSON.parse(readFileSync(`${requestsDir}/${f}`, "utf8"));
  const ok = file.cases.filter((c) => expect(requestOf(file, c), c.expect, `${f}: ${c.case}`)).length;
  console.log(`${f}: ${ok} of ${file.cases.length} requests as expected`);
}

// The agent's node writes a stand-in log records: its own node allowed, another refused.
for (const log of logs) {
  const after = new Map();
  let n = 0;
  for (const line of readFileSync(log, "utf8").split("\n").filter(Boolean)) {
    const r = JSON.parse(line);
    const m = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(r.path);
    if (!m || !r.node_after || !(r.status >= 200 && r.status < 300)) continue;
    const before = r.node_before ?? after.get(m[1]);
    after.set(m[1], r.node_after);
    if (!(r.user_agent ?? "").startsWith("nvidia-driver-installer/") || !before) continue;
    const req = (as) => ({
      kind: { group: "", version: "v1", kind: "Node" }, resource: GVR.nodes,
      subResource: m[2] ? "status" : "", requestKind: { group: "", version: "v1", kind: "Node" },
      requestResource: GVR.nodes, requestSubResource: m[2] ? "status" : "", name: m[1],
      operation: "UPDATE", userInfo: userInfo(as), dryRun: false, object: r.node_after, oldObject: before,
    });
    const at = `${log}: ${r.method} ${r.path} (${(r.body ?? "").slice(0, 160)})`;
    expect(req(m[1]), "allow", `${at} as its own node`);
    expect(req(`${m[1]}-other`), "deny: may only update its own Node", `${at} as another node`);
    n++;
  }
  assert.ok(n > 0, `${log}: no node write of the agent's with node_after to replay`);
  console.log(`${log}: ${n} agent node writes replayed`);
}
// Each validation earns its place: taken out, some request it refused is let through.
if (failures.length === 0)
  for (const v of valPlans) {
    const through = all.filter(([req, want, at]) => want.startsWith("deny:") && admit(req, at, v.i) === "allow");
    if (through.length === 0)
      failures.push(`validations[${v.i}] refuses nothing the others would let through: a request to show it`);
  }
// ---- 4. The manifests the policy goes with ----
const constant = (name) => {
  const v = vars.find((x) => x.name === name);
  const m = v && /^'([^']*)'$/.exec(v.expression.trim());
  assert.ok(m, `variable ${name}: a string constant`);
  return m[1];
};
const usernames = conds.map((c) => c.expression).join("\n").match(/'system:serviceaccount:[^']+'/g) ?? [];
assert.ok(usernames.length > 0, "a matchCondition names the agent's usernames");
// The agent's defaults (docs/configuration.md): --startup-taint, --health-taint's example.
const DEFAULT_STARTUP = "startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver";
const DEFAULT_HEALTH = "nvidia.com/gpu-unhealthy";
for (const file of manifests) {
  const agents = yaml.loadAll(readFileSync(file, "utf8")).filter((d) => d?.kind === "DaemonSet")
    .flatMap((ds) => ds.spec.template.spec.containers.filter((c) => (c.args ?? []).includes("agent"))
      .map((c) => [ds, c]));
  assert.ok(agents.length > 0, `${file}: no DaemonSet runs the agent`);
  for (const [ds, c] of agents) {
    const at = `${file}: ${ds.metadata.name}`;
    const sa = `system:serviceaccount:${ds.metadata.namespace}:${ds.spec.template.spec.serviceAccountName}`;
    if (!usernames.includes(`'${sa}'`)) failures.push(`${at}: the agent runs as ${sa}, the policy matches ${usernames}`);
    const env = Object.fromEntries((c.env ?? []).filter((e) => "value" in e).map((e) => [e.name, e.value]));
    const startup = env.NVIDIA_STARTUP_TAINT ?? DEFAULT_STARTUP;
    if (startup !== "none" && startup !== constant("startupTaint"))
      failures.push(`${at}: NVIDIA_STARTUP_TAINT ${startup}, the policy's startupTaint ${constant("startupTaint")}`);
    const health = (env.NVIDIA_HEALTH_TAINT ?? `${DEFAULT_HEALTH}:NoSchedule`).split(":")[0];
    if (health !== "none" && health !== constant("healthTaint"))
      failures.push(`${at}: NVIDIA_HEALTH_TAINT's key ${health}, the policy's healthTaint ${constant("healthTaint")}`);
    checked++;
  }
  console.log(`${file}: ${agents.length} agent(s) as the policy expects`);
}
for (const f of failures) console.log(`check-admission: ${f}`);
assert.equal(failures.length, 0, `${failures.length} of ${checked} requests not as expected`);
console.log(`check-admission: ${policyFile}: ${checked} requests as expected`);
