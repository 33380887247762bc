// SPDX-License-Identifier: Apache-2.0
/*
 * What the options cannot check one by one (config_check.h): the checks every command runs
 * before it starts (config_validate), and the pre-flight check of `config`, which goes on
 * to what install would fail on and names every problem (config_preflight). Split from
 * config.c, which keeps the option table, the environment and the command line's values.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/config.h"
#include "cmd/config_check.h"
#include "expose/expose.h"
#include "kernel/kernel.h"
#include "kube/kube.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/log.h"

/*
 * Problems found while checking: the first one stops config_validate; the pre-flight
 * check goes on, logs each, and counts them.
 */
struct problems {
	bool all;
	size_t n;
	struct err *e;
};

/* Takes the problem in P->e's place (ONE): returns -1 to stop, 0 to go on. */
static int problem_err(struct problems *p, struct err *one)
{
	p->n++;
	if (!p->all) {
		if (one != p->e)
			*p->e = *one;
		return -1;
	}
	if (one->hint[0])
		log_kv(LOG_ERROR, "config", one->msg, "fix", one->hint, LOG_END);
	else
		log_kv(LOG_ERROR, "config", one->msg, LOG_END);
	err_clear(one);
	return 0;
}

static int problem(struct problems *p, const char *fmt, ...) _printf_(2, 3);
static int problem(struct problems *p, const char *fmt, ...)
{
	struct err one;
	va_list ap;

	err_clear(&one);
	one.code = EXIT_USAGE;
	va_start(ap, fmt);
	vsnprintf(one.msg, sizeof(one.msg), fmt, ap);
	va_end(ap);
	return problem_err(p, &one);
}

static const char *label(const struct config_option *o, char *buf, size_t size)
{
	snprintf(buf, size, "--%s%s%s%s", o->name, o->env ? " (" : "", o->env ? o->env : "",
		 o->env ? ")" : "");
	return buf;
}

static const char *label_of(const char *name, char *buf, size_t size)
{
	const struct config_option *o = config_option_find(name, CFG_ALL);

	return o ? label(o, buf, size) : name;
}

static bool url_scheme_ok(const char *u)
{
	return strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0 ||
	       strncmp(u, "file://", 7) == 0 || strncmp(u, "oci://", 6) == 0 ||
	       strncmp(u, "oci-layout:", 11) == 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* file:///abs or file://localhost/abs: a path the repository's files are found under. */
static bool file_url_is_absolute(const char *u)
{
	return strncmp(u, "file://", 7) != 0 || u[7] == '/' ||
	       strncmp(u + 7, "localhost/", 10) == 0;
}
/*
 * Host paths get suffixes appended (".versions/<version>-<sha12>/firmware/nvidia/<version>/...",
 * mount and ld.so.conf lines): a path this long leaves them room within PATH_MAX, so that no
 * step after the switch finds it too long.
 */
#define HOST_PATH_MAX 1024

static int check_host_path(const char *name, const char *p, struct err *e)
{
	size_t len = strlen(p);

	if (len > HOST_PATH_MAX)
		return err_set(e, EXIT_USAGE, "%s is %zu bytes long; at most %d", name, len,
			       HOST_PATH_MAX);
	for (const char *c = p; *c; c += strcspn(c, "/")) {
		c += strspn(c, "/");
		if (strcspn(c, "/") > NAME_MAX)
			return err_set(e, EXIT_USAGE,
				       "%s '%.64s...' has a component longer than %d bytes", name,
				       p, NAME_MAX);
	}
	if (p[0] != '/')
		return err_set(e, EXIT_USAGE, "%s '%s' must be an absolute host path", name, p);
	if (strcmp(p, "/") == 0)
		return err_set(e, EXIT_USAGE, "%s must not be the host's root", name);
	for (const char *c = p; *c; c++) {
		if ((unsigned char)*c < 0x20)
			return err_set(e, EXIT_USAGE, "%s holds a control character", name);
	}
	/* Written into the CDI spec, the manifest and every --json document: text only. */
	if (!str_is_utf8(p))
		return err_set(e, EXIT_USAGE, "%s is not UTF-8; give the path in UTF-8", name);
	for (const char *c = p; *c; c += strcspn(c, "/")) {
		c += strspn(c, "/");
		if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0'))
			return err_set(e, EXIT_USAGE, "%s '%s' must not contain '..'", name, p);
	}
	return 0;
}

static int check_version(struct problems *p, const char *name, const char *v)
{
	char buf[96];

	if (repo_request_is_valid(v))
		return 0;
	return problem(
		p,
		"%s: driver version '%s' is not 'default', 'latest', a version (550.90.07) or a branch (550)",
		label_of(name, buf, sizeof(buf)), v);
}

static int check_path(struct problems *p, const char *name, const char *value)
{
	char buf[96];
	struct err one;

	err_clear(&one);
	if (check_host_path(label_of(name, buf, sizeof(buf)), value, &one) < 0)
		return problem_err(p, &one);
	return 0;
}

/*
 * Each MODULE.KEY=VALUE well formed (kmods_parse_arg, as the load and the record take
 * them), for a module of the set to load: refused before anything is fetched or changed.
 */
static int check_module_args(const struct config *c, struct problems *p)
{
	struct strv set = {0};
	char lbl[96];
	int r = 0;

	label_of("module-arg", lbl, sizeof(lbl));
	for (size_t i = 0; i < (c->modules.n ? c->modules.n : 1); i++) {
		if (strv_push_split(&set, c->modules.n ? c->modules.v[i] : KERNEL_DEFAULT_MODULES) <
		    0) {
			strv_clear(&set);
			return err_errno(p->e, EXIT_UNEXPECTED, ENOMEM, "config");
		}
	}
	for (size_t i = 0; i < set.n; i++)
		kmods_normalise_name(set.v[i]);
	for (size_t a = 0; a < c->module_args.n && r == 0; a++) {
		char module[KMODS_NAME_MAX], kv[512], mods[64];
		bool in_set = false;
		struct err one;

		err_clear(&one);
		if (kmods_parse_arg(c->module_args.v[a], module, sizeof(module), kv, sizeof(kv),
				    &one) < 0) {
			err_wrap(&one, "%s", lbl);
			r = problem_err(p, &one);
			continue;
		}
		for (size_t i = 0; i < set.n && !in_set; i++)
			in_set = strcmp(set.v[i], module) == 0;
		if (!in_set)
			r = problem(
				p, "%s: '%s' names '%s', which is not in the set being loaded (%s)",
				lbl, c->module_args.v[a], module,
				label_of("modules", mods, sizeof(mods)));
	}
	strv_clear(&set);
	return r;
}

static bool str_in(const char *s, const char *a, const char *b)
{
	return strcmp(s, a) == 0 || strcmp(s, b) == 0;
}

/* The controls NVIDIA's upgrade policy has: yes|no, the selectors, the budget. */
static int check_upgrade_controls(const struct config *c, struct problems *p)
{
	const struct {
		const char *name, *value;
	} yes_no[] = {{"upgrade-evict-force", c->upgrade_evict_force},
		      {"upgrade-evict-emptydir", c->upgrade_evict_emptydir},
		      {"upgrade-drain", c->upgrade_drain},
		      {"upgrade-drain-force", c->upgrade_drain_force},
		      {"upgrade-drain-emptydir", c->upgrade_drain_emptydir}},
	  selectors[] = {{"upgrade-wait-for", c->upgrade_wait_for},
			 {"upgrade-drain-selector", c->upgrade_drain_selector},
			 {"dra-plugin-selector", c->dra_plugin_selector}};
	char buf[96], why[200];
	unsigned n;

	for (size_t i = 0; i < ARRAY_SIZE(yes_no); i++)
		if (!str_in(yes_no[i].value, "yes", "no") &&
		    problem(p, "%s: '%s' is not yes or no",
			    label_of(yes_no[i].name, buf, sizeof(buf)), yes_no[i].value) < 0)
			return -1;
	for (size_t i = 0; i < ARRAY_SIZE(selectors); i++)
		if (selectors[i].value &&
		    labelsel_check(selectors[i].value, why, sizeof(why)) < 0 &&
		    problem(p,
			    "%s: '%s' is not a label selector: %s (as kubectl's -l takes: app=a, tier in (x,y), !key)",
			    label_of(selectors[i].name, buf, sizeof(buf)), selectors[i].value,
			    why) < 0)
			return -1;
	/* As the agent takes it (cmd/agent.c): none is the empty list. */
	if (strcmp(c->upgrade_dra_drivers, "none") != 0 &&
	    !claims_drivers_ok(c->upgrade_dra_drivers, why, sizeof(why)) &&
	    problem(p, "%s: %s; list the drivers whose claims hold GPUs, comma-separated, or none",
		    label_of("upgrade-dra-drivers", buf, sizeof(buf)), why) < 0)
		return -1;
	if (strcmp(c->upgrade_max_unavailable, "none") == 0 ||
	    upgrade_max_unavailable(c->upgrade_max_unavailable, 100, &n) == 0)
		return 0;
	return problem(
		p,
		"%s: '%s' is not none, a number of nodes (1 or more) or a percentage (1%% to 100%%)",
		label_of("upgrade-max-unavailable", buf, sizeof(buf)), c->upgrade_max_unavailable);
}

/* The node agent's upgrade settings. */
static int check_agent(const struct config *c, struct problems *p)
{
	char buf[96];
	unsigned n;

	if (!str_in(c->upgrades, "auto", "off") &&
	    problem(p, "%s: '%s' is not auto or off", label_of("upgrades", buf, sizeof(buf)),
		    c->upgrades) < 0)
		return -1;
	if (slots_limit(c->upgrade_limit, 100, &n) < 0 &&
	    problem(p, "%s: '%s' is not a number of nodes or a percentage (1, 10%%)",
		    label_of("upgrade-limit", buf, sizeof(buf)), c->upgrade_limit) < 0)
		return -1;
	if (!str_in(c->upgrade_cordon, "yes", "no") &&
	    problem(p, "%s: '%s' is not yes or no", label_of("upgrade-cordon", buf, sizeof(buf)),
		    c->upgrade_cordon) < 0)
		return -1;
	if (!str_in(c->upgrade_on_deadline, "wait", "evict") &&
	    problem(p, "%s: '%s' is not wait or evict",
		    label_of("upgrade-on-deadline", buf, sizeof(buf)), c->upgrade_on_deadline) < 0)
		return -1;
	if (check_upgrade_controls(c, p) < 0)
		return -1;
	/* The drain evicts; on a schedulable node the pods come back and it never ends
	 * (kubectl pkg/cmd/drain/drain.go RunDrain cordons first; so does NVIDIA's
	 * drain_manager.go, through kubectl's drain package). */
	if (strcmp(c->upgrade_drain, "yes") == 0 && strcmp(c->upgrade_cordon, "no") == 0 &&
	    problem(p,
		    "%s: yes with --upgrade-cordon no cannot finish: the pods it evicts come back to the node while it is schedulable; set --upgrade-cordon yes, as kubectl drain always cordons",
		    label_of("upgrade-drain", buf, sizeof(buf))) < 0)
		return -1;
	if (c->node_name && !kube_name_ok(c->node_name) &&
	    problem(p, "%s: '%s' is not a Kubernetes node name",
		    label_of("node-name", buf, sizeof(buf)), c->node_name) < 0)
		return -1;
	if (kube_name_ok(c->upgrade_daemonset))
		return 0;
	return problem(p, "%s: '%s' is not a Kubernetes object name",
		       label_of("upgrade-daemonset", buf, sizeof(buf)), c->upgrade_daemonset);
}

/* The node agent's word on the Node: its taints as the API server takes them, its heartbeat. */
static int check_node_word(const struct config *c, struct problems *p)
{
	char buf[96];

	if (strcmp(c->startup_taint, "none") != 0 && !nodecond_taint_ok(c->startup_taint, false) &&
	    problem(p, "%s: '%s' is not a taint key (a qualified name: [PREFIX/]NAME) or none",
		    label_of("startup-taint", buf, sizeof(buf)), c->startup_taint) < 0)
		return -1;
	if (strcmp(c->health_taint, "none") != 0 && !nodecond_taint_ok(c->health_taint, true) &&
	    problem(p,
		    "%s: '%s' is not KEY:EFFECT (a qualified name, then NoSchedule, PreferNoSchedule or NoExecute) or none",
		    label_of("health-taint", buf, sizeof(buf)), c->health_taint) < 0)
		return -1;
	/* The heartbeat is written at a look: a look less often would miss it. */
	if (c->condition_heartbeat_s < c->agent_interval_s)
		return problem(
			p,
			"%s: %u is shorter than --interval %u: the condition is written at a look",
			label_of("condition-heartbeat", buf, sizeof(buf)), c->condition_heartbeat_s,
			c->agent_interval_s);
	return 0;
}

/* --rdma: one of its four words (installer/kernel/rdma.c); peermem and dmabuf are the
 * kernel stage's, which --skip-modules skips. */
static int check_rdma(const struct config *c, struct problems *p)
{
	char buf[64];

	enum kernel_rdma m = KERNEL_RDMA_OFF;

	if (c->rdma && kernel_rdma_parse(c->rdma, &m) < 0)
		return problem(p, "%s: '%s' is not off, auto, peermem or dmabuf",
			       label_of("rdma", buf, sizeof(buf)), c->rdma);
	if ((m == KERNEL_RDMA_PEERMEM || m == KERNEL_RDMA_DMABUF) && c->skip_modules)
		return problem(
			p,
			"%s: --skip-modules leaves the kernel, and so the RDMA path, to others; drop one of the two",
			label_of("rdma", buf, sizeof(buf)));
	return 0;
}

/*
 * --driver-capabilities: a comma list of the words (source/repo_caps.c), refused before any
 * command starts, so that an agent with a junk list does not start and pass it on to the
 * installer of every upgrade.
 */
static int check_capabilities(const struct config *c, struct problems *p)
{
	unsigned caps;
	char buf[96];

	if (!c->driver_capabilities || repo_caps_parse(c->driver_capabilities, &caps) == 0)
		return 0;
	return problem(
		p,
		"%s: '%s' is not a comma list of compute, utility, video, graphics or all (no empty item)",
		label_of("driver-capabilities", buf, sizeof(buf)), c->driver_capabilities);
}

/* IMEX's channel0 is made by the kernel stage after the load, which --skip-modules skips. */
static int check_imex(const struct config *c, struct problems *p)
{
	char buf[96];

	if (!c->imex_channel0 || !c->skip_modules)
		return 0;
	return problem(
		p,
		"%s: --skip-modules leaves the kernel, and so IMEX's channel0, to others; drop one of the two",
		label_of("imex-channel0", buf, sizeof(buf)));
}

static int check_all(const struct config *c, struct problems *p)
{
	enum repo_kmt_policy kmt;
	char buf[96];

	for (size_t i = 0; i < c->repos.n; i++) {
		const char *u = c->repos.v[i];

		struct err re;

		if (!url_scheme_ok(u) &&
		    problem(p,
			    "%s: repository '%s' is not an https://, http://, file://, oci:// or oci-layout: URL",
			    label_of("repo", buf, sizeof(buf)), u) < 0)
			return -1;
		err_clear(&re);
		if (url_scheme_ok(u) && source_repo_check(u, &re) < 0 &&
		    problem(p, "%s: %s", label_of("repo", buf, sizeof(buf)), re.msg) < 0)
			return -1;
		if (url_scheme_ok(u) && !file_url_is_absolute(u) &&
		    problem(p,
			    "%s: repository '%s' is a relative file:// URL; write file:///ABSOLUTE/PATH",
			    label_of("repo", buf, sizeof(buf)), u) < 0)
			return -1;
	}
	for (size_t i = 0; i < c->mirror_versions.n; i++) {
		if (check_version(p, "--driver-version", c->mirror_versions.v[i]) < 0)
			return -1;
	}
	if (check_version(p, "driver-version", c->driver_version) < 0)
		return -1;
	if (repo_kmt_policy_parse(c->kernel_module_type, &kmt) < 0 &&
	    problem(p, "%s: '%s' is not auto, open or proprietary",
		    label_of("kernel-module-type", buf, sizeof(buf)), c->kernel_module_type) < 0)
		return -1;
	if (strcmp(c->when_busy, "defer") != 0 && strcmp(c->when_busy, "fail") != 0 &&
	    problem(p, "%s: '%s' is not defer or fail", label_of("when-busy", buf, sizeof(buf)),
		    c->when_busy) < 0)
		return -1;
	if (check_agent(c, p) < 0 || check_node_word(c, p) < 0 || check_imex(c, p) < 0 ||
	    check_rdma(c, p) < 0 || check_capabilities(c, p) < 0)
		return -1;
	if (c->registry_gce && source_gce_parse(c->registry_gce, &(enum source_gce){0}) < 0 &&
	    problem(p, "%s: '%s' is not auto, yes or no",
		    label_of("registry-gce-metadata", buf, sizeof(buf)), c->registry_gce) < 0)
		return -1;
	if (c->kernel_release && (strchr(c->kernel_release, '/') || !*c->kernel_release) &&
	    problem(p, "%s: kernel release '%s' is not a release name",
		    label_of("kernel-release", buf, sizeof(buf)), c->kernel_release) < 0)
		return -1;
	if (c->root[0] != '/' && problem(p, "%s: '%s' must be an absolute path",
					 label_of("root", buf, sizeof(buf)), c->root) < 0)
		return -1;
	if (!cdi_kind_is_valid(c->cdi_kind) &&
	    problem(p,
		    "%s: '%s' is not a CDI kind: VENDOR/CLASS, each starting with a letter, ending with a letter or digit, of letters, digits, '-', '_', '.'",
		    label_of("cdi-kind", buf, sizeof(buf)), c->cdi_kind) < 0)
		return -1;
	if (strcmp(c->mig_layout, "gke") != 0) {
		struct part_layout l;
		struct err le;

		if (part_layout_parse(c->mig_layout, -1, &l, &le) < 0 &&
		    problem(p,
			    "%s: '%s' is not a layout: gke, none, all-disabled, all-enabled or all-PROFILE (all-1g.10gb), for every GPU or per GPU index (all-disabled,0=all-1g.10gb)",
			    label_of("mig-layout", buf, sizeof(buf)), c->mig_layout) < 0)
			return -1;
	}
	if (check_path(p, "install-dir", c->install_dir) < 0 ||
	    check_path(p, "container-dir", c->container_dir) < 0 ||
	    check_path(p, "cache-dir", c->cache_dir) < 0 ||
	    check_path(p, "cdi-dir", c->cdi_dir) < 0 ||
	    (c->metrics_file && check_path(p, "metrics-file", c->metrics_file) < 0))
		return -1;
	for (size_t i = 0; i < c->host_mounts.n; i++) {
		if (check_path(p, "host-mount", c->host_mounts.v[i]) < 0)
			return -1;
	}
	return check_module_args(c, p);
}

int config_validate(const struct config *c, struct err *e)
{
	struct problems p = {.all = false, .e = e};

	return check_all(c, &p);
}

/* A file the shipped manifests carry until the operator puts a real key there. */
static int check_placeholder(struct problems *p, const char *name, const char *path)
{
	struct err e;
	int fd = fs_open_regular_at(AT_FDCWD, path, 0, &e);
	char buf[4096], lbl[96];
	ssize_t n;

	if (fd < 0)
		return 0; /* the loader names the cause */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	if (!strstr(buf, "REPLACE-WITH-"))
		return 0;
	return problem(p, "%s: '%s' is the manifest's placeholder, not a key",
		       label_of(name, lbl, sizeof(lbl)), path) < 0
		       ? -1
		       : 1;
}

static int check_keys(const struct config *c, struct problems *p)
{
	char lbl[96];

	label_of("repo-key", lbl, sizeof(lbl));
	if (c->repo_keys.n == 0) {
		_cleanup_(verify_keys_freep) struct keyset *ks = NULL;
		struct err one;

		err_clear(&one);
		if (verify_keys_load(NULL, 0, VERIFY_KEYS_DIR, &ks, &one) < 0) {
			err_wrap(&one, "%s", lbl);
			return problem_err(p, &one);
		}
		return 0;
	}
	for (size_t i = 0; i < c->repo_keys.n; i++) {
		_cleanup_(verify_keys_freep) struct keyset *ks = NULL;
		struct err one;
		int r = check_placeholder(p, "repo-key", c->repo_keys.v[i]);

		if (r < 0)
			return -1;
		err_clear(&one);
		if (r == 0 &&
		    verify_keys_load(&c->repo_keys.v[i], 1, VERIFY_KEYS_DIR, &ks, &one) < 0) {
			err_wrap(&one, "%s", lbl);
			if (problem_err(p, &one) < 0)
				return -1;
		}
	}
	return 0;
}

static int check_certs(const struct config *c, struct problems *p)
{
	char lbl[96];

	label_of("module-cert", lbl, sizeof(lbl));
	for (size_t i = 0; i < c->module_certs.n; i++) {
		_cleanup_(modsig_certs_freep) struct modsig_certs *certs = NULL;
		struct err one;
		int r = check_placeholder(p, "module-cert", c->module_certs.v[i]);

		if (r < 0)
			return -1;
		err_clear(&one);
		if (r == 0 && modsig_certs_load(&c->module_certs.v[i], 1, &certs, &one) < 0) {
			err_wrap(&one, "%s", lbl);
			if (problem_err(p, &one) < 0)
				return -1;
		}
	}
	return 0;
}

int config_preflight(const struct config *c, struct err *e)
{
	struct problems p = {.all = true, .e = e};
	char lbl[96];

	if (check_all(c, &p) < 0)
		return -1;
	if (c->repos.n == 0 &&
	    problem(&p, "%s: no repository configured", label_of("repo", lbl, sizeof(lbl))) < 0)
		return -1;
	if (check_keys(c, &p) < 0 || check_certs(c, &p) < 0)
		return -1;
	if (c->kernel_keyring_cert && access(c->kernel_keyring_cert, R_OK) < 0 &&
	    problem(&p, "%s: '%s': %s", label_of("kernel-keyring-cert", lbl, sizeof(lbl)),
		    c->kernel_keyring_cert, strerror(errno)) < 0)
		return -1;
	if (c->ca_file && access(c->ca_file, R_OK) < 0 &&
	    problem(&p, "%s: '%s': %s", label_of("ca-file", lbl, sizeof(lbl)), c->ca_file,
		    strerror(errno)) < 0)
		return -1;
	for (size_t i = 0; i < c->registry_auth.n; i++) {
		if (access(c->registry_auth.v[i], R_OK) < 0 &&
		    problem(&p, "%s: '%s': %s", label_of("registry-auth", lbl, sizeof(lbl)),
			    c->registry_auth.v[i], strerror(errno)) < 0)
			return -1;
	}
	if (c->registry_hosts && !is_dir(c->registry_hosts) &&
	    problem(&p, "%s: '%s' is not a directory", label_of("registry-hosts", lbl, sizeof(lbl)),
		    c->registry_hosts) < 0)
		return -1;
	for (size_t i = 0; i < c->env_unknown.n; i++) {
		const char *near = config_near_miss(c->env_unknown.v[i]);

		if (problem(&p, "unknown environment variable %s%s%s%s", c->env_unknown.v[i],
			    near ? "; did you mean " : "", near ? near : "", near ? "?" : "") < 0)
			return -1;
	}
	if (p.n == 0)
		return 0;
	err_set(e, EXIT_USAGE, "%zu problem(s) in the configuration, each logged above", p.n);
	err_hint(e, "correct them against " DOC_DIR "/configuration.md");
	return -1;
}
