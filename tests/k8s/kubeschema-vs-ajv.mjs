// SPDX-License-Identifier: Apache-2.0
// Holds kubeschema.mjs's own check of Kubernetes' definitions to Ajv's (the JSON Schema
// implementation check-dra.mjs uses for resource.k8s.io): every built-in object of FILE...
// and every variant of it with one change (each field renamed, given another type or a
// fraction for an integer, set to null, dropped; each list given a stray item) gets the
// same errors from both, over the same definitions (v3's Quantity and IntOrString,
// strict()). Prints how many were compared; exits 1 on the first difference.
//
//   node kubeschema-vs-ajv.mjs daemonset-generic.yaml docs/examples/dra/claim-v1.yaml
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import yaml from "js-yaml";
import { definitionErrors, kindOf, load } from "./kubeschema.mjs";

const definitions = load();
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, messages: false });
ajv.addSchema({ $id: "k", definitions });

// Ajv's errors in kubeschema.mjs's words.
const MESSAGES = {
  additionalProperties: () => "must NOT have additional properties",
  type: (p) => `must be ${p.type}`,
  required: () => "must have required property",
  oneOf: () => "must match exactly one schema in oneOf",
};
function ajvErrors(name, value) {
  const validate = ajv.getSchema(`k#/definitions/${name}`);
  if (validate(value)) return [];
  return validate.errors.map((e) => {
    const where = e.instancePath.split("/").slice(1)
      .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~")).join(".") || "(root)";
    if (!MESSAGES[e.keyword]) throw new Error(`Ajv's keyword ${e.keyword} at ${where}`);
    const what = e.params.additionalProperty ?? e.params.missingProperty ?? "";
    return `${where}: ${MESSAGES[e.keyword](e.params)}${what ? `: ${what}` : ""}`;
  });
}

// Each variant of V with one change, as [what, variant].
function* variants(v, where = "") {
  const others = (x) => (typeof x === "string" ? [12345] : typeof x === "number" ? ["x", 1.5] :
    typeof x === "boolean" ? ["true"] : Array.isArray(x) ? [{ a: 1 }] : ["x", []]);
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
  for (const obj of yaml.loadAll(readFileSync(file, "utf8")).filter(Boolean)) {
    const name = kindOf(obj);
    if (!name) continue;
    for (const [what, x] of [["as it is", obj], ...variants(obj)]) {
      const ours = sorted(definitionErrors(name, x));
      const theirs = sorted(ajvErrors(name, x));
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
