// SPDX-License-Identifier: Apache-2.0
// YAML loaded as kubectl loads it, as nearly as js-yaml allows, for the checks of the
// manifests and examples we ship (check-*.mjs, kubeschema-vs-ajv.mjs).
//
// kubectl turns a manifest's YAML into JSON with sigs.k8s.io/yaml's YAMLToJSON, which
// decodes with go.yaml.in/yaml/v2 (sigs.k8s.io/yaml at aadfabb7d36952151672ec164d4220a6f0e31f63,
// yaml.go:27 and :140-148, "As per the YAML 1.1 specification, which yaml.v2 used underneath
// implements, literal 'yes' and 'no' strings without quotation marks will be converted to
// true/false implicitly"), into interface{}. So, unlike js-yaml's default schema:
// - an unquoted 2024-01-01 stays a string (yaml.v2 resolves it as a timestamp but, decoding
//   into interface{}, keeps the text "for backward compatibility"; read in yaml.v2's
//   decode.go by name, not at a pinned commit): js-yaml's CORE_SCHEMA has no timestamp;
// - YAML 1.1's booleans are booleans: y Y yes Yes YES on On ON, n N no No NO off Off OFF,
//   besides true/false in their three spellings (yaml.v2's resolve.go table): BOOL below
//   replaces CORE_SCHEMA's bool type.
// Still different (none of our files uses them; quote such values): yaml.v2 reads 0777 as
// the octal 511 (YAML 1.1) and js-yaml as 777; YAML 1.1's sexagesimal 1:30 (neither reads
// it as a number), !!binary and !!timestamp tags, and yaml.v2's stricter duplicate keys
// (YAMLToJSON ignores them; js-yaml refuses them).
import yaml from "js-yaml";

const TRUE = ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"];
const FALSE = ["n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"];
const BOOL = new yaml.Type("tag:yaml.org,2002:bool", {
  kind: "scalar",
  resolve: (s) => TRUE.includes(s) || FALSE.includes(s),
  construct: (s) => TRUE.includes(s),
  predicate: (v) => typeof v === "boolean",
  represent: (v) => String(v),
});
export const SCHEMA = yaml.CORE_SCHEMA.extend({ implicit: [BOOL] });

export const loadAll = (text) => yaml.loadAll(text, null, { schema: SCHEMA });
export const load = (text) => yaml.load(text, { schema: SCHEMA });
