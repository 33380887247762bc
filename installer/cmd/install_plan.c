// SPDX-License-Identifier: Apache-2.0
/*
 * install's plan, what it knows before it acts: the index, the choice, what is installed
 * and what waits; and the plan as a dry run shows it: text, and JSON (docs/json.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/install_plan.h"
#include "cmd/session.h"
#include "util/cleanup.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/out.h"
#include "util/str.h"

struct driver_id install_chosen(const struct plan *p)
{
	return (struct driver_id){.version = p->choice.driver->version,
				  .module_type = repo_module_type_name(p->choice.pkg->module_type),
				  .kernel = p->host.kernel};
}

struct driver_id install_current(const struct plan *p)
{
	return (struct driver_id){.version = p->current.driver_version,
				  .module_type = p->current.module_type,
				  .kernel = p->host.kernel};
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

/* The choice, logged; its time counts as the select stage's. */
static void log_choice(struct plan *p, const char *request, uint64_t t0)
{
	const char *type = repo_module_type_name(p->choice.pkg->module_type);
	uint64_t us = us_since(t0);

	timing_add(&p->times, TIMING_SELECT, us);
	log_kv(LOG_INFO, "select", "driver selected", "request", request, "version",
	       p->choice.driver->version, "module_type", type ? type : "unstated", "package",
	       p->choice.pkg->path, U64("duration_ms", us / 1000u), LOG_END);
}

/*
 * The index and the choice. With REUSE the node's fresh copy of the index may serve
 * (SOURCE_REUSE); it may predate what is asked for (a version published since), so a
 * request it cannot satisfy is asked of the repository: freshness saves a request, it
 * never refuses what the repository has.
 */
int install_plan_source(struct run *run, bool reuse, struct err *e)
{
	const struct config *c = run->c;
	struct plan *p = &run->p;
	unsigned flags = c->dry_run ? 0 : SOURCE_STORE;
	uint64_t t0 = now_ns(), t_index;
	int r;

	if (source_open(&run->so, run->cache, flags | (reuse ? SOURCE_REUSE : 0), &p->src, e) < 0)
		return -1;
	timing_add(&p->times, TIMING_INDEX, us_since(t0));
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
		if (source_open(&run->so, run->cache, flags, &p->src, e) < 0)
			return -1;
		timing_add(&p->times, TIMING_INDEX, us_since(t_index));
		r = repo_select(p->src.idx, &p->host, c->driver_version, session_kmt_policy(c),
				&p->choice, e);
	}
	/* Not the older copy's lack: why the mirrors' index could not be used (source.h). */
	if (r < 0 && e->code == EXIT_NO_MATCH && p->src.from_cache)
		return source_fallback_failed(&p->src, e);
	if (r < 0)
		return err_wrap(e, "select");
	if (session_check_capabilities(c, &p->choice, &p->host, e) < 0 ||
	    session_check_gpudirect(c, &p->choice, &p->host, e) < 0)
		return err_wrap(e, "select");
	log_choice(p, c->driver_version, t0);
	return 0;
}

void install_plan_compare(struct run *run)
{
	struct plan *p = &run->p;
	struct driver_id chosen = install_chosen(p);

	publish_version_id(&chosen, p->choice.pkg->sha256, p->choice_id, sizeof(p->choice_id));
	p->up_to_date = p->has_current &&
			strcmp(p->current.package_sha256, p->choice.pkg->sha256) == 0 &&
			strcmp(p->current.kernel_release, p->host.kernel) == 0;
	p->cached = false;
	if (run->cache) {
		int fd = cache_package_open(run->cache, p->choice.pkg->sha256);

		p->cached = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
}

/* What is installed now, and what waits. */
static void plan_installed(struct run *run, struct err *e)
{
	struct plan *p = &run->p;
	int r;

	/* For the plan; an install learns it when it exposes the tree (mounts_expose). */
	if (run->c->dry_run)
		inspect_mount(run->dir, p);
	r = publish_current(run->dir, &p->current, e);
	if (r < 0) {
		/*
		 * The record of the current version is damaged (a torn write, a hand edit): it
		 * proves nothing, so the version is installed again, which writes a sound one.
		 */
		log_kv(LOG_WARN, "install",
		       "the installed version's manifest is damaged: installing again", "reason",
		       e->msg, LOG_END);
		err_clear(e);
		manifest_done(&p->current);
	}
	p->has_current = r == 0;
	p->links_ok = publish_links_ok(run->dir);
	publish_current_id(run->dir, p->current_id, sizeof(p->current_id));
	r = pending_read(publish_fd(run->dir), &p->pending, e);
	if (r < 0) {
		log_kv(LOG_WARN, "install",
		       "the pending upgrade's record is damaged: it is withdrawn", "reason", e->msg,
		       LOG_END);
		err_clear(e);
		p->pending_damaged = true;
	}
	p->has_pending = r == 0;
}

int install_plan_make(struct run *run, bool reuse, struct err *e)
{
	if (install_plan_source(run, reuse, e) < 0)
		return -1;
	if (run->dir)
		plan_installed(run, e);
	install_plan_compare(run);
	return 0;
}

/* ---- the plan as text: install --dry-run ---------------------------------------- */

void install_describe_modules(const struct host *h, char *buf, size_t size)
{
	size_t len = 0;

	snprintf(buf, size, "%s", h->modules_known ? "none" : "unknown (no /proc/modules)");
	for (size_t i = 0; i < h->n_modules && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s", i ? ", " : "",
					h->modules[i].name, h->modules[i].version[0] ? " " : "",
					h->modules[i].version);
}

static void plan_print(const struct config *c, const struct plan *p)
{
	const struct repo_package *pkg = p->choice.pkg;
	const struct host *h = &p->host;
	char mods[512];

	out_line(stdout, "plan (dry run, nothing changed):");
	out_line(stdout, "  host:        %s%s%s, kernel %s (%s), %zu NVIDIA GPU(s)",
		 h->os_pretty ? h->os_pretty : h->os_id, h->os_build_id ? " build " : "",
		 h->os_build_id ? h->os_build_id : "", h->kernel, h->arch, h->n_gpus);
	for (size_t i = 0; i < h->n_gpus; i++)
		out_line(stdout, "               GPU %04x:%04x at %s", h->gpus[i].vendor,
			 h->gpus[i].device, h->gpus[i].bdf);
	if (p->src.fresh)
		out_line(
			stdout,
			"  repository:  %s (index signed by key %s; the node's copy, fetched %llds ago, fresh for %us)",
			p->src.mirrors[p->src.mirror], p->src.fingerprint, (long long)p->src.age_s,
			p->src.max_age_s);
	else if (p->src.from_cache)
		out_line(
			stdout,
			"  repository:  node cache, the mirrors' index unusable: %s (index signed by key %s)",
			source_fallback_name(p->src.fallback), p->src.fingerprint);
	else
		out_line(stdout, "  repository:  %s (index signed by key %s)",
			 p->src.mirrors[p->src.mirror], p->src.fingerprint);
	out_line(stdout, "  request:     %s -> driver %s%s%s%s", c->driver_version,
		 p->choice.driver->version, repo_module_type_name(pkg->module_type) ? ", " : "",
		 repo_module_type_name(pkg->module_type) ? repo_module_type_name(pkg->module_type)
							 : "",
		 repo_module_type_name(pkg->module_type) ? " modules" : "");
	out_line(stdout, "  package:     %s (%llu bytes, sha256 %s)", pkg->path,
		 (unsigned long long)pkg->size, pkg->sha256);
	if (p->has_current)
		out_line(stdout, "  installed:   %s%s%s%s for kernel %s (sha256 %.12s...)",
			 p->current.driver_version, p->current.module_type ? ", " : "",
			 p->current.module_type ? p->current.module_type : "",
			 p->current.module_type ? " modules" : "", p->current.kernel_release,
			 p->current.package_sha256);
	else
		out_line(stdout, "  installed:   nothing");
	if (p->up_to_date)
		out_line(stdout, "  action:      %s",
			 p->links_ok ? "none, already installed"
				     : "repair the install dir's links");
	else
		out_line(stdout, "  action:      %s, unpack, verify, publish%s",
			 p->cached ? "use the cached package" : "download",
			 p->has_current ? " (replacing the installed version)" : "");
	if (p->has_pending) {
		char line[1600];

		session_pending_text(&p->pending, line, sizeof(line));
		out_line(stdout, "  pending:     %s", line);
	}
	out_line(stdout, "  install dir: %s (host root %s)", c->install_dir, c->root);
	if (p->not_writable[0])
		out_line(stdout, "  WARNING:     %s: install will fail", p->not_writable);
	if (p->has_mount)
		out_line(stdout, "  mount:       %s (%s, %s)%s", p->mount.target, p->mount.fstype,
			 p->mount.options,
			 p->mount.noexec ? ": noexec, to be bind-mounted exec" : "");
	install_describe_modules(h, mods, sizeof(mods));
	out_line(stdout, "  modules now: %s", mods);
	if (p->kernel)
		kernel_describe(p->kernel, stdout);
	else
		out_line(stdout, "  kernel:      untouched (--skip-modules)");
}

/* ---- the plan as JSON: docs/json.md, "install --dry-run --json" ---------------- */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int by_key(const void *a, const void *b, const char *key)
{
	json_object *x, *y;

	json_object_object_get_ex(*(json_object *const *)a, key, &x);
	json_object_object_get_ex(*(json_object *const *)b, key, &y);
	return strcmp(json_object_get_string(x), json_object_get_string(y));
}

static int by_bdf(const void *a, const void *b)
{
	return by_key(a, b, "bdf");
}

static int by_name(const void *a, const void *b)
{
	return by_key(a, b, "name");
}

static json_object *strings_json(const char *const *v, size_t n, bool sort)
{
	json_object *a = json_object_new_array();
	const char **copy = calloc(n ? n : 1, sizeof(*copy));

	for (size_t i = 0; copy && i < n; i++)
		copy[i] = v[i];
	if (copy && sort)
		qsort(copy, n, sizeof(*copy), by_str);
	for (size_t i = 0; copy && i < n; i++)
		json_object_array_add(a, json_object_new_string(copy[i]));
	free(copy);
	return a;
}

static json_object *plan_host_json(const struct host *h)
{
	json_object *o = json_object_new_object(), *gpus = json_object_new_array(),
		    *mods = json_object_new_array();

	json_object_object_add(o, "os", json_object_new_string(h->os_id));
	json_object_object_add(o, "os_build", session_json_nonempty(h->os_build_id));
	json_object_object_add(o, "kernel", json_object_new_string(h->kernel));
	json_object_object_add(o, "arch", json_object_new_string(h->arch));
	for (size_t i = 0; i < h->n_gpus; i++) {
		json_object *g = json_object_new_object();
		char id[16];

		snprintf(id, sizeof(id), "%04x:%04x", h->gpus[i].vendor, h->gpus[i].device);
		json_object_object_add(g, "bdf", json_object_new_string(h->gpus[i].bdf));
		json_object_object_add(g, "pci_id", json_object_new_string(id));
		json_object_array_add(gpus, g);
	}
	json_object_array_sort(gpus, by_bdf);
	json_object_object_add(o, "gpus", gpus);
	for (size_t i = 0; i < h->n_modules; i++) {
		json_object *m = json_object_new_object();

		json_object_object_add(m, "name", json_object_new_string(h->modules[i].name));
		json_object_object_add(m, "version", session_json_nonempty(h->modules[i].version));
		json_object_array_add(mods, m);
	}
	json_object_array_sort(mods, by_name);
	json_object_object_add(o, "modules", mods);
	return o;
}

static json_object *plan_repository_json(const struct source *src)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "source",
			       json_object_new_string(src->fresh	? "node_cache_fresh"
						      : src->from_cache ? "node_cache_fallback"
									: "mirror"));
	json_object_object_add(o, "mirror",
			       src->from_cache ? NULL
					       : session_json_nonempty(src->mirrors[src->mirror]));
	json_object_object_add(o, "fallback_reason",
			       src->from_cache
				       ? session_json_nonempty(source_fallback_name(src->fallback))
				       : NULL);
	json_object_object_add(o, "key_fingerprint", json_object_new_string(src->fingerprint));
	return o;
}

/* Whether the chosen package's modules will load (kernel_predict), or null. */
static json_object *plan_prediction_json(const struct kernel *kn)
{
	const struct ktrust_prediction *pr = kernel_prediction(kn);
	json_object *o;

	if (!pr)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "verdict",
			       json_object_new_string(ktrust_verdict_name(pr->verdict)));
	json_object_object_add(o, "rule", json_object_new_string(pr->rule));
	json_object_object_add(o, "reason", json_object_new_string(pr->why));
	json_object_object_add(o, "needs", session_json_nonempty(pr->need));
	return o;
}

/* kernel.rdma: --rdma, the path the load would take, and why (or why it would refuse). */
static json_object *plan_rdma_json(const struct config *c, const struct plan *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "mode", json_object_new_string(c->rdma ? c->rdma : "off"));
	json_object_object_add(
		o, "path",
		json_object_new_string(p->has_rdma ? kernel_rdma_path_name(p->rdma.path) : "none"));
	json_object_object_add(o, "reason",
			       json_object_new_string(p->has_rdma ? p->rdma.why : "--rdma off"));
	json_object_object_add(o, "refused", json_object_new_boolean(p->has_rdma && p->rdma.code));
	return o;
}

static json_object *plan_kernel_json(const struct config *c, const struct plan *p,
				     const struct ktrust *t)
{
	json_object *o;

	if (!p->kernel)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "sig_enforce", json_object_new_string(t->sig_enforce));
	json_object_object_add(o, "lockdown", json_object_new_string(t->lockdown));
	json_object_object_add(o, "secure_boot", json_object_new_string(t->secure_boot));
	json_object_object_add(o, "loadpin", json_object_new_string(t->loadpin));
	json_object_object_add(o, "trusted_keys",
			       t->has_keys ? json_object_new_int((int)t->n_keys) : NULL);
	json_object_object_add(o, "keyrings",
			       t->has_keys ? session_json_nonempty(t->keyrings) : NULL);
	json_object_object_add(o, "prediction", plan_prediction_json(p->kernel));
	json_object_object_add(o, "loaded_version",
			       session_json_nonempty(kernel_loaded_version(p->kernel)));
	json_object_object_add(o, "loaded_module_type",
			       session_json_nonempty(kernel_loaded_module_type(p->kernel)));
	json_object_object_add(
		o, "modules",
		c->modules.n ? strings_json((const char *const *)c->modules.v, c->modules.n, true)
			     : strings_json((const char *const *)kernel_default_modules,
					    kernel_n_default_modules, true));
	json_object_object_add(
		o, "module_args",
		strings_json((const char *const *)c->module_args.v, c->module_args.n, false));
	json_object_object_add(
		o, "module_certs",
		strings_json((const char *const *)c->module_certs.v, c->module_certs.n, false));
	json_object_object_add(o, "rdma", plan_rdma_json(c, p));
	return o;
}

static void plan_print_json(const struct config *c, const struct plan *p, const struct ktrust *t)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	const struct repo_package *pkg = p->choice.pkg;
	json_object *po = json_object_new_object(), *cur = NULL, *mnt = NULL;

	json_object_object_add(o, "root", json_object_new_string(c->root));
	json_object_object_add(o, "install_dir", json_object_new_string(c->install_dir));
	json_object_object_add(o, "host", plan_host_json(&p->host));
	json_object_object_add(o, "repository", plan_repository_json(&p->src));
	json_object_object_add(o, "request", json_object_new_string(c->driver_version));
	json_object_object_add(o, "driver_version",
			       json_object_new_string(p->choice.driver->version));
	json_object_object_add(po, "path", json_object_new_string(pkg->path));
	json_object_object_add(po, "size", json_object_new_int64((int64_t)pkg->size));
	json_object_object_add(po, "sha256", json_object_new_string(pkg->sha256));
	json_object_object_add(po, "module_type",
			       session_json_nonempty(repo_module_type_name(pkg->module_type)));
	json_object_object_add(po, "cached", json_object_new_boolean(p->cached));
	json_object_object_add(o, "package", po);
	if (p->has_current) {
		cur = json_object_new_object();
		json_object_object_add(cur, "driver_version",
				       json_object_new_string(p->current.driver_version));
		json_object_object_add(cur, "kernel_release",
				       json_object_new_string(p->current.kernel_release));
		json_object_object_add(cur, "package_sha256",
				       json_object_new_string(p->current.package_sha256));
		json_object_object_add(cur, "module_type",
				       session_json_nonempty(p->current.module_type));
	}
	json_object_object_add(o, "installed", cur);
	json_object_object_add(o, "action",
			       json_object_new_string(!p->up_to_date ? "install"
						      : p->links_ok  ? "none"
								     : "repair_links"));
	json_object_object_add(o, "not_writable", session_json_nonempty(p->not_writable));
	json_object_object_add(o, "pending_upgrade",
			       session_pending_json(p->has_pending ? &p->pending : NULL));
	if (p->has_mount) {
		mnt = json_object_new_object();
		json_object_object_add(mnt, "target", json_object_new_string(p->mount.target));
		json_object_object_add(mnt, "fstype", json_object_new_string(p->mount.fstype));
		json_object_object_add(mnt, "options", json_object_new_string(p->mount.options));
		json_object_object_add(mnt, "noexec", json_object_new_boolean(p->mount.noexec));
	}
	json_object_object_add(o, "mount", mnt);
	json_object_object_add(o, "kernel", plan_kernel_json(c, p, t));
	session_print_json(o);
}

/*
 * Whether the kernel will take the choice's modules (kernel_predict). The signer is known
 * when the choice is the installed version (its nvidia.ko); otherwise it is what the
 * signed index says of the package, if anything.
 */
static void predict(struct run *run)
{
	struct plan *p = &run->p;
	const struct repo_package *pkg = p->choice.pkg;
	const struct kernel_signer by = {pkg->signer_subject, pkg->signer_key_id,
					 pkg->signer_sha256};
	_cleanup_close_ int drv = -1;
	struct ktrust_prediction pred;
	struct err we;

	err_clear(&we);
	if (run->dir && p->up_to_date)
		drv = publish_version_subdir(run->dir, p->current_id, "drivers", &we);
	kernel_predict(p->kernel, run->dir ? publish_fd(run->dir) : -1, drv,
		       pkg->has_signer ? &by : NULL, &pred);
}

int install_dry_run(struct run *run, struct err *e)
{
	const struct config *c = run->c;
	struct plan *p = &run->p;
	struct err we;

	if (!c->skip_modules &&
	    kernel_probe(&run->ko, run->root_fd, p->host.kernel, &p->kernel, e) < 0)
		return -1;
	if (p->kernel)
		predict(run);
	if (p->kernel && run->ko.rdma != KERNEL_RDMA_OFF) {
		const struct repo_package *pkg = p->choice.pkg;
		struct kernel_rdma_probe rp;

		/* The package is not at hand yet: its nvidia-peermem is judged at the load. */
		if (kernel_rdma_plan(
			    &(struct kernel_rdma_plan_request){
				    .mode = run->ko.rdma,
				    .root_fd = run->root_fd,
				    .release = p->host.kernel,
				    .module_type = pkg && pkg->module_type != REPO_MT_UNSTATED
							   ? repo_module_type_name(pkg->module_type)
							   : NULL,
				    .drivers_fd = -1},
			    &rp, &p->rdma, e) < 0)
			return -1;
		p->has_rdma = true;
	}
	err_clear(&we);
	if (hostpath_check_install_writable(&run->ho, run->root_fd, &we) < 0)
		str_fmt_cut(p->not_writable, sizeof(p->not_writable), "%s", we.msg);
	if (c->json) {
		struct ktrust t = {.sig_enforce = ""};

		ktrust_probe(run->root_fd, &t);
		plan_print_json(c, p, &t);
	} else {
		plan_print(c, p);
	}
	return 0;
}
