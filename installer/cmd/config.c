// SPDX-License-Identifier: Apache-2.0
/*
 * The option table (config_options[], config.h) and what reads it: the setters, the
 * command line's values, the defaults, the environment. The checks over a whole
 * configuration are config_check.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "agent/agent.h"
#include "expose/expose.h"
#include "cmd/config.h"
#include "kernel/kernel.h"
#include "kube/kube.h"
#include "source/source.h"
#include "util/log.h"
int config_set(char **field, const char *value, struct err *e)
{
	char *v = strdup(value);

	if (!v)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	free(*field);
	*field = v;
	return 0;
}

int config_set_uint(unsigned *field, const char *name, const char *value, unsigned min,
		    unsigned max, struct err *e)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < min || v > max)
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a number from %u to %u", name, value,
			       min, max);
	*field = (unsigned)v;
	return 0;
}

int config_set_log_format(struct config *c, const char *value, struct err *e)
{
	if (strcmp(value, "text") == 0)
		c->log_format = LOG_FORMAT_TEXT;
	else if (strcmp(value, "json") == 0)
		c->log_format = LOG_FORMAT_JSON;
	else
		return err_set(e, EXIT_USAGE, "log format '%s' is not 'text' or 'json'", value);
	return 0;
}

int config_set_bool(bool *field, const char *name, const char *value, struct err *e)
{
	static const char *const yes[] = {"1", "true", "yes"}, *const no[] = {"0", "false", "no"};

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(value, yes[i]) == 0 || strcasecmp(value, no[i]) == 0) {
			*field = strcasecmp(value, yes[i]) == 0;
			return 0;
		}
	}
	return err_set(e, EXIT_USAGE, "%s: '%s' is not 1/0, true/false or yes/no", name, value);
}

int config_set_speed_floor(struct config *c, const char *name, const char *value, struct err *e)
{
	char bytes[16];
	const char *colon = strchr(value, ':');

	if (!colon || (size_t)(colon - value) >= sizeof(bytes))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not BYTES_PER_SECOND:SECONDS", name,
			       value);
	snprintf(bytes, sizeof(bytes), "%.*s", (int)(colon - value), value);
	if (config_set_uint(&c->speed_floor_bytes, name, bytes, 1, 1u << 30, e) < 0 ||
	    config_set_uint(&c->speed_floor_s, name, colon + 1, 1, 3600, e) < 0)
		return -1;
	return 0;
}

#define F(field) offsetof(struct config, field)
#define XSTR(x) #x
#define STR(x) XSTR(x)
#define REPO_CMDS (CFG_INSTALL | CFG_LIST | CFG_DOCTOR | CFG_MIRROR | CFG_COVERAGE)
/*
 * A row: OPTION("name", .kind = ..., .offset = F(field), ...), the long name first and every
 * other field by its name, so that a row says what each value is and two values of one type
 * (the variable, the argument, the default, the json key) cannot trade places unseen. A
 * macro rather than a bare braced row because clang-format puts each designated field of a
 * braced row on a line of its own, which would triple the table; it packs a macro's.
 */
// clang-format off
#define OPTION(long_name, ...) {.name = (long_name), __VA_ARGS__}
// clang-format on
/* A row's per-command wordings (help_for): HELP_FOR(ON(CFG_X, "text"), ...). */
// clang-format off
#define HELP_FOR(...) {__VA_ARGS__}
#define ON(for_cmds, text) {.cmds = (for_cmds), .help = (text)}
// clang-format on

/*
 * Every option: the one place each is described. The order is --help's, the docs' and
 * `config --json`'s. A row with a variable reads it (config_init); a row with a json key
 * is shown by `config --json`. Two rows may share a long name for disjoint commands.
 */
const struct config_option config_options[] = {
	OPTION("root", .env = "ROOT_MOUNT_DIR", .kind = CONFIG_STRING, .offset = F(root),
	       .cmds = CFG_ALL, .flags = CONFIG_NONEMPTY, .arg = "DIR", .value = "/",
	       .json = "root",
	       .help = "where the host's / is mounted; in a container, install and uninstall refuse to run without it"),
	OPTION("log-format", .env = "NVIDIA_INSTALLER_LOG_FORMAT", .kind = CONFIG_LOG_FORMAT,
	       .offset = F(log_format), .cmds = CFG_ALL, .arg = "text|json", .value = "text",
	       .json = "log_format", .help = "the format of log lines"),
	OPTION("verbose", .short_name = 'v', .kind = CONFIG_COUNT, .offset = F(log_level),
	       .cmds = CFG_ALL, .help = "more detail; twice for libcurl's"),
	OPTION("help", .short_name = 'h', .kind = CONFIG_HELP, .cmds = CFG_ALL,
	       .help = "show this help"),
	OPTION("version", .kind = CONFIG_VERSION, .cmds = CFG_GLOBAL, .help = "print the version"),
	OPTION("repo", .env = "NVIDIA_DRIVER_REPO", .kind = CONFIG_LIST, .offset = F(repos),
	       .cmds = REPO_CMDS, .arg = "URL", .json = "repos",
	       .help = "repository base URL; mirrors are tried in order",
	       .help_for = HELP_FOR(
		       ON(CFG_MIRROR, "the repository to copy from; mirrors are tried in order"))),
	OPTION("repo-key", .env = "NVIDIA_DRIVER_REPO_KEY", .kind = CONFIG_LIST,
	       .offset = F(repo_keys), .cmds = REPO_CMDS, .arg = "FILE",
	       .def = "`" VERIFY_KEYS_DIR "/*.pem`", .json = "repo_keys",
	       .help = "trusted index signing key"),
	OPTION("driver-version", .env = "NVIDIA_DRIVER_VERSION", .kind = CONFIG_STRING,
	       .offset = F(driver_version), .cmds = CFG_INSTALL | CFG_DOCTOR | CFG_COVERAGE,
	       .arg = "V", .value = "default", .json = "driver_version",
	       .help = "the driver to install: a tag (default, latest), a version (550.90.07) or a branch (550)",
	       .help_for = HELP_FOR(
		       ON(CFG_DOCTOR,
			  "the driver whose package doctor looks for: a tag (default, latest), a version (550.90.07) or a branch (550)"),
		       ON(CFG_COVERAGE,
			  "the driver the node image would install: a tag (default, latest), a version (550.90.07) or a branch (550)"))),
	/* mirror copies several versions; it does not read NVIDIA_DRIVER_VERSION. */
	OPTION("driver-version", .kind = CONFIG_LIST, .offset = F(mirror_versions),
	       .cmds = CFG_MIRROR, .arg = "V", .def = "all",
	       .help = "the drivers to copy: a tag (default, latest), a version (550.90.07) or a branch (550)"),
	OPTION("kernel-module-type", .env = "NVIDIA_KERNEL_MODULE_TYPE", .kind = CONFIG_STRING,
	       .offset = F(kernel_module_type),
	       .cmds = CFG_INSTALL | CFG_LIST | CFG_DOCTOR | CFG_MIRROR | CFG_COVERAGE,
	       .arg = "TYPE", .value = "auto", .json = "kernel_module_type",
	       .help = "the kernel module flavour: auto (open where every GPU has it and the branch is 560 or later, else proprietary), open or proprietary",
	       .help_for = HELP_FOR(
		       ON(CFG_MIRROR,
			  "the flavours to copy: auto copies both, open or proprietary only that one"),
		       ON(CFG_COVERAGE,
			  "the node's kernel module flavour policy: auto, open or proprietary"))),
	/*
	 * NVIDIA's capability words (docs/design.md, "Video and graphics"), under a variable of
	 * our own: NVIDIA_DRIVER_CAPABILITIES is the container toolkit's (is_toolkit_var).
	 */
	OPTION("driver-capabilities", .env = "NVIDIA_INSTALLER_DRIVER_CAPABILITIES",
	       .kind = CONFIG_STRING, .offset = F(driver_capabilities),
	       .cmds = CFG_INSTALL | CFG_DOCTOR | CFG_AGENT, .arg = "LIST",
	       .value = "compute,utility", .json = "driver_capabilities",
	       .help = "the user space the node pool needs: a comma list of compute, utility, video, graphics, or all; a package without video or graphics asked for is refused",
	       .help_for = HELP_FOR(ON(CFG_AGENT, "passed to the installer of an upgrade"))),
	OPTION("install-dir", .env = "NVIDIA_INSTALL_DIR_HOST", .kind = CONFIG_STRING,
	       .offset = F(install_dir),
	       .cmds = CFG_INSTALL | CFG_LIST | CFG_STATUS | CFG_UNINSTALL | CFG_DOCTOR | CFG_AGENT,
	       .flags = CONFIG_NONEMPTY, .arg = "PATH", .value = DEFAULT_INSTALL_DIR,
	       .json = "install_dir", .help = "host install dir",
	       .help_for =
		       HELP_FOR(ON(CFG_LIST, "host install dir, whose pending upgrade is shown"))),
	OPTION("container-dir", .env = "NVIDIA_INSTALL_DIR_CONTAINER", .kind = CONFIG_STRING,
	       .offset = F(container_dir),
	       .cmds = CFG_INSTALL | CFG_STATUS | CFG_DOCTOR | CFG_AGENT, .flags = CONFIG_NONEMPTY,
	       .arg = "PATH", .value = DEFAULT_CONTAINER_DIR, .json = "container_dir",
	       .help = "where workloads see it"),
	OPTION("cache-dir", .env = "NVIDIA_CACHE_DIR", .kind = CONFIG_STRING,
	       .offset = F(cache_dir),
	       .cmds = CFG_INSTALL | CFG_LIST | CFG_STATUS | CFG_DOCTOR | CFG_COVERAGE,
	       .flags = CONFIG_NONEMPTY, .arg = "PATH", .value = DEFAULT_CACHE_DIR,
	       .json = "cache_dir", .help = "host package cache"),
	OPTION("kernel-release", .env = "NVIDIA_KERNEL_RELEASE", .kind = CONFIG_STRING,
	       .offset = F(kernel_release),
	       .cmds = CFG_INSTALL | CFG_LIST | CFG_STATUS | CFG_VERIFY | CFG_UNINSTALL |
		       CFG_DOCTOR | CFG_AGENT,
	       .arg = "R", .def = "`uname -r`", .json = "kernel_release",
	       .help = "the kernel to install for",
	       .help_for = HELP_FOR(
		       ON(CFG_LIST, "the kernel whose packages count"),
		       ON(CFG_STATUS | CFG_DOCTOR, "the kernel to check against"),
		       ON(CFG_UNINSTALL, "the kernel to unload the driver's modules from"),
		       ON(CFG_VERIFY, "the kernel whose vermagic the modules must carry"))),
	OPTION("module-cert", .env = "NVIDIA_MODULE_CERT", .kind = CONFIG_LIST,
	       .offset = F(module_certs), .cmds = CFG_INSTALL | CFG_VERIFY | CFG_DOCTOR | CFG_AGENT,
	       .arg = "FILE", .json = "module_certs",
	       .help = "certificate modules must be signed with; others are refused before loading",
	       .help_for = HELP_FOR(ON(
		       CFG_VERIFY,
		       "the certificate that signed the modules, to check their signatures with"))),
	OPTION("modules", .env = "NVIDIA_MODULES", .kind = CONFIG_LIST, .offset = F(modules),
	       .cmds = CFG_INSTALL, .arg = "LIST", .def = "`" KERNEL_DEFAULT_MODULES "`",
	       .json = "modules", .help = "modules to load"),
	OPTION("module-arg", .env = "NVIDIA_MODULE_ARGS", .kind = CONFIG_LIST,
	       .offset = F(module_args), .cmds = CFG_INSTALL, .arg = "M.K=V", .json = "module_args",
	       .help = "module parameter"),
	OPTION("no-unload-conflicts", .env = "NVIDIA_NO_UNLOAD_CONFLICTS", .kind = CONFIG_BOOL,
	       .offset = F(no_unload_conflicts), .cmds = CFG_INSTALL, .json = "no_unload_conflicts",
	       .help = "refuse instead of unloading nouveau"),
	/* NVIDIA's IMEX guide, "Default Channel Creation" (imexchannels.html); the device
	 * plugin's IMEX_CHANNEL_IDS=0 hands the host's node on (installer/kernel/devnodes.c). */
	OPTION("imex-channel0", .env = "NVIDIA_IMEX_CHANNEL0", .kind = CONFIG_BOOL,
	       .offset = F(imex_channel0),
	       .cmds = CFG_INSTALL | CFG_UNINSTALL | CFG_DOCTOR | CFG_AGENT,
	       .json = "imex_channel0",
	       .help = "after the driver loads, make IMEX's default channel /dev/nvidia-caps-imex-channels/channel0 (the major of /proc/devices' nvidia-caps-imex-channels, branch 550 on), for NVIDIA's device plugin with IMEX_CHANNEL_IDS=0",
	       .help_for = HELP_FOR(
		       ON(CFG_UNINSTALL, "also remove /dev/nvidia-caps-imex-channels/channel0"),
		       ON(CFG_DOCTOR,
			  "check /dev/nvidia-caps-imex-channels/channel0 against /proc/devices"),
		       ON(CFG_AGENT,
			  "make channel0 at an upgrade's driver load (passed to the installer it runs)"))),
	OPTION("when-busy", .env = "NVIDIA_WHEN_BUSY", .kind = CONFIG_STRING,
	       .offset = F(when_busy), .cmds = CFG_INSTALL, .arg = "POLICY", .value = "fail",
	       .json = "when_busy",
	       .help = "a new driver while the loaded one is in use: fail (exit 7) or defer (stage and verify it, keep the old one serving, switch when the GPUs are idle or at boot)"),
	OPTION("wait-for-package", .env = "NVIDIA_WAIT_FOR_PACKAGE", .kind = CONFIG_BOOL,
	       .offset = F(wait_for_package), .cmds = CFG_INSTALL, .json = "wait_for_package",
	       .help = "when the chosen driver has no package for this node's kernel (exit 3), wait for one: ask again with a backoff, say so on the Node (--node-name), install it when it comes"),
	OPTION("wait-for-package-max", .env = "NVIDIA_WAIT_FOR_PACKAGE_MAX", .kind = CONFIG_UINT,
	       .offset = F(wait_max_s), .max = 30 * 86400, .cmds = CFG_INSTALL, .arg = "SEC",
	       .value = "0", .json = "wait_for_package_max_s",
	       .help = "give up waiting after SEC seconds (exit 3); 0: wait until stopped"),
	OPTION("wait-for-package-interval", .env = "NVIDIA_WAIT_FOR_PACKAGE_INTERVAL",
	       .kind = CONFIG_UINT, .offset = F(wait_interval_s), .min = 1, .max = 3600,
	       .cmds = CFG_INSTALL, .arg = "SEC", .value = "30",
	       .json = "wait_for_package_interval_s",
	       .help = "the most seconds between two checks while waiting (the first comes after 5 s, or SEC if less, each next one twice as late)"),
	OPTION("cdi-dir", .env = "NVIDIA_CDI_DIR", .kind = CONFIG_STRING, .offset = F(cdi_dir),
	       .cmds = CFG_INSTALL | CFG_STATUS | CFG_UNINSTALL | CFG_DOCTOR | CFG_AGENT,
	       .flags = CONFIG_NONEMPTY, .arg = "PATH", .value = DEFAULT_CDI_DIR, .json = "cdi_dir",
	       .help = "host dir of the CDI spec"),
	OPTION("cdi-kind", .env = "NVIDIA_CDI_KIND", .kind = CONFIG_STRING, .offset = F(cdi_kind),
	       .cmds = CFG_INSTALL | CFG_STATUS | CFG_DOCTOR | CFG_AGENT, .flags = CONFIG_NONEMPTY,
	       .arg = "KIND", .value = CDI_KIND, .json = "cdi_kind", .help = "the spec's CDI kind"),
	OPTION("mig-layout", .env = "NVIDIA_MIG_LAYOUT", .kind = CONFIG_STRING,
	       .offset = F(mig_layout), .cmds = CFG_INSTALL | CFG_DOCTOR, .flags = CONFIG_NONEMPTY,
	       .arg = "LAYOUT", .value = "gke", .json = "mig_layout",
	       .help = "GPU partitions (MIG) once the driver answers: gke (the node pool's /etc/nvidia/gpu_config.json), none (as they are), all-disabled, all-enabled or all-PROFILE (all-1g.10gb), for every GPU or per GPU index (all-disabled,0=all-1g.10gb)"),
	OPTION("cdi-replace", .env = "NVIDIA_CDI_REPLACE", .kind = CONFIG_BOOL,
	       .offset = F(cdi_replace), .cmds = CFG_INSTALL | CFG_AGENT, .json = "cdi_replace",
	       .help = "set aside another producer's spec of that kind"),
	OPTION("host-mount", .env = "NVIDIA_HOST_MOUNT", .kind = CONFIG_LIST,
	       .offset = F(host_mounts), .cmds = CFG_INSTALL, .arg = "PATH", .json = "host_mounts",
	       .help = "also bind the install dir here"),
	OPTION("metrics-file", .env = "NVIDIA_METRICS_FILE", .kind = CONFIG_STRING,
	       .offset = F(metrics_file), .cmds = CFG_INSTALL, .arg = "PATH",
	       .json = "metrics_file", .help = "write a Prometheus textfile"),
	OPTION("listen", .env = "NVIDIA_AGENT_LISTEN", .kind = CONFIG_STRING,
	       .offset = F(agent_listen), .cmds = CFG_AGENT, .arg = "HOST:PORT",
	       .value = "0.0.0.0:9470", .help = "serve /metrics, /healthz and /readyz here (HTTP)"),
	OPTION("agent-metrics-file", .env = "NVIDIA_AGENT_METRICS_FILE", .kind = CONFIG_STRING,
	       .offset = F(agent_metrics_file), .cmds = CFG_AGENT, .arg = "PATH",
	       .help = "also write the agent's metrics to this Prometheus textfile (a host path)"),
	OPTION("interval", .env = "NVIDIA_AGENT_INTERVAL", .kind = CONFIG_UINT,
	       .offset = F(agent_interval_s), .min = 1, .max = 3600, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "10", .help = "seconds between two looks at the node"),
	OPTION("cuda-interval", .env = "NVIDIA_AGENT_CUDA_INTERVAL", .kind = CONFIG_UINT,
	       .offset = F(cuda_interval_s), .min = 1, .max = 86400, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "300",
	       .help = "seconds between two CUDA checks while the node is ready (each takes a context on every GPU)"),
	OPTION("condition-heartbeat", .env = "NVIDIA_CONDITION_HEARTBEAT", .kind = CONFIG_UINT,
	       .offset = F(condition_heartbeat_s), .min = 10, .max = 3600, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "60",
	       .help = "write the Node's condition at least this often (its lastHeartbeatTime): a reader takes one older than 3 times this as stale"),
	/* The default has cluster-autoscaler's StartupTaintPrefix (kubernetes/autoscaler,
	 * cluster-autoscaler/utils/taints/taints.go): the autoscaler takes a node with it as
	 * one still starting, not as capacity nor as a failed node (docs/design.md). */
	OPTION("startup-taint", .env = "NVIDIA_STARTUP_TAINT", .kind = CONFIG_STRING,
	       .offset = F(startup_taint), .cmds = CFG_AGENT, .arg = "KEY|none",
	       .value = "startup-taint.cluster-autoscaler.kubernetes.io/nvidia-driver",
	       .help = "take every taint of this key off the Node once a CUDA job can run (the node registers with it; the agent never adds it)"),
	OPTION("health-taint", .env = "NVIDIA_HEALTH_TAINT", .kind = CONFIG_STRING,
	       .offset = F(health_taint), .cmds = CFG_AGENT, .arg = "KEY:EFFECT|none",
	       .value = "none",
	       .help = "put this taint on the Node while a fatal Xid or a broken fabric holds, and take it off when it clears (e.g. nvidia.com/gpu-unhealthy:NoSchedule)"),
	OPTION("upgrades", .env = "NVIDIA_UPGRADES", .kind = CONFIG_STRING, .offset = F(upgrades),
	       .cmds = CFG_AGENT, .arg = "POLICY", .value = "auto",
	       .help = "carry out a pending driver upgrade (cordon, wait, activate, validate, uncordon): auto (when in a cluster with --node-name) or off"),
	OPTION("node-name", .env = "NVIDIA_NODE_NAME", .kind = CONFIG_STRING,
	       .offset = F(node_name), .cmds = CFG_AGENT | CFG_INSTALL, .arg = "NAME",
	       .help = "this node's Kubernetes name (the downward API's spec.nodeName)",
	       .help_for = HELP_FOR(ON(
		       CFG_INSTALL,
		       "this node's Kubernetes name (the downward API's spec.nodeName): in a pod, the node's image and a wait for a package are published on its Node"))),
	OPTION("node-condition", .env = "NVIDIA_NODE_CONDITION", .kind = CONFIG_BOOL,
	       .offset = F(node_condition), .cmds = CFG_AGENT | CFG_INSTALL, .arg = "yes|no",
	       .value = "yes",
	       .help = "keep the Node's condition " KUBE_CONDITION_TYPE
		       " (with --node-name in a pod): whether a CUDA job can run here, and why not",
	       .help_for = HELP_FOR(ON(
		       CFG_INSTALL,
		       "say on the Node's condition " KUBE_CONDITION_TYPE
		       " (with --node-name in a pod) that the run installs, waits for a package or failed"))),
	OPTION("kube-sa-dir", .env = "NVIDIA_KUBE_SA_DIR", .kind = CONFIG_STRING,
	       .offset = F(kube_sa_dir), .cmds = CFG_AGENT | CFG_INSTALL, .arg = "DIR",
	       .value = KUBE_SA_DIR,
	       .help = "the pod's service account: its token, ca.crt and namespace"),
	OPTION("upgrade-limit", .env = "NVIDIA_UPGRADE_LIMIT", .kind = CONFIG_STRING,
	       .offset = F(upgrade_limit), .cmds = CFG_AGENT, .arg = "N|P%", .value = "1",
	       .help = "at most this many nodes (or this share of the DaemonSet's) upgrading at once"),
	OPTION("upgrade-daemonset", .env = "NVIDIA_UPGRADE_DAEMONSET", .kind = CONFIG_STRING,
	       .offset = F(upgrade_daemonset), .cmds = CFG_AGENT, .arg = "NAME",
	       .value = "nvidia-driver-installer",
	       .help = "the DaemonSet (in the agent's namespace) whose nodes a P% limit counts"),
	OPTION("upgrade-cordon", .env = "NVIDIA_UPGRADE_CORDON", .kind = CONFIG_STRING,
	       .offset = F(upgrade_cordon), .cmds = CFG_AGENT, .arg = "yes|no", .value = "yes",
	       .help = "cordon the node while it upgrades (and uncordon it after, when it was the agent's cordon)"),
	OPTION("upgrade-deadline", .env = "NVIDIA_UPGRADE_DEADLINE", .kind = CONFIG_UINT,
	       .offset = F(upgrade_deadline_s), .min = 0, .max = 30 * 86400, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "3600",
	       .help = "how long the node's GPU pods may run on before --upgrade-on-deadline"),
	OPTION("upgrade-on-deadline", .env = "NVIDIA_UPGRADE_ON_DEADLINE", .kind = CONFIG_STRING,
	       .offset = F(upgrade_on_deadline), .cmds = CFG_AGENT, .arg = "POLICY",
	       .value = "wait",
	       .help = "past the deadline: wait for the GPU pods, or evict them (Eviction API: disruption budgets hold, a refusal is asked again later)"),
	OPTION("upgrade-validate-timeout", .env = "NVIDIA_UPGRADE_VALIDATE_TIMEOUT",
	       .kind = CONFIG_UINT, .offset = F(upgrade_validate_s), .min = 10, .max = 86400,
	       .cmds = CFG_AGENT, .arg = "SEC", .value = "600",
	       .help = "how long the new version may take until a CUDA job can run; then it is rolled back"),
	OPTION("upgrade-wait-for", .env = "NVIDIA_UPGRADE_WAIT_FOR", .kind = CONFIG_STRING,
	       .offset = F(upgrade_wait_for), .cmds = CFG_AGENT, .arg = "SELECTOR",
	       .help = "a label selector (app=train, tier in (batch)): the node's pods it matches are waited for, Running or Pending, before its GPU pods are touched"),
	OPTION("upgrade-wait-timeout", .env = "NVIDIA_UPGRADE_WAIT_TIMEOUT", .kind = CONFIG_UINT,
	       .offset = F(upgrade_wait_timeout_s), .min = 0, .max = 30 * 86400, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "0",
	       .help = "how long the --upgrade-wait-for pods are waited for (0: until they end); then the upgrade goes on without them"),
	OPTION("upgrade-evict-force", .env = "NVIDIA_UPGRADE_EVICT_FORCE", .kind = CONFIG_STRING,
	       .offset = F(upgrade_evict_force), .cmds = CFG_AGENT, .arg = "yes|no", .value = "no",
	       .help = "the eviction may move a GPU pod with no controller (nothing makes it again), as kubectl drain --force"),
	OPTION("upgrade-evict-emptydir", .env = "NVIDIA_UPGRADE_EVICT_EMPTYDIR",
	       .kind = CONFIG_STRING, .offset = F(upgrade_evict_emptydir), .cmds = CFG_AGENT,
	       .arg = "yes|no", .value = "no",
	       .help = "the eviction may move a GPU pod with an emptyDir volume (its data is lost), as kubectl drain --delete-emptydir-data"),
	OPTION("upgrade-drain", .env = "NVIDIA_UPGRADE_DRAIN", .kind = CONFIG_STRING,
	       .offset = F(upgrade_drain), .cmds = CFG_AGENT, .arg = "yes|no", .value = "no",
	       .help = "before activating, evict the node's other pods (DaemonSets' and static pods' left), as kubectl drain"),
	OPTION("upgrade-drain-selector", .env = "NVIDIA_UPGRADE_DRAIN_SELECTOR",
	       .kind = CONFIG_STRING, .offset = F(upgrade_drain_selector), .cmds = CFG_AGENT,
	       .arg = "SELECTOR", .help = "drain only the pods this label selector matches"),
	OPTION("upgrade-drain-force", .env = "NVIDIA_UPGRADE_DRAIN_FORCE", .kind = CONFIG_STRING,
	       .offset = F(upgrade_drain_force), .cmds = CFG_AGENT, .arg = "yes|no", .value = "no",
	       .help = "the drain may move a pod with no controller; without, such a pod fails the upgrade"),
	OPTION("upgrade-drain-emptydir", .env = "NVIDIA_UPGRADE_DRAIN_EMPTYDIR",
	       .kind = CONFIG_STRING, .offset = F(upgrade_drain_emptydir), .cmds = CFG_AGENT,
	       .arg = "yes|no", .value = "no",
	       .help = "the drain may move a pod with an emptyDir volume; without, such a pod fails the upgrade"),
	OPTION("upgrade-drain-timeout", .env = "NVIDIA_UPGRADE_DRAIN_TIMEOUT", .kind = CONFIG_UINT,
	       .offset = F(upgrade_drain_timeout_s), .min = 0, .max = 30 * 86400, .cmds = CFG_AGENT,
	       .arg = "SEC", .value = "300",
	       .help = "how long the drain may take (0: no end); past it with pods left, the upgrade fails"),
	/* As "to" below: with the rows of issue 50, clang-format 14 puts these rows' fields on
	 * one line of up to 200 columns, past check-lines' 100: laid out as the others, by hand. */
	// clang-format off
	OPTION("upgrade-max-unavailable", .env = "NVIDIA_UPGRADE_MAX_UNAVAILABLE",
	       .kind = CONFIG_STRING, .offset = F(upgrade_max_unavailable), .cmds = CFG_AGENT,
	       .arg = "N|P%", .value = "none",
	       .help = "no slot is taken while this many of the DaemonSet's other nodes (or this share, rounded up) are cordoned, not Ready or about to be: none, or NVIDIA's 25%"),
	OPTION("upgrade-dra-drivers", .env = "NVIDIA_UPGRADE_DRA_DRIVERS", .kind = CONFIG_STRING,
	       .offset = F(upgrade_dra_drivers), .cmds = CFG_AGENT, .arg = "LIST",
	       .value = "gpu.nvidia.com,compute-domain.nvidia.com",
	       .help = "a pod that uses a DRA resource claim allocated by one of these drivers (comma-separated; none: no claim counts) holds GPUs, as one that asks for nvidia.com/gpu"),
	// clang-format on
	/* GPUDirect RDMA (docs/design.md): off as the GPU Operator's driver.rdma.enabled
	 * defaults (deployments/gpu-operator/values.yaml:164-166); installer/kernel/rdma.c. */
	// clang-format off
	OPTION("rdma", .env = "NVIDIA_RDMA", .kind = CONFIG_STRING, .offset = F(rdma),
	       .cmds = CFG_INSTALL | CFG_DOCTOR | CFG_AGENT, .arg = "MODE", .value = "off",
	       .json = "rdma",
	       .help = "GPUDirect RDMA: off, auto (dma-buf where the open modules on Linux 5.12+ serve it, else nvidia-peermem where the RDMA stack has MOFED's peer-memory API, else none, said why), peermem (load nvidia-peermem after ib_core; exit 6 without an RDMA stack) or dmabuf (exit 6 where it cannot serve)",
	       .help_for = HELP_FOR(
		       ON(CFG_DOCTOR, "the RDMA path to check: which one serves, or why none"),
		       ON(CFG_AGENT,
			  "load nvidia-peermem again, verified, when the RDMA stack comes back after a reload (MOFED's openibd)"))),
	// clang-format on
	OPTION("dra-plugin-selector", .env = "NVIDIA_DRA_PLUGIN_SELECTOR", .kind = CONFIG_STRING,
	       .offset = F(dra_plugin_selector), .cmds = CFG_AGENT, .arg = "SELECTOR",
	       .value = "nvidia-dra-driver-gpu-component=kubelet-plugin",
	       .help = "after a driver switch, evict this node's pods of NVIDIA's DRA kubelet plugin that this label selector matches and that started before it, so that their DaemonSet starts them on the new driver's files; none: never"),
	OPTION("skip-verify", .env = "NVIDIA_SKIP_VERIFY", .kind = CONFIG_BOOL,
	       .offset = F(skip_verify), .cmds = CFG_INSTALL, .json = "skip_verify",
	       .help = "no NVML check: hosts without a GPU only"),
	OPTION("kernel-keyring-cert", .env = "NVIDIA_KERNEL_KEYRING_CERT", .kind = CONFIG_STRING,
	       .offset = F(kernel_keyring_cert), .cmds = CFG_INSTALL, .arg = "FILE",
	       .json = "kernel_keyring_cert", .help = "add to .secondary_trusted_keys first"),
	OPTION("skip-modules", .env = "NVIDIA_SKIP_MODULES", .kind = CONFIG_BOOL,
	       .offset = F(skip_modules), .cmds = CFG_INSTALL | CFG_UNINSTALL,
	       .json = "skip_modules", .help = "install user space only; the kernel is not touched",
	       .help_for = HELP_FOR(ON(CFG_UNINSTALL,
				       "remove the files only; the driver's modules stay loaded"))),
	OPTION("dry-run", .kind = CONFIG_BOOL, .offset = F(dry_run), .cmds = CFG_INSTALL,
	       .help = "resolve and print the plan; change nothing"),
	OPTION("fetch-timeout", .env = "NVIDIA_FETCH_TIMEOUT", .kind = CONFIG_UINT,
	       .offset = F(fetch_timeout_s), .min = 1, .max = 86400, .cmds = REPO_CMDS,
	       .arg = "SEC", .value = "600", .json = "fetch_timeout_s",
	       .help = "time budget for all downloads"),
	OPTION("fetch-retries", .env = "NVIDIA_FETCH_RETRIES", .kind = CONFIG_UINT,
	       .offset = F(fetch_retries), .max = 100, .cmds = REPO_CMDS, .arg = "N", .value = "5",
	       .json = "fetch_retries", .help = "retry rounds over the mirrors"),
	OPTION("fetch-speed-floor", .env = "NVIDIA_FETCH_SPEED_FLOOR", .kind = CONFIG_SPEED_FLOOR,
	       .offset = F(speed_floor_bytes), .cmds = REPO_CMDS, .arg = "B:S", .value = "1024:30",
	       .json = "fetch_speed_floor",
	       .help = "a transfer under B bytes/s for S s is retried"),
	OPTION("ca-file", .env = "NVIDIA_CA_FILE", .kind = CONFIG_STRING, .offset = F(ca_file),
	       .cmds = REPO_CMDS, .arg = "FILE", .json = "ca_file",
	       .help = "also trust these CA certificates for https://"),
	OPTION("registry-auth", .env = "NVIDIA_REGISTRY_AUTH", .kind = CONFIG_LIST,
	       .offset = F(registry_auth), .cmds = REPO_CMDS, .arg = "FILE",
	       .def = "`" SOURCE_REGISTRY_AUTH_DEFAULT "` when it exists", .json = "registry_auth",
	       .help = "credentials for oci:// registries: a Docker config.json or an image pull Secret's .dockerconfigjson"),
	OPTION("registry-hosts", .env = "NVIDIA_REGISTRY_HOSTS", .kind = CONFIG_STRING,
	       .offset = F(registry_hosts), .cmds = REPO_CMDS, .arg = "DIR",
	       .json = "registry_hosts",
	       .help = "containerd's hosts.toml directory: an oci:// registry's mirrors, tried first"),
	OPTION("registry-gce-metadata", .env = "NVIDIA_REGISTRY_GCE_METADATA",
	       .kind = CONFIG_STRING, .offset = F(registry_gce), .cmds = REPO_CMDS,
	       .arg = "auto|yes|no", .value = "auto", .json = "registry_gce_metadata",
	       .help = "credentials for Artifact Registry and gcr.io from the GCE metadata server's token"),
	OPTION("index-max-age", .env = "NVIDIA_INDEX_MAX_AGE", .kind = CONFIG_MAX_AGE,
	       .offset = F(index_max_age_s), .max = REPO_MAX_AGE_LIMIT, .cmds = CFG_INSTALL,
	       .arg = "SEC", .def = "the index's `max_age`", .json = "index_max_age_s",
	       .help = "reuse a cached index fetched less than SEC ago; 0: always ask"),
	OPTION("allow-index-rollback", .env = "NVIDIA_ALLOW_INDEX_ROLLBACK", .kind = CONFIG_BOOL,
	       .offset = F(allow_index_rollback), .cmds = REPO_CMDS, .json = "allow_index_rollback",
	       .help = "accept an index older than one accepted before",
	       .help_for = HELP_FOR(ON(
		       CFG_MIRROR, "replace a newer index in --to with the source's older one"))),
	OPTION("from", .kind = CONFIG_LIST, .offset = F(repos), .cmds = CFG_MIRROR, .arg = "URL",
	       .help = "another name for --repo: the repository to copy from"),
	/* Since the table grew by the agent's condition rows, clang-format 14 puts this row on
	 * one line of 250 columns, past check-lines' 100: laid out as the others, by hand. */
	// clang-format off
	OPTION("to", .kind = CONFIG_STRING, .offset = F(mirror_to), .cmds = CFG_MIRROR,
	       .arg = "DEST",
	       .help = "where to: a directory of this process's (not under --root) or file://DIR, oci://HOST/NAME[:TAG] (a registry), oci-layout:PATH[:TAG]; required"),
	// clang-format on
	OPTION("kernel", .kind = CONFIG_LIST, .offset = F(mirror_kernels), .cmds = CFG_MIRROR,
	       .arg = "R", .def = "all", .help = "only packages for this kernel"),
	/* coverage: the node image to ask about; --os and --kernel make the question. */
	OPTION("os", .kind = CONFIG_STRING, .offset = F(image_os), .cmds = CFG_COVERAGE,
	       .arg = "ID", .help = "the node image's os-release ID (cos, ubuntu)"),
	OPTION("os-build", .kind = CONFIG_STRING, .offset = F(image_os_build), .cmds = CFG_COVERAGE,
	       .arg = "B", .help = "the node image's os-release BUILD_ID, if it has one"),
	OPTION("kernel", .kind = CONFIG_STRING, .offset = F(image_kernel), .cmds = CFG_COVERAGE,
	       .arg = "R", .help = "the node image's kernel release (uname -r)"),
	OPTION("arch", .kind = CONFIG_STRING, .offset = F(image_arch), .cmds = CFG_COVERAGE,
	       .arg = "A", .value = "x86_64",
	       .help = "the node image's architecture (uname -m; amd64, arm64 too)"),
	OPTION("fleet", .kind = CONFIG_STRING, .offset = F(image_fleet), .cmds = CFG_COVERAGE,
	       .arg = "FILE",
	       .help = "a fleet file (" DOC_DIR "/building-packages.md): every row's versions "
		       "and flavours asked; exit 0 only when all are served"),
	OPTION("gpu", .kind = CONFIG_LIST, .offset = F(image_gpus), .cmds = CFG_COVERAGE,
	       .arg = "V:D",
	       .help = "a GPU of the node (10de:2330), judged against supported_pci_ids; for a GB200 or GB300 a package without IMEX (jobs across nodes) is noted, served all the same (exit 0)"),
	/* install's is the dry-run plan's: an install itself logs (--log-format json). */
	OPTION("json", .kind = CONFIG_BOOL, .offset = F(json),
	       .cmds = CFG_INSTALL | CFG_LIST | CFG_STATUS | CFG_VERIFY | CFG_DOCTOR | CFG_MIRROR |
		       CFG_COVERAGE,
	       .help = "one JSON document on stdout (" DOC_DIR "/json.md)",
	       .help_for = HELP_FOR(
		       ON(CFG_INSTALL,
			  "with --dry-run: the plan as JSON on stdout (" DOC_DIR "/json.md)"),
		       ON(CFG_LIST,
			  "the versions, each with why it can or cannot be installed, as JSON"),
		       ON(CFG_STATUS,
			  "the install's state as JSON, `ready` included (" DOC_DIR "/json.md)"),
		       ON(CFG_DOCTOR, "the checks, each with its verdict and fix, as JSON"),
		       ON(CFG_MIRROR, "what the mirror holds after the copy, as JSON"),
		       ON(CFG_COVERAGE,
			  "the repository's packages, or the answer for the node image, as JSON"),
		       ON(CFG_VERIFY, "a report per module and the verdict, as JSON"))),
};
const size_t config_n_options = ARRAY_SIZE(config_options);

const char *config_option_help(const struct config_option *o, unsigned cmd)
{
	for (size_t i = 0; i < CONFIG_HELP_FOR_MAX && o->help_for[i].help; i++) {
		if (o->help_for[i].cmds & cmd)
			return o->help_for[i].help;
	}
	return o->help;
}

const struct config_option *config_option_find(const char *name, unsigned cmd)
{
	for (size_t i = 0; i < ARRAY_SIZE(config_options); i++) {
		if ((config_options[i].cmds & cmd) && strcmp(config_options[i].name, name) == 0)
			return &config_options[i];
	}
	return NULL;
}

const char *config_option_default(const struct config_option *o, char *buf, size_t size)
{
	if (o->def)
		return o->def;
	if (o->value) {
		snprintf(buf, size, "`%s`", o->value);
		return buf;
	}
	if (o->kind == CONFIG_COUNT || o->kind == CONFIG_HELP || o->kind == CONFIG_VERSION)
		return "";
	return o->kind == CONFIG_BOOL ? "off" : "none";
}

/* "--repo-key (NVIDIA_DRIVER_REPO_KEY)", or "--dry-run". */
/* Applies VALUE to O's field; NAME is how a message calls it (an option or a variable). */
static int apply(struct config *c, const struct config_option *o, const char *name,
		 const char *value, struct err *e)
{
	void *field = (char *)c + o->offset;

	switch (o->kind) {
	case CONFIG_STRING:
		return config_set(field, value, e);
	case CONFIG_LIST:
		return strv_push_split(field, value) < 0
			       ? err_errno(e, EXIT_UNEXPECTED, ENOMEM, "%s", name)
			       : 0;
	case CONFIG_BOOL:
		if (!value) {
			*(bool *)field = true;
			return 0;
		}
		return config_set_bool(field, name, value, e);
	case CONFIG_UINT:
	case CONFIG_MAX_AGE:
		return config_set_uint(field, name, value, o->min, o->max, e);
	case CONFIG_LOG_FORMAT:
		return config_set_log_format(c, value, e) < 0 ? err_wrap(e, "%s", name) : 0;
	case CONFIG_SPEED_FLOOR:
		return config_set_speed_floor(c, name, value, e);
	case CONFIG_COUNT:
		c->log_level = c->log_level < LOG_DEBUG ? c->log_level + 1 : LOG_DEBUG;
		return 0;
	case CONFIG_HELP:
	case CONFIG_VERSION:
		break;
	}
	return err_set(e, EXIT_UNEXPECTED, "%s: not a setting", name);
}

int config_apply_arg(struct config *c, const struct config_option *o, const char *value,
		     bool *cleared, struct err *e)
{
	char name[64];
	size_t i = (size_t)(o - config_options);

	snprintf(name, sizeof(name), "--%s", o->name);
	/*
	 * One rule for every list: the command line's replaces the environment's. Two names of
	 * one list (mirror's --from and --repo) are one list: the first of them clears it.
	 */
	if (o->kind == CONFIG_LIST && !cleared[i]) {
		strv_clear((struct strv *)((char *)c + o->offset));
		for (size_t j = 0; j < config_n_options; j++)
			cleared[j] |= config_options[j].offset == o->offset &&
				      config_options[j].kind == CONFIG_LIST;
	}
	c->root_given |= o->offset == F(root);
	return apply(c, o, name, value, e);
}

/* The container toolkit's variables (nvidia-container-toolkit, docs/configuration.md). */
static bool is_toolkit_var(const char *name, size_t n)
{
	static const char *const exact[] = {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
					    "NVIDIA_DISABLE_REQUIRE"};
	static const char *const prefix[] = {"NVIDIA_REQUIRE_", "NVIDIA_MIG_"};

	for (size_t i = 0; i < ARRAY_SIZE(exact); i++) {
		if (strlen(exact[i]) == n && strncmp(name, exact[i], n) == 0)
			return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(prefix); i++) {
		if (n > strlen(prefix[i]) && strncmp(name, prefix[i], strlen(prefix[i])) == 0)
			return true;
	}
	return false;
}

static bool is_known_var(const char *name, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(config_options); i++) {
		const char *v = config_options[i].env;

		if (v && strlen(v) == n && strncmp(v, name, n) == 0)
			return true;
	}
	return false;
}

/* Optimal string alignment distance, capped: the answer is min(distance, CAP + 1). */
#define NEAR_MISS_MAX 2
#define NAME_CAP 64
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned d[NAME_CAP + 1][NAME_CAP + 1];

	if (la > NAME_CAP || lb > NAME_CAP)
		return NEAR_MISS_MAX + 1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			unsigned cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

const char *config_near_miss(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(config_options); i++) {
		const char *v = config_options[i].env;

		if (v && strncmp(v, "NVIDIA_", 7) == 0 && edit_distance(name, v) <= NEAR_MISS_MAX)
			return v;
	}
	return NULL;
}

/* The NVIDIA_* variables set that are neither ours nor the container toolkit's. */
static int scan_unknown(struct strv *ret)
{
	extern char **environ;

	/* Under secure execution (setuid, file capabilities) no variable is read. */
	if (getauxval(AT_SECURE))
		return 0;
	for (char **p = environ; p && *p; p++) {
		size_t n = strcspn(*p, "=");
		_cleanup_free_ char *name = NULL;

		if (strncmp(*p, "NVIDIA_", 7) != 0 || is_known_var(*p, n) || is_toolkit_var(*p, n))
			continue;
		name = strndup(*p, n);
		if (!name || strv_push(ret, name) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int env_apply(struct config *c, const struct config_option *o, const char *v, struct err *e)
{
	c->root_given |= o->offset == F(root) && *v;
	if (*v)
		return apply(c, o, o->env, v, e);
	if (o->flags & CONFIG_NONEMPTY) {
		char buf[128];

		err_set(e, EXIT_USAGE, "%s is set but empty", o->env);
		err_hint(e, "give it a value, or unset it for the default (%s)",
			 config_option_default(o, buf, sizeof(buf)));
		return -1;
	}
	return 0; /* empty: as if unset */
}

static int config_from_env(struct config *c, struct err *e)
{
	/* First: an error in a later variable is reported in the format asked for. */
	const struct config_option *log_format = config_option_find("log-format", CFG_GLOBAL);

	for (size_t i = 0; i <= ARRAY_SIZE(config_options); i++) {
		const struct config_option *o = i == 0 ? log_format : &config_options[i - 1];
		const char *v;

		if (!o->env || (i > 0 && o == log_format))
			continue;
		/*
		 * Not followed under secure execution: a setuid copy is not steered by its caller.
		 */
		v = secure_getenv(o->env);
		if (!v)
			continue;
		if (env_apply(c, o, v, e) < 0 || strv_push(&c->env_used, o->env) < 0)
			return err_is_set(e) ? -1
					     : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "environment");
	}
	if (scan_unknown(&c->env_unknown) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "environment");
	return 0;
}

/*
 * What the hand-over prepends to (passed on to CMD, never interpreted here), and the
 * variables among a container's signals (host/host.h, runenv_vars).
 */
static int inherit(char **field, const char *name, struct err *e)
{
	const char *v = secure_getenv(name);

	return v ? config_set(field, v, e) : 0;
}

int config_init(struct config *c, struct err *e)
{
	memset(c, 0, sizeof(*c));
	c->log_format = LOG_FORMAT_TEXT;
	c->log_level = LOG_INFO;
	c->index_max_age_s = INDEX_MAX_AGE_REPO;
	for (size_t i = 0; i < ARRAY_SIZE(config_options); i++) {
		const struct config_option *o = &config_options[i];

		if (o->value && apply(c, o, o->name, o->value, e) < 0)
			return -1;
	}
	if (inherit(&c->inherited_path, "PATH", e) < 0 ||
	    inherit(&c->inherited_ld_library_path, "LD_LIBRARY_PATH", e) < 0 ||
	    inherit(&c->env_container, "container", e) < 0 ||
	    inherit(&c->env_k8s_service_host, "KUBERNETES_SERVICE_HOST", e) < 0)
		return -1;
	return config_from_env(c, e);
}

void config_done(struct config *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(config_options); i++) {
		const struct config_option *o = &config_options[i];
		void *field = (char *)c + o->offset;

		if (o->kind == CONFIG_STRING) {
			free(*(char **)field);
			*(char **)field = NULL;
		} else if (o->kind == CONFIG_LIST) {
			strv_clear(field);
		}
	}
	/* Not options. */
	strv_clear(&c->env_used);
	strv_clear(&c->env_unknown);
	free(c->inherited_path);
	free(c->inherited_ld_library_path);
	free(c->env_container);
	free(c->env_k8s_service_host);
	strv_clear(&c->exec_argv);
	strv_clear(&c->files);
	memset(c, 0, sizeof(*c));
}

int config_check_env(const struct config *c, bool refuse_near_miss, struct err *e)
{
	for (size_t i = 0; i < c->env_unknown.n; i++) {
		const char *near = config_near_miss(c->env_unknown.v[i]);

		if (near && refuse_near_miss) {
			err_set(e, EXIT_USAGE, "unknown environment variable %s; did you mean %s?",
				c->env_unknown.v[i], near);
			err_hint(e, "correct its name in the DaemonSet's env");
			return -1;
		}
		if (near)
			log_kv(LOG_WARN, "config", "unknown environment variable ignored",
			       "variable", c->env_unknown.v[i], "did_you_mean", near, LOG_END);
		else
			log_kv(LOG_WARN, "config", "unknown environment variable ignored",
			       "variable", c->env_unknown.v[i], LOG_END);
	}
	return 0;
}
