// SPDX-License-Identifier: Apache-2.0
// NVIDIA's DRA driver's Helm chart, as much of it as the offline checks of
// docs/examples/dra/values-*.yaml need (check-dra.mjs): its defaults for the values read
// here, Helm's merge of a values file over them, the chart's own refusals (what `helm
// template` and `helm install` fail with), restated with citations, and what its kubelet
// plugin's DaemonSet and DeviceClasses come out as. tests/k8s/render-dra-chart.sh renders
// the real chart where it is at hand, and compares.
//
// Source: github.com/NVIDIA/k8s-dra-driver-gpu at 2240711, deployments/helm/dra-driver-nvidia-gpu
// (chart 0.5.0-dev): values.yaml, templates/validation.yaml, templates/_helpers.tpl,
// templates/kubeletplugin.yaml, templates/deviceclass-*.yaml; line numbers are theirs.

// values.yaml, the defaults of the keys read here.
export const DEFAULTS = {
  nvidiaDriverRoot: "/", // :23
  nvidiaCDIHookPath: "", // :27
  namespaceOverride: "", // :38
  gpuResourcesEnabledOverride: false, // :40
  allowDefaultNamespace: false, // :42
  resourceApiVersion: "", // :56
  resources: { gpus: { enabled: true }, computeDomains: { enabled: true } }, // :77-81
  featureGates: {}, // :93
  webhook: { // :144-195
    enabled: false,
    priorityClassName: "system-cluster-critical", // :149
    tls: { mode: "cert-manager", certManager: { issuerType: "selfsigned", issuerName: "", dnsNames: [] },
      secret: { name: "", caBundle: "" } },
  },
  controller: { priorityClassName: "system-node-critical" }, // :209
  kubeletPlugin: {
    priorityClassName: "system-node-critical", // :254
    nodeSelector: {}, // :261
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }], // :262-265
    // :288-321: any node with an NVIDIA GPU by NFD's PCI labels, a Tegra CPU, or the GPU
    // Operator's gpu.present.
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [
      ["feature.node.kubernetes.io/pci-10de.present", "true"],
      ["feature.node.kubernetes.io/pci-0302_10de.present", "true"],
      ["feature.node.kubernetes.io/pci-0300_10de.present", "true"],
      ["feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"],
      ["nvidia.com/gpu.present", "true"],
    ].map(([key, v]) => ({ matchExpressions: [{ key, operator: "In", values: [v] }] })) } } },
  },
};

// Helm's merge of a values file over the chart's (helm's pkg/chart/common/util coalesce):
// maps merge key by key, anything else (a list included) replaces, null deletes the key.
export function merge(base, over) {
  const isMap = (x) => x && typeof x === "object" && !Array.isArray(x);
  const out = structuredClone(base);
  for (const [k, v] of Object.entries(over ?? {})) {
    if (v === null) delete out[k];
    else if (isMap(v) && isMap(out[k])) out[k] = merge(out[k], v);
    else out[k] = structuredClone(v);
  }
  return out;
}

// A Go template's truth (text/template, "if"): false, 0, nil, and empty strings, maps and
// lists are false.
export function truthy(x) {
  if (x === undefined || x === null || x === false || x === 0 || x === "") return false;
  if (Array.isArray(x)) return x.length > 0;
  if (typeof x === "object") return Object.keys(x).length > 0;
  return true;
}

// The resource.k8s.io version the chart renders with (_helpers.tpl:187-199,
// "dra-driver-nvidia-gpu.resourceApiVersion"): resourceApiVersion when set, else the first
// of v1, v1beta2, v1beta1 the cluster serves (helm's --api-versions), else none.
export function resourceApiVersion(v, clusterVersions) {
  if (truthy(v.resourceApiVersion)) return v.resourceApiVersion;
  return ["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"]
    .find((a) => clusterVersions.includes(a)) ?? "";
}

// The chart's refusals (templates/validation.yaml), each as "LINES: what": [] when the chart
// renders. V: the merged values; NAMESPACE: the release's (helm's --namespace);
// CLUSTER_VERSIONS: the API versions the cluster serves.
export function refusals(v, namespace, clusterVersions) {
  const out = [];
  const no = (cond, lines, what) => { if (cond) out.push(`validation.yaml:${lines}: ${what}`); };
  no(truthy(v.namespace), "15-22", `'namespace' is set (${v.namespace}): use helm's --namespace`);
  // The chart's namespace: namespaceOverride, else the release's (_helpers.tpl:29-35).
  const ns = truthy(v.namespaceOverride) ? v.namespaceOverride : namespace;
  no(ns === "default" && v.namespaceOverride === "" && !truthy(v.allowDefaultNamespace), "24-31",
    "the 'default' namespace without allowDefaultNamespace=true");
  no(truthy(v.resources?.gpus?.enabled) && !truthy(v.gpuResourcesEnabledOverride), "33-43",
    "resources.gpus.enabled without gpuResourcesEnabledOverride=true (the statement that no " +
    "device plugin runs on the kubelet plugin's nodes)");
  no(truthy(v.nvidiaCtkPath), "45-53", "nvidiaCtkPath is no longer supported");
  const w = v.webhook ?? {};
  if (truthy(w.enabled)) {
    const tls = w.tls;
    no(!truthy(tls), "56-61", "webhook.enabled without webhook.tls");
    no(!truthy(tls?.mode), "63-68", "webhook.enabled without webhook.tls.mode");
    no(!["cert-manager", "secret"].includes(tls?.mode), "70-75",
      `webhook.tls.mode ${JSON.stringify(tls?.mode)} is neither cert-manager nor secret`);
    if (tls?.mode === "cert-manager") {
      const cm = tls.certManager;
      no(!truthy(cm), "78-83", "cert-manager mode without webhook.tls.certManager");
      no(!truthy(cm?.issuerType), "85-90", "cert-manager mode without certManager.issuerType");
      no(!["selfsigned", "clusterissuer", "issuer"].includes(cm?.issuerType), "92-97",
        `certManager.issuerType ${JSON.stringify(cm?.issuerType)} is not selfsigned, clusterissuer or issuer`);
      no(cm?.issuerType !== "selfsigned" && !truthy(cm?.issuerName), "99-104",
        "certManager.issuerName is required unless issuerType is selfsigned");
    }
    if (tls?.mode === "secret") {
      no(!truthy(tls.secret), "108-113", "secret mode without webhook.tls.secret");
      no(!truthy(tls.secret?.name), "115-120", "secret mode without webhook.tls.secret.name");
    }
  }
  no(!resourceApiVersion(v, clusterVersions), "124-130",
    `no resource.k8s.io version: resourceApiVersion unset and the cluster serves none of v1, v1beta2, v1beta1`);
  return out;
}

// The driver a node needs for the kubelet plugin of values V to start, or null where no check
// of the plugin's is known. With ComputeDomains on and the IMEXDaemonsWithDNSNames feature
// gate on (its default: k8s-dra-driver-gpu at 2240711, pkg/featuregates/featuregates.go:102-108;
// the chart hands featureGates to the plugin as FEATURE_GATES, templates/kubeletplugin.yaml:
// 167-170), the compute-domain kubelet plugin refuses to start on an older driver
// (cmd/compute-domain-kubelet-plugin/main.go:44, device_state.go:80-83 and :761-780), and
// the kubelet plugin pod's compute-domains container crash-loops (templates/
// kubeletplugin.yaml:86; the gpus container, :201, restarts on its own and keeps serving
// GPUs). GPUs alone have no such check
// (docs/prerequisites.md:13 names 565 for them; cmd/gpu-kubelet-plugin compares no version).
export const IMEX_DNS_NAMES_FLOOR = "570.158.01";
export function driverFloor(v) {
  if (!truthy(v.resources?.computeDomains?.enabled)) return null;
  const gate = v.featureGates?.IMEXDaemonsWithDNSNames;
  return gate === false || gate === "false" ? null : IMEX_DNS_NAMES_FLOOR;
}

// Driver versions compared as the plugin does (k8s.io/apimachinery util/version ParseGeneric:
// dot-separated numbers): <0, 0, >0. A part that is not a number compares as -1 (a branch
// "570" is below every 570.x.y).
export function compareVersions(a, b) {
  const parts = (s) => String(s).split(".").map((x) => (/^[0-9]+$/.test(x) ? Number(x) : -1));
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? -1) - (y[i] ?? -1);
    if (d) return d;
  }
  return 0;
}

// What the chart renders that the checks compare: the kubelet plugin DaemonSet's pod spec
// (templates/kubeletplugin.yaml: rendered when either resource kind is on, :15; its
// containers compute-domains :86 and gpus :201; NVIDIA_DRIVER_ROOT and the driver-root
// hostPath from nvidiaDriverRoot, :143-144, :260-261, :343-346; nodeSelector, affinity and
// tolerations as given, :369-380; priorityClassName when set, :43-45), the priority classes
// of the pods it renders (the kubelet plugin's, the controller's when ComputeDomains are on,
// templates/controller.yaml:15 and :40-42, the webhook's when enabled,
// templates/webhook-deployment.yaml:15 and :38-40) and the DeviceClasses' names
// (templates/deviceclass-*.yaml, line 1 of each: gpu.nvidia.com, mig.nvidia.com and vfio.gpu.nvidia.com with GPUs on,
// the compute-domain daemon's and default channel's with ComputeDomains on).
export function rendered(v) {
  const gpus = truthy(v.resources?.gpus?.enabled);
  const cds = truthy(v.resources?.computeDomains?.enabled);
  const containers = [...(cds ? ["compute-domains"] : []), ...(gpus ? ["gpus"] : [])];
  const kp = v.kubeletPlugin ?? {};
  return {
    kubeletPlugin: gpus || cds ? {
      containers,
      driverRoot: v.nvidiaDriverRoot,
      cdiHookPath: truthy(v.nvidiaCDIHookPath) ? v.nvidiaCDIHookPath : null,
      spec: {
        ...(truthy(kp.priorityClassName) ? { priorityClassName: kp.priorityClassName } : {}),
        ...(truthy(kp.nodeSelector) ? { nodeSelector: kp.nodeSelector } : {}),
        ...(truthy(kp.affinity) ? { affinity: kp.affinity } : {}),
        tolerations: truthy(kp.tolerations) ? kp.tolerations : [],
      },
    } : null,
    priorityClasses: [...new Set([
      ...(gpus || cds ? [kp.priorityClassName] : []),
      ...(cds ? [v.controller?.priorityClassName] : []),
      ...(truthy(v.webhook?.enabled) ? [v.webhook?.priorityClassName] : []),
    ].filter(truthy))],
    deviceClasses: [...(gpus ? ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"] : []),
      ...(cds ? ["compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"] : [])],
  };
}
