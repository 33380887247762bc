// SPDX-License-Identifier: Apache-2.0
/*
 * install: the pipeline of docs/design.md over one run record (struct run, cmd/install_record.h):
 * the host root, the host, the install dir and the lock, the index and the choice
 * (install_plan.c), then what the plan calls for: make sure of the installed version, or
 * stage the choice and switch to it (install_switch.c), exposed last; the report, and the
 * hand-over.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/install_plan.h"
#include "cmd/install_switch.h"
#include "cmd/install_wait.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

/* ---- the steps before the plan ------------------------------------------------ */

static void log_host(const struct host *h, uint64_t ms)
{
	char mods[512];

	install_describe_modules(h, mods, sizeof(mods));
	log_kv(LOG_INFO, "host", "host probed", "os", h->os_id, "version",
	       h->os_version_id ? h->os_version_id : "", "build",
	       h->os_build_id ? h->os_build_id : "", "kernel", h->kernel, "arch", h->arch,
	       U64("gpus", h->n_gpus), "modules", mods, U64("duration_ms", ms), LOG_END);
	for (size_t i = 0; i < h->n_gpus; i++) {
		char id[16];

		snprintf(id, sizeof(id), "%04x:%04x", h->gpus[i].vendor, h->gpus[i].device);
		log_kv(LOG_INFO, "host", "NVIDIA GPU", "address", h->gpus[i].bdf, "pci_id", id,
		       LOG_END);
	}
	if (h->selinux.mode != SELINUX_DISABLED)
		log_kv(LOG_INFO, "host",
		       h->selinux.context[0]
			       ? "SELinux: what containers read is published with the container label"
			       : "SELinux: the policy has no container_file_t: nothing is labelled",
		       "mode", selinux_mode_name(h->selinux.mode), "label",
		       h->selinux.context[0] ? h->selinux.context : "none", LOG_END);
	if (h->n_nvswitches > 0)
		log_kv(LOG_INFO, "host", "NVSwitch system: CUDA waits for Fabric Manager",
		       U64("nvswitches", h->n_nvswitches), LOG_END);
	if (h->nvlink.n_ports > 0)
		log_kv(LOG_INFO, "host",
		       "NVLink 5 system: CUDA waits for NVLSM and Fabric Manager on its management port",
		       "guid", h->nvlink.ports[0].guid_text, "device", h->nvlink.ports[0].ibdev,
		       "ib_umad", h->nvlink.ib_umad ? "loaded" : "not loaded", LOG_END);
}

/*
 * The host root and the host paths the configuration names, judged before anything is
 * written (an install also needs its dir writable). A run refused here writes no metrics:
 * the metrics file is one of those paths. Returns 0 or -1.
 */
static int open_root(struct run *run, struct err *e)
{
	const struct config *c = run->c;

	run->root_fd = session_open_root(c, e);
	if (run->root_fd < 0 || hostpath_check_config(&run->ho, run->root_fd, e) < 0 ||
	    (!c->dry_run && hostpath_check_install_writable(&run->ho, run->root_fd, e) < 0))
		return -1;
	return 0;
}

/* A host we cannot serve is refused before anything is written to it. Returns 0 or -1. */
static int probe_host(struct run *run, struct err *e)
{
	const struct config *c = run->c;
	struct host *h = &run->p.host;
	uint64_t t0 = now_ns(), us;

	if (host_probe(run->root_fd, c->kernel_release, h, e) < 0)
		return err_wrap(e, "host");
	us = us_since(t0);
	timing_add(&run->p.times, TIMING_HOST, us);
	log_host(h, us / 1000u);
	/* Refused here, before anything changes, not when verification comes after the switch. */
	if (c->skip_verify && h->n_gpus > 0) {
		err_set(e, EXIT_USAGE, "--skip-verify is for hosts without a GPU; this one has %zu",
			h->n_gpus);
		err_hint(
			e,
			"drop --skip-verify (NVIDIA_SKIP_VERIFY): a GPU node's driver is checked through NVML");
		return -1;
	}
	if (c->skip_modules)
		return 0;
	if (h->n_gpus == 0) {
		err_set(e, EXIT_NO_MATCH, "host: no NVIDIA GPU on the PCI bus");
		err_hint(e, "run on a GPU node, or pass --skip-modules to install user space only");
		return -1;
	}
	return 0;
}

/*
 * The install dir, the node lock, the cache, and what an interrupted run left removed. An
 * install dir that is not ours is refused before the lock or the cache is made; a dry run
 * takes no lock and makes nothing. Returns 0 or -1.
 */
static int lock_node(struct run *run, struct err *e)
{
	const struct config *c = run->c;

	if (publish_open(run->root_fd, c->install_dir, false, &run->dir, e) < 0 ||
	    (run->dir && publish_check_takeover(run->dir, c->install_dir, e) < 0))
		return -1;
	if (!c->dry_run && (run->lock_fd = session_lock(run->root_fd, e)) < 0)
		return -1;
	if (cache_open(run->root_fd, c->cache_dir, !c->dry_run, &run->cache, e) < 0 ||
	    (!run->dir &&
	     publish_open(run->root_fd, c->install_dir, !c->dry_run, &run->dir, e) < 0))
		return -1;
	if (run->dir && !c->dry_run && publish_cleanup(run->dir, e) < 0)
		return -1;
	return 0;
}

/* ---- act: what the plan calls for --------------------------------------------- */

/* The driver is in place: a stale cache entry is not worth failing for. */
static void keep_going(int r, struct err *e)
{
	if (r < 0) {
		log_msg(LOG_WARN, "cache", "%s", e->msg);
		err_clear(e);
	}
}

/* Whether the live driver (the installed version) runs with other parameters; DIFF says. */
static bool args_differ(const struct run *run, char *diff, size_t size)
{
	const struct plan *p = &run->p;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct err e;

	err_clear(&e);
	diff[0] = '\0';
	if (run->c->skip_modules || !p->has_current ||
	    kernel_probe(&run->ko, run->root_fd, p->host.kernel, &kn, &e) < 0)
		return false;
	/* The installed package's defaults count as asked for (kernel_use_package_args). */
	drivers_fd = publish_version_subdir(run->dir, p->current_id, "drivers", &e);
	if (drivers_fd < 0 || kernel_use_package_args(kn, drivers_fd, &e) < 0)
		log_kv(LOG_WARN, "install",
		       "the installed package's module parameters could not be read: compared without them",
		       "reason", e.msg, LOG_END);
	return kernel_args_differ(kn, p->current.driver_version, diff, size);
}

/* A pending change the request no longer asks for: withdrawn, its version removed. */
static int pending_obsolete(struct run *run, struct err *e)
{
	struct plan *p = &run->p;

	log_kv(LOG_INFO, "install", "the pending change is no longer asked for: withdrawn",
	       "pending", p->has_pending ? p->pending.driver_version : "damaged record", "reason",
	       p->has_pending ? p->pending.reason : "", "request", run->c->driver_version, LOG_END);
	p->pending_damaged = false;
	return install_pending_withdraw(run, e) < 0 || publish_cleanup(run->dir, e) < 0 ? -1 : 0;
}

/*
 * Installs the choice: from its staged copy when it is the pending version (IS_PENDING)
 * and that copy is whole, else from its package. A staged copy that is missing or not a
 * directory of ours (a link) is staged again, the record and what it named removed first;
 * any failure of the pending version falls back to the current one (install_pending_failed).
 */
static int install_choice(struct run *run, bool is_pending, struct err *e)
{
	struct plan *p = &run->p;
	char staging[NAME_MAX + 1];
	struct stage_times st = {0};
	_cleanup_close_ int sfd = -1;

	if (is_pending && publish_has_version(run->dir, p->pending.id)) {
		log_kv(LOG_INFO, "install", "the pending version is staged and verified", "version",
		       p->pending.driver_version, "since", p->pending.since, LOG_END);
		return install_switch(run, NULL, true, e);
	}
	if (is_pending) {
		log_kv(LOG_WARN, "install",
		       "the pending version's staged copy is missing or not a directory: staging it again",
		       "pending", p->pending.driver_version, "id", p->pending.id, LOG_END);
		if (install_pending_withdraw(run, e) < 0 || publish_cleanup(run->dir, e) < 0)
			return -1;
	}
	sfd = stage_package(&(struct stage_request){.src = &p->src,
						    .cache = run->cache,
						    .pkg = p->choice.pkg,
						    .root_fd = run->root_fd,
						    .dir = run->dir},
			    staging, sizeof(staging), &st, e);
	if (st.downloaded)
		timing_add(&p->times, TIMING_DOWNLOAD, st.download_us);
	if (st.unpacked)
		timing_add(&p->times, TIMING_UNPACK, st.unpack_us);
	if (sfd < 0) {
		p->stage_failed = true;
		return is_pending ? install_pending_failed(run, e) : -1;
	}
	return install_switch(run, &(struct staged){.name = staging, .fd = sfd}, is_pending, e);
}

/*
 * Whether the node serves a driver now, of VERSION (NULL: any): its nvidia module live at
 * it, in the installed flavour when the version is the installed one; with
 * --skip-modules, the installed version. Asked only where the Node is told (run->ask).
 */
static bool serves(const struct run *run, const char *version)
{
	const struct plan *p = &run->p;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	const char *live, *type;
	struct err e;

	if (run->c->skip_modules)
		return p->has_current &&
		       (!version || strcmp(version, p->current.driver_version) == 0);
	err_clear(&e);
	if (kernel_probe(&run->ko, run->root_fd, p->host.kernel, &kn, &e) < 0)
		return false;
	live = kernel_loaded_version(kn);
	type = kernel_loaded_module_type(kn);
	if (!live || (version && strcmp(live, version) != 0))
		return false;
	return !version || !p->has_current || !p->current.module_type || !type ||
	       strcmp(version, p->current.driver_version) != 0 ||
	       strcmp(type, p->current.module_type) == 0;
}

/*
 * The installed version asked for capabilities it was not installed for (its package
 * serves them: the plan checked): they join its record, which the CDI spec follows. Never
 * narrowed here: a run without --driver-capabilities (a boot, the agent's) keeps them.
 */
static int widen_record(struct run *run, struct err *e)
{
	unsigned rec = REPO_CAP_DEFAULT, asked = session_capabilities(run->c);
	char text[REPO_CAPS_TEXT_SIZE];

	if (run->p.current.capabilities && repo_caps_parse(run->p.current.capabilities, &rec) < 0)
		rec = REPO_CAP_DEFAULT;
	if ((rec & asked) == asked)
		return 0;
	repo_caps_text(rec | asked, text, sizeof(text));
	log_kv(LOG_INFO, "install", "the installed version is recorded for more capabilities",
	       "capabilities", text, LOG_END);
	return publish_record_capabilities(run->dir, text, e);
}

/* The installed version is the one wanted, as it runs: made sure of. */
static int act_ensure(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	char what[512];
	int r;

	/* A no-op run on a node that serves the version says nothing: the condition stays. */
	if (run->ask && !serves(run, p->current.driver_version)) {
		str_fmt_cut(what, sizeof(what), "loading driver %s", p->current.driver_version);
		(void)nodeask_installing(run->ask, what);
	}
	r = widen_record(run, e) < 0 ? -1 : install_ensure(run, e);

	/* A run killed after its switch left the previous package in the cache. */
	if (r == 0 && run->cache && p->current.package_sha256)
		keep_going(cache_prune(run->cache, p->current.package_sha256, e), e);
	if (r == 0)
		log_kv(LOG_INFO, "install", "already installed", "version",
		       p->current.driver_version, U64("duration_ms", ms_since(run->t0)), LOG_END);
	return r;
}

/* What the plan calls for: make sure of what is installed, or install the choice. */
static int act(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	char diff[512];
	bool differ = p->up_to_date && args_differ(run, diff, sizeof(diff));
	struct pending_plan pp =
		pending_decide(p->up_to_date, p->current_id, p->has_pending ? &p->pending : NULL,
			       p->choice_id, differ);
	int r;

	if (interrupt_check(e, "any change to the node") < 0)
		return -1;
	if ((pp.clear || p->pending_damaged) && pending_obsolete(run, e) < 0)
		return -1;
	if (pp.action == PENDING_RELOAD_ARGS)
		return install_reload_args(run, diff, e);
	if (pp.action == PENDING_ENSURE)
		return act_ensure(run, e);
	/* No driver serves: installing from now (the download); else from the switch on. */
	if (run->ask && !serves(run, NULL)) {
		char what[512];

		str_fmt_cut(what, sizeof(what), "installing driver %s", p->choice.driver->version);
		(void)nodeask_installing(run->ask, what);
	}
	r = install_choice(run, pp.action == PENDING_USE_STAGED, e);
	/* A deferred version keeps its package in the cache beside the current one's. */
	if (r == 0 && !p->has_pending)
		keep_going(cache_prune(run->cache, p->choice.pkg->sha256, e), e);
	if (r == 0 && !p->has_pending)
		log_kv(LOG_INFO, "install", "driver installed", "version",
		       p->choice.driver->version, "previous",
		       p->has_current ? p->current.driver_version : "none",
		       U64("peak_rss_kib", peak_rss_kib()), U64("duration_ms", ms_since(run->t0)),
		       LOG_END);
	return r;
}

/*
 * act, and once more when the package the node's fresh copy of the index names was not
 * served as it said (removed, or replaced under the same path within max_age): the index
 * is fetched and the choice made again, once.
 */
static int act_once_more(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	int r = act(run, e);

	if (r == 0 || !p->stage_failed || !p->src.fresh ||
	    (e->code != EXIT_UNREACHABLE && e->code != EXIT_VERIFY))
		return r;
	log_kv(LOG_WARN, "index",
	       "the package named by the node's copy of the index failed: asking the repository",
	       "reason", e->msg, LOG_END);
	err_clear(e);
	source_done(&p->src);
	memset(&p->choice, 0, sizeof(p->choice));
	p->stage_failed = false;
	if (install_plan_source(run, false, e) < 0)
		return -1;
	install_plan_compare(run);
	return act(run, e);
}

/* ---- the end of a run --------------------------------------------------------- */

/* The metrics file: what the run wanted and did, and what waits or failed on disk now. */
static void write_metrics(struct run *run, int exit_code, const struct pending_failure *failed)
{
	struct plan *p = &run->p;
	struct err me;
	/* What is on disk now, also when the run failed before it read the record. */
	bool has_pending = run->dir && pending_read(publish_fd(run->dir), &p->pending, &me) == 0;
	struct metrics_report mr = {
		.exit_code = exit_code,
		.driver = {.version = p->choice.driver ? p->choice.driver->version : NULL,
			   .module_type =
				   p->choice.pkg ? repo_module_type_name(p->choice.pkg->module_type)
						 : NULL,
			   .kernel = p->host.kernel},
		.index_fallback = p->src.from_cache ? source_fallback_name(p->src.fallback) : NULL,
		.times = &p->times,
		.pending = has_pending ? &p->pending : NULL,
		.failed = failed,
		.waiting = run->is_waiting ? &run->waiting : NULL};

	err_clear(&me);
	if (metrics_write(run->root_fd, run->c->metrics_file, &mr, &me) < 0)
		log_msg(LOG_WARN, "metrics", "%s", me.msg);
}

/*
 * The end of a run that opened the host root, whatever its result R (E when it failed).
 * A failed run that manages the kernel side and finds no driver loaded withdraws what
 * says one is ready (expose_withdraw_unloaded); only under the node lock: without it,
 * another run may be between its unload and its load. Every run that holds the lock
 * judges the failure report (a damaged one goes); the metrics file says what it did.
 */
static void report(struct run *run, int r, const struct err *e)
{
	const struct config *c = run->c;
	struct pending_failure pf;
	bool has_failed;

	if (r < 0 && run->lock_fd >= 0 && !c->skip_modules && run->p.host.kernel[0])
		expose_withdraw_unloaded(&run->xo, run->root_fd, run->p.host.kernel);
	has_failed = run->dir && run->lock_fd >= 0 &&
		     pfail_load(run->root_fd, publish_fd(run->dir), &pf);
	if (c->metrics_file && !c->dry_run)
		write_metrics(run, r == 0 ? 0 : e->code, has_failed ? &pf : NULL);
}

/* The metrics file between two checks of a wait: the last check's refusal E, and the wait. */
static void report_wait(struct run *run, const struct err *e)
{
	report(run, -1, e);
}

/*
 * The index, the choice and what is installed; with --wait-for-package, a refusal that a new
 * package lifts waits for it (install_wait). In a pod, the Node learns the node's image
 * first (cmd/nodeask.h).
 */
static int plan(struct run *run, struct err *e)
{
	static const struct wait_calls calls = {.report = report_wait};

	if (!run->c->dry_run)
		(void)nodeask_image(run->ask, &run->p.host);
	if (install_plan_make(run, true, e) == 0)
		return 0;
	return install_wait(run, &calls, e);
}

/* Sets variable NAME to DIR/SUB, then OLD (the inherited value, config_init's). */
static int env_prepend(const char *name, const char *old, const char *dir, const char *sub)
{
	_cleanup_free_ char *v = NULL;

	if (asprintf(&v, "%s/%s%s%s", dir, sub, old && *old ? ":" : "", old ? old : "") < 0)
		return -ENOMEM;
	return setenv(name, v, 1) < 0 ? -errno : 0;
}

/*
 * The hand-over (install ... -- CMD ARGS): CMD replaces this process, so it
 * has our pid and receives every signal meant for it, with the driver's
 * libraries and binaries first on LD_LIBRARY_PATH and PATH. Returns only on
 * failure, with 127 (not found) or 126 (not runnable), as shells do.
 */
static int hand_over(const struct run *run, struct err *e)
{
	const struct config *c = run->c;
	_cleanup_close_ int fd = fs_dir_in_root(run->root_fd, c->install_dir, false, e);
	char dir[PATH_MAX];
	int r;

	if (fd < 0 || (r = fs_fd_path(fd, dir, sizeof(dir))) < 0)
		return err_wrap(e, "hand-over");
	if ((r = env_prepend("LD_LIBRARY_PATH", c->inherited_ld_library_path, dir, "lib64")) < 0 ||
	    (r = env_prepend("PATH", c->inherited_path, dir, "bin")) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "hand-over: environment");
	log_kv(LOG_INFO, "install", "handing over", "command", c->exec_argv.v[0], "install_dir",
	       dir, LOG_END);
	fflush(NULL);
	execvp(c->exec_argv.v[0], c->exec_argv.v);
	r = errno;
	err_errno(e, r == ENOENT ? 127 : 126, r, "hand-over: cannot run '%s'", c->exec_argv.v[0]);
	err_hint(e, "the driver is installed; check the command after '--'");
	return -1;
}

static void plan_done(struct plan *p)
{
	host_done(&p->host);
	source_done(&p->src);
	manifest_done(&p->current);
	kernel_free(p->kernel);
	p->kernel = NULL;
}

/* What the run holds, let go in the order it was taken back: the lock last but the root. */
static void run_done(struct run *run)
{
	plan_done(&run->p);
	nodeask_free(run->ask);
	publish_free(run->dir);
	cache_free(run->cache);
	if (run->lock_fd >= 0)
		close(run->lock_fd);
	if (run->root_fd >= 0)
		close(run->root_fd);
}

int install_run(const struct config *c, struct err *e)
{
	_cleanup_(run_done) struct run run = {.c = c,
					      .ko = session_kernel_opts(c),
					      .xo = session_expose_opts(c),
					      .so = session_source_opts(c),
					      .ho = session_hostpath_opts(c),
					      .root_fd = -1,
					      .lock_fd = -1,
					      .t0 = now_ns()};
	int r;

	run.xo.result = &run.xr;
	if (c->json && !c->dry_run) {
		err_set(e, EXIT_USAGE, "install: --json goes with --dry-run");
		err_hint(e, "an install reports through its log lines: --log-format json");
		return -1;
	}
	/* In a pod, the Node is told (cmd/nodeask.h), also of a run that fails from here. */
	if (!c->dry_run)
		run.ask = nodeask_new(c, run.ask_off, sizeof(run.ask_off));
	if (open_root(&run, e) < 0) {
		(void)nodeask_failed(run.ask, e);
		return -1;
	}
	r = probe_host(&run, e);
	if (r == 0)
		r = lock_node(&run, e);
	if (r == 0)
		r = plan(&run, e); /* the index, the choice, what is installed */
	if (r == 0)
		r = c->dry_run ? install_dry_run(&run, e) : act_once_more(&run, e);
	/* Installed: the Node's ask, if any, withdrawn, and the wait's end told; or the failure. */
	if (r == 0 && !c->dry_run)
		(void)nodeask_done(run.ask, run.has_waited ? &run.waiting : NULL);
	if (r < 0 && !c->dry_run)
		(void)nodeask_failed(run.ask, e);
	/* Also for a failed run: the stages it finished, and the kernel's part of a refusal. */
	if (!c->dry_run && run.p.times.seen[TIMING_HOST])
		timing_log(&run.p.times, us_since(run.t0));
	report(&run, r, e);
	plan_done(&run.p);
	/* The driver is installed; a signal since the last safe point only stops the hand-over. */
	if (r == 0 && c->exec_argv.n > 0 && !c->dry_run)
		r = interrupt_check(e, "the hand-over") < 0 ? -1 : hand_over(&run, e);
	return r;
}
