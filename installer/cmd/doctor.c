// SPDX-License-Identifier: Apache-2.0
/*
 * doctor: a check list for a person at the node, each line a verdict and, when
 * it is not ok, the fix. Reads only; the repository check needs --repo.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/doctor_checks.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "source/source.h"
#include "util/jsonc.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/out.h"
#include "util/str.h"

#define LOW_DISK_MIB 1024

static const char *const verdict_names[] = {"ok", "warn", "fail", "skip"};

/* The host-path options, judged as install judges them (hostpath.h). */
static void check_host_paths(struct doctor *d, const struct config *c, int root_fd)
{
	struct hostpath_opts ho = session_hostpath_opts(c);
	struct err e;

	err_clear(&e);
	if (hostpath_check_config(&ho, root_fd, &e) < 0)
		doctor_add(d, V_FAIL, "host paths", e.hint, "%s", e.msg);
	else if (hostpath_check_install_writable(&ho, root_fd, &e) < 0)
		doctor_add(d, V_WARN, "host paths", e.hint, "%s", e.msg);
	else
		doctor_add(d, V_OK, "host paths", NULL, "install dir %s, cache %s, CDI %s",
			   c->install_dir, c->cache_dir, c->cdi_dir);
}

static void check_gpus(struct doctor *d, const struct nodestate *s)
{
	char list[400] = "";
	size_t len = 0;
	bool nouveau = false;

	if (s->host.n_gpus == 0) {
		doctor_add(d, V_FAIL, "gpus", "run the installer on a GPU node",
			   "no NVIDIA GPU on the PCI bus");
		return;
	}
	for (size_t i = 0; i < s->host.n_gpus && len < sizeof(list); i++) {
		const char *drv = s->bindings[i].driver;

		nouveau |= strcmp(drv, "nouveau") == 0;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%04x:%04x at %s (%s)",
					i ? ", " : "", s->host.gpus[i].vendor,
					s->host.gpus[i].device, s->host.gpus[i].bdf,
					drv[0] ? drv : "no driver");
	}
	if (nouveau)
		doctor_add(
			d, V_FAIL, "gpus",
			"blacklist nouveau (modprobe.blacklist=nouveau) and reboot, then install",
			"%s: bound to nouveau", list);
	else
		doctor_add(d, V_OK, "gpus", NULL, "%s", list);
}

static void check_conflicts(struct doctor *d, const struct nodestate *s)
{
	for (size_t i = 0; i < s->host.n_modules; i++) {
		const char *n = s->host.modules[i].name;

		if (strncmp(n, "nvidia", 6) != 0 || strcmp(n, "nvidiafb") == 0) {
			doctor_add(
				d, V_FAIL, "conflicts",
				"install unloads it when idle; if it is in use, blacklist it and reboot",
				"%s is loaded", n);
			return;
		}
	}
	if (s->host.modules_known)
		doctor_add(d, V_OK, "conflicts", NULL, "no nouveau, nova or nvidiafb loaded");
	else
		doctor_add(d, V_SKIP, "conflicts", NULL, "not checked: no /proc/modules to read");
}

/* How close kernel A is to B: shared leading characters, then numeric distance. */
static long kernel_score(const char *a, const char *b)
{
	long common = 0;

	while (a[common] && a[common] == b[common])
		common++;
	return common * 1000 - labs(atol(a + common) - atol(b + common));
}

static int by_score_desc(const void *x, const void *y)
{
	const long *a = x, *b = y;

	return (b[0] > a[0]) - (b[0] < a[0]);
}

/*
 * The mirrors were asked and the node's cached index answered: a wrong URL fails (every
 * mirror answered that it has no index.json), an outage or an index that does not verify
 * warns. The fix is the one the mirrors' failure carried.
 */
static void check_repository_fallback(struct doctor *d, const struct source *src)
{
	const char *fix = strstr(src->fallback_reason, "; fix: ");
	char cause[sizeof(d->checks[0].detail)];

	snprintf(cause, sizeof(cause), "%.*s",
		 fix ? (int)(fix - src->fallback_reason) : (int)strlen(src->fallback_reason),
		 src->fallback_reason);
	doctor_add(d, src->fallback == SOURCE_FALLBACK_NOT_FOUND ? V_FAIL : V_WARN, "repository",
		   fix ? fix + strlen("; fix: ") : "check --repo (NVIDIA_DRIVER_REPO)",
		   "answered from the node's cache, not a mirror (%s): %s",
		   source_fallback_name(src->fallback), cause);
}

/*
 * The loaded flavour against the GPUs: the index's list of the GPUs the loaded flavour of
 * the loaded version supports (repo_kmt_decide, asked for that flavour alone).
 */
static void check_module_type_suits(struct doctor *d, const struct repo_index *idx,
				    const struct nodestate *s)
{
	enum repo_kmt_policy want;
	struct repo_kmt_decision kd;
	const struct repo_driver *dr = NULL;
	uint32_t ids[64];
	size_t n = 0;

	if (!s->loaded_type[0] || !s->loaded_version[0] ||
	    repo_kmt_policy_parse(s->loaded_type, &want) < 0)
		return;
	for (size_t i = 0; i < idx->n_drivers && !dr; i++) {
		if (version_compare(idx->drivers[i].version, s->loaded_version) == 0)
			dr = &idx->drivers[i];
	}
	/* An index that states no flavour's GPUs has nothing to say here. */
	if (!dr ||
	    (!dr->module_types[REPO_MT_OPEN].known && !dr->module_types[REPO_MT_PROPRIETARY].known))
		return;
	for (size_t g = 0; g < s->host.n_gpus && n < ARRAY_SIZE(ids); g++)
		ids[n++] = (uint32_t)s->host.gpus[g].vendor << 16 | s->host.gpus[g].device;
	repo_kmt_decide(
		&(struct repo_kmt_request){
			.driver = dr,
			.gpus = ids,
			.n_gpus = n,
			.policy = want,
			.avail = 1u << (want == REPO_KMT_OPEN ? REPO_MT_OPEN : REPO_MT_PROPRIETARY),
			.kernel = s->host.kernel},
		&kd);
	if (kd.ok)
		doctor_add(d, V_OK, "module type", NULL,
			   "the %s modules of %s are loaded; the index lists every GPU for them",
			   s->loaded_type, s->loaded_version);
	else
		doctor_add(
			d, V_FAIL, "module type",
			"install the flavour the GPUs need: --kernel-module-type auto (see list-versions), then drain the node and re-run install",
			"the %s modules of %s are loaded: %s", s->loaded_type, s->loaded_version,
			kd.reason);
}

/* What the repository has for the running kernel: the kernel check's fix follows it. */
enum answer { ANSWER_NOT_ASKED, ANSWER_UNKNOWN, ANSWER_NOTHING, ANSWER_SERVES };

/* What the repository has for another kernel of this host (judge_kernel). */
struct kernel_answer {
	enum answer what;
	char version[64]; /* with ANSWER_SERVES: the driver install would install */
	char reason[256]; /* with ANSWER_NOTHING: repo_select's why */
};

struct repo_answer {
	enum answer what;
	char version[64]; /* with ANSWER_SERVES: the driver install would install */
	/* The kernel the host boots next, where that is another (host_boot_next) */
	struct kernel_answer next;
	/* The newest installed kernel, where a boot loader default names an older one */
	struct kernel_answer newest;
};

/*
 * The index has a package of CHOICE for this kernel: whether a mirror carries it (a
 * partial mirror keeps the whole index).
 */
static void check_repository_carried(struct doctor *d, struct source *src,
				     const struct nodestate *s, const struct repo_choice *choice,
				     struct repo_answer *ret)
{
	char fix[sizeof(d->checks[0].fix)];
	size_t mirror;
	struct err e;

	err_clear(&e);
	if (source_probe_package(src, choice->pkg, &mirror, &e) != 0) {
		ret->what = ANSWER_SERVES;
		str_fmt_cut(ret->version, sizeof(ret->version), "%s", choice->driver->version);
		doctor_add(d, V_OK, "repository", NULL, "driver %s has a package for kernel %s",
			   choice->driver->version, s->host.kernel);
		return;
	}
	ret->what = ANSWER_NOTHING;
	str_fmt_cut(
		fix, sizeof(fix),
		"add it to the mirror ('nvidia-driver-installer mirror --kernel %s --driver-version %s'), or ask for a version a mirror carries ('list-versions')",
		s->host.kernel, choice->driver->version);
	doctor_add(
		d, V_FAIL, "repository", fix,
		"driver %s has a package for kernel %s in the index, but no mirror carries it ('%s')",
		choice->driver->version, s->host.kernel, choice->pkg->path);
}

/* Nothing for this kernel (WHY, from repo_select): the kernels nearest to it that have one. */
static void check_repository_nearest(struct doctor *d, const struct repo_index *idx,
				     const struct nodestate *s, const struct err *why)
{
	const char *names[256];
	long scored[256][2];
	char near[400] = "";
	size_t n = 0, len = 0;

	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *dr = &idx->drivers[i];

		for (size_t p = 0; p < dr->n_pkgs && n < ARRAY_SIZE(names); p++) {
			bool dup = false;

			for (size_t k = 0; k < n && !dup; k++)
				dup = strcmp(names[k], dr->pkgs[p].kernel) == 0;
			if (dup)
				continue;
			names[n] = dr->pkgs[p].kernel;
			scored[n][0] = kernel_score(dr->pkgs[p].kernel, s->host.kernel);
			scored[n][1] = (long)n;
			n++;
		}
	}
	qsort(scored, n, sizeof(scored[0]), by_score_desc);
	for (size_t i = 0; i < n && i < 3; i++)
		len += (size_t)snprintf(near + len, sizeof(near) - len, "%s%s", i ? ", " : "",
					names[scored[i][1]]);
	doctor_add(d, V_FAIL, "repository", why->hint, "%s%s%s", why->msg,
		   n ? "; nearest kernels with one: " : "", near);
}

/* The question install asks (coverage --kernel), for the kernel K on this host. */
static void judge_kernel(const struct config *c, const struct source *src,
			 const struct nodestate *s, const char *k, struct kernel_answer *ret)
{
	struct host h = s->host;
	struct repo_choice ch;
	struct err e;

	err_clear(&e);
	snprintf(h.kernel, sizeof(h.kernel), "%s", k);
	if (repo_select(src->idx, &h, c->driver_version, session_kmt_policy(c), &ch, &e) == 0) {
		ret->what = ANSWER_SERVES;
		str_fmt_cut(ret->version, sizeof(ret->version), "%s", ch.driver->version);
	} else {
		ret->what = ANSWER_NOTHING;
		str_fmt_cut(ret->reason, sizeof(ret->reason), "%s", e.msg);
	}
}

/*
 * The repository: a package for this kernel, else the kernels nearest to it; and for
 * NEXT, the kernel the host boots next, when it is another. RET says what it answered.
 */
static void check_repository(struct doctor *d, const struct config *c, int root_fd,
			     const struct nodestate *s, const struct host_boot *b,
			     struct repo_answer *ret)
{
	const char *next = b->next;

	_cleanup_(cache_freep) struct cache *cache = NULL;
	struct source_opts so = session_source_opts(c);
	struct repo_choice choice;
	struct source src;
	struct err e;

	ret->what = ret->next.what = ret->newest.what = ANSWER_NOT_ASKED;
	if (c->repos.n == 0) {
		doctor_add(d, V_SKIP, "repository", NULL, "no --repo given");
		return;
	}
	ret->what = ret->next.what = ret->newest.what = ANSWER_UNKNOWN;
	err_clear(&e);
	if (cache_open(root_fd, c->cache_dir, false, &cache, &e) < 0 ||
	    source_open(&so, cache, 0, &src, &e) < 0) {
		doctor_add(d, V_FAIL, "repository",
			   e.hint[0] ? e.hint : "check --repo and --repo-key", "%s", e.msg);
		return;
	}
	if (src.from_cache) {
		/* Never "ok": this node is served, a node without a cache is not. */
		check_repository_fallback(d, &src);
		source_done(&src);
		return;
	}
	if (source_keys_share_record(&src))
		doctor_add(d, V_WARN, "repository keys", SOURCE_KEYS_SHARE_FIX, "%s (%zu keys)",
			   SOURCE_KEYS_SHARE_RECORD, verify_keys_count(src.keys));
	check_module_type_suits(d, src.idx, s);
	if (next[0] && strcmp(next, s->host.kernel) != 0)
		judge_kernel(c, &src, s, next, &ret->next);
	if (b->newest_after_next && strcmp(b->newest, s->host.kernel) != 0)
		judge_kernel(c, &src, s, b->newest, &ret->newest);
	if (repo_select(src.idx, &s->host, c->driver_version, session_kmt_policy(c), &choice, &e) ==
	    0) {
		if (session_check_capabilities(c, &choice, &s->host, &e) < 0) {
			doctor_add(d, V_FAIL, "driver capabilities", e.hint, "%s", e.msg);
			err_clear(&e);
		}
		check_repository_carried(d, &src, s, &choice, ret);
	} else {
		ret->what = ANSWER_NOTHING;
		check_repository_nearest(d, src.idx, s, &e);
	}
	source_done(&src);
}

/*
 * The host's rules (signature enforcement, lockdown, Secure Boot, LoadPin, the kernel's
 * keys) and whether they let the modules load: the installed ones, or with nothing
 * installed, what can be said before a package is unpacked. A live driver of the
 * installed version has been accepted: that is no prediction.
 */
static void check_trust(struct doctor *d, const struct config *c, int root_fd,
			const struct nodestate *s)
{
	static const enum verdict of[] = {
		[KTRUST_LOADS] = V_OK, [KTRUST_REFUSED] = V_FAIL, [KTRUST_UNKNOWN] = V_WARN};
	const struct ktrust *t = &s->trust;
	struct kernel_opts ko = session_kernel_opts(c);
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct ktrust_prediction pr;
	char head[200];
	struct err e;

	snprintf(head, sizeof(head), "sig_enforce %s, lockdown %s, Secure Boot %s, LoadPin %s",
		 t->sig_enforce, t->lockdown, t->secure_boot, t->loadpin);
	if (s->installed && strcmp(s->loaded_version, s->manifest.driver_version) == 0) {
		doctor_add(d, V_OK, "module trust", NULL,
			   "%s; the kernel accepted the modules (signer '%s')", head,
			   s->signer[0] ? s->signer : "unsigned");
		return;
	}
	err_clear(&e);
	if (kernel_probe(&ko, root_fd, s->host.kernel, &kn, &e) < 0) {
		doctor_add(d, V_WARN, "module trust", e.hint, "%s; no prediction: %s", head, e.msg);
		return;
	}
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) == 0 && dir && s->installed)
		drivers_fd = publish_version_subdir(dir, s->install_id, "drivers", &e);
	kernel_predict(kn, dir ? publish_fd(dir) : -1, drivers_fd, NULL, &pr);
	doctor_add(d, of[pr.verdict], "module trust", pr.need, "%s; %s modules: %s (%s)", head,
		   s->installed ? "the installed" : "a package's", ktrust_verdict_name(pr.verdict),
		   pr.why);
}

/* The loaded flavour against the installed one (the manifest's). */
static void check_module_type(struct doctor *d, const struct nodestate *s)
{
	const char *inst = s->installed ? s->manifest.module_type : NULL;

	if (!s->loaded_type[0] || !inst || strcmp(s->loaded_version, s->manifest.driver_version))
		return;
	if (strcmp(inst, s->loaded_type) != 0)
		doctor_add(d, V_FAIL, "module type", "drain the node and re-run install, or reboot",
			   "the %s modules of %s are loaded, the %s ones are installed",
			   s->loaded_type, s->loaded_version, inst);
}

/*
 * The capabilities the installed version was installed for (its manifest; the CDI spec's
 * graphics mounts follow them) against what --driver-capabilities asks: said only when
 * they differ.
 */
static void check_capabilities_record(struct doctor *d, const struct config *c,
				      const struct nodestate *s)
{
	unsigned rec = REPO_CAP_DEFAULT, asked = session_capabilities(c);
	char has[REPO_CAPS_TEXT_SIZE], want[REPO_CAPS_TEXT_SIZE];

	if (!s->installed)
		return;
	if (s->manifest.capabilities && repo_caps_parse(s->manifest.capabilities, &rec) < 0)
		rec = REPO_CAP_DEFAULT;
	if (rec == asked)
		return;
	repo_caps_text(rec, has, sizeof(has));
	repo_caps_text(asked, want, sizeof(want));
	if ((rec & asked) != asked)
		doctor_add(
			d, V_WARN, "installed capabilities",
			"run install with the same --driver-capabilities: it records them for the installed version when its package serves them",
			"driver %s is installed for %s; --driver-capabilities asks %s",
			s->manifest.driver_version, has, want);
	else
		doctor_add(
			d, V_WARN, "installed capabilities",
			"give doctor the node pool's --driver-capabilities; to drop them, install another version without them",
			"driver %s is installed for %s (the CDI spec follows that); --driver-capabilities asks %s",
			s->manifest.driver_version, has, want);
}

static void check_installed(struct doctor *d, const struct nodestate *s)
{
	const char *want = s->manifest.driver_version;
	char other[sizeof(d->checks[0].fix)];

	if (!s->installed) {
		doctor_add(d, V_FAIL, "installed", "run 'nvidia-driver-installer install'",
			   "no driver is installed");
		return;
	}
	str_fmt_cut(other, sizeof(other),
		    "its modules are for kernel %s, not %s: see the kernel check",
		    s->manifest.kernel_release, s->host.kernel);
	if (!s->loaded_version[0])
		doctor_add(
			d, V_FAIL, "loaded",
			strcmp(s->manifest.kernel_release, s->host.kernel) != 0
				? other
				: "run install: it loads the installed modules (after a reboot too)",
			"driver %s is installed but not loaded", want);
	else if (strcmp(s->loaded_version, want) != 0)
		doctor_add(d, V_FAIL, "loaded", "drain the node and re-run install, or reboot",
			   "driver %s is loaded, %s is installed", s->loaded_version, want);
	else
		doctor_add(d, V_OK, "loaded", NULL, "driver %s installed and loaded", want);
	doctor_add(
		d, s->firmware_ok ? V_OK : V_FAIL, "firmware",
		"re-run install: it links the firmware into /lib/firmware or sets firmware_class.path",
		"%s", s->firmware_how);
}

/* A change that waits for idle GPUs (--when-busy defer): a warning that says how to finish. */
static void check_pending(struct doctor *d, const struct config *c, int root_fd)
{
	struct pending p;

	if (session_pending(c, root_fd, &p) != 1)
		return;
	doctor_add(
		d, V_WARN, "upgrade pending",
		"drain the node's GPU workloads (cordon, then evict its GPU pods), then delete the installer pod: its next run switches; or reboot the node, which loads the pending version",
		"%s%s%s%s waits (%s) since %s: %s",
		strcmp(p.reason, PENDING_MODULE_ARGS) == 0  ? "new module parameters for "
		: strcmp(p.reason, PENDING_MIG_LAYOUT) == 0 ? "the GPU layout "
							    : "driver ",
		strcmp(p.reason, PENDING_MIG_LAYOUT) == 0 ? p.mig_layout : "",
		strcmp(p.reason, PENDING_MIG_LAYOUT) == 0 ? " for driver " : "", p.driver_version,
		p.reason, p.since[0] ? p.since : "?", p.waiting_for);
}

/* A pending version that failed and was withdrawn: the node serves, so a warning. */
static void check_pending_failed(struct doctor *d, const struct config *c, int root_fd)
{
	struct pending_failure f;

	if (pfail_read(c, root_fd, &f) != 1)
		return;
	doctor_add(
		d, V_WARN, "pending version failed",
		"fix the cause (" DOC_DIR
		"/exit-codes.md says what each exit code asks for), then delete the installer pod: its next run stages the version again from the repository",
		"driver %s failed at %s (exit %d) and was withdrawn, the current version serves: %s",
		f.driver_version, f.failed_at[0] ? f.failed_at : "?", f.exit_code, f.cause);
}

/* An install that waits for the repository to serve this node's package. */
static void check_waiting(struct doctor *d, const struct config *c, int root_fd)
{
	struct waiting w;
	char line[1600];

	if (session_waiting(c, root_fd, &w) != 1)
		return;
	session_waiting_text(&w, line, sizeof(line));
	doctor_add(
		d, V_WARN, "package",
		"publish a package of that driver for this kernel (build-driver-package, or the supply pass: building-packages.md): the installer installs it at its next check",
		"%s: %s", line, w.reason);
}

static void check_host_side(struct doctor *d, const struct nodestate *s)
{
	if (s->has_mount)
		doctor_add(d, s->mount.noexec ? V_FAIL : V_OK, "exec mount",
			   "re-run install: it bind-mounts the install dir exec",
			   "install dir on %s (%s %s)", s->mount.target, s->mount.fstype,
			   s->mount.options);
	if (s->has_mount)
		doctor_add(
			d, s->free_mib < LOW_DISK_MIB ? V_WARN : V_OK, "disk",
			"free space for the next version (a driver takes about 400 MiB unpacked)",
			"%llu MiB free on the install dir's file system",
			(unsigned long long)s->free_mib);
	if (!s->installed)
		return;
	doctor_add(d, s->nodes_ok ? V_OK : V_FAIL, "device nodes", "re-run install: it makes them",
		   "%zu /dev/nvidia* node(s)%s", s->n_nodes,
		   s->nodes_ok ? "" : "; nvidiactl or a per-GPU node is missing");
	doctor_add(
		d, s->ld_ok ? V_OK : V_FAIL, "ld cache",
		"re-run install, and check that the host's /etc/ld.so.conf includes ld.so.conf.d",
		"%s",
		s->ld_ok ? "the host's ld cache finds libcuda.so.1"
			 : "libcuda.so.1 is not in the host's ld cache");
	if (s->nvml_ok)
		doctor_add(d, V_OK, "nvml", NULL, "driver %s answers for %u GPU(s)",
			   s->nvml.driver_version, s->nvml.n_gpus);
	else if (s->nvml_error[0])
		doctor_add(d, V_FAIL, "nvml", "see dmesg for NVRM errors; re-run install", "%s",
			   s->nvml_error);
	/* Two specs of one kind: the runtime drops the device for every container. */
	if (s->cdi_other[0] && s->cdi_present)
		doctor_add(
			d, V_FAIL, "cdi",
			"the node agent withdraws ours at its next look (with --cdi-replace it sets theirs aside); without an agent re-run install",
			"%s, another producer's spec, declares our CDI kind as ours does: a runtime resolves neither's devices",
			s->cdi_other);
	else if (s->cdi_other[0])
		doctor_add(
			d, V_WARN, "cdi",
			"leave it, or install with --cdi-kind (ours beside theirs) or --cdi-replace",
			"%s, another producer's spec, declares our CDI kind: ours is withdrawn and the node's CDI devices are theirs",
			s->cdi_other);
	else if (s->ready_present)
		doctor_add(d, s->cdi_present ? V_OK : V_FAIL, "cdi", "re-run install",
			   "CDI spec %s",
			   s->cdi_present ? "present" : "absent although the driver is ready");
	doctor_add(d, s->ready_present ? V_OK : V_WARN, "ready", "re-run install",
		   "readiness marker %s", s->ready_present ? "present" : "absent");
}

/* The install dir's labels against those containers and the kernel need (host/selinux.h). */
static void check_labels(struct doctor *d, const struct config *c, int root_fd,
			 const struct selinux *se)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct selinux_mislabel m;
	char fix[384], want[300];
	struct err e;
	int r;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0)
		return; /* nothing installed: nothing to label */
	r = publish_find_mislabelled(dir, se, &m);
	if (r == -EOPNOTSUPP) {
		doctor_add(
			d, V_WARN, "selinux labels",
			"put the install dir on a file system with extended attributes, or mount it with context=\"" SELINUX_CONTAINER_TYPE
			"\"",
			"the install dir's file system keeps no SELinux labels: containers see its mount's context");
		return;
	}
	if (r == 0 && m.foreign)
		doctor_add(
			d, V_WARN, "selinux links",
			"remove it: the installer makes no such link, and containers must not read the file it names",
			"%zu entr%s of the install dir %s a hard link to a file that is not the installer's, left unlabelled: %s",
			m.foreign, m.foreign == 1 ? "y" : "ies", m.foreign == 1 ? "is" : "are",
			m.first_foreign);
	if (r < 0 || !m.count) {
		doctor_add(
			d, r < 0 ? V_WARN : V_OK, "selinux labels", "re-run install",
			r < 0 ? "the install dir's labels cannot be read: %s" : "%s",
			r < 0 ? strerror(-r)
			      : "every entry of the install dir carries its label (containers', or the kernel modules')");
		return;
	}
	if (se->modules_context[0]) {
		str_fmt_cut(want, sizeof(want), "%s; drivers/ %s", se->context,
			    se->modules_context);
		str_fmt_cut(
			fix, sizeof(fix),
			"re-run install (it labels them), or: chcon -R -h %s %s && chcon -R -h %s %s/.versions/*/drivers",
			se->context, c->install_dir, se->modules_context, c->install_dir);
	} else {
		str_fmt_cut(want, sizeof(want), "%s", se->context);
		str_fmt_cut(fix, sizeof(fix),
			    "re-run install (it labels them), or: chcon -R -h %s %s", se->context,
			    c->install_dir);
	}
	doctor_add(
		d, se->mode == SELINUX_ENFORCING ? V_FAIL : V_WARN, "selinux labels", fix,
		"%zu of %zu entries of the install dir lack their label (%s): %s: %s is %s",
		m.count, m.total, want,
		se->mode == SELINUX_ENFORCING
			? "containers, and the kernel for drivers/, are refused them"
			: "once enforcing, containers, and the kernel for drivers/, would be refused them",
		m.first, m.first_label[0] ? m.first_label : "unlabelled");
}

/* SELinux's mode, and whether what we publish carries the label containers need. */
static void check_selinux(struct doctor *d, const struct config *c, int root_fd,
			  const struct nodestate *s)
{
	const struct selinux *se = &s->host.selinux;

	if (se->mode == SELINUX_DISABLED) {
		doctor_add(d, V_OK, "selinux", NULL, "disabled: no labels needed");
		return;
	}
	if (!se->context[0]) {
		doctor_add(d, V_OK, "selinux", NULL,
			   "%s; the policy has no " SELINUX_CONTAINER_TYPE
			   " (no container policy): nothing is labelled",
			   selinux_mode_name(se->mode));
		return;
	}
	doctor_add(d, V_OK, "selinux", NULL, "%s; containers read what we publish as %s%s%s%s",
		   selinux_mode_name(se->mode), se->context,
		   se->modules_context[0] ? ", the kernel loads our modules as " : "",
		   se->modules_context,
		   se->checked ? ""
			       : " (not confirmed by the policy: selinuxfs is read-only here)");
	if (s->installed)
		check_labels(d, c, root_fd, se);
}

/*
 * The running kernel against the one the driver was installed for. After the node boots
 * another kernel no installed module can load, and install is the fix only where the
 * repository has a package for the new kernel (ANSWER, from check_repository). Check K
 * is the kernel line, first in the list: set here once the repository has answered.
 */
static void check_kernel(struct check *k, const struct nodestate *s,
			 const struct repo_answer *answer)
{
	const char *inst = s->manifest.kernel_release, *run = s->host.kernel;
	char head[sizeof(k->detail)], fix[sizeof(k->fix)];

	str_fmt_cut(head, sizeof(head), "%s (%s), os %s%s%s", run, s->host.arch,
		    s->host.os_id ? s->host.os_id : "?", s->host.os_build_id ? " build " : "",
		    s->host.os_build_id ? s->host.os_build_id : "");
	if (!s->installed || strcmp(inst, run) == 0) {
		doctor_set(k, V_OK, "kernel", NULL, "%s", head);
		return;
	}
	if (answer->what == ANSWER_SERVES)
		str_fmt_cut(
			fix, sizeof(fix),
			"run install: it installs driver %s, which the repository has for kernel %s",
			answer->version, run);
	else if (answer->what == ANSWER_NOTHING)
		str_fmt_cut(
			fix, sizeof(fix),
			"the repository has nothing to install on kernel %s (see the repository check): add a package for it (" DOC_DIR
			"/building-packages.md) and run install, or boot kernel %s again",
			run, inst);
	else if (answer->what == ANSWER_UNKNOWN)
		str_fmt_cut(
			fix, sizeof(fix),
			"run install once the repository answers (see the repository check): it installs a package for kernel %s if the repository has one; or boot kernel %s again",
			run, inst);
	else
		str_fmt_cut(
			fix, sizeof(fix),
			"run install with the node's repository (--repo): it installs a package for kernel %s if the repository has one, which 'doctor --repo URL' tells; or boot kernel %s again",
			run, inst);
	doctor_set(
		k, V_FAIL, "kernel", fix,
		"%s: the installed driver %s is for kernel %s: no installed package fits this kernel",
		head, s->manifest.driver_version, inst);
}

/*
 * The kernel the host boots next (host_boot_next): a self-managed host that installed a
 * kernel the repository has no package for comes up without a driver after its reboot.
 * A warning, as the node serves until then; no line where no installed kernel is found.
 */
static void check_next_boot(struct doctor *d, const struct nodestate *s, const struct host_boot *b,
			    const struct repo_answer *a)
{
	const char *run = s->host.kernel;
	char fix[sizeof(d->checks[0].fix)];

	if (!b->next[0])
		return;
	if (strcmp(b->next, run) == 0) {
		doctor_add(d, V_OK, "next boot", NULL, "kernel %s again: %s", run, b->why);
		return;
	}
	if (a->next.what == ANSWER_SERVES) {
		doctor_add(d, V_OK, "next boot", NULL,
			   "kernel %s (%s): the repository has driver %s for it", b->next, b->why,
			   a->next.version);
		return;
	}
	str_fmt_cut(
		fix, sizeof(fix),
		"build a package for kernel %s before the host reboots (a supply pass, or build-driver-package --kernel %s: " DOC_DIR
		"/building-packages.md), or pin the boot entry to kernel %s (grub-set-default, grubby --set-default, bootctl set-default)",
		b->next, b->next, run);
	if (a->next.what == ANSWER_NOTHING)
		doctor_add(d, V_WARN, "next boot", fix,
			   "the host boots kernel %s next (%s), and %s", b->next, b->why,
			   a->next.reason);
	else
		doctor_add(
			d, V_WARN, "next boot",
			a->next.what == ANSWER_NOT_ASKED ? "ask the repository with --repo" : fix,
			"the host boots kernel %s next (%s); whether the repository has a package for it is not known (%s)",
			b->next, b->why,
			a->next.what == ANSWER_NOT_ASKED ? "no --repo given"
							 : "see the repository check");
}

/* fail when a check failed, warn when one warns, else ok: what --json calls the verdict. */
static enum verdict overall(const struct doctor *d, size_t *ret_failed, size_t *ret_warned)
{
	size_t failed = 0, warned = 0;

	for (size_t i = 0; i < d->n; i++) {
		failed += d->checks[i].v == V_FAIL;
		warned += d->checks[i].v == V_WARN;
	}
	*ret_failed = failed;
	*ret_warned = warned;
	return failed ? V_FAIL : warned ? V_WARN : V_OK;
}

static void report_json(const struct doctor *d)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	json_object *arr = json_object_new_array();
	size_t failed, warned;
	enum verdict v = overall(d, &failed, &warned);

	json_object_object_add(o, "verdict", json_object_new_string(verdict_names[v]));
	json_object_object_add(o, "failed", json_object_new_int((int)failed));
	json_object_object_add(o, "warned", json_object_new_int((int)warned));
	for (size_t i = 0; i < d->n; i++) {
		const struct check *k = &d->checks[i];
		json_object *c = json_object_new_object();

		json_object_object_add(c, "check", json_object_new_string(k->name));
		json_object_object_add(c, "status", json_object_new_string(verdict_names[k->v]));
		json_object_object_add(c, "detail", json_object_new_string(k->detail));
		json_object_object_add(c, "fix", k->fix[0] ? json_object_new_string(k->fix) : NULL);
		json_object_array_add(arr, c);
	}
	json_object_object_add(o, "checks", arr);
	session_print_json(o);
}

static void report(const struct config *c, const struct doctor *d)
{
	if (c->json) {
		report_json(d);
		return;
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct check *k = &d->checks[i];

		out_line(stdout, "[%-4s] %-13s %s", verdict_names[k->v], k->name, k->detail);
		if (k->fix[0])
			out_line(stdout, "       %-13s fix: %s", "", k->fix);
	}
}

int doctor_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1;
	struct doctor d = {.n = 0};
	struct repo_answer answer;
	struct host_boot boot;
	struct check *kernel;
	const struct nodestate_opts no = session_nodestate_opts(c);
	struct nodestate s;
	size_t failed, warned;

	root_fd = session_open_root(c, e);
	if (root_fd < 0 || nodestate_collect(&no, root_fd, &s, e) < 0)
		return -1;
	if (host_boot_next(root_fd, &s.host, &boot, e) < 0) {
		nodestate_done(&s);
		return -1;
	}
	/* The kernel line leads; its verdict waits for the repository's answer. */
	kernel = &d.checks[d.n++];
	check_host_paths(&d, c, root_fd);
	check_gpus(&d, &s);
	doctor_check_partitions(&d, root_fd, c, &s);
	check_conflicts(&d, &s);
	check_repository(&d, c, root_fd, &s, &boot, &answer);
	check_kernel(kernel, &s, &answer);
	check_next_boot(&d, &s, &boot, &answer);
	if (answer.newest.what == ANSWER_NOTHING)
		doctor_check_newest_kernel(&d, &s, &boot, answer.newest.reason);
	check_trust(&d, c, root_fd, &s);
	check_installed(&d, &s);
	check_module_type(&d, &s);
	check_capabilities_record(&d, c, &s);
	doctor_check_imex(&d, root_fd, c, &s);
	doctor_check_nvsdm(&d, root_fd, c, &s);
	doctor_check_rdma(&d, root_fd, c, &s);
	check_pending(&d, c, root_fd);
	check_pending_failed(&d, c, root_fd);
	check_waiting(&d, c, root_fd);
	check_host_side(&d, &s);
	check_selinux(&d, c, root_fd, &s);
	report(c, &d);
	nodestate_done(&s);
	if (overall(&d, &failed, &warned) == V_FAIL) {
		err_set(e, EXIT_UNHEALTHY, "%zu check(s) failed", failed);
		err_hint(e, "each failed check above says what to do");
		return -1;
	}
	return 0;
}
