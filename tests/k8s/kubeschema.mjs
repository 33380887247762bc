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
import { strict } from "./strict.mjs";

const FILE = "swagger-v1.34.0.json";
const V3_ONE_OF = {
  "io.k8s.apimachinery.pkg.api.resource.Quantity": ["string", "number"],
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ["integer", "string"],
};

// The JSON Schema keywords Kubernetes' definitions use, each checked below as JSON Schema
// (draft-07, as Ajv checks resource.k8s.io in check-dra.mjs) says: a $ref's siblings are
// not read, format is not checked (Ajv's validateFormats: false there), x-* are
// annotations. A definition with any other keyword stops the load: a refresh that brings
// one in needs its check here first. Compiling the definitions with Ajv instead cost 0.1-0.2 s
// a run for a DaemonSet's closure (t_manifest runs the check some 40 times); this takes
// a few milliseconds. tests/k8s/kubeschema-vs-ajv.mjs holds the two to the same errors.
const KEYWORDS = new Set(["$ref", "additionalProperties", "description", "format", "items",
  "oneOf", "properties", "required", "type"]);
const TYPES = {
  string: (v) => typeof v === "string",
  boolean: (v) => typeof v === "boolean",
  integer: (v) => typeof v === "number" && Number.isInteger(v),
  number: (v) => typeof v === "number" && Number.isFinite(v),
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: (v) => Array.isArray(v),
};

// Loaded on first use: check-dra.mjs's other modes do without it.
let definitions;
const kinds = new Map(); // "apps/v1 DaemonSet" -> definition name
function keywords(schema, where) {
  for (const k of Object.keys(schema)) {
    if (!KEYWORDS.has(k) && !k.startsWith("x-"))
      throw new Error(`${FILE}: ${where}: keyword ${k} is not one kubeschema.mjs checks: add it`);
  }
  if (schema.type !== undefined && !TYPES[schema.type])
    throw new Error(`${FILE}: ${where}: type ${schema.type} is not one kubeschema.mjs knows`);
  for (const [p, s] of Object.entries(schema.properties ?? {})) keywords(s, `${where}.${p}`);
  if (schema.items) keywords(schema.items, `${where}[]`);
  if (typeof schema.additionalProperties === "object")
    keywords(schema.additionalProperties, `${where}{}`);
  for (const s of schema.oneOf ?? []) keywords(s, `${where}|`);
}
export function load() {
  if (definitions) return definitions;
  const doc = JSON.parse(readFileSync(new URL(`openapi/${FILE}`, import.meta.url), "utf8"));
  const defs = doc.definitions;
  for (const [name, types] of Object.entries(V3_ONE_OF)) {
    const { type, ...rest } = defs[name];
    if (type !== "string") throw new Error(`${FILE}: ${name} is no longer a string in v2`);
    defs[name] = { ...rest, oneOf: types.map((t) => ({ type: t })) };
  }
  for (const [name, d] of Object.entries(defs)) {
    keywords(d, name);
    for (const gvk of d["x-kubernetes-group-version-kind"] ?? [])
      kinds.set(`${gvk.group ? `${gvk.group}/` : ""}${gvk.version} ${gvk.kind}`, name);
  }
  strict(defs);
  definitions = defs;
  return definitions;
}

const REF = "#/definitions/";
const at = (where, key) => (where === "(root)" ? String(key) : `${where}.${key}`);
function check(schema, value, where, errs) {
  if (schema.$ref !== undefined) {
    if (!schema.$ref.startsWith(REF)) throw new Error(`${FILE}: $ref ${schema.$ref}`);
    return check(definitions[schema.$ref.slice(REF.length)], value, where, errs);
  }
  if (schema.type !== undefined && !TYPES[schema.type](value))
    errs.push(`${where}: must be ${schema.type}`);
  if (TYPES.object(value)) {
    const props = schema.properties ?? {};
    for (const r of schema.required ?? [])
      if (value[r] === undefined) errs.push(`${where}: must have required property: ${r}`);
    for (const [k, v] of Object.entries(value)) {
      if (Object.hasOwn(props, k)) check(props[k], v, at(where, k), errs);
      else if (schema.additionalProperties === false)
        errs.push(`${where}: must NOT have additional properties: ${k}`);
      else if (typeof schema.additionalProperties === "object")
        check(schema.additionalProperties, v, at(where, k), errs);
    }
  }
  if (Array.isArray(value) && schema.items)
    value.forEach((v, i) => check(schema.items, v, at(where, i), errs));
  if (schema.oneOf) {
    const branches = schema.oneOf.map((s) => {
      const e = [];
      check(s, value, where, e);
      return e;
    });
    if (branches.filter((e) => !e.length).length !== 1) {
      branches.forEach((e) => errs.push(...e));
      errs.push(`${where}: must match exactly one schema in oneOf`);
    }
  }
}

// The errors of VALUE against the definition NAME (for kubeschema-vs-ajv.mjs).
export function definitionErrors(name, value) {
  load();
  const errs = [];
  check(definitions[name], value, "(root)", errs);
  return errs;
}

// The definition of OBJ's apiVersion and kind, or undefined.
export function kindOf(obj) {
  load();
  return kinds.get(`${obj?.apiVersion} ${obj?.kind}`);
}

// The object's schema errors; an apiVersion and kind the file has no schema for is one.
export function objectErrors(obj) {
  const name = kindOf(obj);
  if (!name) return [`no schema for ${obj?.apiVersion} ${obj?.kind} in openapi/${FILE}`];
  return definitionErrors(name, obj);
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
