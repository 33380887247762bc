// SPDX-License-Identifier: Apache-2.0
// Validates daemonset-preloaded.yaml offline against the Kubernetes schemas
// (kubernetes-models) and asserts what the DaemonSet must do; prints the init
// container's args and env as JSON, for the binary's own parser to check.
//
//   node check-manifest.mjs daemonset-preloaded.yaml
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import yaml from "js-yaml";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";

const docs = yaml.loadAll(readFileSync(process.argv[2], "utf8")).filter(Boolean);
const models = { DaemonSet, ConfigMap };
for (const d of docs) {
  assert.ok(models[d.kind], `unexpected kind ${d.kind}`);
  new models[d.kind](d).validate(); // throws on a schema violation
}
const ds = docs.find((d) => d.kind === "DaemonSet");
const spec = ds.spec.template.spec;

assert.equal(ds.metadata.namespace, "kube-system");
assert.equal(spec.priorityClassName, "system-node-critical");
assert.equal(ds.spec.updateStrategy.type, "RollingUpdate");

// Scheduling: GKE accelerator nodes whose driver GKE does not manage, or any node
// labelled nvidia.com/gpu.present=true.
const terms = spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
const has = (t, key, op, values) =>
  t.matchExpressions.some((e) => e.key === key && e.operator === op &&
    (!values || JSON.stringify(e.values) === JSON.stringify(values)));
assert.ok(terms.some((t) => has(t, "cloud.google.com/gke-accelerator", "Exists") &&
  has(t, "cloud.google.com/gke-gpu-driver-version", "DoesNotExist")), "GKE term");
assert.ok(terms.some((t) => has(t, "nvidia.com/gpu.present", "In", ["true"])), "non-GKE term");

// Tolerations: the GPU taint, and every taint (auto-provisioned pools).
assert.ok(spec.tolerations.some((t) => t.key === "nvidia.com/gpu" && t.operator === "Exists" &&
  t.effect === "NoSchedule"), "GPU taint toleration");
assert.ok(spec.tolerations.some((t) => !t.key && t.operator === "Exists" && !t.effect),
  "tolerate every taint");

const volume = (name) => spec.volumes.find((v) => v.name === name);
const mount = (c, path) => c.volumeMounts.find((m) => m.mountPath === path);

// The installer: privileged, host / at /root with Bidirectional propagation, /dev, keys.
assert.equal(spec.initContainers.length, 1);
const inst = spec.initContainers[0];
assert.equal(inst.securityContext.privileged, true);
assert.equal(inst.args[0], "install");
const env = Object.fromEntries(inst.env.map((e) => [e.name, e.value ?? ""]));
assert.equal(env.ROOT_MOUNT_DIR, "/root");
const root = mount(inst, "/root");
assert.equal(root.mountPropagation, "Bidirectional");
assert.equal(volume(root.name).hostPath.path, "/");
assert.equal(volume(mount(inst, "/dev").name).hostPath.path, "/dev");
assert.ok(mount(inst, "/etc/nvidia-driver-installer/keys").readOnly);
assert.ok(env.NVIDIA_DRIVER_REPO && env.NVIDIA_DRIVER_REPO_KEY, "repository configured");
assert.ok(inst.resources.requests.cpu && inst.resources.requests.memory, "requests");

// The device plugin, after the installer: GKE's contract and the readiness marker.
assert.equal(spec.containers.length, 1);
const plugin = spec.containers[0];
assert.equal(volume(mount(plugin, "/device-plugin").name).hostPath.path,
  "/var/lib/kubelet/device-plugins");
assert.equal(volume(mount(plugin, "/usr/local/nvidia").name).hostPath.path,
  "/home/kubernetes/bin/nvidia");
assert.ok(plugin.command.includes("-host-path=/home/kubernetes/bin/nvidia"));
assert.ok(plugin.command.includes("-container-path=/usr/local/nvidia"));
const probe = plugin.readinessProbe.exec.command.join(" ");
assert.match(probe, /\/run\/nvidia\/validations\/driver-ready/);
assert.equal(volume(mount(plugin, "/run/nvidia/validations").name).hostPath.path,
  "/run/nvidia/validations");

// The pod has no env for the plugin the installer would read by mistake, and each
// container's env is a list of name/value pairs (no valueFrom the binary cannot see).
assert.ok(inst.env.every((e) => "value" in e), "literal env values");

process.stdout.write(JSON.stringify({ args: inst.args, env }) + "\n");
