// SPDX-License-Identifier: Apache-2.0
// Validates a DaemonSet manifest offline against Kubernetes' own schemas (kubeschema.mjs)
// and asserts what it must do on its kind of cluster; prints the installer init container's
// args and env as JSON, for the binary's own parser to check. With --pods it prints instead,
// per DaemonSet, what its pod runs and sees (t_manifest_pending runs it on a fake node): the
// update strategy, and for the init container and each container its command or args,
// literal env, readiness probe's exec command, privilege, the device plugin it is (if any),
// and each volume mount with the host path behind it. With --env it prints instead, per
// DaemonSet, the literal env of the installer and of the agent with every variable the file
// offers commented out (`# - name: NVIDIA_X` over `#   value: V`) taken in, each marked
// optional or not (t_manifest_env gives them to the binary's parser and option table).
//
//   node check-manifest.mjs gke daemonset-preloaded.yaml
//   node check-manifest.mjs generic daemonset-generic.yaml
//   node check-manifest.mjs gke daemonset-preloaded.yaml --pods
//   node check-manifest.mjs generic daemonset-generic.yaml --env
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as yaml from "./kubeyaml.mjs"; // as kubectl reads YAML
import { HEALTH_TAINT_EXAMPLE, READINESS_TAINTS, STARTUP_TAINT, labelSets, selects, tolerates }
  from "./nodeaffinity.mjs";
import { objectErrors } from "./kubeschema.mjs";

const [profile, file, mode] = process.argv.slice(2);
assert.ok((profile === "gke" || profile === "generic") &&
  (mode === undefined || mode === "--pods" || mode === "--env"),
  "usage: check-manifest.mjs gke|generic FILE [--pods|--env]");
const text = readFileSync(file, "utf8");
const docs = yaml.loadAll(text).filter(Boolean);

// The file with each env entry it offers commented out taken in: a line `# - name: VAR`
// (VAR an environment variable's name) over `#   value: V` at the same indent.
function withOptionalEnv(src) {
  const lines = src.split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)# - name: ([A-Z][A-Z0-9_]*)$/.exec(lines[i]);
    const v = m && /^(\s*)#   value: (.*)$/.exec(lines[i + 1] ?? "");
    if (m && v && v[1] === m[1]) {
      out.push(`${m[1]}- name: ${m[2]}`, `${m[1]}  value: ${v[2]}`);
      i++;
    } else out.push(lines[i]);
  }
  return out.join("\n");
}
if (mode === "--env") {
  const literal = (c) => Object.fromEntries((c?.env ?? []).filter((e) => "value" in e).map((e) => [e.name, e.value]));
  const all = yaml.loadAll(withOptionalEnv(text)).filter((d) => d?.kind === "DaemonSet");
  const plain = docs.filter((d) => d.kind === "DaemonSet");
  const view = (c, was) => Object.fromEntries(Object.entries(literal(c)).map(([k, v]) =>
    [k, { value: String(v), optional: !(k in literal(was)) }]));
  const agentOf = (ds) => ds.spec.template.spec.containers.find((c) => JSON.stringify(c.args) === '["agent"]');
  process.stdout.write(JSON.stringify({ daemonsets: all.map((ds, i) => ({
    name: ds.metadata.name,
    install: view(ds.spec.template.spec.initContainers[0], plain[i].spec.template.spec.initContainers[0]),
    agent: view(agentOf(ds), agentOf(plain[i])),
  })) }) + "\n");
  process.exit(0);
}
// Each object against Kubernetes' own schema of its kind, unknown fields refused
// (kubeschema.mjs).
const KINDS = ["DaemonSet", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
  "Role", "RoleBinding"];
// Every object's errors in one assertion, so that one broken copy can show several.
const schemaErrors = docs.flatMap((d) => {
  assert.ok(KINDS.includes(d.kind), `unexpected kind ${d.kind}`);
  return objectErrors(d).map((e) => `${d.kind} ${d.metadata?.name}: ${e}`);
});
assert.ok(!schemaErrors.length, schemaErrors.join("; "));

// What each image can run, from the Dockerfile that builds it. A command, probe or hook
// must name a file the image has (a bare name is looked up in PATH's directories).
const IMAGES = [
  {
    // github.com/GoogleCloudPlatform/container-engine-accelerators, Dockerfile: the runtime
    // stage is FROM gcr.io/distroless/base (no shell, no coreutils) with one binary copied to
    // /usr/bin/nvidia-gpu-device-plugin.
    match: /^(gcr\.io\/gke-release|gke\.gcr\.io|gcr\.io\/google-containers)\/nvidia-gpu-device-plugin[@:]/,
    plugin: "gke",
    files: ["/usr/bin/nvidia-gpu-device-plugin"],
  },
  {
    // github.com/NVIDIA/k8s-device-plugin, deployments/container/Dockerfile: FROM
    // nvcr.io/nvidia/distroless/go plus busybox's applets in /busybox (on PATH) and
    // /bin/sh linked to them; ENTRYPOINT nvidia-device-plugin.
    match: /^nvcr\.io\/nvidia\/k8s-device-plugin[@:]/,
    plugin: "nvidia",
    files: ["/usr/bin/nvidia-device-plugin", "/usr/bin/config-manager", "/usr/bin/gpu-feature-discovery",
      "/usr/bin/mps-control-daemon", "/bin/sh"],
    busybox: true,
  },
  {
    // This repository's Dockerfile: FROM scratch with what scripts/image-rootfs puts in (no
    // shell, no coreutils): the installer, ldconfig and the installer's helpers.
    match: /(^|\/)nvidia-driver-installer[@:]/,
    files: ["/usr/bin/nvidia-driver-installer", "/usr/sbin/ldconfig",
      "/usr/libexec/nvidia-driver-installer/nvidia-cdi-hook", "/usr/libexec/nvidia-driver-installer/launcher",
      "/usr/libexec/nvidia-driver-installer/ldconfig"],
  },
];
// node-exporter textfile directories on the host: the one node-exporter deployments commonly
// mount (docs/configuration.md), and Debian's package's default (prometheus-node-exporter,
// /etc/default/prometheus-node-exporter).
const TEXTFILE_DIRS = ["/var/lib/node_exporter/textfile_collector", "/var/lib/prometheus/node-exporter"];
// The installer's default --registry-auth is REGISTRY_AUTH/.dockerconfigjson (docs/configuration.md).
const REGISTRY_AUTH = "/etc/nvidia-driver-installer/registry-auth";
const PATH_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
const imageOf = (c) => {
  const img = IMAGES.find((i) => i.match.test(c.image));
  assert.ok(img, `container ${c.name}: image ${c.image} is not in the table of known images`);
  return img;
};
const canRun = (img, cmd) => {
  if (cmd.startsWith("/")) return img.files.includes(cmd) || (img.busybox && cmd.startsWith("/busybox/"));
  return img.busybox || PATH_DIRS.some((d) => img.files.includes(`${d}/${cmd}`));
};
function checkRunnable(c) {
  const img = imageOf(c);
  const execs = [];
  if (c.command) execs.push(["command", c.command]);
  for (const p of ["readinessProbe", "livenessProbe", "startupProbe"]) {
    if (c[p]?.exec) execs.push([p, c[p].exec.command]);
  }
  for (const h of ["postStart", "preStop"]) {
    if (c.lifecycle?.[h]?.exec) execs.push([h, c.lifecycle[h].exec.command]);
  }
  for (const [what, cmd] of execs) {
    assert.ok(canRun(img, cmd[0]), `container ${c.name}: ${what} runs ${cmd[0]}, which image ${c.image} does not have`);
  }
  return img;
}

// The DRA pool's label (docs/dra.md): the GPU Operator's per-node switch of its device
// plugin (gpu-operator at a22dbf6, controllers/state_manager.go:103, 470-485: it sets
// nvidia.com/gpu.deploy.device-plugin=true on a GPU node only where the label is absent or
// empty, so a "false" the node was given stays; assets/state-device-plugin/0500_daemonset.yaml:20,
// its plugin's nodeSelector, =true). Where it is "false", NVIDIA's DRA driver serves the GPUs
// and no device plugin may run.
const DRA_LABEL = "nvidia.com/gpu.deploy.device-plugin";
// GKE's own: a pool where GKE runs no device plugin.
const GKE_NO_PLUGIN = "gke-no-default-nvidia-gpu-device-plugin";
const terms = (ds) =>
  ds.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
const has = (t, key, op, values) =>
  t.matchExpressions.some((e) => e.key === key && e.operator === op &&
    (!values || JSON.stringify(e.values) === JSON.stringify(values)));
const volumeOf = (spec, name) => spec.volumes.find((v) => v.name === name);
const mount = (c, path) => (c.volumeMounts ?? []).find((m) => m.mountPath === path);
const hostPathAt = (spec, c, path) => {
  const m = mount(c, path);
  assert.ok(m, `container ${c.name}: nothing mounted at ${path}`);
  return volumeOf(spec, m.name).hostPath.path;
};
// A probe's port: a number, or the name of one of the container's ports.
const portOf = (c, port) => (typeof port === "number" ? port
  : (c.ports ?? []).find((p) => p.name === port)?.containerPort ?? null);
const envOf = (c) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));

const daemonsets = docs.filter((d) => d.kind === "DaemonSet");
assert.ok(daemonsets.length > 0, "no DaemonSet");
const installers = [];
const pods = [];
let pluginSets = 0;
// What a container runs and sees: mounts with the hostPath volume behind each (a ConfigMap
// volume as its name), only literal env values (valueFrom is the kubelet's).
const containerView = (spec, c) => ({
  name: c.name,
  image: c.image,
  plugin: imageOf(c).plugin ?? null,
  command: c.command ?? null,
  args: c.args ?? null,
  env: Object.fromEntries((c.env ?? []).filter((e) => "value" in e).map((e) => [e.name, e.value])),
  readinessProbe: c.readinessProbe?.exec?.command ?? null,
  // An HTTP probe: its path, and the port it names resolved to the container's number.
  readinessHttp: c.readinessProbe?.httpGet
    ? { path: c.readinessProbe.httpGet.path, port: portOf(c, c.readinessProbe.httpGet.port) } : null,
  ports: (c.ports ?? []).map((p) => p.containerPort),
  privileged: c.securityContext?.privileged === true,
  mounts: (c.volumeMounts ?? []).map((m) => {
    const v = volumeOf(spec, m.name);
    return { path: m.mountPath, readOnly: m.readOnly === true, hostPath: v.hostPath?.path ?? null,
      hostPathType: v.hostPath?.type ?? null, configMap: v.configMap?.name ?? null };
  }),
});
for (const ds of daemonsets) {
  const spec = ds.spec.template.spec;
  const name = ds.metadata.name;
  assert.equal(ds.metadata.namespace, "kube-system");
  assert.equal(spec.priorityClassName, "system-node-critical");
  assert.equal(ds.spec.updateStrategy.type, "RollingUpdate");

  // The taints a GPU node carries before its driver works or while it is broken
  // (docs/operations.md, "GPU nodes that register tainted"): the agent's startup taint
  // (NVIDIA_STARTUP_TAINT, removed in every effect), its health taint (NVIDIA_HEALTH_TAINT, or
  // the documented example), the NodeReadinessRules' (docs/examples/node-readiness). This pod
  // must land and stay there through all of them, or nothing would ever take them off.
  const taintEnv = envOf(spec.containers.find((c) => JSON.stringify(c.args) === '["agent"]') ?? {});
  const startup = taintEnv.NVIDIA_STARTUP_TAINT ?? STARTUP_TAINT;
  const health = (taintEnv.NVIDIA_HEALTH_TAINT ?? "none") === "none" ? HEALTH_TAINT_EXAMPLE
    : taintEnv.NVIDIA_HEALTH_TAINT;
  const nodeTaints = [...READINESS_TAINTS,
    { key: health.slice(0, health.lastIndexOf(":")), effect: health.slice(health.lastIndexOf(":") + 1) }];
  if (startup !== "none")
    for (const effect of ["NoSchedule", "PreferNoSchedule", "NoExecute"]) nodeTaints.push({ key: startup, effect });
  for (const taint of nodeTaints) {
    assert.ok(spec.tolerations.some((t) => tolerates(t, taint)),
      `${name}: no toleration for the taint ${taint.key}${taint.value ? `=${taint.value}` : ""}:${taint.effect}`);
  }

  // Tolerations: the GPU taint, and every taint (auto-provisioned pools).
  assert.ok(spec.tolerations.some((t) => t.key === "nvidia.com/gpu" && t.operator === "Exists" &&
    t.effect === "NoSchedule"), `${name}: GPU taint toleration`);
  assert.ok(spec.tolerations.some((t) => !t.key && t.operator === "Exists" && !t.effect),
    `${name}: tolerate every taint`);

  // The installer: privileged, host / at /root with Bidirectional propagation, /dev, keys.
  assert.equal(spec.initContainers.length, 1);
  const inst = spec.initContainers[0];
  checkRunnable(inst);
  assert.equal(inst.securityContext.privileged, true);
  assert.equal(inst.args[0], "install");
  const env = Object.fromEntries(inst.env.map((e) => [e.name, e.value ?? ""]));
  assert.equal(env.ROOT_MOUNT_DIR, "/root");
  assert.equal(mount(inst, "/root").mountPropagation, "Bidirectional");
  assert.equal(hostPathAt(spec, inst, "/root"), "/");
  assert.equal(hostPathAt(spec, inst, "/dev"), "/dev");
  assert.ok(mount(inst, "/etc/nvidia-driver-installer/keys").readOnly);
  assert.ok(env.NVIDIA_DRIVER_REPO && env.NVIDIA_DRIVER_REPO_KEY, "repository configured");
  // A fleet upgrade is a rollout of this DaemonSet, never a side effect (docs/operations.md,
  // runbook 2): the version is exact. default and latest move with the repository's tags
  // and a branch (550, 550.90) with its next release, so each node would switch at its next
  // reboot or pod restart, outside any rollout. NVIDIA's driver versions are
  // MAJOR.MINOR.PATCH (550.90.07); --driver-version takes it as that version alone when the
  // index lists it (docs/configuration.md).
  assert.ok(/^[0-9]+\.[0-9]+\.[0-9]+$/.test(env.NVIDIA_DRIVER_VERSION ?? ""),
    `${name}: NVIDIA_DRIVER_VERSION must be an exact version (550.90.07), not ${JSON.stringify(env.NVIDIA_DRIVER_VERSION)}: a fleet changes driver by a rollout of the DaemonSet`);
  assert.ok(!inst.args.some((a) => a === "--driver-version" || a.startsWith("--driver-version=")),
    `${name}: the version is given once, in NVIDIA_DRIVER_VERSION`);
  assert.ok(inst.resources.requests.cpu && inst.resources.requests.memory, "requests");
  // Each container's env is a list of literal values (no valueFrom the binary cannot see),
  // but the node's name from the downward API (the Node its wait is published on).
  const fromNodeName = (e) => e.name === "NVIDIA_NODE_NAME" &&
    e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName";
  assert.ok(inst.env.every((e) => "value" in e || fromNodeName(e)), "literal env values");
  // A node whose kernel has no package waits for one, said on its Node (docs/design.md, "A
  // kernel nobody built for"), instead of exiting 3 into the kubelet's crash-loop back-off.
  assert.equal(env.NVIDIA_WAIT_FOR_PACKAGE, "yes", `${name}: NVIDIA_WAIT_FOR_PACKAGE=yes`);
  assert.ok(inst.env.some(fromNodeName), `${name}: the installer's NVIDIA_NODE_NAME from spec.nodeName`);
  // The metrics textfile (docs/metrics.md): the shipped manifests ask for one, a *.prom file
  // directly in a node-exporter textfile directory on the host. The installer writes it under
  // ROOT_MOUNT_DIR (asserted above: the host's / at /root), so the host directory is reachable
  // without a volume of its own; a path outside that mount would stay in the container.
  const flag = inst.args.findIndex((a) => a === "--metrics-file" || a.startsWith("--metrics-file="));
  const metrics = flag < 0 ? env.NVIDIA_METRICS_FILE
    : inst.args[flag].includes("=") ? inst.args[flag].split("=").slice(1).join("=") : inst.args[flag + 1];
  assert.ok(metrics, `${name}: the installer writes a metrics file (NVIDIA_METRICS_FILE)`);
  assert.match(metrics, /^\/.*\/[^/]+\.prom$/, `${name}: metrics file ${metrics} must be an absolute path ending in .prom (the only files the textfile collector reads)`);
  const metricsDir = metrics.slice(0, metrics.lastIndexOf("/"));
  assert.ok(TEXTFILE_DIRS.includes(metricsDir),
    `${name}: metrics file ${metrics} is not in a node-exporter textfile directory (${TEXTFILE_DIRS.join(", ")})`);
  // A rollout must not crash-loop a busy node (docs/configuration.md, "Busy nodes"): the new
  // driver waits, staged and verified, while the old one keeps serving.
  assert.equal(env.NVIDIA_WHEN_BUSY, "defer", `${name}: NVIDIA_WHEN_BUSY=defer`);
  installers.push({ args: inst.args, env });
  pods.push({ name, updateStrategy: ds.spec.updateStrategy, init: containerView(spec, inst),
    containers: spec.containers.map((c) => containerView(spec, c)) });
  const installDir = env.NVIDIA_INSTALL_DIR_HOST;
  assert.ok(installDir, `${name}: NVIDIA_INSTALL_DIR_HOST`);

  // Every container can run what it is asked to. The node agent (docs/design.md, "The node
  // agent") runs in the installer's image with the installer's view of the node, and alone
  // makes the pod Ready: its /readyz on the port it listens on by default (--listen
  // 0.0.0.0:9470), its /healthz the liveness probe; HTTP, so no shell is run.
  const images = spec.containers.map(checkRunnable);
  const agents = spec.containers.filter((c) => c.image === inst.image &&
    JSON.stringify([...(c.command ?? ["/usr/bin/nvidia-driver-installer"]).slice(1), ...(c.args ?? [])]) ===
    JSON.stringify(["agent"]));
  assert.equal(agents.length, 1, `${name}: one container runs the agent, in the installer's image`);
  const agent = agents[0];
  const gates = spec.containers.filter((c) => c.readinessProbe);
  assert.ok(gates.length === 1 && gates[0] === agent, `${name}: the agent alone gates the pod's readiness`);
  assert.deepEqual(agent.readinessProbe.httpGet && { path: agent.readinessProbe.httpGet.path,
    port: portOf(agent, agent.readinessProbe.httpGet.port) }, { path: "/readyz", port: 9470 },
  `${name}: the agent's readiness probe is GET /readyz on 9470`);
  assert.deepEqual(agent.livenessProbe?.httpGet && { path: agent.livenessProbe.httpGet.path,
    port: portOf(agent, agent.livenessProbe.httpGet.port) }, { path: "/healthz", port: 9470 },
  `${name}: the agent's liveness probe is GET /healthz on 9470`);
  assert.equal(agent.securityContext?.privileged, true, `${name}: the agent is privileged (/dev/kmsg)`);
  const agentEnv = envOf(agent);
  for (const k of ["ROOT_MOUNT_DIR", "NVIDIA_INSTALL_DIR_HOST", "NVIDIA_INSTALL_DIR_CONTAINER"])
    assert.equal(agentEnv[k], env[k], `${name}: the agent's ${k} is the installer's`);
  assert.equal(hostPathAt(spec, agent, agentEnv.ROOT_MOUNT_DIR), "/", `${name}: the host's / at the agent's ROOT_MOUNT_DIR`);
  assert.equal(hostPathAt(spec, agent, "/dev"), "/dev", `${name}: the host's /dev in the agent`);
  const agentMetrics = agentEnv.NVIDIA_AGENT_METRICS_FILE;
  assert.ok(agentMetrics && TEXTFILE_DIRS.includes(agentMetrics.slice(0, agentMetrics.lastIndexOf("/"))) &&
    agentMetrics !== metrics, `${name}: the agent's textfile beside, not over, the installer's`);
  assert.ok(agent.resources?.requests?.memory && agent.resources?.limits?.memory,
    `${name}: the agent's memory requested and limited`);
  // Driver upgrades: the node's name from the downward API, the installer's repository, and
  // a service account bound to the agent's rules (ClusterRole and Role of the same name).
  const nodeName = (agent.env ?? []).find((e) => e.name === "NVIDIA_NODE_NAME");
  assert.equal(nodeName?.valueFrom?.fieldRef?.fieldPath, "spec.nodeName",
    `${name}: the agent's NVIDIA_NODE_NAME from spec.nodeName`);
  for (const k of ["NVIDIA_DRIVER_REPO", "NVIDIA_DRIVER_REPO_KEY", "NVIDIA_METRICS_FILE"])
    assert.equal(agentEnv[k], env[k], `${name}: the agent's ${k} is the installer's`);
  // A repository in a registry (docs/operations.md, "A repository in a registry"): one
  // kubernetes.io/dockerconfigjson Secret serves the kubelet's pull of the image
  // (imagePullSecrets) and, whole (its .dockerconfigjson key where the installer reads it by
  // default, REGISTRY_AUTH/.dockerconfigjson), an oci:// NVIDIA_DRIVER_REPO: read-only in
  // the installer and in the agent, whose upgrades run the installer; optional, so that a
  // cluster without one starts its pods and pulls anonymously.
  const pullSecrets = (spec.imagePullSecrets ?? []).map((s) => s.name);
  for (const c of [inst, agent]) {
    const m = mount(c, REGISTRY_AUTH);
    const s = m && volumeOf(spec, m.name).secret;
    assert.ok(m?.readOnly === true && s?.optional === true && !s.items && pullSecrets.includes(s.secretName),
      `${name}: ${c.name} reads the image pull Secret, whole, optional, read-only at ${REGISTRY_AUTH}`);
  }
  // containerd's hosts.toml directory, where given: the node's, read-only, at the same path
  // (a hosts.toml names its CA files by the node's paths).
  for (const c of [inst, agent]) {
    const hosts = envOf(c).NVIDIA_REGISTRY_HOSTS;
    if (hosts === undefined) continue;
    const m = mount(c, hosts);
    assert.ok(m?.readOnly === true && volumeOf(spec, m.name).hostPath?.path === hosts,
      `${name}: ${c.name}'s NVIDIA_REGISTRY_HOSTS ${hosts} is the node's, read-only at its path`);
  }
  const sa = spec.serviceAccountName;
  assert.ok(sa, `${name}: a service account for the agent`);
  for (const [binding, role] of [["ClusterRoleBinding", "ClusterRole"], ["RoleBinding", "Role"]]) {
    const b = docs.find((d) => d.kind === binding && d.subjects?.some((x) =>
      x.kind === "ServiceAccount" && x.name === sa && x.namespace === ds.metadata.namespace));
    assert.ok(b && b.roleRef.kind === role && docs.some((d) => d.kind === role && d.metadata.name === b.roleRef.name),
      `${name}: the ${role} of service account ${sa}`);
    if (binding === "RoleBinding")
      assert.equal(b.metadata.namespace, ds.metadata.namespace, `${name}: its Role in its namespace`);
  }
  // The agent's condition goes through its Node's status subresource (a PATCH), its taints
  // and cordon through the Node (docs/design.md, "Write access limited to the node").
  const crb = docs.find((d) => d.kind === "ClusterRoleBinding" && d.subjects?.some((x) =>
    x.kind === "ServiceAccount" && x.name === sa && x.namespace === ds.metadata.namespace));
  const grants = docs.find((d) => d.kind === "ClusterRole" && d.metadata.name === crb.roleRef.name).rules;
  for (const [res, verb] of [["nodes", "get"], ["nodes", "patch"], ["nodes/status", "patch"]])
    assert.ok(grants.some((r) => r.apiGroups.includes("") && r.resources.includes(res) && r.verbs.includes(verb)),
      `${name}: the agent may ${verb} ${res}`);

  const plugins = spec.containers.filter((c, i) => images[i].plugin);
  assert.ok(plugins.length <= 1, `${name}: at most one device plugin`);
  const plugin = plugins[0];
  const kind = plugin && imageOf(plugin).plugin;
  if (plugin) pluginSets++;
  // One image for both architectures (a manifest list, make image-multiarch): every term
  // keeps the nodes of any other architecture out, where no image could run.
  for (const t of terms(ds)) {
    assert.ok(has(t, "kubernetes.io/arch", "In", ["amd64", "arm64"]),
      `${name}: amd64 and arm64 nodes only, the image's architectures`);
  }

  if (profile === "gke") {
    for (const t of terms(ds)) {
      // GKE GPU nodes whose driver GKE does not install; never confidential nodes, which
      // GKE's own installer excludes (container-engine-accelerators,
      // nvidia-driver-installer/cos/daemonset-preloaded.yaml).
      assert.ok(has(t, "cloud.google.com/gke-accelerator", "Exists"), `${name}: GKE accelerator nodes`);
      assert.ok(has(t, "cloud.google.com/gke-gpu-driver-version", "DoesNotExist"),
        `${name}: nodes whose driver GKE installs are left to GKE`);
      assert.ok(has(t, "cloud.google.com/gke-confidential-nodes-instance-type", "DoesNotExist"),
        `${name}: confidential nodes are excluded`);
      // A plugin only where GKE runs none (the pool's gke-no-default-nvidia-gpu-device-plugin
      // label) and that is not a DRA pool; the driver alone everywhere else: where GKE runs
      // its plugin, and in DRA pools (GKE's plugin off, NVIDIA's DRA driver on).
      if (plugin) {
        assert.ok(has(t, GKE_NO_PLUGIN, "In", ["true"]), `${name}: a plugin only on nodes where GKE runs none`);
        assert.ok(has(t, DRA_LABEL, "NotIn", ["false"]), `${name}: no device plugin on DRA nodes`);
      } else {
        assert.ok(has(t, GKE_NO_PLUGIN, "NotIn", ["true"]) ||
          (has(t, GKE_NO_PLUGIN, "In", ["true"]) && has(t, DRA_LABEL, "In", ["false"])),
        `${name}: no plugin beside GKE's, or a DRA pool's term`);
      }
    }
    if (plugin) {
      assert.equal(kind, "gke", `${name}: GKE's plugin on GKE`);
      // What GKE gives its plugin (container-engine-accelerators, cmd/nvidia_gpu/device-plugin.yaml;
      // flags in cmd/nvidia_gpu/nvidia_gpu.go).
      assert.equal(hostPathAt(spec, plugin, "/device-plugin"), "/var/lib/kubelet/device-plugins");
      assert.equal(hostPathAt(spec, plugin, "/dev"), "/dev");
      assert.equal(hostPathAt(spec, plugin, "/usr/local/nvidia"), installDir);
      assert.equal(hostPathAt(spec, plugin, "/var/lib/kubelet/pod-resources"), "/var/lib/kubelet/pod-resources");
      assert.equal(hostPathAt(spec, plugin, "/proc"), "/proc");
      // -gpu-config and -gpu-fraction-divisor-file default to /etc/nvidia/...: sharing settings.
      assert.equal(hostPathAt(spec, plugin, "/etc/nvidia"), "/etc/nvidia");
      for (const flag of [`-host-path=${installDir}`, "-container-path=/usr/local/nvidia",
        "--enable-health-monitoring", "--enable-container-gpu-metrics"]) {
        assert.ok(plugin.command.includes(flag), `${name}: plugin flag ${flag}`);
      }
      // nvml.Init loads libnvidia-ml.so.1 by name: the install dir's lib64 on the path.
      assert.equal(envOf(plugin).LD_LIBRARY_PATH, "/usr/local/nvidia/lib64");
      assert.equal(plugin.securityContext.privileged, true);
      // Health monitoring updates the node's status: a service account allowed to.
      const sa = spec.serviceAccountName;
      assert.ok(sa, `${name}: a service account for health monitoring`);
      const binding = docs.find((d) => d.kind === "ClusterRoleBinding" &&
        d.subjects.some((s) => s.kind === "ServiceAccount" && s.name === sa && s.namespace === "kube-system"));
      assert.ok(binding && docs.some((d) => d.kind === "ServiceAccount" && d.metadata.name === sa),
        `${name}: service account ${sa} exists and is bound`);
      const role = docs.find((d) => d.kind === "ClusterRole" && d.metadata.name === binding.roleRef.name);
      assert.ok(role.rules.some((r) => r.resources.includes("nodes/status") && r.verbs.includes("update")),
        `${name}: may update node status`);
    }
  } else {
    // Nodes are found before any driver: node-feature-discovery labels PCI devices by
    // class and vendor by default (source/pci/pci.go: deviceClassWhitelist 03, 0b40, 12;
    // deviceLabelFields class, vendor; utils.go: the class is class and subclass, 4 hex
    // digits), pci-10de.present where it labels by vendor alone (NVIDIA's device plugin
    // chart, values.yaml), and GPU feature discovery's gpu.present.
    const gpuLabels = ["feature.node.kubernetes.io/pci-0302_10de.present",
      "feature.node.kubernetes.io/pci-0300_10de.present", "feature.node.kubernetes.io/pci-10de.present",
      "nvidia.com/gpu.present"];
    for (const l of gpuLabels)
      assert.ok(terms(ds).some((t) => has(t, l, "In", ["true"])), `${name}: nodes labelled ${l}`);
    for (const t of terms(ds)) {
      assert.ok(gpuLabels.some((l) => has(t, l, "In", ["true"])), `${name}: each term asks for a GPU`);
      // GKE nodes are daemonset-preloaded.yaml's: both applied never double up.
      assert.ok(has(t, "cloud.google.com/gke-accelerator", "DoesNotExist"), `${name}: not GKE nodes`);
    }
    // NVIDIA's device plugin on every GPU node but the DRA pool's, where the driver alone
    // runs (the DRA driver's kubelet plugin is a DaemonSet of its chart).
    if (!plugin) {
      assert.ok(terms(ds).every((t) => has(t, DRA_LABEL, "In", ["false"])),
        `${name}: a DaemonSet without NVIDIA's device plugin serves the DRA pool only (${DRA_LABEL}=false in every term)`);
      continue;
    }
    assert.ok(terms(ds).every((t) => has(t, DRA_LABEL, "NotIn", ["false"])),
      `${name}: no device plugin on DRA nodes (${DRA_LABEL} NotIn false in every term)`);
    assert.equal(kind, "nvidia", `${name}: NVIDIA's device plugin`);
    const penv = envOf(plugin);
    // github.com/NVIDIA/k8s-device-plugin, cmd/nvidia-device-plugin/main.go (flags and their
    // env) and root.go: libnvidia-ml.so.1 is looked up under the container's driver root
    // (/driver-root, api/config/v1/consts.go) in these directories, so the host's
    // NVIDIA_DRIVER_ROOT must be the install dir, mounted there, and its lib64/ one of them.
    const searched = ["/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64",
      "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"];
    assert.ok(searched.includes("/lib64"), "the install dir's lib64/ is searched");
    assert.equal(penv.NVIDIA_DRIVER_ROOT, installDir, `${name}: NVIDIA_DRIVER_ROOT is the install dir`);
    assert.equal(hostPathAt(spec, plugin, "/driver-root"), installDir, `${name}: driver root mounted`);
    assert.equal(penv.FAIL_ON_INIT_ERROR, "true");
    // No toolkit on the node: the spec's hooks (cmd/nvidia-device-plugin/main.go,
    // --nvidia-cdi-hook-path: NVIDIA_CDI_HOOK_PATH, then NVIDIA_CTK_PATH) run ours, a host path.
    const hook = `${installDir}/.helpers/nvidia-cdi-hook`;
    assert.equal(penv.NVIDIA_CDI_HOOK_PATH, hook, `${name}: the CDI hook is ours`);
    assert.equal(penv.NVIDIA_CTK_PATH, hook, `${name}: the CDI hook is ours (older name)`);
    // v0.16.0-v0.18.0 check for NVML by name (go-nvlib info HasNvml without WithRoot).
    assert.equal(penv.LD_LIBRARY_PATH, "/driver-root/lib64", `${name}: older plugins find NVML`);
    // The agent signals the plugin after a switch (docs/design.md).
    assert.equal(spec.shareProcessNamespace, true, `${name}: the agent sees the plugin`);
    const strategies = ["envvar", "volume-mounts", "cdi-annotations", "cdi-cri"];
    for (const s of (penv.DEVICE_LIST_STRATEGY ?? "envvar").split(",")) {
      assert.ok(strategies.includes(s), `${name}: unknown DEVICE_LIST_STRATEGY ${s}`);
      // envvar and volume-mounts need NVIDIA's container runtime on the node, which this
      // stack does not install; the CDI strategies write their spec to /var/run/cdi.
      assert.ok(s.startsWith("cdi-"), `${name}: DEVICE_LIST_STRATEGY ${s} needs NVIDIA's container runtime`);
    }
    assert.equal(hostPathAt(spec, plugin, "/var/run/cdi"), "/var/run/cdi");
    assert.equal(hostPathAt(spec, plugin, "/var/lib/kubelet/device-plugins"), "/var/lib/kubelet/device-plugins");
    // No NVIDIA runtime puts /dev/nvidia* into the plugin's container.
    assert.equal(plugin.securityContext.privileged, true);
  }
}
// The pools: every GPU node this kind of cluster has gets exactly one DaemonSet, a DRA node
// one without a device plugin, every other GPU node the plugin its cluster needs (GKE: ours
// only where GKE runs none), and no other node any. Each label set that tells the
// DaemonSets apart is tried (nodeaffinity.mjs). Labels this check does not know (a pool's
// name, scripts/pool-daemonsets) may only take whole slices of the nodes away: where a
// DaemonSet runs on some node of a slice, every GPU node of that slice is served.
const GPU_ARCHES = ["amd64", "arm64"];
const GENERIC_GPU = ["feature.node.kubernetes.io/pci-0302_10de.present",
  "feature.node.kubernetes.io/pci-0300_10de.present", "feature.node.kubernetes.io/pci-10de.present",
  "nvidia.com/gpu.present"];
const pool = profile === "gke" ? {
  known: { "kubernetes.io/arch": GPU_ARCHES, "cloud.google.com/gke-accelerator": ["nvidia-tesla-t4"],
    "cloud.google.com/gke-gpu-driver-version": ["default"],
    "cloud.google.com/gke-confidential-nodes-instance-type": ["SEV"], [GKE_NO_PLUGIN]: ["true"],
    [DRA_LABEL]: ["false", "true"] },
  // GKE GPU nodes whose driver GKE does not install, never confidential ones.
  isGpu: (l) => GPU_ARCHES.includes(l["kubernetes.io/arch"]) && "cloud.google.com/gke-accelerator" in l &&
    !("cloud.google.com/gke-gpu-driver-version" in l) &&
    !("cloud.google.com/gke-confidential-nodes-instance-type" in l),
  wantsPlugin: (l) => l[GKE_NO_PLUGIN] === "true" && l[DRA_LABEL] !== "false",
} : {
  known: { "kubernetes.io/arch": GPU_ARCHES, "cloud.google.com/gke-accelerator": ["nvidia-tesla-t4"],
    ...Object.fromEntries(GENERIC_GPU.map((k) => [k, ["true"]])), [DRA_LABEL]: ["false", "true"] },
  isGpu: (l) => GPU_ARCHES.includes(l["kubernetes.io/arch"]) && !("cloud.google.com/gke-accelerator" in l) &&
    GENERIC_GPU.some((k) => l[k] === "true"),
  wantsPlugin: (l) => l[DRA_LABEL] !== "false",
};
const hasPlugin = new Map(daemonsets.map((ds) =>
  [ds, ds.spec.template.spec.containers.some((c) => imageOf(c).plugin)]));
const slices = new Map();
for (const labels of labelSets(daemonsets.map((ds) => ds.spec.template.spec), pool.known)) {
  const hit = daemonsets.filter((ds) => selects(ds.spec.template.spec, labels));
  const node = JSON.stringify(labels);
  assert.ok(hit.length <= 1, `two DaemonSets select one node: ${hit.map((d) => d.metadata.name).join(" and ")} both select a node labelled ${node}`);
  const slice = JSON.stringify(Object.entries(labels).filter(([k]) => !(k in pool.known)));
  if (!slices.has(slice)) slices.set(slice, { served: false, missed: null });
  const s = slices.get(slice);
  if (!pool.isGpu(labels)) {
    assert.equal(hit.length, 0, `${hit[0]?.metadata.name}: runs on a node labelled ${node}, not a GPU node it serves`);
    continue;
  }
  if (hit.length === 0) {
    s.missed ??= node;
    continue;
  }
  s.served = true;
  const name = hit[0].metadata.name;
  if (labels[DRA_LABEL] === "false")
    assert.ok(!hasPlugin.get(hit[0]), `${name}: runs a device plugin on a DRA node (labelled ${node})`);
  else
    assert.equal(hasPlugin.get(hit[0]), pool.wantsPlugin(labels),
      `${name}: ${pool.wantsPlugin(labels) ? "no" : "a"} device plugin on a node labelled ${node}`);
}
for (const s of slices.values())
  assert.ok(!s.served || s.missed === null, `a GPU node labelled ${s.missed} gets no DaemonSet`);

if (profile === "gke") {
  assert.equal(pluginSets, 1, "one DaemonSet with a plugin, for pools where GKE runs none");
  assert.equal(daemonsets.length, 2, "one DaemonSet without a plugin, beside GKE's");
}
// The installer is the same wherever it runs.
for (const i of installers) assert.deepEqual(i, installers[0], "every DaemonSet runs the same installer");

process.stdout.write(JSON.stringify(mode === "--pods" ? { daemonsets: pods } : installers[0]) + "\n");
