// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "source/source.h"
#include "expose/expose.h"
#include "host/host.h"
#include "cmd/cmd.h"
#include "cmd/install_plan.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "kernel/kernel.h"
#include "stage/stage.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

/* ---- install -------------------------------------------------------------- */

/* struct plan: cmd/install_plan.h */

static void plan_done(struct plan *p)
{
	host_done(&p->host);
	source_done(&p->src);
	manifest_done(&p->current);
	kernel_free(p->kernel);
}

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
}

static int probe_host(const struct config *c, int root_fd, struct host *h, struct timing *t,
		      struct err *e)
{
	uint64_t t0 = now_ns(), ms;

	if (host_probe(root_fd, c->kernel_release, h, e) < 0)
		return err_wrap(e, "host");
	ms = ms_since(t0);
	timing_add(t, TIMING_HOST, ms);
	log_host(h, ms);
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

static void manifest_fill(const struct config *c, struct plan *p, struct manifest *m,
			  char now[STR_UTC_SIZE])
{
	str_utc_now(now);
	memset(m, 0, sizeof(*m));
	m->driver_version = p->choice.driver->version;
	m->kernel_release = p->host.kernel;
	m->package_sha256 = (char *)p->choice.pkg->sha256;
	m->package_size = p->choice.pkg->size;
	m->package_path = p->choice.pkg->path;
	m->repository = p->src.from_cache ? (char *)"cache" : p->src.mirrors[p->src.mirror];
	m->requested_version = c->driver_version;
	m->installed_at = now;
	m->os_id = p->host.os_id;
	m->arch = p->host.arch;
	m->key_fingerprint = p->src.fingerprint;
	m->module_type = (char *)repo_module_type_name(p->choice.pkg->module_type);
}

/* Loads version ID's modules from the install dir (the re-run and reboot path). */
static int kernel_from_version(const struct config *c, struct plan *p, int root_fd,
			       struct installdir *dir, const char *id, const char *version,
			       const char *module_type, struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd = publish_version_subdir(dir, id, "drivers", e);
	struct kernel_opts ko = session_kernel_opts(c);
	uint64_t t0 = now_ns(), ms;

	/*
	 * 1: another version is loaded and busy. Here that is a failure (exit 7): what waits
	 * under --when-busy defer is a staged new version, not the installed one.
	 */
	if (drivers_fd < 0 ||
	    kernel_prepare(&(struct kernel_request){.opts = &ko,
						    .root_fd = root_fd,
						    .drivers_fd = drivers_fd,
						    .driver = {.version = version,
							       .module_type = module_type,
							       .kernel = p->host.kernel},
						    .installed = true},
			   &kn, e) != 0)
		return -1;
	ms = ms_since(t0);
	if (kernel_unload_old(kn, e) < 0)
		return -1;
	t0 = now_ns();
	if (kernel_load(kn, c->install_dir, e) < 0)
		return -1;
	timing_add(&p->times, TIMING_KERNEL, ms + ms_since(t0));
	return 0;
}

/* Makes VERSION usable and visible; its time counts when the driver was made ready. */
static int expose(const struct config *c, struct plan *p, int root_fd, struct installdir *dir,
		  const char *version, struct err *e)
{
	struct expose_opts xo = session_expose_opts(c);
	uint64_t t0 = now_ns();
	int r = expose_run(&xo, root_fd, publish_fd(dir), &p->host, version, e);

	if (r > 0)
		timing_add(&p->times, TIMING_EXPOSE, ms_since(t0));
	return r < 0 ? -1 : 0;
}

/* Removes the pending record and its labels (the version goes at the next cleanup). */
static int pending_withdraw(struct plan *p, int root_fd, struct installdir *dir, struct err *e)
{
	if (pending_clear(publish_fd(dir), e) < 0 ||
	    labels_pending_write(root_fd, NULL, NULL, e) < 0)
		return -1;
	p->has_pending = false;
	return 0;
}

/*
 * After a failed load of the new version: the previous version current again
 * (or none), the new one gone, and the previous driver reloaded when it was
 * loaded before. Best effort; the original error stands. Returns 0, or -1 when the
 * previous version could not be made current again (logged).
 */
static int roll_back(const struct config *c, struct plan *p, int root_fd, struct installdir *dir,
		     bool reload_old)
{
	struct err re;

	err_clear(&re);
	/* A pending version that failed to load waits no more: the next run stages it again. */
	if (p->has_pending && pending_withdraw(p, root_fd, dir, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	err_clear(&re);
	if ((p->current_id[0] ? publish_activate(dir, p->current_id, &re)
			      : publish_deactivate(dir, &re)) < 0 ||
	    publish_cleanup(dir, &re) < 0) {
		log_msg(LOG_ERROR, "publish", "rollback failed: %s", re.msg);
		return -1;
	}
	if (reload_old && p->current_id[0] &&
	    kernel_from_version(c, p, root_fd, dir, p->current_id, p->current.driver_version,
				p->current.module_type, &re) < 0) {
		log_msg(LOG_ERROR, "kernel", "the previous driver did not load again: %s", re.msg);
		return 0;
	}
	log_kv(LOG_WARN, "install", "rolled back", "current",
	       p->current_id[0] ? p->current.driver_version : "nothing", LOG_END);
	return 0;
}

static int ensure_installed(const struct config *c, struct plan *p, int root_fd,
			    struct installdir *dir, struct err *e);

/*
 * The pending version (the choice) failed, as E says: its staged copy did not verify or
 * could not be staged again, or its switch or load failed (rolled back). It waits no
 * more: the record goes, a report of the failure takes its place (status, doctor, labels
 * and metric show it: pfail_record), its tree goes with the cleanup, and the current version loads and is made ready as if nothing had
 * been pending, so a bad staged copy never costs the node its verified driver. The run
 * still fails with the pending version's own error and exit code, so the next run stages
 * the version again from the repository. Returns -1.
 */
static int pending_failed(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, struct err *e)
{
	const char *version = p->choice.driver->version;
	const char *current = p->has_current ? p->current.driver_version : "none";
	struct err re;

	log_kv(LOG_WARN, "install",
	       "the pending version failed: it is withdrawn and the current version loads",
	       "pending", version, "current", current, "reason", e->msg, LOG_END);
	err_clear(&re);
	if ((p->has_pending && pending_withdraw(p, root_fd, dir, &re) < 0) ||
	    publish_cleanup(dir, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	pfail_record(root_fd, publish_fd(dir),
		     &(struct driver_id){.version = version,
					 .module_type =
						 repo_module_type_name(p->choice.pkg->module_type)},
		     e);
	err_clear(&re);
	if (!p->has_current)
		return err_wrap(e,
				"pending version %s withdrawn, no current version to load instead",
				version);
	if (ensure_installed(c, p, root_fd, dir, &re) < 0) {
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

/* The modules' parameters, space-separated, for the pending record. */
static void join_args(const struct config *c, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->module_args.n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "",
					c->module_args.v[i]);
}

/* Records what waits (atomically), and shows it to the cluster. Returns 0 or -1. */
static int pending_record(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, const char *id, const char *version,
			  const char *module_type, const char *reason, const char *why,
			  struct err *e)
{
	struct pending pd = {.id = ""};

	snprintf(pd.id, sizeof(pd.id), "%s", id);
	snprintf(pd.driver_version, sizeof(pd.driver_version), "%s", version);
	snprintf(pd.module_type, sizeof(pd.module_type), "%s", module_type ? module_type : "");
	snprintf(pd.reason, sizeof(pd.reason), "%s", reason);
	str_fmt_cut(pd.requested, sizeof(pd.requested), "%s", c->driver_version);
	join_args(c, pd.module_args, sizeof(pd.module_args));
	str_fmt_cut(pd.waiting_for, sizeof(pd.waiting_for), "%s", why);
	/* Since the first run that deferred this very change. */
	if (p->has_pending && strcmp(p->pending.id, id) == 0 &&
	    strcmp(p->pending.reason, reason) == 0)
		snprintf(pd.since, sizeof(pd.since), "%s", p->pending.since);
	else
		str_utc_now(pd.since);
	if (pending_write(publish_fd(dir), &pd, e) < 0)
		return -1;
	p->pending = pd;
	p->has_pending = true;
	if (labels_pending_write(root_fd, version, reason, e) < 0 ||
	    (strcmp(reason, PENDING_DRIVER_IN_USE) == 0 &&
	     pfail_clear(root_fd, publish_fd(dir), e) < 0))
		return -1;
	log_kv(LOG_WARN, "install",
	       "the loaded driver is busy: the change waits for idle GPUs or the next boot",
	       "pending", version, "reason", reason, "current",
	       p->has_current ? p->current.driver_version : "none", "waiting_for", why, LOG_END);
	return 0;
}

/*
 * The version's id under .versions/ into ID: STAGING published there with manifest M, or,
 * when STAGING is NULL, the pending version already there. Returns 0, or -1 (the staging
 * tree removed).
 */
static int version_in_place(struct installdir *dir, const char *staging, int sfd,
			    const struct manifest *m, const struct plan *p, char *id, size_t size,
			    struct err *e)
{
	if (!staging) {
		snprintf(id, size, "%s", p->pending.id); /* both NAME_MAX + 1 */
		return 0;
	}
	if (publish_stage(
		    dir,
		    &(struct publish_request){.staging = staging, .staging_fd = sfd, .manifest = m},
		    id, size, e) < 0) {
		publish_staging_abort(dir, staging);
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
static void drop_deferred(struct plan *p, int root_fd, struct installdir *dir, const char *id)
{
	struct err ce;

	err_clear(&ce);
	if ((p->has_pending && strcmp(p->pending.id, id) == 0 &&
	     pending_withdraw(p, root_fd, dir, &ce) < 0) ||
	    publish_cleanup(dir, &ce) < 0)
		log_msg(LOG_WARN, "install", "%s", ce.msg);
}

/*
 * The loaded driver is busy (--when-busy defer): the new version, its modules verified,
 * goes into .versions/ beside the current one and is recorded as pending; the current
 * version stays loaded and is made sure of (links, CDI, labels, readiness as they were).
 */
static int defer_switch(const struct config *c, struct plan *p, int root_fd, struct installdir *dir,
			const char *staging, int sfd, const char *why, struct err *e)
{
	char id[NAME_MAX + 1], now[STR_UTC_SIZE];
	struct manifest m;

	manifest_fill(c, p, &m, now);
	if (version_in_place(dir, staging, sfd, &m, p, id, sizeof(id), e) < 0)
		return -1;
	if (pending_record(c, p, root_fd, dir, id, p->choice.driver->version,
			   repo_module_type_name(p->choice.pkg->module_type), PENDING_DRIVER_IN_USE,
			   why, e) < 0) {
		if (staging)
			drop_deferred(p, root_fd, dir, id);
		return -1;
	}
	if (publish_cleanup(dir, e) < 0)
		return -1;
	return p->has_current ? ensure_installed(c, p, root_fd, dir, e) : 0;
}

/*
 * The kernel side of a switch, checked before anything changes: the modules of STAGING (or
 * of the staged pending version when STAGING is NULL) verified, conflicts judged, the old
 * driver's users found. Returns 0 (*RET set, or NULL with --skip-modules), 1 when the old
 * driver is busy and --when-busy defer lets the change wait (*RET set, E says who holds
 * it), or -1 (the staging tree removed).
 */
static int switch_prepare(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, const char *staging, int sfd,
			  struct publish_flush *flush, struct kernel **ret, struct err *e)
{
	struct kernel_opts ko = session_kernel_opts(c);
	_cleanup_close_ int drivers_fd = -1;
	uint64_t t0 = now_ns();
	int r;

	*ret = NULL;
	if (c->skip_modules)
		return 0;
	drivers_fd =
		staging ? openat(sfd, "kernel", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			: publish_version_subdir(dir, p->pending.id, "drivers", e);
	if (drivers_fd < 0 && staging)
		err_set(e, EXIT_VERIFY, "kernel: the package has no kernel/ directory");
	/* A staged pending version is verified again: it is what gets loaded now. */
	r = drivers_fd < 0 ? -1
			   : kernel_prepare(
				     &(struct kernel_request){
					     .opts = &ko,
					     .root_fd = root_fd,
					     .drivers_fd = drivers_fd,
					     .driver = {.version = p->choice.driver->version,
							.module_type = repo_module_type_name(
								p->choice.pkg->module_type),
							.kernel = p->host.kernel}},
				     ret, e);
	if (r != 0)
		publish_flush_end(flush);
	if (r < 0 && staging)
		publish_staging_abort(dir, staging);
	if (r >= 0)
		timing_add(&p->times, TIMING_KERNEL, ms_since(t0));
	return r;
}

/*
 * The switch to a staged version: STAGING (a fresh staging tree, SFD on it), or, when
 * STAGING is NULL, the pending version already under .versions/. Everything that can be
 * checked is checked first (modules, conflicts, a busy old driver: exit 7, or with
 * --when-busy defer the version waits); then the old driver goes, the new tree becomes
 * current and its modules load. A load failure rolls both back. With IS_PENDING (the
 * choice is the pending version) any failure of the version falls back to the current
 * one (pending_failed).
 */
static int switch_version(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, const char *staging, int sfd, bool is_pending,
			  struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	char id[NAME_MAX + 1], now[STR_UTC_SIZE];
	struct publish_flush flush = {.started = false};
	struct manifest m;
	bool reload = false;
	uint64_t t0, ms;
	int r;

	/* The tree goes to disk while the modules are checked (CPU against I/O). */
	if (staging)
		publish_flush_begin(&flush, sfd);
	r = switch_prepare(c, p, root_fd, dir, staging, sfd, &flush, &kn, e);
	if (r < 0)
		return is_pending && e->code != EXIT_IN_USE ? pending_failed(c, p, root_fd, dir, e)
							    : -1;
	if (r > 0) {
		char why[1024];

		str_fmt_cut(why, sizeof(why), "%s", kernel_busy_reason(kn));
		err_clear(e);
		return defer_switch(c, p, root_fd, dir, staging, sfd, why, e);
	}
	reload = kn && kernel_will_reload(kn);
	publish_flush_end(&flush);
	/* The last safe point before the switch: the old driver still serves, untouched. */
	if (interrupt_check(e, "the switch") < 0) {
		if (staging)
			publish_staging_abort(dir, staging);
		return -1;
	}
	t0 = now_ns();
	manifest_fill(c, p, &m, now);
	if (version_in_place(dir, staging, sfd, &m, p, id, sizeof(id), e) < 0)
		return -1;
	/*
	 * Every check passed (a busy old driver refused above leaves the node serving and
	 * ready): from here until the new driver is verified, the node is not ready.
	 */
	readiness_remove(root_fd);
	if ((kn && kernel_unload_old(kn, e) < 0) || publish_activate(dir, id, e) < 0) {
		if (roll_back(c, p, root_fd, dir, false) == 0 && is_pending)
			return pending_failed(c, p, root_fd, dir, e);
		return -1;
	}
	ms = ms_since(t0);
	timing_add(&p->times, TIMING_PUBLISH, ms);
	log_kv(LOG_INFO, "publish", "driver published", "version", m.driver_version, "install_dir",
	       c->install_dir, U64("duration_ms", ms), LOG_END);
	t0 = now_ns();
	if (kn && kernel_load(kn, c->install_dir, e) < 0) {
		if (roll_back(c, p, root_fd, dir, reload) == 0 && is_pending)
			return pending_failed(c, p, root_fd, dir, e);
		return -1;
	}
	if (kn)
		timing_add(&p->times, TIMING_KERNEL, ms_since(t0));
	/* The switch is done: nothing waits any more (a record left by a crash here names current). */
	if (pending_withdraw(p, root_fd, dir, e) < 0 ||
	    pfail_clear(root_fd, publish_fd(dir), e) < 0 || publish_cleanup(dir, e) < 0)
		return -1;
	return expose(c, p, root_fd, dir, p->choice.driver->version, e);
}

static void inspect_mount(struct installdir *dir, struct plan *p)
{
	struct err e;

	err_clear(&e);
	if (mounts_lookup_fd(publish_fd(dir), "/proc/self/mountinfo", &p->mount, &e) < 0) {
		log_msg(LOG_DEBUG, "mounts", "%s", e.msg);
		return;
	}
	p->has_mount = true;
}

/*
 * The index and the choice. With REUSE the node's fresh copy of the index may serve
 * (SOURCE_REUSE); it may predate what is asked for (a version published since), so a
 * request it cannot satisfy is asked of the repository: freshness saves a request, it
 * never refuses what the repository has.
 */
static int plan_source(const struct config *c, struct cache *cache, struct plan *p, bool reuse,
		       struct err *e)
{
	struct source_opts so = session_source_opts(c);
	unsigned flags = c->dry_run ? 0 : SOURCE_STORE;
	uint64_t t0 = now_ns(), t_index, ms;
	int r;

	if (source_open(&so, cache, flags | (reuse ? SOURCE_REUSE : 0), &p->src, e) < 0)
		return -1;
	timing_add(&p->times, TIMING_INDEX, ms_since(t0));
	t0 = now_ns();
	r = repo_select(p->src.idx, &p->host, c->driver_version, session_kmt_policy(c), &p->choice,
			e);
	if (r < 0 && e->code == EXIT_NO_MATCH && p->src.fresh) {
		log_kv(LOG_INFO, "index",
		       "no match in the node's copy of the index: asking the repository", "request",
		       c->driver_version, LOG_END);
		err_clear(e);
		source_done(&p->src);
		t_index = now_ns();
		if (source_open(&so, cache, flags, &p->src, e) < 0)
			return -1;
		timing_add(&p->times, TIMING_INDEX, ms_since(t_index));
		r = repo_select(p->src.idx, &p->host, c->driver_version, session_kmt_policy(c),
				&p->choice, e);
	}
	/* Not the older copy's lack: why the mirrors' index could not be used (source.h). */
	if (r < 0 && e->code == EXIT_NO_MATCH && p->src.from_cache)
		return source_fallback_failed(&p->src, e);
	if (r < 0)
		return err_wrap(e, "select");
	ms = ms_since(t0);
	timing_add(&p->times, TIMING_SELECT, ms);
	log_kv(LOG_INFO, "select", "driver selected", "request", c->driver_version, "version",
	       p->choice.driver->version, "module_type",
	       repo_module_type_name(p->choice.pkg->module_type)
		       ? repo_module_type_name(p->choice.pkg->module_type)
		       : "unstated",
	       "package", p->choice.pkg->path, U64("duration_ms", ms), LOG_END);
	return 0;
}

/* Whether the choice is what is installed, and whether its package is in the cache. */
static void plan_compare(struct cache *cache, struct plan *p)
{
	publish_version_id(&(struct driver_id){.version = p->choice.driver->version,
					       .module_type = repo_module_type_name(
						       p->choice.pkg->module_type)},
			   p->choice.pkg->sha256, p->choice_id, sizeof(p->choice_id));
	p->up_to_date = p->has_current &&
			strcmp(p->current.package_sha256, p->choice.pkg->sha256) == 0 &&
			strcmp(p->current.kernel_release, p->host.kernel) == 0;
	p->cached = false;
	if (cache) {
		int fd = cache_package_open(cache, p->choice.pkg->sha256);

		p->cached = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
}

/* With the host probed: the index, the choice, and what is installed now. */
static int plan_make(const struct config *c, struct cache *cache, struct installdir *dir,
		     struct plan *p, struct err *e)
{
	int r;

	if (plan_source(c, cache, p, true, e) < 0)
		return -1;
	if (dir) {
		/* For the plan; an install learns it when it exposes the tree (mounts_expose). */
		if (c->dry_run)
			inspect_mount(dir, p);
		r = publish_current(dir, &p->current, e);
		if (r < 0) {
			/*
			 * The record of the current version is damaged (a torn write, a
			 * hand edit): it proves nothing, so the version is installed again,
			 * which writes a sound one.
			 */
			log_kv(LOG_WARN, "install",
			       "the installed version's manifest is damaged: installing again",
			       "reason", e->msg, LOG_END);
			err_clear(e);
			manifest_done(&p->current);
		}
		p->has_current = r == 0;
		p->links_ok = publish_links_ok(dir);
		publish_current_id(dir, p->current_id, sizeof(p->current_id));
		r = pending_read(publish_fd(dir), &p->pending, e);
		if (r < 0) {
			log_kv(LOG_WARN, "install",
			       "the pending upgrade's record is damaged: it is withdrawn", "reason",
			       e->msg, LOG_END);
			err_clear(e);
			p->pending_damaged = true;
		}
		p->has_pending = r == 0;
	}
	plan_compare(cache, p);
	return 0;
}

/* The installed version is the one wanted: links, then the kernel side. */
static int ensure_installed(const struct config *c, struct plan *p, int root_fd,
			    struct installdir *dir, struct err *e)
{
	if (!p->links_ok) {
		if (publish_links(dir, e) < 0)
			return -1;
		log_kv(LOG_INFO, "publish", "links repaired", "version", p->current.driver_version,
		       LOG_END);
	}
	if (!c->skip_modules &&
	    kernel_from_version(c, p, root_fd, dir, p->current_id, p->current.driver_version,
				p->current.module_type, e) < 0)
		return -1;
	return expose(c, p, root_fd, dir, p->current.driver_version, e);
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
static int hand_over(const struct config *c, int root_fd, struct err *e)
{
	_cleanup_close_ int fd = fs_dir_in_root(root_fd, c->install_dir, false, e);
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

/* The driver is in place: a stale cache entry is not worth failing for. */
static void keep_going(int r, struct err *e)
{
	if (r < 0) {
		log_msg(LOG_WARN, "cache", "%s", e->msg);
		err_clear(e);
	}
}

/*
 * The kernel refused the driver with the new module parameters (E says why; DIFF names the
 * change): the same version is loaded again with BEFORE, what the driver was loaded with
 * (kernel_previous_args): the whole set the installer recorded at that load, every
 * parameter of it, named by the new request or not, of the modules the request loads. Without a record (a driver loaded by
 * hand or by an older installer), the values the kernel showed for the parameters the
 * request names stand in, and the others take their defaults. Restored, the node is
 * ready again; if that load fails too, the node is left as roll_back leaves a failed
 * switch: the version current, no driver loaded, no readiness, and the load's own fix
 * stands (the cause is not the new values alone). Either way nothing pending claims the
 * refused parameters, and the run fails with the load's error.
 * Returns -1.
 */
static int reload_restore(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, const struct strv *before, const char *diff,
			  struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct kernel_opts ko = session_kernel_opts(c);
	bool refused = err_errnum(e) == EINVAL, exposed;
	char args[512] = "";
	size_t len = 0;
	struct err re;

	err_clear(&re);
	if (p->has_pending && pending_withdraw(p, root_fd, dir, &re) < 0)
		log_msg(LOG_WARN, "install", "%s", re.msg);
	err_clear(&re);
	ko.module_args = before->v;
	ko.n_module_args = before->n;
	for (size_t i = 0; i < before->n && len < sizeof(args); i++)
		len += (size_t)snprintf(args + len, sizeof(args) - len, "%s%s", i ? " " : "",
					before->v[i]);
	drivers_fd = publish_version_subdir(dir, p->current_id, "drivers", &re);
	if (drivers_fd < 0 ||
	    kernel_prepare(
		    &(struct kernel_request){.opts = &ko,
					     .root_fd = root_fd,
					     .drivers_fd = drivers_fd,
					     .driver = {.version = p->current.driver_version,
							.module_type = p->current.module_type,
							.kernel = p->host.kernel},
					     .installed = true},
		    &kn, &re) != 0 ||
	    kernel_load(kn, c->install_dir, &re) < 0) {
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
	exposed = expose(c, p, root_fd, dir, p->current.driver_version, &re) == 0;
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
static int reload_args(const struct config *c, struct plan *p, int root_fd, struct installdir *dir,
		       const char *diff, struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	_cleanup_close_ int drivers_fd = publish_version_subdir(dir, p->current_id, "drivers", e);
	struct kernel_opts ko = session_kernel_opts(c);
	_cleanup_(strv_clear) struct strv before = {0};
	char why[1024];
	int r;

	log_kv(LOG_INFO, "kernel", "the live driver runs with other module parameters", "changes",
	       diff, LOG_END);
	if (drivers_fd < 0 ||
	    kernel_prepare(
		    &(struct kernel_request){.opts = &ko,
					     .root_fd = root_fd,
					     .drivers_fd = drivers_fd,
					     .driver = {.version = p->current.driver_version,
							.module_type = p->current.module_type,
							.kernel = p->host.kernel}},
		    &kn, e) != 0)
		return -1;
	/* What the driver runs with, read while it still runs: reload_restore's parameters. */
	if ((r = kernel_previous_args(kn, &before)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "kernel: the live module parameters");
	/* From the unload on, a signal waits until the driver runs again (new or restored). */
	if (interrupt_check(e, "the reload") < 0)
		return -1;
	if (kernel_unload_current(kn, e) < 0) {
		if (e->code != EXIT_IN_USE || !ko.defer_busy)
			return -1;
		str_fmt_cut(why, sizeof(why), "%s", e->msg);
		err_clear(e);
		if (pending_record(c, p, root_fd, dir, p->current_id, p->current.driver_version,
				   p->current.module_type, PENDING_MODULE_ARGS, why, e) < 0)
			return -1;
		return ensure_installed(c, p, root_fd, dir, e);
	}
	readiness_remove(root_fd);
	if (kernel_load(kn, c->install_dir, e) < 0)
		return reload_restore(c, p, root_fd, dir, &before, diff, e);
	if (p->has_pending && pending_withdraw(p, root_fd, dir, e) < 0)
		return -1;
	log_kv(LOG_INFO, "kernel", "driver loaded again with the new module parameters", "version",
	       p->current.driver_version, LOG_END);
	return expose(c, p, root_fd, dir, p->current.driver_version, e);
}

/* Whether the live driver (the installed version) runs with other parameters; DIFF says. */
static bool args_differ(const struct config *c, const struct plan *p, int root_fd, char *diff,
			size_t size)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	struct kernel_opts ko = session_kernel_opts(c);
	struct err e;

	err_clear(&e);
	diff[0] = '\0';
	if (c->skip_modules || !p->has_current ||
	    kernel_probe(&ko, root_fd, p->host.kernel, &kn, &e) < 0)
		return false;
	return kernel_args_differ(kn, p->current.driver_version, diff, size);
}

/* A pending change the request no longer asks for: withdrawn, its version removed. */
static int pending_obsolete(const struct config *c, struct plan *p, int root_fd,
			    struct installdir *dir, struct err *e)
{
	log_kv(LOG_INFO, "install", "the pending change is no longer asked for: withdrawn",
	       "pending", p->has_pending ? p->pending.driver_version : "damaged record", "reason",
	       p->has_pending ? p->pending.reason : "", "request", c->driver_version, LOG_END);
	p->pending_damaged = false;
	return pending_withdraw(p, root_fd, dir, e) < 0 || publish_cleanup(dir, e) < 0 ? -1 : 0;
}

/*
 * Installs the choice: from its staged copy when it is the pending version (IS_PENDING)
 * and that copy is whole, else from its package. A staged copy that is missing or not a
 * directory of ours (a link) is staged again, the record and what it named removed first;
 * any failure of the pending version falls back to the current one (pending_failed).
 */
static int install_choice(const struct config *c, struct plan *p, int root_fd,
			  struct installdir *dir, struct cache *cache, bool is_pending,
			  struct err *e)
{
	char staging[NAME_MAX + 1];
	struct stage_times st = {0};
	_cleanup_close_ int sfd = -1;

	if (is_pending && publish_has_version(dir, p->pending.id)) {
		log_kv(LOG_INFO, "install", "the pending version is staged and verified", "version",
		       p->pending.driver_version, "since", p->pending.since, LOG_END);
		return switch_version(c, p, root_fd, dir, NULL, -1, true, e);
	}
	if (is_pending) {
		log_kv(LOG_WARN, "install",
		       "the pending version's staged copy is missing or not a directory: staging it again",
		       "pending", p->pending.driver_version, "id", p->pending.id, LOG_END);
		if (pending_withdraw(p, root_fd, dir, e) < 0 || publish_cleanup(dir, e) < 0)
			return -1;
	}
	sfd = stage_package(&(struct stage_request){.src = &p->src,
						    .cache = cache,
						    .pkg = p->choice.pkg,
						    .root_fd = root_fd,
						    .dir = dir},
			    staging, sizeof(staging), &st, e);
	if (st.downloaded)
		timing_add(&p->times, TIMING_DOWNLOAD, st.download_ms);
	if (st.unpacked)
		timing_add(&p->times, TIMING_UNPACK, st.unpack_ms);
	if (sfd < 0) {
		p->stage_failed = true;
		return is_pending ? pending_failed(c, p, root_fd, dir, e) : -1;
	}
	return switch_version(c, p, root_fd, dir, staging, sfd, is_pending, e);
}

/* What the plan calls for: make sure of what is installed, or install the choice. */
static int act(const struct config *c, struct plan *p, int root_fd, struct installdir *dir,
	       struct cache *cache, uint64_t t0, struct err *e)
{
	char diff[512];
	bool differ = p->up_to_date && args_differ(c, p, root_fd, diff, sizeof(diff));
	struct pending_plan pp =
		pending_decide(p->up_to_date, p->current_id, p->has_pending ? &p->pending : NULL,
			       p->choice_id, differ);
	int r;

	if (interrupt_check(e, "any change to the node") < 0)
		return -1;
	if ((pp.clear || p->pending_damaged) && pending_obsolete(c, p, root_fd, dir, e) < 0)
		return -1;
	if (pp.action == PENDING_RELOAD_ARGS)
		return reload_args(c, p, root_fd, dir, diff, e);
	if (pp.action == PENDING_ENSURE) {
		r = ensure_installed(c, p, root_fd, dir, e);
		/* A run killed after its switch left the previous package in the cache. */
		if (r == 0 && cache && p->current.package_sha256)
			keep_going(cache_prune(cache, p->current.package_sha256, e), e);
		if (r == 0)
			log_kv(LOG_INFO, "install", "already installed", "version",
			       p->current.driver_version, U64("duration_ms", ms_since(t0)),
			       LOG_END);
		return r;
	}
	r = install_choice(c, p, root_fd, dir, cache, pp.action == PENDING_USE_STAGED, e);
	/* A deferred version keeps its package in the cache beside the current one's. */
	if (r == 0 && !p->has_pending)
		keep_going(cache_prune(cache, p->choice.pkg->sha256, e), e);
	if (r == 0 && !p->has_pending)
		log_kv(LOG_INFO, "install", "driver installed", "version",
		       p->choice.driver->version, "previous",
		       p->has_current ? p->current.driver_version : "none",
		       U64("peak_rss_kib", peak_rss_kib()), U64("duration_ms", ms_since(t0)),
		       LOG_END);
	return r;
}

/*
 * A failed run that manages the kernel side and finds no driver loaded withdraws what says
 * one is ready (expose_withdraw_unloaded). Only under the node lock: without it, another
 * run may be between its unload and its load.
 */
static void no_driver_not_ready(const struct config *c, const struct plan *p, int root_fd)
{
	struct expose_opts xo = session_expose_opts(c);

	if (!c->skip_modules && p->host.kernel[0])
		expose_withdraw_unloaded(&xo, root_fd, p->host.kernel);
}

int install_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1, lock_fd = -1;
	_cleanup_(cache_freep) struct cache *cache = NULL;
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct hostpath_opts ho = session_hostpath_opts(c);
	struct kernel_opts ko = session_kernel_opts(c);
	struct plan p = {0};
	uint64_t t0 = now_ns();
	int r = -1;

	if (c->json && !c->dry_run) {
		err_set(e, EXIT_USAGE, "install: --json goes with --dry-run");
		err_hint(e, "an install reports through its log lines: --log-format json");
		return -1;
	}
	root_fd = session_open_root(c, e);
	if (root_fd < 0 || hostpath_check_config(&ho, root_fd, e) < 0 ||
	    (!c->dry_run && hostpath_check_install_writable(&ho, root_fd, e) < 0))
		return -1;
	/* A host we cannot serve is refused before anything is written to it. */
	if (probe_host(c, root_fd, &p.host, &p.times, e) < 0)
		goto out;
	/* An install dir that is not ours is refused before the lock or the cache is made. */
	if (publish_open(root_fd, c->install_dir, false, &dir, e) < 0 ||
	    (dir && publish_check_takeover(dir, c->install_dir, e) < 0))
		goto out;
	if (!c->dry_run && (lock_fd = session_lock(root_fd, e)) < 0)
		goto out;
	if (cache_open(root_fd, c->cache_dir, !c->dry_run, &cache, e) < 0 ||
	    (!dir && publish_open(root_fd, c->install_dir, !c->dry_run, &dir, e) < 0))
		goto out;
	if (dir && !c->dry_run && publish_cleanup(dir, e) < 0)
		goto out;
	if (plan_make(c, cache, dir, &p, e) < 0)
		goto out;
	if (c->dry_run) {
		struct err we;

		err_clear(&we);
		if (!c->skip_modules && kernel_probe(&ko, root_fd, p.host.kernel, &p.kernel, e) < 0)
			goto out;
		if (p.kernel) {
			/* The signer is known when the choice is the installed version. */
			_cleanup_close_ int drv =
				dir && p.up_to_date
					? publish_version_subdir(dir, p.current_id, "drivers", &we)
					: -1;
			struct ktrust_prediction pred;

			const struct repo_package *pkg = p.choice.pkg;

			kernel_predict(p.kernel, dir ? publish_fd(dir) : -1, drv,
				       pkg->has_signer ? pkg->signer_subject : NULL,
				       pkg->has_signer ? pkg->signer_key_id : NULL, &pred);
			err_clear(&we);
		}
		if (hostpath_check_install_writable(&ho, root_fd, &we) < 0)
			str_fmt_cut(p.not_writable, sizeof(p.not_writable), "%s", we.msg);
		if (c->json) {
			struct ktrust t = {.sig_enforce = ""};

			ktrust_probe(root_fd, &t);
			install_plan_print_json(c, &p, &t);
		} else {
			install_plan_print(c, &p);
		}
		r = 0;
	} else {
		r = act(c, &p, root_fd, dir, cache, t0, e);
		/*
		 * The package the node's fresh copy of the index names was not served as it
		 * said (removed, or replaced under the same path within max_age): the index is
		 * fetched and the choice made again, once.
		 */
		if (r < 0 && p.stage_failed && p.src.fresh &&
		    (e->code == EXIT_UNREACHABLE || e->code == EXIT_VERIFY)) {
			log_kv(LOG_WARN, "index",
			       "the package named by the node's copy of the index failed: asking the repository",
			       "reason", e->msg, LOG_END);
			err_clear(e);
			source_done(&p.src);
			memset(&p.choice, 0, sizeof(p.choice));
			p.stage_failed = false;
			r = plan_source(c, cache, &p, false, e);
			if (r == 0) {
				plan_compare(cache, &p);
				r = act(c, &p, root_fd, dir, cache, t0, e);
			}
		}
	}
out:
	if (r < 0 && lock_fd >= 0)
		no_driver_not_ready(c, &p, root_fd);
	/* Every run that holds the lock judges the failure report (a damaged one goes). */
	struct pending_failure pf;
	bool has_failed = dir && lock_fd >= 0 && pfail_load(root_fd, publish_fd(dir), &pf);
	if (c->metrics_file && !c->dry_run && root_fd >= 0) {
		struct err me;
		/* What is on disk now, also when the run failed before it read the record. */
		bool has_pending = dir && pending_read(publish_fd(dir), &p.pending, &me) == 0;

		err_clear(&me);
		struct metrics_report mr = {
			.exit_code = r == 0 ? 0 : e->code,
			.driver = {.version = p.choice.driver ? p.choice.driver->version : NULL,
				   .module_type = p.choice.pkg ? repo_module_type_name(
									 p.choice.pkg->module_type)
							       : NULL,
				   .kernel = p.host.kernel},
			.index_fallback =
				p.src.from_cache ? source_fallback_name(p.src.fallback) : NULL,
			.times = &p.times,
			.pending = has_pending ? &p.pending : NULL,
			.failed = has_failed ? &pf : NULL};

		if (metrics_write(root_fd, c->metrics_file, &mr, &me) < 0)
			log_msg(LOG_WARN, "metrics", "%s", me.msg);
	}
	plan_done(&p);
	/* The driver is installed; a signal since the last safe point only stops the hand-over. */
	if (r == 0 && c->exec_argv.n > 0 && !c->dry_run)
		r = interrupt_check(e, "the hand-over") < 0 ? -1 : hand_over(c, root_fd, e);
	return r;
}
