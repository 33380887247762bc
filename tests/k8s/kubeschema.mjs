// SPDX-License-Identifier: Apache-2.0
// Built-in Kubernetes objects (a Pod, a DaemonSet, ...) against Kubernetes' own schema of
// their kind, unknown fields refused as the API server refuses them under kubectl's default
// strict field validation (strict.mjs); and a pod's init containers' claims against the
// pod's (check-dra.mjs ties the other containers').
//
// The schema: openapi/swagger-v1.34.0.json, the definitions the kinds it is cut for reach
// in Kubernetes v1.34.0's api/openapi-spec/swagger.json, cut by trim-openapi.py, unchanged
// (provenance and roots in openapi/README.md); an object's definition is the one whose
// x-kubernetes-group-version-kind names its apiVersion and kind. Kubernetes generates its
// v2 and its v3 documents from the same Go definitions; for validation they differ in two
// types only, the two that declare OpenAPIV3OneOfTypes (k8s.io/apimachinery at v0.34.0,
// pkg/api/resource/quantity.go:407-415, pkg/util/intstr/intstr.go:159-167): v2 gives a
// Quantity and an IntOrString as a string, v3 as one of string or number (integer or
// string). Those two are given here as v3 gives them, so `cpu: 1` and `port: 8080` pass
// as the API server takes them.
//
//   objectErrors(obj) -> [] or, for one, ["spec.template.spec: must NOT have additional
//                        properties: tolerationz"]
//   podErrors(pod)    -> the same, then the init containers' claims
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import { strict } from "./strict.mjs";

const FILE = "swagger-v1.34.0.json";
const V3_ONE_OF = {
  "io.k8s.apimachinery.pkg.api.resource.Quantity": ["string", "number"],
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ["integer", "string"],
};

// Loaded and compiled on first use: check-dra.mjs's other modes do without it.
let ajv;
const kinds = new Map(); // "apps/v1 DaemonSet" -> definition name
function load() {
  const doc = JSON.parse(readFileSync(new URL(`openapi/${FILE}`, import.meta.url), "utf8"));
  const definitions = doc.definitions;
  for (const [name, types] of Object.entries(V3_ONE_OF)) {
    const { type, ...rest } = definitions[name];
    if (type !== "string") throw new Error(`${FILE}: ${name} is no longer a string in v2`);
    definitions[name] = { ...rest, oneOf: types.map((t) => ({ type: t })) };
  }
  for (const [name, d] of Object.entries(definitions)) {
    for (const gvk of d["x-kubernetes-group-version-kind"] ?? [])
      kinds.set(`${gvk.group ? `${gvk.group}/` : ""}${gvk.version} ${gvk.kind}`, name);
  }
  strict(definitions);
  // Ajv's own messages and its check of the schemas against JSON Schema's meta-schema, and
  // its code optimiser, cost more than half the compile time (0.2 s) of a DaemonSet's
  // closure: the messages are written below, the file is Kubernetes' (and
  // tests/scripts/test_trim_openapi.py holds it closed).
  ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, validateSchema: false,
    messages: false, code: { optimize: false } });
  ajv.addSchema({ $id: FILE, definitions });
}

// A JSON pointer as a field path: /spec/containers/0 -> spec.containers.0 (~1 is a "/").
const path = (p) =>
  p.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~")).join(".") ||
  "(root)";

// Ajv's errors, one line each, in Ajv's words: where, what, and the field or value it names
// (a oneOf's branches come first: "must be string", "must be number" say what it takes).
const MESSAGES = {
  additionalProperties: () => "must NOT have additional properties",
  type: (p) => `must be ${p.type}`,
  required: () => "must have required property",
  oneOf: () => "must match exactly one schema in oneOf",
  enum: () => "must be equal to one of the allowed values",
};
function schemaErrors(errors) {
  return errors.map((e) => {
    const message = MESSAGES[e.keyword]?.(e.params) ??
      `must pass ${e.keyword} ${JSON.stringify(e.params)}`;
    const what = e.params.additionalProperty ?? e.params.missingProperty ??
      e.params.allowedValues?.join(", ") ?? "";
    return `${path(e.instancePath)}: ${message}${what ? `: ${what}` : ""}`;
  });
}

// The object's schema errors; an apiVersion and kind the file has no schema for is one.
export function objectErrors(obj) {
  if (!ajv) load();
  const name = kinds.get(`${obj?.apiVersion} ${obj?.kind}`);
  if (!name) return [`no schema for ${obj?.apiVersion} ${obj?.kind} in openapi/${FILE}`];
  const validate = ajv.getSchema(`${FILE}#/definitions/${name}`);
  return validate(obj) ? [] : schemaErrors(validate.errors);
}

// A pod's errors: its schema's, then an init container's claim that is not one of the
// pod's, as a container's must not be (Kubernetes' pkg/apis/core/validation/validation.go,
// validateResourceClaimNames, for both; read by name here, not at a pinned commit).
export function podErrors(pod) {
  const errs = objectErrors(pod);
  if (errs.length) return errs;
  const claims = new Set((pod.spec?.resourceClaims ?? []).map((c) => c.name));
  for (const ctr of pod.spec?.initContainers ?? []) {
    for (const c of ctr.resources?.claims ?? [])
      if (!claims.has(c.name))
        errs.push(`init container ${ctr.name} uses claim ${c.name}, not the pod's`);
  }
  return errs;
}
