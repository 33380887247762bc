// SPDX-License-Identifier: Apache-2.0
// Validates the DRA examples (docs/examples/dra/claim-*.yaml) offline: each resource.k8s.io
// object against Kubernetes' own OpenAPI v3 schema of its API version (openapi/, cut from
// kubernetes/kubernetes by trim-openapi.py, provenance in openapi/README.md), with unknown
// fields refused as the API server refuses them under kubectl's default strict field
// validation; the Pod against the core/v1 schema (kubernetes-models). Then what a scheduler
// would need to tie them: the pod's claim names a template in its namespace, each
// container's claim a claim of the pod, each request the DeviceClass NVIDIA's DRA driver
// installs (gpu.nvidia.com).
//
//   node check-dra.mjs FILE...
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import yaml from "js-yaml";
import { strict } from "./strict.mjs";
import { Pod } from "kubernetes-models/v1/Pod";

const KINDS = {
  ResourceClaimTemplate: "ResourceClaimTemplate",
  ResourceClaim: "ResourceClaim",
  DeviceClass: "DeviceClass",
};
const GROUP = "resource.k8s.io";

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const loaded = new Set();
function schemaFor(version, kind) {
  const id = `${GROUP}-${version}`;
  if (!loaded.has(id)) {
    const doc = JSON.parse(readFileSync(new URL(`openapi/${id}.json`, import.meta.url), "utf8"));
    strict(doc.components.schemas);
    ajv.addSchema({ $id: id, components: doc.components });
    loaded.add(id);
  }
  return ajv.getSchema(`${id}#/components/schemas/io.k8s.api.resource.${version}.${kind}`);
}

let failed = 0;
for (const file of process.argv.slice(2)) {
  const docs = yaml.loadAll(readFileSync(file, "utf8")).filter(Boolean);
  const templates = new Map();
  const pods = [];
  for (const d of docs) {
    const where = `${file}: ${d.kind} ${d.metadata?.name}`;
    try {
      if (d.apiVersion === "v1" && d.kind === "Pod") {
        new Pod(d).validate();
        pods.push(d);
        continue;
      }
      const [group, version] = String(d.apiVersion).split("/");
      assert.equal(group, GROUP, `${where}: unexpected apiVersion ${d.apiVersion}`);
      assert.ok(KINDS[d.kind], `${where}: unexpected kind ${d.kind}`);
      const validate = schemaFor(version, KINDS[d.kind]);
      assert.ok(validate, `${where}: no schema for ${d.apiVersion} ${d.kind}`);
      assert.ok(validate(d), `${where}: ${ajv.errorsText(validate.errors)}`);
      if (d.kind === "ResourceClaimTemplate") {
        templates.set(`${d.metadata.namespace}/${d.metadata.name}`, d);
        for (const r of d.spec.spec.devices.requests) {
          const cls = version === "v1beta1" ? r.deviceClassName : r.exactly?.deviceClassName;
          assert.equal(cls, "gpu.nvidia.com", `${where}: request ${r.name} asks for ${cls}`);
        }
      }
    } catch (e) {
      console.error(`check-dra: ${e.message}`);
      failed++;
    }
  }
  for (const p of pods) {
    const where = `${file}: Pod ${p.metadata.name}`;
    try {
      const claims = new Set((p.spec.resourceClaims ?? []).map((c) => c.name));
      assert.ok(claims.size > 0, `${where}: no resourceClaims`);
      for (const c of p.spec.resourceClaims) {
        const t = `${p.metadata.namespace}/${c.resourceClaimTemplateName}`;
        assert.ok(templates.has(t), `${where}: claim ${c.name} names template ${t}, not in the file`);
      }
      for (const ctr of p.spec.containers) {
        for (const c of ctr.resources?.claims ?? [])
          assert.ok(claims.has(c.name), `${where}: container ${ctr.name} uses claim ${c.name}, not the pod's`);
      }
    } catch (e) {
      console.error(`check-dra: ${e.message}`);
      failed++;
    }
  }
  if (!failed) console.log(`check-dra: ${file}: ${docs.length} objects valid`);
}
process.exit(failed ? 1 : 0);
