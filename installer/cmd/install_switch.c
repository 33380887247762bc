// SPDX-License-Identifier: Apache-2.0
/*
 * What install changes on the node (docs/design.md, "The kernel stage" and "Busy nodes"):
 * the installed version made live (its modules loaded, then exposed), which every path
 * ends in; once the plan calls for a change, the switch to a staged version and its
 * rollback, a change that waits for idle GPUs (the pending record), the fallback when the
 * pending version fails, and the reload of the live driver with new module parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/install_plan.h"
#include "cmd/install_switch.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

/* ---- the installed version ---------------------------------------------------- */

int install_load_current(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd =
		publish_version_subdir(run->dir, p->current_id, "drivers", e);
	uint64_t t0 = now_ns(), us;
	int r;

	/* 1 (a busy driver of another version) is a failure here, as -1 is. */
	if (drivers_fd < 0 || kernel_prepare(&(struct kernel_request){.opts = &run->ko,
								      .root_fd = run->root_fd,
								      .drivers_fd = drivers_fd,
								      .driver = install_current(p),
								      .installed = true},
					     &kn, e) != 0)
		return -1;
	us = us_since(t0);
	if (kernel_unload_old(kn, e) < 0)
		return -1;
	t0 = now_ns();
	r = kernel_load(kn, run->c->install_dir, e);
	install_time_load(&p->times, kn, us + us_since(t0), r == 0);
	return r;
}

void install_time_load(struct timing *t, const struct kernel *kn, uint64_t us, bool done)
{
	const struct kernel_load_times *lt = kernel_load_times(kn);
	uint64_t nodes = lt->devices_us < us ? lt->devices_us : us;

	t->insert_us += lt->insert_us;
	if (!done) {
		timing_add_failed(t, TIMING_KERNEL, us);
		return;
	}
	timing_add(t, TIMING_KERNEL, us - nodes);
	timing_add(t, TIMING_DEVICES, nodes);
}

int install_expose(struct run *run, const char *version, struct err *e)
{
	uint64_t t0 = now_ns();
	int r;

	memset(&run->xr, 0, sizeof(run->xr));
	/* Every run: a label lost since (a restorecon, a copy) is put back before Ready. */
	if (publish_label(run->dir, &run->p.host.selinux, e) < 0)
		return -1;
	r = expose_run(&run->xo, run->root_fd, publish_fd(run->dir), &run->p.host, version, e);
	/* Also when it stopped short of ready (no driver loaded, Fabric Manager to wait for). */
	if (r >= 0)
		timing_add(&run->p.times, TIMING_EXPOSE, us_since(t0));
	if (r >= 0 && install_layout_settle(run, e) < 0)
		return -1;
	return r < 0 ? -1 : 0;
}

int install_ensure(struct run *run, struct err *e)
{
	struct plan *p = &run->p;

	if (!p->links_ok) {
		if (publish_links(run->dir, e) < 0)
			return -1;
		log_kv(LOG_INFO, "publish", "links repaired", "version", p->current.driver_version,
		       LOG_END);
	}
	if (!run->c->skip_modules && install_load_current(run, e) < 0)
		return -1;
	return install_expose(run, p->current.driver_version, e);
}

/* The choice's manifest, for publish_stage; its strings are the plan's. */
static void manifest_fill(struct run *run, struct manifest *m, char now[STR_UTC_SIZE],
			  char caps[REPO_CAPS_TEXT_SIZE])
{
	struct plan *p = &run->p;

	str_utc_now(now);
	memset(m, 0, sizeof(*m));
	m->driver_version = p->choice.driver->version;
	m->kernel_release = p->host.kernel;
	m->package_sha256 = (char *)p->choice.pkg->sha256;
	m->package_size = p->choice.pkg->size;
	m->package_path = p->choice.pkg->path;
	m->repository = p->src.from_cache ? (char *)"cache" : p->src.mirrors[p->src.mirror];
	m->requested_version = run->c->driver_version;
	m->installed_at = now;
	m->os_id = p->host.os_id;
	m->arch = p->host.arch;
	m->key_fingerprint = p->src.fingerprint;
	m->module_type = (char *)repo_module_type_name(p->choice.pkg->module_type);
	/* What the CDI spec's graphics mounts follow, on this run and every later one. */
	m->capabilities =
		(char *)repo_caps_text(session_capabilities(run->c), caps, REPO_CAPS_TEXT_SIZE);
}

int install_pending_withdraw(struct run *run, struct err *e)
{
	if (pending_clear(publish_fd(run->dir), e) < 0 ||
	    labels_pending_write(run->root_fd, NULL, NULL, e) < 0)
		return -1;
	run->p.has_pending = false;
	return 0;
}

/*
 * After a failed load of the new version: the previous version current again
 * (or none), the new one gone, and the previous driver reloaded when it was
 * loaded before. Best effort; the original error stands. Returns 0, or -1 when the
 * previous version could not be made current again (logged).
 */
static int roll_back(struct run *run, bool reload_old)
{
	struct plan *p = &run->p;
	struct err re;

	err_clear(&re);
	/* A pending version that failed to load waits no more: the next run stages it again. */
	if (p->has_pending && install_pending_withdraw(run, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	err_clear(&re);
	if ((p->current_id[0] ? publish_activate(run->dir, p->current_id, &re)
			      : publish_deactivate(run->dir, &re)) < 0 ||
	    publish_cleanup(run->dir, &re) < 0) {
		log_msg(LOG_ERROR, "publish", "rollback failed: %s", re.msg);
		return -1;
	}
	if (reload_old && p->current_id[0] && install_load_current(run, &re) < 0) {
		log_msg(LOG_ERROR, "kernel", "the previous driver did not load again: %s", re.msg);
		return 0;
	}
	log_kv(LOG_WARN, "install", "rolled back", "current",
	       p->current_id[0] ? p->current.driver_version : "nothing", LOG_END);
	return 0;
}

/*
 * The pending version (the choice) failed, as E says: its staged copy did not verify or
 * could not be staged again, or its switch or load failed (rolled back). It waits no
 * more: the record goes, a report of the failure takes its place (status, doctor, labels
 * and metric show it: pfail_record), its tree goes with the cleanup, and the current
 * version loads and is made ready as if nothing had been pending, so a bad staged copy
 * never costs the node its verified driver. The run still fails with the pending
 * version's own error and exit code, so the next run stages the version again from the
 * repository.
 */
int install_pending_failed(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	struct driver_id failed = install_chosen(p);
	const char *version = failed.version;
	const char *current = p->has_current ? p->current.driver_version : "none";
	struct err re;
	int r;

	log_kv(LOG_WARN, "install",
	       "the pending version failed: it is withdrawn and the current version loads",
	       "pending", version, "current", current, "reason", e->msg, LOG_END);
	err_clear(&re);
	if ((p->has_pending && install_pending_withdraw(run, &re) < 0) ||
	    publish_cleanup(run->dir, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	pfail_record(run->root_fd, publish_fd(run->dir), &failed, e);
	err_clear(&re);
	if (!p->has_current)
		return err_wrap(e,
				"pending version %s withdrawn, no current version to load instead",
				version);
	/* The fallback is made ready whole (ldconfig, CUDA), a signal or not: see above. */
	interrupt_hold(true);
	r = install_ensure(run, &re);
	interrupt_hold(false);
	if (r < 0) {
		log_msg(LOG_ERROR, "install", "the current version did not load instead: %s",
			re.msg);
		return err_wrap(
			e,
			"pending version %s withdrawn, and the current version %s did not load instead (see the error above)",
			version, current);
	}
	return err_wrap(
		e,
		"pending version %s withdrawn, the current version %s loaded instead; the next run stages %s again",
		version, current, version);
}

/* Module parameters (MODULE.KEY=VALUE) space-separated, for the record and the log. */
static void join_args(char *const *v, size_t n, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", v[i]);
}

/* A change that waits: version ID, the driver DRIVER, for REASON; WHY holds the old driver. */
struct deferral {
	const char *id;
	struct driver_id driver;
	const char *reason; /* PENDING_DRIVER_IN_USE, PENDING_MODULE_ARGS, PENDING_MIG_LAYOUT */
	const char *why;
	const char *mig_layout; /* PENDING_MIG_LAYOUT's layout, or NULL */
};

/* Records what waits (atomically), and shows it to the cluster. Returns 0 or -1. */
static int pending_record(struct run *run, const struct deferral *d, struct err *e)
{
	struct plan *p = &run->p;
	struct pending pd = {.id = ""};

	snprintf(pd.id, sizeof(pd.id), "%s", d->id);
	snprintf(pd.driver_version, sizeof(pd.driver_version), "%s", d->driver.version);
	snprintf(pd.module_type, sizeof(pd.module_type), "%s",
		 d->driver.module_type ? d->driver.module_type : "");
	snprintf(pd.reason, sizeof(pd.reason), "%s", d->reason);
	str_fmt_cut(pd.requested, sizeof(pd.requested), "%s", run->c->driver_version);
	join_args(run->ko.module_args, run->ko.n_module_args, pd.module_args,
		  sizeof(pd.module_args));
	str_fmt_cut(pd.waiting_for, sizeof(pd.waiting_for), "%s", d->why);
	snprintf(pd.mig_layout, sizeof(pd.mig_layout), "%s", d->mig_layout ? d->mig_layout : "");
	/* Since the first run that deferred this very change. */
	if (p->has_pending && strcmp(p->pending.id, d->id) == 0 &&
	    strcmp(p->pending.reason, d->reason) == 0)
		snprintf(pd.since, sizeof(pd.since), "%s", p->pending.since);
	else
		str_utc_now(pd.since);
	if (pending_write(publish_fd(run->dir), &pd, e) < 0)
		return -1;
	p->pending = pd;
	p->has_pending = true;
	if (labels_pending_write(run->root_fd, d->driver.version, d->reason, e) < 0 ||
	    (strcmp(d->reason, PENDING_DRIVER_IN_USE) == 0 &&
	     pfail_clear(run->root_fd, publish_fd(run->dir), e) < 0))
		return -1;
	log_kv(LOG_WARN, "install",
	       "the loaded driver is busy: the change waits for idle GPUs or the next boot",
	       "pending", d->driver.version, "reason", d->reason, "current",
	       p->has_current ? p->current.driver_version : "none", "waiting_for", d->why, LOG_END);
	return 0;
}

int install_layout_settle(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	bool recorded = p->has_pending && strcmp(p->pending.reason, PENDING_MIG_LAYOUT) == 0;

	/* Another change that waits goes first: the layout is made after it, at its switch. */
	if (run->xr.layout_deferred && p->has_pending && !recorded) {
		log_kv(LOG_INFO, "install", "the GPU layout waits behind the pending change",
		       "layout", run->xr.layout, "pending", p->pending.driver_version, LOG_END);
		return 0;
	}
	if (run->xr.layout_deferred && p->has_current)
		return pending_record(run,
				      &(struct deferral){.id = p->current_id,
							 .driver = install_current(p),
							 .reason = PENDING_MIG_LAYOUT,
							 .why = run->xr.why,
							 .mig_layout = run->xr.layout},
				      e);
	if (!recorded || run->xr.layout_deferred)
		return 0;
	log_kv(LOG_INFO, "install", "the GPU layout that waited no longer waits", "layout",
	       p->pending.mig_layout, LOG_END);
	return install_pending_withdraw(run, e);
}

/*
 * The version's id under .versions/ into ID: ST published there with the choice's
 * manifest, or, when ST is NULL, the pending version already there. Returns 0, or -1
 * (the staging tree removed).
 */
static int version_in_place(struct run *run, const struct staged *st, char *id, size_t size,
			    struct err *e)
{
	char now[STR_UTC_SIZE], caps[REPO_CAPS_TEXT_SIZE];
	struct manifest m;

	if (!st) {
		snprintf(id, size, "%s", run->p.pending.id); /* both NAME_MAX + 1 */
		return 0;
	}
	manifest_fill(run, &m, now, caps);
	if (publish_stage(run->dir,
			  &(struct publish_request){.staging = st->name,
						    .staging_fd = st->fd,
						    .manifest = &m,
						    .selinux = &run->p.host.selinux},
			  id, size, e) < 0) {
		publish_staging_abort(run->dir, st->name);
		return -1;
	}
	return 0;
}

/*
 * A deferral that failed after it staged version ID (a full disk at the record or its
 * labels): nothing waits that the node does not show, so a record naming ID is withdrawn
 * and the version goes with the cleanup; a record left by an earlier run stays. Best
 * effort: the deferral's error is the one reported.
 */
static void drop_deferred(struct run *run, const char *id)
{
	struct err ce;

	err_clear(&ce);
	if ((run->p.has_pending && strcmp(run->p.pending.id, id) == 0 &&
	     install_pending_withdraw(run, &ce) < 0) ||
	    publish_cleanup(run->dir, &ce) < 0)
		log_msg(LOG_WARN, "install", "%s", ce.msg);
}

/*
 * The loaded driver is busy (--when-busy defer; WHY says who holds it): the new version,
 * its modules verified, goes into .versions/ beside the current one and is recorded as
 * pending; the current version stays loaded and is made sure of (links, CDI, labels,
 * readiness as they were).
 */
static int defer_switch(struct run *run, const struct staged *st, const char *why, struct err *e)
{
	char id[NAME_MAX + 1];

	if (version_in_place(run, st, id, sizeof(id), e) < 0)
		return -1;
	if (pending_record(run,
			   &(struct deferral){.id = id,
					      .driver = install_chosen(&run->p),
					      .reason = PENDING_DRIVER_IN_USE,
					      .why = why},
			   e) < 0) {
		if (st)
			drop_deferred(run, id);
		return -1;
	}
	if (publish_cleanup(run->dir, e) < 0)
		return -1;
	return run->p.has_current ? install_ensure(run, e) : 0;
}

/*
 * The kernel side of a switch, checked before anything changes: the modules of ST (or
 * of the staged pending version when ST is NULL) verified, conflicts judged, the old
 * driver's users found. Returns 0 (*RET set, or NULL with --skip-modules), 1 when the old
 * driver is busy and --when-busy defer lets the change wait (*RET set, E says who holds
 * it), or -1 (the staging tree removed).
 */
static int switch_prepare(struct run *run, const struct staged *st, struct publish_flush *flush,
			  struct kernel **ret, struct err *e)
{
	struct plan *p = &run->p;
	_cleanup_close_ int drivers_fd = -1;
	uint64_t t0 = now_ns();
	int r;

	*ret = NULL;
	if (run->c->skip_modules)
		return 0;
	drivers_fd = st ? openat(st->fd, "kernel", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			: publish_version_subdir(run->dir, p->pending.id, "drivers", e);
	if (drivers_fd < 0 && st)
		err_set(e, EXIT_VERIFY, "kernel: the package has no kernel/ directory");
	/* A staged pending version is verified again: it is what gets loaded now. */
	r = drivers_fd < 0 ? -1
			   : kernel_prepare(&(struct kernel_request){.opts = &run->ko,
								     .root_fd = run->root_fd,
								     .drivers_fd = drivers_fd,
								     .driver = install_chosen(p)},
					    ret, e);
	if (r != 0)
		publish_flush_end(flush);
	if (r < 0 && st)
		publish_staging_abort(run->dir, st->name);
	if (r >= 0)
		timing_add(&p->times, TIMING_KERNEL, us_since(t0));
	return r;
}

/*
 * The switch proper, once every check passed: ST (or the pending version) in place under
 * .versions/, the old driver out, the version current and its modules (KN, NULL with
 * --skip-modules) loaded. A failure rolls both back, the previous driver loaded again
 * when one was unloaded. Returns 0 or -1.
 */
static int switch_to(struct run *run, const struct staged *st, struct kernel *kn, bool is_pending,
		     struct err *e)
{
	struct plan *p = &run->p;
	bool reload = kn && kernel_will_reload(kn);
	char id[NAME_MAX + 1], what[512];
	uint64_t t0 = now_ns(), us;
	int r;

	if (version_in_place(run, st, id, sizeof(id), e) < 0)
		return -1;
	/*
	 * Every check passed (a busy old driver refused before leaves the node serving and
	 * ready): from here until the new driver is verified, the node is not ready, and its
	 * Node says so (once: a run that found no driver serving said it before the download).
	 */
	readiness_remove(run->root_fd);
	str_fmt_cut(what, sizeof(what), "switching from driver %s to %s",
		    p->has_current ? p->current.driver_version : "none", p->choice.driver->version);
	(void)nodeask_installing(run->ask, what);
	if ((kn && kernel_unload_old(kn, e) < 0) || publish_activate(run->dir, id, e) < 0) {
		if (roll_back(run, false) == 0 && is_pending)
			return install_pending_failed(run, e);
		return -1;
	}
	us = us_since(t0);
	timing_add(&p->times, TIMING_PUBLISH, us);
	log_kv(LOG_INFO, "publish", "driver published", "version", p->choice.driver->version,
	       "install_dir", run->c->install_dir, U64("duration_ms", us / 1000u), LOG_END);
	t0 = now_ns();
	if (!kn)
		return 0;
	r = kernel_load(kn, run->c->install_dir, e);
	install_time_load(&p->times, kn, us_since(t0), r == 0);
	if (r < 0) {
		if (roll_back(run, reload) == 0 && is_pending)
			return install_pending_failed(run, e);
		return -1;
	}
	return 0;
}

/*
 * The switch to a staged version: ST (a fresh staging tree), or, when ST is NULL, the
 * pending version already under .versions/. Everything that can be checked is checked
 * first (modules, conflicts, a busy old driver: exit 7, or with --when-busy defer the
 * version waits); then the old driver goes, the new tree becomes current and its modules
 * load (switch_to). With IS_PENDING (the choice is the pending version) any failure of
 * the version falls back to the current one (install_pending_failed).
 */
int install_switch(struct run *run, const struct staged *st, bool is_pending, struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct publish_flush flush = {.started = false};
	int r;

	/* The tree goes to disk while the modules are checked (CPU against I/O). */
	if (st)
		publish_flush_begin(&flush, st->fd);
	r = switch_prepare(run, st, &flush, &kn, e);
	if (r < 0)
		return is_pending && e->code != EXIT_IN_USE ? install_pending_failed(run, e) : -1;
	if (r > 0) {
		char why[1024];

		str_fmt_cut(why, sizeof(why), "%s", kernel_busy_reason(kn));
		err_clear(e);
		return defer_switch(run, st, why, e);
	}
	publish_flush_end(&flush);
	/* The last safe point before the switch: the old driver still serves, untouched. */
	if (interrupt_check(e, "the switch") < 0) {
		if (st)
			publish_staging_abort(run->dir, st->name);
		return -1;
	}
	if (switch_to(run, st, kn, is_pending, e) < 0)
		return -1;
	/*
	 * The switch is done: nothing waits any more (a record left by a crash here names current).
	 */
	if (install_pending_withdraw(run, e) < 0 ||
	    pfail_clear(run->root_fd, publish_fd(run->dir), e) < 0 ||
	    publish_cleanup(run->dir, e) < 0)
		return -1;
	return install_expose(run, run->p.choice.driver->version, e);
}

/*
 * The kernel refused the driver with the new module parameters (E says why; DIFF names the
 * change): the same version is loaded again with BEFORE, what the driver was loaded with
 * (kernel_previous_args): the whole set the installer recorded at that load, every
 * parameter of it, named by the new request or not, of the modules the request loads.
 * Without a record (a driver loaded by hand or by an older installer), the values the
 * kernel showed for the parameters the request names stand in, and the others take their
 * defaults. Restored, the node is ready again; if that load fails too, the node is left
 * as roll_back leaves a failed switch: the version current, no driver loaded, no
 * readiness, and the load's own fix stands (the cause is not the new values alone).
 * Either way nothing pending claims the refused parameters, and the run fails with the
 * load's error. Returns -1.
 */
static int reload_restore(struct run *run, const struct strv *before, const char *diff,
			  struct err *e)
{
	struct plan *p = &run->p;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct kernel_opts ko = run->ko;
	bool refused = err_errnum(e) == EINVAL, exposed;
	char args[512];
	struct err re;

	err_clear(&re);
	if (p->has_pending && install_pending_withdraw(run, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	err_clear(&re);
	ko.module_args = before->v;
	ko.n_module_args = before->n;
	join_args(before->v, before->n, args, sizeof(args));
	drivers_fd = publish_version_subdir(run->dir, p->current_id, "drivers", &re);
	if (drivers_fd < 0 ||
	    kernel_prepare(&(struct kernel_request){.opts = &ko,
						    .root_fd = run->root_fd,
						    .drivers_fd = drivers_fd,
						    .driver = install_current(p),
						    .installed = true},
			   &kn, &re) != 0 ||
	    kernel_load(kn, run->c->install_dir, &re) < 0) {
		log_msg(LOG_ERROR, "kernel",
			"the driver did not load again with its previous module parameters either: %s",
			re.msg);
		/* Not the new values alone, then: the load's own cause and fix stand. */
		return err_wrap(
			e,
			"the driver loaded neither with the new module parameters (%s) nor with the previous ones",
			diff);
	}
	log_kv(LOG_WARN, "kernel", "the driver runs again with its previous module parameters",
	       "version", p->current.driver_version, "parameters", args, LOG_END);
	/* Its verification too: the run ends with its own outcome, a signal after it. */
	interrupt_hold(true);
	exposed = install_expose(run, p->current.driver_version, &re) == 0;
	interrupt_hold(false);
	if (!exposed)
		log_msg(LOG_ERROR, "kernel",
			"the driver runs again with its previous module parameters, but it is not ready: %s",
			re.msg);
	/* EINVAL is the kernel's parse_args refusing a value; any other cause keeps its fix. */
	if (!refused)
		return err_wrap(
			e,
			"the driver did not load with the new module parameters (%s); it runs again with the previous ones%s",
			diff, exposed ? "" : " but is not ready (see the error above)");
	err_wrap(
		e,
		"new module parameters refused (%s); the driver runs again with the previous ones%s",
		diff, exposed ? "" : " but is not ready (see the error above)");
	snprintf(
		e->hint, sizeof(e->hint),
		"correct NVIDIA_MODULE_ARGS (--module-arg): the kernel refused a value; see dmesg");
	return -1;
}

/*
 * The live driver is the installed version with other module parameters than asked for
 * (DIFF says which): it is loaded again with them when idle; when busy, the change waits
 * (--when-busy defer) or the run fails with exit 7.
 */
int install_reload_args(struct run *run, const char *diff, struct err *e)
{
	struct plan *p = &run->p;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd =
		publish_version_subdir(run->dir, p->current_id, "drivers", e);
	_cleanup_(strv_clear) struct strv before = {0};
	char why[1024];
	int r;

	log_kv(LOG_INFO, "kernel", "the live driver runs with other module parameters", "changes",
	       diff, LOG_END);
	if (drivers_fd < 0 || kernel_prepare(&(struct kernel_request){.opts = &run->ko,
								      .root_fd = run->root_fd,
								      .drivers_fd = drivers_fd,
								      .driver = install_current(p)},
					     &kn, e) != 0)
		return -1;
	/* What the driver runs with, read while it still runs: reload_restore's parameters. */
	if ((r = kernel_previous_args(kn, &before)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "kernel: the live module parameters");
	/* From the unload on, a signal waits until the driver runs again (new or restored). */
	if (interrupt_check(e, "the reload") < 0)
		return -1;
	if (kernel_unload_current(kn, e) < 0) {
		if (e->code != EXIT_IN_USE || !run->ko.defer_busy)
			return -1;
		str_fmt_cut(why, sizeof(why), "%s", e->msg);
		err_clear(e);
		if (pending_record(run,
				   &(struct deferral){.id = p->current_id,
						      .driver = install_current(p),
						      .reason = PENDING_MODULE_ARGS,
						      .why = why},
				   e) < 0)
			return -1;
		return install_ensure(run, e);
	}
	readiness_remove(run->root_fd);
	str_fmt_cut(why, sizeof(why), "reloading driver %s with other module parameters (%s)",
		    p->current.driver_version, diff);
	(void)nodeask_installing(run->ask, why);
	if (kernel_load(kn, run->c->install_dir, e) < 0)
		return reload_restore(run, &before, diff, e);
	if (p->has_pending && install_pending_withdraw(run, e) < 0)
		return -1;
	log_kv(LOG_INFO, "kernel", "driver loaded again with the new module parameters", "version",
	       p->current.driver_version, LOG_END);
	return install_expose(run, p->current.driver_version, e);
}
