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
// as the API server takes them; a Quantity's string is held to its grammar (format
// "quantity", below), an IntOrString's integer to int32 (intstr.go's IntVal).
//
// A null is taken as absent, as the API server takes it: Go's encoding/json leaves a field
// it decodes null into at its zero value (a Quantity's UnmarshalJSON does the same,
// quantity.go:733-738), so `creationTimestamp: null` (what kubectl create --dry-run -o yaml
// writes) and an empty `tolerations:` pass, and a required field given null is missing.
// JSON Schema (Ajv) refuses a null where a type is given: kubeschema-vs-ajv.mjs states
// that difference rather than hold this to it.
//
//   objectErrors(obj) -> [] or, for one, ["spec.template.spec: must NOT have additional
//                        properties: tolerationz"]
//   podErrors(pod)    -> the same, then the init containers' claims
import { readFileSync } from "node:fs";
import { strict } from "./strict.mjs";

const FILE = "swagger-v1.34.0.json";
const V3_ONE_OF = {
  "io.k8s.apimachinery.pkg.api.resource.Quantity": [{ type: "string", format: "quantity" },
    { type: "number" }],
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": [{ type: "integer", format: "int32" },
    { type: "string" }],
};

// The JSON Schema keywords Kubernetes' definitions use, each checked below as JSON Schema
// (draft-07, as Ajv checks resource.k8s.io in check-dra.mjs) says: a $ref's siblings are
// not read, x-* are annotations, a format is checked as FORMATS says; a null aside (above).
// A definition with any other keyword, or another format, stops the load: a refresh that
// brings one in needs its check here first. Compiling the definitions with Ajv instead
// cost 0.1-0.2 s a run for a DaemonSet's closure (t_manifest runs the check some 40
// times); this takes a few milliseconds. tests/k8s/kubeschema-vs-ajv.mjs holds the two to
// the same errors.
const KEYWORDS = new Set(["$ref", "additionalProperties", "description", "format", "items",
  "oneOf", "properties", "required", "type"]);
// The formats the definitions use, each as the API server's decoding refuses what breaks
// it: int32 and int64 as Go's encoding/json refuses a number out of the field's range (a
// JavaScript number is a double, so int64's bounds are 2^63 rounded, as ajv-formats has
// them); byte as encoding/json decodes a []byte, base64.StdEncoding, padded; date-time as
// metav1.Time's UnmarshalJSON parses it, time.RFC3339 (k8s.io/apimachinery
// pkg/apis/meta/v1/time.go, UnmarshalJSON); quantity (ours, set on Quantity's string above)
// as ParseQuantity scans it (k8s.io/apimachinery pkg/api/resource/quantity.go:161-275 at
// eed236ceee2c19c2753a3d93ac0631dc20750454, parseQuantityString, and suffix.go's
// interpret): an optional sign, digits with an optional fraction (either part may be
// empty, as the scanner allows), then one suffix of "", n u m k M G T P E, Ki Mi Gi Ti Pi
// Ei, or e/E with a signed decimal exponent; surrounding spaces trimmed as UnmarshalJSON
// does (quantity.go:744). Not modelled: ParseQuantity's ErrNumeric for a string the scanner
// passes but inf.Dec cannot read, and int64 overflow of the exponent. int-or-string is an
// annotation of v2's IntOrString, which V3_ONE_OF replaces.
export const QUANTITY =
  /^\s*[+-]?[0-9]*(\.[0-9]*)?([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+)?\s*$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
function dateTime(s) {
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return mo >= 1 && mo <= 12 && d >= 1 && d <= days && h < 24 && mi < 60 && se < 60;
}
const FORMATS = {
  int32: { type: "number", valid: (v) => Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 },
  int64: { type: "number", valid: (v) => Number.isInteger(v) && v >= -(2 ** 63) && v <= 2 ** 63 },
  byte: {
    type: "string",
    valid: (v) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(v),
  },
  "date-time": { type: "string", valid: dateTime },
  quantity: { type: "string", valid: (v) => QUANTITY.test(v) },
  "int-or-string": null,
};
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
  if (schema.format !== undefined && !Object.hasOwn(FORMATS, schema.format))
    throw new Error(`${FILE}: ${where}: format ${schema.format} is not one kubeschema.mjs checks`);
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
    delete rest.format; // v2's annotation "int-or-string"
    defs[name] = { ...rest, oneOf: types };
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
  if (value === null) return; // absent, as the API server takes it (above)
  if (schema.type !== undefined && !TYPES[schema.type](value))
    errs.push(`${where}: must be ${schema.type}`);
  const format = FORMATS[schema.format];
  if (format && typeof value === format.type && !format.valid(value))
    errs.push(`${where}: must match format "${schema.format}"`);
  if (TYPES.object(value)) {
    const props = schema.properties ?? {};
    for (const r of schema.required ?? [])
      if (value[r] === undefined || value[r] === null)
        errs.push(`${where}: must have required property: ${r}`);
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

// FORMATS' check of NAME as Ajv's addFormat takes it (check-dra.mjs checks resource.k8s.io's
// int64 and date-time as this file does).
export const ajvFormat = (name) => ({ type: FORMATS[name].type, validate: FORMATS[name].valid });

// V with every field whose value is null dropped, at any depth (a list's null items kept):
// what the API server makes of it, for a JSON Schema check (Ajv's of resource.k8s.io in
// check-dra.mjs, kubeschema-vs-ajv.mjs). A misspelt field given null is dropped with it.
export const withoutNulls = (v) => (Array.isArray(v) ? v.map(withoutNulls) :
  TYPES.object(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null)
    .map(([k, x]) => [k, withoutNulls(x)])) : v);

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
