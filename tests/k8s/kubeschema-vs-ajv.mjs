// SPDX-License-Identifier: Apache-2.0
// Holds kubeschema.mjs's own check of Kubernetes' definitions to Ajv's (the JSON Schema
// implementation check-dra.mjs uses for resource.k8s.io): every built-in object of FILE...
// and every variant of it with one change (each field renamed, given another type or a
// fraction for an integer, out of int64's range, not a quantity, base64 or a date-time,
// dropped; each list given a stray item) gets the same errors from both, over
// the same definitions (v3's Quantity and IntOrString, strict()), formats checked
// (ajv-formats', and kubeschema.mjs's quantity grammar added). One known difference is
// stated, not held: a field set to null is absent to kubeschema.mjs, as to the API server
// (Go decodes null to the zero value), while JSON Schema refuses it ("must be string");
// so Ajv's errors at a null are dropped, and a required field given null counts missing.
// Prints how many were compared; exits 1 on the first difference.
//
//   node kubeschema-vs-ajv.mjs daemonset-generic.yaml docs/examples/dra/claim-v1.yaml
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { definitionErrors, kindOf, load, QUANTITY, withoutNulls } from "./kubeschema.mjs";
import { loadAll } from "./kubeyaml.mjs";

const definitions = load();
const ajv = new Ajv({ strict: false, allErrors: true, messages: false });
addFormats(ajv, ["int32", "byte", "date-time"]);
// ajv-formats' int64 takes any integer (dist/formats.js:154-157, "JSON and javascript max
// Int is 2**53"); encoding/json refuses one out of int64's range, as kubeschema.mjs does.
ajv.addFormat("int64", {
  type: "number",
  validate: (v) => Number.isInteger(v) && Math.abs(v) <= 2 ** 63,
});
ajv.addFormat("quantity", QUANTITY);
ajv.addSchema({ $id: "k", definitions });

// Ajv's errors in kubeschema.mjs's words.
const MESSAGES = {
  additionalProperties: () => "must NOT have additional properties",
  type: (p) => `must be ${p.type}`,
  required: () => "must have required property",
  oneOf: () => "must match exactly one schema in oneOf",
  format: (p) => `must match format "${p.format}"`,
};
function ajvErrors(name, value) {
  const validate = ajv.getSchema(`k#/definitions/${name}`);
  if (validate(value)) return [];
  return validate.errors.map((e) => {
    const path = e.instancePath.split("/").slice(1)
      .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
    const where = path.join(".") || "(root)";
    if (!MESSAGES[e.keyword]) throw new Error(`Ajv's keyword ${e.keyword} at ${where}`);
    const what = e.params.additionalProperty ?? e.params.missingProperty ?? "";
    const at = path.reduce((v, k) => v?.[k], value);
    return { at, text: `${where}: ${MESSAGES[e.keyword](e.params)}${what ? `: ${what}` : ""}` };
  });
}
// Ajv's errors with a null taken as absent: those at a null dropped, and a required field
// given null missing (Ajv's errors for VALUE with its null fields dropped).
const hasNull = (v) => v === null || (typeof v === "object" && Object.values(v).some(hasNull));
function ajvErrorsNullAbsent(name, value) {
  const errs = ajvErrors(name, value).filter((e) => e.at !== null).map((e) => e.text);
  if (!hasNull(value)) return errs;
  const required = ajvErrors(name, withoutNulls(value))
    .map((e) => e.text).filter((t) => t.includes(": must have required property: "));
  return [...new Set([...errs, ...required])];
}

// Each variant of V with one change, as [what, variant].
function* variants(v, where = "") {
  // "!" is no quantity, base64 or date-time; 2^64 is out of int32's and int64's range.
  const others = (x) => (typeof x === "string" ? [12345, "!"] : typeof x === "number" ?
    ["x", 1.5, 2 ** 64] : typeof x === "boolean" ? ["true"] : Array.isArray(x) ? [{ a: 1 }] :
      ["x", []]);
  if (Array.isArray(v)) {
    yield [`${where}[+]`, [...v, { stray: 1 }]];
    for (let i = 0; i < v.length; i++) {
      for (const [w, x] of variants(v[i], `${where}.${i}`))
        yield [w, v.map((y, j) => (j === i ? x : y))];
    }
  } else if (v !== null && typeof v === "object") {
    for (const k of Object.keys(v)) {
      const without = { ...v };
      delete without[k];
      yield [`${where}.${k} dropped`, without];
      yield [`${where}.${k} renamed`, { ...without, [`${k}z`]: v[k] }];
      for (const x of others(v[k]))
        yield [`${where}.${k} as ${JSON.stringify(x)}`, { ...v, [k]: x }];
      yield [`${where}.${k} null`, { ...v, [k]: null }];
      for (const [w, x] of variants(v[k], `${where}.${k}`)) yield [w, { ...v, [k]: x }];
    }
  }
}

const sorted = (a) => [...a].sort();
let compared = 0;
let refused = 0;
for (const file of process.argv.slice(2)) {
  for (const obj of loadAll(readFileSync(file, "utf8")).filter(Boolean)) {
    const name = kindOf(obj);
    if (!name) continue;
    for (const [what, x] of [["as it is", obj], ...variants(obj)]) {
      const ours = sorted(new Set(definitionErrors(name, x)));
      const theirs = sorted(ajvErrorsNullAbsent(name, x));
      compared++;
      if (ours.length) refused++;
      if (JSON.stringify(ours) !== JSON.stringify(theirs)) {
        console.error(`kubeschema-vs-ajv: ${file}: ${obj.kind} ${obj.metadata?.name}, ${what}:\n` +
          `  kubeschema.mjs: ${JSON.stringify(ours)}\n  Ajv:            ${JSON.stringify(theirs)}`);
        process.exit(1);
      }
    }
  }
}
console.log(`kubeschema-vs-ajv: ${compared} objects, ${refused} of them refused, ` +
  "the same errors from both");
