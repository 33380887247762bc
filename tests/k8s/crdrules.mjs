// SPDX-License-Identifier: Apache-2.0
// What the API server checks of a custom resource beyond its schema's types, for the
// offline checks of CRD-typed examples (check-readiness.mjs, check-dra.mjs): every
// x-kubernetes-validations rule evaluated with a CEL implementation (@bufbuild/cel, with the
// strings extension whose split() rules call), the uniqueness of list-type map and set
// items, and the schema's defaults filled in first (withDefaults, below). The API server's rules followed (kubernetes, staging/src/k8s.io/apiextensions-apiserver,
// pkg/apiserver/schema/cel): a rule runs with self bound to the value of the schema node
// that carries it, only where that value is present; a rule that names oldSelf (a transition
// rule) only on an update, and only where an old value correlates with the new one (the
// same property of a correlated object, the same key of a map, the item with the same keys
// of an x-kubernetes-list-type: map list; never inside atomic or set lists); a rule's result
// must be true, else its message.
import { isCelError, run } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";

// CEL values as the API server binds them: objects as maps, integers as int.
function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v && typeof v === "object") return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  return Number.isInteger(v) ? BigInt(v) : v;
}
// A rule is a transition rule when its expression names oldSelf outside string literals.
const namesOldSelf = (rule) => /\boldSelf\b/.test(rule.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, ""));

// Every x-kubernetes-validations rule of SCHEMA over VALUE (OLD: the correlated old value, or
// undefined), errors pushed onto ERRS as "PATH: MESSAGE". Returns how many rules ran.
export function celRules(schema, value, old, path, errs) {
  if (value === undefined || !schema) return 0;
  let ran = 0;
  for (const r of schema["x-kubernetes-validations"] ?? []) {
    if (namesOldSelf(r.rule) && old === undefined) continue;
    const out = run(r.rule, { self: toCel(value), oldSelf: toCel(old) }, { funcs: strings });
    ran++;
    if (isCelError(out)) errs.push(`${path}: rule ${JSON.stringify(r.rule)} failed to evaluate: ${out.message}`);
    else if (out !== true) errs.push(`${path}: ${r.message ?? `failed rule: ${r.rule}`}`);
  }
  if (schema.type === "object" && value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const sub = schema.properties?.[k] ??
        (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
      ran += celRules(sub, v, old && typeof old === "object" ? old[k] : undefined, `${path}.${k}`, errs);
    }
  }
  if (schema.type === "array" && Array.isArray(value)) {
    const keys = schema["x-kubernetes-list-type"] === "map" ? schema["x-kubernetes-list-map-keys"] : null;
    value.forEach((item, i) => {
      const was = keys && Array.isArray(old) ? old.find((o) => keys.every((k) => o?.[k] === item?.[k])) : undefined;
      ran += celRules(schema.items, item, was, `${path}[${i}]`, errs);
    });
  }
  return ran;
}

// Items of x-kubernetes-list-type map (unique keys) and set (unique values) lists, as the API
// server's structural validation refuses duplicates.
export function listTypes(schema, value, path, errs) {
  if (!schema || value === undefined || value === null) return;
  if (schema.type === "array" && Array.isArray(value)) {
    const type = schema["x-kubernetes-list-type"];
    const id = type === "map" ? (x) => JSON.stringify(schema["x-kubernetes-list-map-keys"].map((k) => x?.[k]))
      : type === "set" ? (x) => JSON.stringify(x) : null;
    if (id) {
      const seen = new Set();
      value.forEach((x, i) => {
        if (seen.has(id(x))) errs.push(`${path}[${i}]: duplicate entry ${id(x)} in a list of type ${type}`);
        seen.add(id(x));
      });
    }
    value.forEach((x, i) => listTypes(schema.items, x, `${path}[${i}]`, errs));
  } else if (schema.type === "object" && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) listTypes(schema.properties?.[k], v, `${path}.${k}`, errs);
  }
}

// VALUE with SCHEMA's defaults filled in, as the API server defaults a custom resource before
// it validates it (kubernetes, staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/
// defaulting/algorithm.go, Default: in each object present, a property that is absent and has a
// default gets it; then into each property and each item of an array). VALUE is not changed.
export function withDefaults(schema, value) {
  if (!schema || value === undefined || value === null) return value;
  if (schema.type === "array" && Array.isArray(value)) return value.map((x) => withDefaults(schema.items, x));
  if (schema.type !== "object" || typeof value !== "object" || Array.isArray(value)) return value;
  const out = { ...value };
  for (const [k, s] of Object.entries(schema.properties ?? {})) {
    if (!Object.hasOwn(out, k) && s.default !== undefined) out[k] = structuredClone(s.default);
  }
  for (const [k, v] of Object.entries(out)) {
    const s = schema.properties?.[k] ??
      (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
    out[k] = withDefaults(s, v);
  }
  return out;
}
