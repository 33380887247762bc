// SPDX-License-Identifier: Apache-2.0
// Validates the DRA examples (docs/examples/dra/) offline.
//
// Objects (FILE...): each resource.k8s.io object against Kubernetes' own OpenAPI v3 schema
// of its API version (openapi/, cut from kubernetes/kubernetes by trim-openapi.py,
// provenance in openapi/README.md), with unknown fields refused as the API server refuses
// them under kubectl's default strict field validation; a Pod against the core/v1 schema
// (kubeschema.mjs), alike; a ComputeDomain against its CRD's schema (computedomain.mjs, restated
// with citations), unknown fields refused, its x-kubernetes-validations rules evaluated
// (crdrules.mjs) after the CRD's defaults are filled in; a ResourceQuota for the chart's
// priority classes (quotaErrors). Then what a scheduler would need to tie them: each claim of
// a pod names a ResourceClaim of the file or a template in its namespace (one of the file's,
// or the channel template a ComputeDomain of the file has NVIDIA's controller make), each
// container's claim a claim of the pod, each GPU request a DeviceClass the DRA chart installs
// with GPUs on; the pods of a ComputeDomain on arm64 and in one NVLink domain.
// --schema FILE...: the objects against their schemas alone, not held to the examples' rules
// (objects an API server or a test's stand-in serves, whatever their classes).
// --update OLD NEW: each ComputeDomain of NEW as an update of OLD's of the same name, its
// transition rules too (the spec is immutable).
// --values VALUES GENERIC PRELOADED: Helm values for NVIDIA's DRA chart (drachart.mjs): the
// chart renders them (its validation.yaml, restated), its kubelet plugin looks for the driver
// in the install dir with our CDI hook and tolerates the taints our GPU nodes carry; with
// GPUs from the DRA driver its plugin lands exactly on the DRA pool of the two manifests
// (every node one of their DaemonSets serves without a device plugin, neither ours nor
// GKE's, and that carries nvidia.com/gpu.deploy.device-plugin=false); with ComputeDomains
// alone, only on nodes one of their DaemonSets serves; with ComputeDomains on, the driver the
// file states and every DaemonSet under the plugin installs at least the plugin's floor
// (checkFloor). --namespace NS (dra-driver-nvidia-gpu)
// and --api-versions A,B (resource.k8s.io/v1, Kubernetes 1.34) are helm's.
//
//   node check-dra.mjs FILE...
//   node check-dra.mjs --schema FILE...
//   node check-dra.mjs --update OLD NEW
//   node check-dra.mjs [--namespace NS] [--api-versions LIST] --values VALUES GENERIC PRELOADED
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import Ajv from "ajv";
import * as yaml from "./kubeyaml.mjs"; // as kubectl reads YAML
import { strict } from "./strict.mjs";
import { ajvFormat, objectErrors, podErrors, withoutNulls } from "./kubeschema.mjs";
import * as CD from "./computedomain.mjs";
import { celRules, listTypes, withDefaults } from "./crdrules.mjs";
import { DEFAULTS, compareVersions, driverFloor, merge, refusals, rendered } from "./drachart.mjs";
import { HEALTH_TAINT_EXAMPLE, READINESS_TAINTS, STARTUP_TAINT, labelSets, selects, tolerates }
  from "./nodeaffinity.mjs";

const KINDS = {
  ResourceClaimTemplate: "ResourceClaimTemplate",
  ResourceClaim: "ResourceClaim",
  DeviceClass: "DeviceClass",
};
const GROUP = "resource.k8s.io";
// What a workload may request of the chart's DeviceClasses (drachart.mjs): the GPU ones;
// the compute-domain classes are for the templates NVIDIA's controller makes.
const GPU_CLASSES = rendered(DEFAULTS).deviceClasses.filter((c) => !c.startsWith("compute-domain"));
// The DRA pool's label (daemonset-generic.yaml, docs/dra.md).
const DRA_LABEL = "nvidia.com/gpu.deploy.device-plugin";

// The formats resource.k8s.io's schemas use, int64 and date-time, checked as kubeschema.mjs
// checks them (as the API server's decoding refuses what breaks them).
const ajv = new Ajv({ strict: false, allErrors: true });
for (const f of ["int64", "date-time"]) ajv.addFormat(f, ajvFormat(f));
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
const cdSchema = structuredClone(CD.SCHEMA);
strict(cdSchema);
const validateCD = ajv.compile(cdSchema);
// k8s.io/apimachinery pkg/util/validation/validation.go: IsDNS1123Subdomain.
const isSubdomain = (s) => typeof s === "string" && s.length <= 253 &&
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);

// A ComputeDomain's errors (OLD: the object it updates, or undefined for a create), as the
// API server's custom resource handler finds them: its apiVersion and kind, a name, a
// namespace (the kind is namespaced), the schema, list types, the CEL rules.
// The API server defaults both objects from the CRD's schema before it validates them (the
// new one as it decodes the request, the old one as it reads it from storage:
// apiextensions-apiserver pkg/apiserver/schema/defaulting), so an update that writes out a
// default (allocationMode: Single) changes no spec.
function computeDomainErrors(given, givenOld) {
  const errs = [];
  const d = withDefaults(CD.SCHEMA, given);
  const old = givenOld === undefined ? undefined : withDefaults(CD.SCHEMA, givenOld);
  if (d.apiVersion !== CD.API_VERSION) errs.push(`apiVersion must be ${CD.API_VERSION}`);
  if (!isSubdomain(d.metadata?.name)) errs.push(`metadata.name ${JSON.stringify(d.metadata?.name)} is not a DNS subdomain`);
  if (CD.NAMESPACED && !d.metadata?.namespace) errs.push("metadata.namespace: a ComputeDomain is namespaced");
  if (!validateCD(d)) {
    for (const e of validateCD.errors) {
      const what = e.params.additionalProperty ?? e.params.allowedValues?.join(", ") ?? e.params.missingProperty ?? "";
      errs.push(`${e.instancePath.slice(1).replaceAll("/", ".") || "(root)"}: ${e.message}${what ? `: ${what}` : ""}`);
    }
    return errs;
  }
  listTypes(CD.SCHEMA, d, "", errs);
  celRules(CD.SCHEMA, d, old, "", errs);
  return errs.map((e) => e.replace(/^\./, ""));
}

let failed = 0;
const report = (where, e) => {
  console.error(`check-dra: ${where}: ${e}`);
  failed++;
};
const load = (file) => yaml.loadAll(readFileSync(file, "utf8")).filter(Boolean);

function checkObjects(file, workloads = true) {
  const docs = load(file);
  const templates = new Map();
  const claims = new Map();
  const pods = [];
  const before = failed;
  for (const d of docs) {
    const where = `${file}: ${d.kind} ${d.metadata?.name}`;
    try {
      if (d.apiVersion === "v1" && d.kind === "Pod") {
        // Kubernetes' core/v1 schema, unknown fields refused (kubeschema.mjs).
        const errs = podErrors(d);
        errs.forEach((e) => report(where, e));
        if (!errs.length) pods.push(d);
        continue;
      }
      if (d.kind === CD.KIND) {
        const errs = computeDomainErrors(d, undefined);
        errs.forEach((e) => report(where, e));
        // NVIDIA's controller makes the channel's ResourceClaimTemplate in the
        // ComputeDomain's namespace, by the name the spec gives (k8s-dra-driver-gpu at
        // 2240711, cmd/compute-domain-controller/computedomain.go:368, resourceclaimtemplate.go:364-397).
        if (!errs.length)
          templates.set(`${d.metadata.namespace}/${d.spec.channel.resourceClaimTemplate.name}`, `ComputeDomain ${d.metadata.name}`);
        continue;
      }
      if (d.apiVersion === "v1" && d.kind === "ResourceQuota") {
        quotaErrors(d).forEach((e) => report(where, e));
        continue;
      }
      const [group, version] = String(d.apiVersion).split("/");
      assert.equal(group, GROUP, `unexpected apiVersion ${d.apiVersion}`);
      assert.ok(KINDS[d.kind], `unexpected kind ${d.kind}`);
      const validate = schemaFor(version, KINDS[d.kind]);
      assert.ok(validate, `no schema for ${d.apiVersion} ${d.kind}`);
      // A null as absent, as the API server takes it (kubeschema.mjs, withoutNulls).
      assert.ok(validate(withoutNulls(d)), ajv.errorsText(validate.errors));
      if (d.kind === "ResourceClaimTemplate" || d.kind === "ResourceClaim") {
        (d.kind === "ResourceClaim" ? claims : templates).set(`${d.metadata.namespace}/${d.metadata.name}`, "file");
        const spec = d.kind === "ResourceClaim" ? d.spec : d.spec.spec;
        for (const r of workloads ? spec.devices.requests : []) {
          const cls = version === "v1beta1" ? r.deviceClassName : r.exactly?.deviceClassName;
          assert.ok(GPU_CLASSES.includes(cls), `request ${r.name} asks for ${cls}, not one of ${GPU_CLASSES.join(", ")}`);
        }
      }
    } catch (e) {
      report(where, e.message);
    }
  }
  for (const p of pods) {
    const where = `${file}: Pod ${p.metadata.name}`;
    try {
      const names = new Set((p.spec.resourceClaims ?? []).map((c) => c.name));
      assert.ok(names.size > 0, "no resourceClaims");
      for (const c of p.spec.resourceClaims) {
        // A claim of the pod names a ResourceClaim to share or a template to make its own from
        // (core/v1 PodResourceClaim: exactly one of the two).
        if (c.resourceClaimName !== undefined) {
          const n = `${p.metadata.namespace}/${c.resourceClaimName}`;
          assert.ok(c.resourceClaimTemplateName === undefined, `claim ${c.name} names both a claim and a template`);
          assert.ok(claims.has(n), `claim ${c.name} names ResourceClaim ${n}, not in the file`);
          continue;
        }
        const t = `${p.metadata.namespace}/${c.resourceClaimTemplateName}`;
        assert.ok(templates.has(t), `claim ${c.name} names template ${t}, neither in the file nor a ComputeDomain's channel`);
      }
      for (const ctr of p.spec.containers) {
        for (const c of ctr.resources?.claims ?? [])
          assert.ok(names.has(c.name), `container ${ctr.name} uses claim ${c.name}, not the pod's`);
      }
    } catch (e) {
      report(where, e.message);
    }
  }
  nvlinkDomainPods(file, pods, templates);
  if (failed === before) console.log(`check-dra: ${file}: ${docs.length} objects valid`);
}

function checkUpdate(oldFile, newFile) {
  const olds = new Map(load(oldFile).filter((d) => d.kind === CD.KIND).map((d) => [d.metadata?.name, d]));
  for (const d of load(newFile).filter((x) => x.kind === CD.KIND)) {
    const old = olds.get(d.metadata?.name);
    assert.ok(old, `${newFile}: ComputeDomain ${d.metadata?.name} is not in ${oldFile}`);
    const errs = computeDomainErrors(d, old);
    errs.forEach((e) => report(`${newFile}: ComputeDomain ${d.metadata.name}`, e));
    if (!errs.length) console.log(`check-dra: ${newFile}: ComputeDomain ${d.metadata.name}: valid as an update`);
  }
}

// A ResourceQuota that lets the chart's pods in where ResourceQuota admission limits their
// priority classes (GKE; docs/dra.md, docs/examples/dra/resourcequota-gke.yaml): there a pod
// asking a limited class is admitted only in a namespace with a quota whose scope matches it
// (kubernetes.io, "Limit Priority Class consumption by default"; kubernetes,
// plugin/pkg/admission/resourcequota). Against Kubernetes' core/v1 schema, unknown fields
// refused (kubeschema.mjs); in the chart's namespace; one PriorityClass In expression naming every class the chart's pods ask
// for (drachart.mjs, its webhook on too); a pods limit, which is what the quota counts.
function quotaErrors(d) {
  const errs = objectErrors(d);
  if (errs.length) return errs;
  const exprs = d.spec?.scopeSelector?.matchExpressions ?? [];
  if (d.metadata?.namespace !== namespace)
    errs.push(`metadata.namespace ${d.metadata?.namespace} is not the chart's namespace ${namespace}`);
  const classes = rendered(merge(DEFAULTS, { webhook: { enabled: true } })).priorityClasses;
  if (!exprs.some((e) => e.scopeName === "PriorityClass" && e.operator === "In" &&
      classes.every((c) => e.values?.includes(c))))
    errs.push(`no PriorityClass In expression of spec.scopeSelector names all of the chart's classes (${classes.join(", ")})`);
  if (d.spec?.hard?.pods === undefined) errs.push("spec.hard.pods: the quota must count pods");
  return errs;
}

// Pods of one ComputeDomain (they claim its channel) must run on its hardware and in one
// NVLink domain. The multi-node NVLink systems ComputeDomains serve are Grace-based (GB200,
// GB300 NVL72: arm64), and GKE taints its Arm nodes kubernetes.io/arch=arm64:NoSchedule: GKE's
// A4X example requires arm64 (container-engine-accelerators at 992db81,
// gpudirect-rdma/nccl-test-imex-a4x.yaml:55-58), its A4X Max example tolerates the taint
// (nccl-test-a4x-max.yaml:51-54). One domain: each pod has a required podAffinity to all
// the domain's pods over a key whose value is one NVLink domain: GPU feature discovery's
// nvidia.com/gpu.clique (k8s-dra-driver-gpu at 2240711, docs/install.md:368-382, selects
// nodes by it), or on GKE A4X the node pool, which its workload policy (accelerator topology
// 1x72) makes one NVL72 domain. The scheduler refuses every node that lacks a required
// podAffinity term's topology key, the first pod of a group too (kubernetes/kubernetes
// pkg/scheduler/framework/plugins/interpodaffinity/filtering.go, satisfyPodAffinity: "All
// topology labels must exist on the node", before its first-pod exception; read by name,
// not at a pinned commit), and only GPU Feature Discovery sets nvidia.com/gpu.clique: a file
// whose pods key on it says so in a line "# Needs GPU Feature Discovery" (CLIQUE_LINE).
const CLIQUE_LINE = /^# Needs GPU Feature Discovery\b/m;
const ARM_TAINT = { key: "kubernetes.io/arch", value: "arm64", effect: "NoSchedule" };
const DOMAIN_KEYS = ["nvidia.com/gpu.clique", "cloud.google.com/gke-nodepool"];
function nvlinkDomainPods(file, pods, templates) {
  const domains = new Map();
  for (const p of pods) {
    for (const c of p.spec.resourceClaims ?? []) {
      const from = templates.get(`${p.metadata.namespace}/${c.resourceClaimTemplateName}`);
      if (!from?.startsWith("ComputeDomain ")) continue;
      if (!domains.has(from)) domains.set(from, []);
      domains.get(from).push(p);
    }
  }
  for (const [domain, group] of domains) {
    for (const p of group) {
      const where = `${file}: Pod ${p.metadata.name}`;
      const off = [...labelSets([p.spec], { "kubernetes.io/arch": ["amd64", "arm64"] })]
        .find((l) => selects(p.spec, l) && l["kubernetes.io/arch"] !== "arm64");
      if (off) report(where, `it may land on a node labelled ${JSON.stringify(off)}: the pods of ${domain} need kubernetes.io/arch: arm64 (Grace NVLink domains)`);
      if (!(p.spec.tolerations ?? []).some((t) => tolerates(t, ARM_TAINT)))
        report(where, "it does not tolerate GKE's Arm taint kubernetes.io/arch=arm64:NoSchedule");
      const terms = p.spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
      const together = terms.some((t) => DOMAIN_KEYS.includes(t.topologyKey) && t.labelSelector?.matchLabels &&
        !t.labelSelector.matchExpressions && group.every((q) =>
          Object.entries(t.labelSelector.matchLabels).every(([k, v]) => q.metadata.labels?.[k] === v)));
      if (!together)
        report(where, `it may land in another NVLink domain than the other pods of ${domain}: give it a required podAffinity to them over ${DOMAIN_KEYS.join(" or ")}`);
      const clique = terms.some((t) => t.topologyKey === DOMAIN_KEYS[0]);
      if (clique && !CLIQUE_LINE.test(readFileSync(file, "utf8")))
        report(where, `its podAffinity keys on ${DOMAIN_KEYS[0]}, which only GPU Feature ` +
          "Discovery sets, and the scheduler refuses nodes without it: say so in a line " +
          '"# Needs GPU Feature Discovery"');
    }
  }
}

// ComputeDomains and the driver (drachart.mjs, driverFloor): a values file whose kubelet
// plugin needs a driver says which in a line "# Needs NVIDIA driver VERSION or later", at
// least the plugin's floor, and every DaemonSet of ours on whose nodes the plugin lands
// installs at least that (its NVIDIA_DRIVER_VERSION): else its compute-domains container
// crash-loops there.
const FLOOR_LINE = /^# Needs NVIDIA driver ([0-9][0-9.]*) or later\b/m;
function checkFloor(file, v, sets) {
  const floor = driverFloor(v);
  if (!floor) return;
  const why = "the compute-domain kubelet plugin refuses older drivers while the IMEXDaemonsWithDNSNames gate is on, its default";
  const said = FLOOR_LINE.exec(readFileSync(file, "utf8"))?.[1];
  if (!said) return report(file, `ComputeDomains need driver ${floor} or later (${why}): say so in a line "# Needs NVIDIA driver ${floor} or later"`);
  if (compareVersions(said, floor) < 0) return report(file, `it says driver ${said} or later, but ComputeDomains need ${floor} or later (${why})`);
  for (const s of sets) {
    if (compareVersions(s.version, said) < 0)
      report(file, `the kubelet plugin lands on nodes of ${s.name}, which installs driver ${s.version}, below ${said}: set its NVIDIA_DRIVER_VERSION to ${said} or later (docs/dra.md)`);
  }
}

// The manifests' DaemonSets, each with what it runs: a device plugin (a container in another
// image than the installer's), the install dir, the hook its plugin's CDI spec names.
function daemonSets(files) {
  const out = [];
  for (const f of files) {
    for (const ds of load(f).filter((d) => d.kind === "DaemonSet")) {
      const spec = ds.spec.template.spec;
      const env = (c) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
      const plugins = spec.containers.filter((c) => !/(^|\/)nvidia-driver-installer[@:]/.test(c.image));
      out.push({ name: `${basename(f)}: ${ds.metadata.name}`, spec, plugin: plugins.length > 0,
        installDir: env(spec.initContainers[0]).NVIDIA_INSTALL_DIR_HOST,
        version: env(spec.initContainers[0]).NVIDIA_DRIVER_VERSION,
        hook: plugins.map((c) => env(c).NVIDIA_CDI_HOOK_PATH).find(Boolean) });
    }
  }
  return out;
}

function checkValues(file, manifests, namespace, apiVersions) {
  const v = merge(DEFAULTS, yaml.load(readFileSync(file, "utf8")) ?? {});
  const where = `${file}`;
  const refused = refusals(v, namespace, apiVersions);
  refused.forEach((r) => report(where, `the chart refuses it: ${r}`));
  if (refused.length) return;
  const r = rendered(v);
  if (!r.kubeletPlugin) return report(where, "no kubelet plugin: resources.gpus and resources.computeDomains both off");
  const sets = daemonSets(manifests);
  const dirs = new Set(sets.map((s) => s.installDir));
  const hooks = new Set(sets.map((s) => s.hook).filter(Boolean));
  if (dirs.size !== 1 || !dirs.has(r.kubeletPlugin.driverRoot))
    report(where, `nvidiaDriverRoot ${r.kubeletPlugin.driverRoot} is not the manifests' install dir (${[...dirs].join(", ")})`);
  if (r.kubeletPlugin.cdiHookPath !== null && !hooks.has(r.kubeletPlugin.cdiHookPath))
    report(where, `nvidiaCDIHookPath ${r.kubeletPlugin.cdiHookPath} is not the hook the manifests' plugins name (${[...hooks].join(", ")})`);
  // The taints a GPU node of ours may carry (check-manifest.mjs holds our DaemonSets to them).
  const taints = [{ key: "nvidia.com/gpu", effect: "NoSchedule" }, ...READINESS_TAINTS,
    { key: HEALTH_TAINT_EXAMPLE.split(":")[0], effect: HEALTH_TAINT_EXAMPLE.split(":")[1] },
    ...["NoSchedule", "PreferNoSchedule", "NoExecute"].map((effect) => ({ key: STARTUP_TAINT, effect }))];
  for (const t of taints) {
    if (!r.kubeletPlugin.spec.tolerations.some((x) => tolerates(x, t)))
      report(where, `the kubelet plugin does not tolerate the taint ${t.key}:${t.effect}`);
  }
  // Where the kubelet plugin lands, against where the DaemonSets run.
  const gpus = r.kubeletPlugin.containers.includes("gpus");
  const extra = { [DRA_LABEL]: ["false", "true"], "gke-no-default-nvidia-gpu-device-plugin": ["true"],
    "cloud.google.com/gke-accelerator": ["nvidia-gb200"] };
  let lands = 0;
  let dra = 0;
  const served = new Set();
  for (const labels of labelSets([r.kubeletPlugin.spec, ...sets.map((s) => s.spec)], extra)) {
    const by = sets.find((s) => selects(s.spec, labels));
    // GKE runs its own device plugin on a GPU node whose pool does not turn it off.
    const gkePlugin = "cloud.google.com/gke-accelerator" in labels &&
      labels["gke-no-default-nvidia-gpu-device-plugin"] !== "true";
    const noPlugin = by && !by.plugin && !gkePlugin;
    const isDra = noPlugin && labels[DRA_LABEL] === "false";
    const here = selects(r.kubeletPlugin.spec, labels);
    const node = JSON.stringify(labels);
    if (here) lands++;
    if (here && by) served.add(by.name);
    if (isDra) dra++;
    if (here && !by) return report(where, `the kubelet plugin lands on a node labelled ${node}, where no DaemonSet of ours installs the driver`);
    if (!gpus) continue;
    if (here && !noPlugin)
      return report(where, `the kubelet plugin serves GPUs on a node labelled ${node}, beside ${by.plugin ? by.name + "'s" : "GKE's"} device plugin`);
    if (isDra && !here) return report(where, `a DRA node labelled ${node} (${by.name}) gets no kubelet plugin`);
  }
  if (!lands) return report(where, "the kubelet plugin lands on no node of ours");
  checkFloor(file, v, [...served].map((n) => sets.find((s) => s.name === n)));
  if (failed) return;
  console.log(`check-dra: ${file}: the chart's rules hold; its kubelet plugin (${r.kubeletPlugin.containers.join(", ")}) ` +
    `lands ${gpus ? `exactly on the DRA pool (${dra} label sets)` : `only where our DaemonSets run (${lands} label sets)`}; ` +
    `DeviceClasses ${r.deviceClasses.join(", ")}`);
}

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const [, value] = args.splice(i, 2);
  return value;
};
const namespace = opt("--namespace", "dra-driver-nvidia-gpu");
const apiVersions = opt("--api-versions", "resource.k8s.io/v1").split(",").filter(Boolean);
const usage = "usage: check-dra.mjs FILE... | --schema FILE... | --update OLD NEW | [--namespace NS] [--api-versions LIST] --values VALUES GENERIC PRELOADED";
if (args[0] === "--update") {
  assert.equal(args.length, 3, usage);
  checkUpdate(args[1], args[2]);
} else if (args[0] === "--values") {
  assert.equal(args.length, 4, usage);
  checkValues(args[1], args.slice(2), namespace, apiVersions);
} else if (args[0] === "--schema") {
  assert.ok(args.length > 1, usage);
  for (const file of args.slice(1)) checkObjects(file, false);
} else {
  assert.ok(args.length > 0, usage);
  for (const file of args) checkObjects(file);
}
process.exit(failed ? 1 : 0);
