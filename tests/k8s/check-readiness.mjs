// SPDX-License-Identifier: Apache-2.0
// Validates NodeReadinessRule documents (docs/examples/node-readiness/) offline, as the API
// server and the Node Readiness Controller would admit them: against the controller's CRD
// (crd/, provenance in crd/README.md), its openAPIV3Schema with unknown fields refused (the
// API server's strict field validation, kubectl's default), every x-kubernetes-validations
// rule evaluated with a CEL implementation (@bufbuild/cel, with the strings extension whose
// split() the rules call), then what the controller's admission webhook refuses. Then what
// this repository's agent needs of a rule: the condition it writes, required True.
//
//   node check-readiness.mjs FILE...           each object as a create
//   node check-readiness.mjs --update OLD NEW  each object of NEW as an update of OLD's
//                                              object of the same name: transition rules too
//
// The API server's rules followed here (kubernetes, staging/src/k8s.io/apiextensions-apiserver):
// pkg/registry/customresource/validator.go: apiVersion GROUP/VERSION, the CRD's kind, the
// name a DNS subdomain, no namespace on a cluster-scoped kind; pkg/apiserver/schema/cel:
// a rule runs with self bound to the value of the schema node that carries it, only where
// that value is present; a rule that names oldSelf (a transition rule) only on an update, and
// only where an old value correlates with the new one (the same property of a correlated
// object, the same key of a map, the item with the same keys of an x-kubernetes-list-type: map
// list; never inside atomic or set lists); a rule's result must be true, else its message.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import * as yaml from "./kubeyaml.mjs"; // as kubectl reads YAML
import { strict } from "./strict.mjs";
import { celRules, listTypes } from "./crdrules.mjs";

// The condition the node agent writes (installer/kube/kube.h, KUBE_CONDITION_TYPE).
const CONDITION = "nvidia.com/GPUDriverReady";

const crd = yaml.load(readFileSync(new URL("crd/readiness.node.x-k8s.io_nodereadinessrules.yaml",
  import.meta.url), "utf8"));
const version = crd.spec.versions.find((v) => v.served && v.storage);
const API_VERSION = `${crd.spec.group}/${version.name}`;
const KIND = crd.spec.names.kind;
const SCHEMA = version.schema.openAPIV3Schema;
const ajvSchema = structuredClone(SCHEMA);
strict(ajvSchema);
// metadata is the API server's ObjectMeta, checked below.
ajvSchema.properties.metadata = { type: "object" };
const ajv = new Ajv({ strict: false, allErrors: true });
// The formats the CRD uses, as kube-openapi's validator reads them (RFC 3339 date-time;
// int32/int64 ranges).
ajv.addFormat("date-time", /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/);
ajv.addFormat("int32", { type: "number", validate: (n) => n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat("int64", { type: "number", validate: (n) => Number.isSafeInteger(n) });
const validateSchema = ajv.compile(ajvSchema);

// k8s.io/apimachinery pkg/util/validation/validation.go: IsDNS1123Subdomain,
// IsQualifiedName, IsValidLabelValue.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const isSubdomain = (s) => typeof s === "string" && s.length <= 253 && DNS_SUBDOMAIN.test(s);
function isQualifiedName(s) {
  const parts = String(s).split("/");
  if (parts.length > 2) return false;
  const name = parts.at(-1);
  if (name.length > 63 || !NAME_PART.test(name)) return false;
  return parts.length === 1 || (parts[0].length > 0 && isSubdomain(parts[0]));
}
const isLabelValue = (s) => typeof s === "string" && s.length <= 63 && (s === "" || NAME_PART.test(s));

// k8s.io/apimachinery pkg/apis/meta/v1/helpers.go, LabelSelectorAsSelector (the controller's
// webhook calls it and refuses what it refuses, then an empty selector).
function selectorErrors(sel, path) {
  const errs = [];
  for (const [k, v] of Object.entries(sel?.matchLabels ?? {})) {
    if (!isQualifiedName(k)) errs.push(`${path}.matchLabels: ${JSON.stringify(k)} is not a qualified name`);
    if (!isLabelValue(v)) errs.push(`${path}.matchLabels.${k}: ${JSON.stringify(v)} is not a label value`);
  }
  (sel?.matchExpressions ?? []).forEach((e, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    if (!isQualifiedName(e.key)) errs.push(`${at}.key: ${JSON.stringify(e.key)} is not a qualified name`);
    const values = e.values ?? [];
    if (e.operator === "In" || e.operator === "NotIn") {
      if (values.length === 0) errs.push(`${at}: operator ${e.operator} needs values`);
    } else if (e.operator === "Exists" || e.operator === "DoesNotExist") {
      if (values.length > 0) errs.push(`${at}: operator ${e.operator} takes no values`);
    } else errs.push(`${at}.operator: ${JSON.stringify(e.operator)} is not In, NotIn, Exists or DoesNotExist`);
    values.forEach((v, j) => isLabelValue(v) || errs.push(`${at}.values[${j}]: ${JSON.stringify(v)} is not a label value`));
  });
  if (Object.keys(sel?.matchLabels ?? {}).length === 0 && (sel?.matchExpressions ?? []).length === 0)
    errs.push(`${path}: nodeSelector must not be empty`);
  return errs;
}

// What the controller's webhook refuses at creation that the CRD cannot say
// (node-readiness-controller, internal/webhook/nodereadinessgaterule_webhook.go: validateSpec).
function webhookErrors(spec) {
  const errs = selectorErrors(spec.nodeSelector, "spec.nodeSelector");
  if (spec.enforcementMode === "bootstrap-only") {
    spec.conditions.forEach((c, i) => {
      if (c.defaultStatus !== undefined)
        errs.push(`spec.conditions[${i}].defaultStatus: defaultStatus should not be used with bootstrap-only enforcementMode`);
    });
    if (spec.conditionPolicy === "anyOf")
      errs.push("spec.conditionPolicy: anyOf conditionPolicy is not supported with bootstrap-only enforcementMode");
  }
  return errs;
}

// One object, ERRS gathered; OLD: the object it updates, or undefined for a create.
function check(d, old) {
  const errs = [];
  if (d.apiVersion !== API_VERSION) errs.push(`apiVersion: must be ${API_VERSION}, not ${d.apiVersion}`);
  if (d.kind !== KIND) errs.push(`kind: must be ${KIND}, not ${d.kind}`);
  if (!isSubdomain(d.metadata?.name)) errs.push(`metadata.name: ${JSON.stringify(d.metadata?.name)} is not a DNS subdomain`);
  if (d.metadata?.namespace !== undefined) errs.push(`metadata.namespace: ${KIND} is cluster-scoped`);
  if (!validateSchema(d)) {
    for (const e of validateSchema.errors) {
      const what = e.params.additionalProperty ?? e.params.allowedValues?.join(", ") ?? "";
      errs.push(`${e.instancePath.slice(1).replaceAll("/", ".") || "(root)"}: ${e.message}${what ? `: ${what}` : ""}`);
    }
  }
  if (errs.length) return { errs, rules: 0 };
  listTypes(SCHEMA, d, "", errs);
  const rules = celRules(SCHEMA, d, old, "", errs);
  if (!old) errs.push(...webhookErrors(d.spec));
  // What this repository's agent gives a rule to act on: its condition, True when ready.
  const ours = d.spec.conditions.filter((c) => c.type === CONDITION);
  if (ours.length !== 1 || ours[0].requiredStatus !== "True")
    errs.push(`spec.conditions: no ${CONDITION} required True (the node agent's condition)`);
  return { errs: errs.map((e) => e.replace(/^\./, "")), rules };
}

const load = (file) => yaml.loadAll(readFileSync(file, "utf8")).filter(Boolean);
const args = process.argv.slice(2);
const update = args[0] === "--update";
assert.ok(update ? args.length === 3 : args.length > 0,
  "usage: check-readiness.mjs FILE... | check-readiness.mjs --update OLD NEW");
let failed = 0;
const created = [];
const report = (file, d, { errs, rules }) => {
  const where = `${file}: ${d.kind} ${d.metadata?.name}`;
  for (const e of errs) console.error(`check-readiness: ${where}: ${e}`);
  if (errs.length) failed++;
  else console.log(`check-readiness: ${where}: valid${update ? " as an update" : ""} (${rules} CEL rules)`);
};
if (update) {
  const olds = new Map(load(args[1]).map((d) => [d.metadata?.name, d]));
  for (const d of load(args[2])) {
    const old = olds.get(d.metadata?.name);
    assert.ok(old, `${args[2]}: ${d.metadata?.name} is not in ${args[1]}`);
    report(args[2], d, check(d, old));
  }
} else {
  for (const file of args) {
    for (const d of load(file)) {
      const res = check(d, undefined);
      // The webhook refuses a second rule of the same taint key and effect whose node
      // selector overlaps (validateTaintConflicts); every rule here selects GPU nodes, so
      // the same key and effect twice is taken as a conflict.
      const twin = created.find((c) => c.d.spec?.taint?.key === d.spec?.taint?.key &&
        c.d.spec?.taint?.effect === d.spec?.taint?.effect);
      if (twin && d.spec?.taint)
        res.errs.push(`spec.taint.key: conflicts with existing rule '${twin.d.metadata.name}' ` +
          `(${twin.file}) - same taint key '${d.spec.taint.key}' and effect '${d.spec.taint.effect}'`);
      created.push({ file, d });
      report(file, d, res);
    }
  }
}
process.exit(failed ? 1 : 0);
