// SPDX-License-Identifier: Apache-2.0
// Validates the supply pass's manifests (deploy/supply.yaml, deploy/supply-watch.yaml)
// offline against Kubernetes' own schemas (kubeschema.mjs), then what the pass and its
// builder Jobs need of them (scripts/supplylib/jobs.py): the pod of each CronJob and
// Deployment runs scripts/supply with the kubernetes executor as its service account; the
// configuration it reads is the ConfigMap's key it mounts; the keys Secret nvidia-supply-keys
// read-only at /etc/nvidia-supply/keys (SPEC §7); the work volume is the claim the
// configuration's kubernetes.cache_pvc names, ReadWriteMany, mounted at the pass's --work
// (a builder Job mounts that claim at --work's path, so both see the same paths); the CronJob
// runs one pass at a time, its Job template as kube-apiserver takes one (no selector of its
// own, restartPolicy Never or OnFailure: pkg/apis/batch/validation/validation.go,
// ValidateJobTemplateSpec); the files its registry push reads (the configuration's publish)
// are on read-only Secret or ConfigMap mounts. The RBAC rules are held to the pass's calls by
// tests/tools/rbac-check.py, not here.
//
//   node check-supply.mjs deploy/supply.yaml [deploy/supply-watch.yaml]
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as yaml from "./kubeyaml.mjs"; // as kubectl reads YAML
import { objectErrors } from "./kubeschema.mjs";

const files = process.argv.slice(2);
assert.ok(files.length > 0, "usage: check-supply.mjs MANIFEST...");
const docs = files.flatMap((f) => yaml.loadAll(readFileSync(f, "utf8")).filter(Boolean));
// Each object against Kubernetes' own schema of its kind, unknown fields refused
// (kubeschema.mjs).
const KINDS = ["Namespace", "ServiceAccount", "ConfigMap", "PersistentVolumeClaim", "CronJob",
  "Deployment", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"];
for (const d of docs) {
  assert.ok(KINDS.includes(d.kind), `unexpected kind ${d.kind}`);
  const errs = objectErrors(d);
  if (errs.length) throw new Error(`${d.kind} ${d.metadata?.name}: ${errs.join("; ")}`);
}
const KEYS = "/etc/nvidia-supply/keys";
const ns = docs.find((d) => d.kind === "Namespace")?.metadata.name;
assert.ok(ns, "a Namespace for the pass");
const CLUSTER = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding"]);
for (const d of docs)
  if (!CLUSTER.has(d.kind)) assert.equal(d.metadata.namespace, ns, `${d.kind} ${d.metadata.name} in ${ns}`);
const find = (kind, name) => docs.find((d) => d.kind === kind && d.metadata.name === name);

// The value of --NAME in a command line (--name=V or --name V), before any "--".
function opt(cmd, name) {
  const end = cmd.indexOf("--") < 0 ? cmd.length : cmd.indexOf("--");
  for (let i = 0; i < end; i++) {
    if (cmd[i] === `--${name}`) return cmd[i + 1];
    if (cmd[i].startsWith(`--${name}=`)) return cmd[i].slice(name.length + 3);
  }
  return undefined;
}
const under = (path, dir) => path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);

function checkPod(what, spec) {
  const sa = spec.serviceAccountName;
  assert.ok(sa && find("ServiceAccount", sa), `${what}: runs as the pass's service account`);
  assert.ok(docs.some((d) => (d.kind === "RoleBinding" || d.kind === "ClusterRoleBinding") &&
    d.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === sa && s.namespace === ns)),
  `${what}: ${sa} is bound to its rules`);
  assert.equal(spec.containers.length, 1, `${what}: one container`);
  const c = spec.containers[0];
  const cmd = [...(c.command ?? []), ...(c.args ?? [])];
  assert.match(cmd[0], /\/scripts\/supply$/, `${what}: runs scripts/supply`);
  assert.equal(opt(cmd, "executor"), "kubernetes", `${what}: builds as Jobs`);
  const mountOf = (path) => (c.volumeMounts ?? []).filter((m) => under(path, m.mountPath))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  const volume = (m) => spec.volumes.find((v) => v.name === m.name);
  // The keys, read-only, from the Secret SPEC §7 names; --repo-key among them.
  const keys = mountOf(KEYS);
  assert.ok(keys && keys.mountPath === KEYS && keys.readOnly === true, `${what}: keys read-only at ${KEYS}`);
  assert.equal(volume(keys).secret?.secretName, "nvidia-supply-keys", `${what}: the keys Secret`);
  assert.ok(under(opt(cmd, "repo-key") ?? "", KEYS), `${what}: --repo-key from the Secret`);
  // The configuration: a key of the ConfigMap it mounts.
  const conf = opt(cmd, "config");
  const cm = conf && mountOf(conf);
  assert.ok(cm && volume(cm).configMap, `${what}: --config ${conf} from a ConfigMap`);
  const data = find("ConfigMap", volume(cm).configMap.name)?.data?.[conf.slice(cm.mountPath.length + 1)];
  assert.ok(data, `${what}: the ConfigMap has ${conf}`);
  const k = JSON.parse(data).kubernetes ?? {};
  assert.ok(k.image && k.cache_pvc, `${what}: kubernetes.image and kubernetes.cache_pvc configured`);
  assert.ok(!k.namespace || k.namespace === ns, `${what}: the Jobs in the pass's namespace, where its Role is`);
  // The push's files (publish.registry_auth, publish.ca_file: make-repo refuses one it
  // cannot read before it publishes): each on a read-only mount of a Secret or ConfigMap.
  const push = JSON.parse(data).publish ?? {};
  for (const f of [...(push.registry_auth ?? []), ...(push.ca_file ? [push.ca_file] : [])]) {
    const m = f.startsWith("/") && mountOf(f);
    assert.ok(m && m.readOnly === true && (volume(m).secret || volume(m).configMap),
      `${what}: publish's ${f} on a read-only mount of a Secret or ConfigMap`);
  }
  // The work directory: the claim the builders mount, at --work itself.
  const work = opt(cmd, "work");
  const wm = work && mountOf(work);
  assert.ok(wm && wm.mountPath === work && !wm.readOnly, `${what}: --work ${work} is a volume's mount path`);
  assert.equal(volume(wm).persistentVolumeClaim?.claimName, k.cache_pvc,
    `${what}: --work is the claim kubernetes.cache_pvc names, which the builders mount there`);
  const pvc = find("PersistentVolumeClaim", k.cache_pvc);
  assert.ok(pvc?.spec.accessModes.includes("ReadWriteMany"), `${what}: the work claim is ReadWriteMany`);
  // --repo on a volume of its own, written.
  const rm = mountOf(opt(cmd, "repo") ?? "/");
  assert.ok(rm && volume(rm).persistentVolumeClaim && !rm.readOnly && rm !== wm, `${what}: --repo on a volume of its own`);
  // Time to delete its Jobs when stopped.
  assert.ok((spec.terminationGracePeriodSeconds ?? 30) >= 30, `${what}: a grace period to delete its Jobs`);
}

let pods = 0;
for (const d of docs) {
  if (d.kind === "CronJob") {
    const what = `CronJob ${d.metadata.name}`;
    assert.equal(d.spec.concurrencyPolicy, "Forbid", `${what}: one pass at a time`);
    assert.equal(d.spec.schedule.trim().split(/\s+/).length, 5, `${what}: a five-field schedule`);
    const job = d.spec.jobTemplate.spec;
    assert.equal(job.selector, undefined, `${what}: \`selector\` will be auto-generated`);
    assert.ok(["Never", "OnFailure"].includes(job.template.spec.restartPolicy), `${what}: restartPolicy Never or OnFailure`);
    checkPod(what, job.template.spec);
    pods++;
  } else if (d.kind === "Deployment") {
    const what = `Deployment ${d.metadata.name}`;
    assert.equal(d.spec.replicas, 1, `${what}: one watcher`);
    assert.equal(d.spec.strategy?.type, "Recreate", `${what}: never two watchers in a rollout`);
    const cmd = [...(d.spec.template.spec.containers[0].command ?? []), ...(d.spec.template.spec.containers[0].args ?? [])];
    assert.ok(Number(opt(cmd, "watch")) > 0, `${what}: runs with --watch`);
    checkPod(what, d.spec.template.spec);
    pods++;
  }
}
assert.ok(pods > 0, "no CronJob or Deployment runs the pass");
console.log(`${docs.length} objects, ${pods} pass pod template(s)`);
