// SPDX-License-Identifier: Apache-2.0
/* The read-mostly subcommands: list-versions, status, uninstall. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/config_check.h"
#include "cmd/session.h"
#include "expose/expose.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "source/source.h"
#include "stage/stage.h"
#include "util/interrupt.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/out.h"

/* ---- list-versions ------------------------------------------------------- */

/*
 * Whether a mirror carries a driver's package (source_probe_package): the index is the
 * trust, but a partial mirror keeps the whole index and only some packages.
 */
struct carried {
	int r;	       /* 1 carried, 0 no mirror has it, -1 not known (or not installable) */
	size_t mirror; /* r == 1: which */
};

static void verdict_reason(const struct repo_judgement *j, const struct host *h, char *buf,
			   size_t size)
{
	if (j->verdict == REPO_GPU_UNSUPPORTED)
		snprintf(buf, size, "does not support GPU %04x:%04x at %s", j->gpu->vendor,
			 j->gpu->device, j->gpu->bdf);
	else if (j->verdict == REPO_MODULE_TYPE)
		snprintf(buf, size, "%s", j->kmt.reason);
	else
		snprintf(buf, size, "no package for kernel %s (%s, os %s%s%s)", h->kernel, h->arch,
			 h->os_id, h->os_build_id ? ", build " : "",
			 h->os_build_id ? h->os_build_id : "");
}

static void not_carried_reason(const struct repo_package *pkg, char *buf, size_t size)
{
	snprintf(buf, size,
		 "no mirror carries its package '%s' (a partial mirror keeps the whole index)",
		 pkg->path);
}

/*
 * Asks the mirrors about the package of each driver the index calls installable here.
 * NULL on ENOMEM. Not knowing (a mirror that does not answer) keeps the index's word.
 */
static struct carried *probe_carried(struct source *src, const struct host *h,
				     enum repo_kmt_policy policy)
{
	struct carried *car = calloc(src->idx->n_drivers ? src->idx->n_drivers : 1, sizeof(*car));

	for (size_t i = 0; car && i < src->idx->n_drivers; i++) {
		const struct repo_package *pkg;
		struct repo_judgement j;
		struct err pe;

		car[i].r = -1;
		if (repo_driver_judge(&src->idx->drivers[i], h, policy, &j) != REPO_OK)
			continue;
		pkg = j.pkg;
		err_clear(&pe);
		car[i].r = source_probe_package(src, pkg, &car[i].mirror, &pe);
		if (car[i].r < 0)
			log_kv(LOG_DEBUG, "list", "not known whether a mirror carries the package",
			       "package", pkg->path, "reason", pe.msg, LOG_END);
	}
	return car;
}

/* The index's word on who signs the package's modules; null when it does not say. */
static json_object *signer_json(const struct repo_package *pkg)
{
	json_object *s;

	if (!pkg->has_signer)
		return NULL;
	s = json_object_new_object();
	json_object_object_add(s, "subject", json_object_new_string(pkg->signer_subject));
	json_object_object_add(s, "key_id", json_object_new_string(pkg->signer_key_id));
	json_object_object_add(s, "sha256", json_object_new_string(pkg->signer_sha256));
	return s;
}

/* The flavours offered for the host but not taken, and why. */
static json_object *excluded_json(const struct repo_judgement *j)
{
	json_object *arr = json_object_new_array();

	for (unsigned t = REPO_MT_PROPRIETARY; t < REPO_MT_COUNT; t++) {
		json_object *x;

		if (!j->kmt.excluded[t][0])
			continue;
		x = json_object_new_object();
		json_object_object_add(
			x, "module_type",
			json_object_new_string(repo_module_type_name((enum repo_module_type)t)));
		json_object_object_add(x, "reason", json_object_new_string(j->kmt.excluded[t]));
		json_object_array_add(arr, x);
	}
	return arr;
}

/*
 * What list-versions judges each driver of the index by, in both forms: the host, the
 * setting, the drivers the tags name (or NULL), and which mirror carries each driver's
 * package (CAR, one per driver of SRC's index).
 */
struct listing {
	const struct source *src;
	const struct host *h;
	enum repo_kmt_policy policy;
	const struct repo_driver *def, *latest;
	const struct carried *car;
};

/* Driver I of the index. */
static json_object *driver_json(const struct listing *l, size_t i)
{
	const struct repo_driver *d = &l->src->idx->drivers[i];
	const struct host *h = l->h;
	const struct carried *car = &l->car[i];
	struct repo_judgement j;
	enum repo_verdict v = repo_driver_judge(d, h, l->policy, &j);
	const struct repo_package *pkg = j.pkg;
	json_object *o = json_object_new_object(), *tags = json_object_new_array();
	char reason[640];
	bool not_carried = v == REPO_OK && car->r == 0;

	for (size_t t = 0; t < d->n_tags; t++)
		json_object_array_add(tags, json_object_new_string(d->tags[t]));
	json_object_object_add(o, "version", json_object_new_string(d->version));
	json_object_object_add(o, "tags", tags);
	json_object_object_add(o, "installable",
			       json_object_new_boolean(v == REPO_OK && !not_carried));
	json_object_object_add(o, "default", json_object_new_boolean(d == l->def));
	json_object_object_add(o, "latest", json_object_new_boolean(d == l->latest));
	json_object_object_add(
		o, "module_type",
		session_json_string(v == REPO_OK ? repo_module_type_name(pkg->module_type) : NULL));
	json_object_object_add(o, "excluded_module_types", excluded_json(&j));
	if (not_carried) {
		not_carried_reason(pkg, reason, sizeof(reason));
		json_object_object_add(o, "reason", json_object_new_string(reason));
	} else if (v == REPO_OK) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "path", json_object_new_string(pkg->path));
		json_object_object_add(p, "size", json_object_new_int64((int64_t)pkg->size));
		json_object_object_add(p, "sha256", json_object_new_string(pkg->sha256));
		json_object_object_add(p, "signer", signer_json(pkg));
		json_object_object_add(o, "package", p);
		/* The mirror that has it; null: not known (no mirror answered the question). */
		json_object_object_add(
			o, "mirror",
			car->r == 1 ? json_object_new_string(l->src->mirrors[car->mirror]) : NULL);
		json_object_object_add(o, "reason", NULL);
	} else {
		verdict_reason(&j, h, reason, sizeof(reason));
		json_object_object_add(o, "reason", json_object_new_string(reason));
	}
	return o;
}

static void list_text(const struct listing *l)
{
	const struct repo_index *idx = l->src->idx;
	const struct host *h = l->h;
	const struct carried *car = l->car;

	out_line(stdout, "host: kernel %s (%s), os %s%s%s, %zu NVIDIA GPU(s)", h->kernel, h->arch,
		 h->os_id, h->os_build_id ? " build " : "", h->os_build_id ? h->os_build_id : "",
		 h->n_gpus);
	out_line(stdout, "%-14s %-20s %s", "VERSION", "TAGS", "STATUS");
	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *d = &idx->drivers[i];
		struct repo_judgement j;
		enum repo_verdict v = repo_driver_judge(d, h, l->policy, &j);
		const struct repo_package *pkg = j.pkg;
		const char *mt = v == REPO_OK ? repo_module_type_name(pkg->module_type) : NULL;
		char tags[128] = "-", reason[640];
		size_t len = 0;

		for (size_t t = 0; t < d->n_tags && len < sizeof(tags); t++)
			len += (size_t)snprintf(tags + len, sizeof(tags) - len, "%s%s",
						t ? "," : "", d->tags[t]);
		if (v == REPO_OK && car[i].r == 0) {
			not_carried_reason(pkg, reason, sizeof(reason));
			out_line(stdout, "%-14s %-20s excluded: %s", d->version, tags, reason);
		} else if (v == REPO_OK) {
			out_line(stdout, "%-14s %-20s installable%s%s%s%s", d->version, tags,
				 d == l->def ? " (default)" : "", d == l->latest ? " (latest)" : "",
				 mt ? ": " : "", mt ? mt : "");
			if (pkg->has_signer)
				out_line(
					stdout,
					"%-14s %-20s modules signed by '%s' (key %s, certificate sha256 %s)",
					"", "", pkg->signer_subject, pkg->signer_key_id,
					pkg->signer_sha256);
		} else {
			verdict_reason(&j, h, reason, sizeof(reason));
			out_line(stdout, "%-14s %-20s excluded: %s", d->version, tags, reason);
		}
		for (unsigned t = REPO_MT_PROPRIETARY; t < REPO_MT_COUNT; t++) {
			if (j.kmt.excluded[t][0])
				out_line(stdout, "%-14s %-20s %s modules excluded: %s", "", "",
					 repo_module_type_name((enum repo_module_type)t),
					 j.kmt.excluded[t]);
		}
	}
}

/*
 * After the list: -1 (EXIT_NO_MATCH) when no driver is installable here, so that a script
 * need not parse it. The reason is install's for "latest" (no package, a GPU), or that no
 * mirror carries the packages the index names.
 */
static int nothing_installable(const struct repo_index *idx, const struct host *h,
			       enum repo_kmt_policy policy, const struct carried *car,
			       struct err *e)
{
	struct repo_choice choice;

	for (size_t i = 0; i < idx->n_drivers; i++) {
		struct repo_judgement j;

		if (repo_driver_judge(&idx->drivers[i], h, policy, &j) == REPO_OK && car[i].r != 0)
			return 0;
	}
	if (repo_select(idx, h, "latest", policy, &choice, e) < 0)
		return err_wrap(e, "nothing is installable on this host");
	err_set(e, EXIT_NO_MATCH,
		"nothing is installable on this host: no mirror carries the packages the index names for kernel %s",
		h->kernel);
	err_hint(
		e,
		"copy the packages to the mirror ('nvidia-driver-installer mirror'), or add a mirror that has them to --repo");
	return -1;
}

int list_versions_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1;
	_cleanup_(cache_freep) struct cache *cache = NULL;
	_cleanup_free_ struct carried *car = NULL;
	const struct repo_driver *def, *latest;
	struct source_opts so = session_source_opts(c);
	enum repo_kmt_policy policy = session_kmt_policy(c);
	struct host h;
	struct source src;
	struct pending pending;
	const struct pending *pd = NULL;
	struct listing ls;
	int r;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	if (session_pending(c, root_fd, &pending) == 1)
		pd = &pending;
	if (host_probe(root_fd, c->kernel_release, &h, e) < 0)
		return err_wrap(e, "host");
	if (cache_open(root_fd, c->cache_dir, false, &cache, e) < 0 ||
	    source_open(&so, cache, 0, &src, e) < 0) {
		host_done(&h);
		return -1;
	}
	car = probe_carried(&src, &h, policy);
	if (!car) {
		source_done(&src);
		host_done(&h);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "list-versions");
	}
	def = repo_resolve_tag(src.idx, &h, policy, "default");
	latest = repo_resolve_tag(src.idx, &h, policy, "latest");
	ls = (struct listing){
		.src = &src, .h = &h, .policy = policy, .def = def, .latest = latest, .car = car};
	if (c->json) {
		_cleanup_(json_object_putp) json_object *o = json_object_new_object();
		json_object *arr = json_object_new_array();

		json_object_object_add(o, "kernel_release", json_object_new_string(h.kernel));
		json_object_object_add(o, "arch", json_object_new_string(h.arch));
		json_object_object_add(o, "os", json_object_new_string(h.os_id));
		json_object_object_add(o, "os_build", session_json_string(h.os_build_id));
		json_object_object_add(o, "gpus", json_object_new_int((int)h.n_gpus));
		json_object_object_add(o, "kernel_module_type",
				       json_object_new_string(c->kernel_module_type));
		json_object_object_add(o, "default",
				       session_json_string(def ? def->version : NULL));
		json_object_object_add(o, "latest",
				       session_json_string(latest ? latest->version : NULL));
		for (size_t i = 0; i < src.idx->n_drivers; i++)
			json_object_array_add(arr, driver_json(&ls, i));
		json_object_object_add(o, "versions", arr);
		json_object_object_add(o, "pending_upgrade", session_pending_json(pd));
		session_print_json(o);
	} else {
		list_text(&ls);
		if (pd) {
			char line[1600];

			session_pending_text(pd, line, sizeof(line));
			out_line(stdout, "pending: %s", line);
		}
	}
	r = nothing_installable(src.idx, &h, policy, car, e);
	source_done(&src);
	host_done(&h);
	return r;
}

/* ---- pause ---------------------------------------------------------------- */

/*
 * The process of a container that only holds its pod (the DaemonSets' driver-ready, whose
 * readiness probe reads the marker): PID 1 there, so `sleep infinity` would ignore the
 * kubelet's SIGTERM and make it wait out the grace period.
 */
int pause_run(const struct config *c, struct err *e)
{
	int sig;

	(void)c, (void)e;
	log_msg(LOG_DEBUG, "pause", "waiting for SIGTERM or SIGINT");
	sig = interrupt_wait();
	log_kv(LOG_DEBUG, "pause", "stopping", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
	       LOG_END);
	return 0;
}

/* ---- uninstall ------------------------------------------------------------ */

int uninstall_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1, lock_fd = -1;
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct hostpath_opts ho = session_hostpath_opts(c);
	struct kernel_opts ko = session_kernel_opts(c);
	struct expose_opts xo = session_expose_opts(c);
	struct manifest m = {0};
	struct utsname u;
	const char *release;
	int r;

	root_fd = session_open_root(c, e);
	if (root_fd < 0 || hostpath_check_config(&ho, root_fd, e) < 0 ||
	    hostpath_check_writable(root_fd, "--install-dir", c->install_dir, e) < 0 ||
	    hostpath_check_writable(root_fd, "the host's /run", "/run", e) < 0)
		return -1;
	lock_fd = session_lock(root_fd, e);
	if (lock_fd < 0)
		return -1;
	/*
	 * A driver in use keeps everything (exit 7, nothing removed). Then the notices
	 * go first, so that nothing reads "ready" while the driver leaves.
	 */
	release = session_release(c, &u);
	if ((!c->skip_modules && kernel_remove(&ko, root_fd, release, true, e) < 0) ||
	    expose_withdraw_notices(&xo, root_fd, e) < 0 ||
	    (!c->skip_modules && kernel_remove(&ko, root_fd, release, false, e) < 0) ||
	    expose_withdraw_host(&xo, root_fd, e) < 0)
		return -1;
	r = publish_open(root_fd, c->install_dir, false, &dir, e);
	if (r < 0)
		return -1;
	if (r == 1) {
		log_kv(LOG_INFO, "uninstall", "nothing installed", "install_dir", c->install_dir,
		       LOG_END);
		return 0;
	}
	r = publish_current(dir, &m, e);
	if (r < 0) {
		/* A damaged manifest must not keep the install from being removed. */
		log_msg(LOG_WARN, "uninstall", "%s", e->msg);
		err_clear(e);
		r = 1;
	}
	if (publish_remove(dir, e) < 0) {
		manifest_done(&m);
		return -1;
	}
	log_kv(LOG_INFO, "uninstall", r == 0 ? "driver removed" : "leftovers removed", "version",
	       r == 0 ? m.driver_version : "none", "install_dir", c->install_dir, LOG_END);
	manifest_done(&m);
	return 0;
}

/* ---- verify-module ---------------------------------------------------------- */

static void report_print(const struct kmods_report *r, bool pass)
{
	out_line(stdout, "%s", r->file);
	out_line(stdout, "  name:     %s", r->has_info ? r->info.name : "?");
	out_line(stdout, "  version:  %s",
		 r->has_info && r->info.version[0] ? r->info.version : "-");
	out_line(stdout, "  vermagic: %s",
		 r->has_info && r->info.vermagic[0] ? r->info.vermagic : "-");
	out_line(stdout, "  signed:   %s", r->sig.is_signed ? "yes" : "no");
	out_line(stdout, "  signer:   %s", r->sig.signer[0] ? r->sig.signer : "-");
	out_line(stdout, "  key id:   %s", r->sig.key_id[0] ? r->sig.key_id : "-");
	out_line(stdout, "  cert:     %s", r->sig.cert_sha256[0] ? r->sig.cert_sha256 : "-");
	out_line(stdout, "  hash:     %s", r->sig.hash_algo[0] ? r->sig.hash_algo : "-");
	out_line(stdout, "  verdict:  %s%s", pass ? "" : "FAIL: ", r->verdict);
}

/* FILE as given on the command line (the report names the file alone). */
static json_object *report_json(const char *file, const struct kmods_report *r, bool pass)
{
	json_object *o = json_object_new_object();
	bool info = r->has_info;

	json_object_object_add(o, "file", json_object_new_string(file));
	json_object_object_add(o, "name", info ? session_json_nonempty(r->info.name) : NULL);
	json_object_object_add(o, "version", info ? session_json_nonempty(r->info.version) : NULL);
	json_object_object_add(o, "vermagic",
			       info ? session_json_nonempty(r->info.vermagic) : NULL);
	json_object_object_add(o, "signed", json_object_new_boolean(r->sig.is_signed));
	json_object_object_add(o, "verified", json_object_new_boolean(r->sig.verified));
	json_object_object_add(o, "signer", session_json_nonempty(r->sig.signer));
	json_object_object_add(o, "key_id", session_json_nonempty(r->sig.key_id));
	json_object_object_add(o, "signer_cert_sha256", session_json_nonempty(r->sig.cert_sha256));
	json_object_object_add(o, "hash", session_json_nonempty(r->sig.hash_algo));
	json_object_object_add(o, "pass", json_object_new_boolean(pass));
	json_object_object_add(o, "verdict", json_object_new_string(r->verdict));
	return o;
}

int verify_module_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *out = json_object_new_object();
	_cleanup_(json_object_putp) json_object *mods = json_object_new_array();
	_cleanup_(modsig_certs_freep) struct modsig_certs *certs = NULL;
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	_cleanup_close_ int root_fd = -1;
	size_t failed = 0;
	struct utsname u;
	const char *release;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	release = session_release(c, &u);
	if (modsig_certs_load(c->module_certs.v, c->module_certs.n, &certs, e) < 0 ||
	    kmods_new(root_fd, release, &k, e) < 0)
		return -1;
	for (size_t i = 0; i < c->files.n; i++) {
		struct kmods_report r;
		bool pass;

		if (kmods_inspect(k, c->files.v[i], certs, release, &r, e) < 0)
			return -1;
		/* This command verifies: a signature nobody checked is not a pass. */
		if (r.ok && !r.sig.verified)
			snprintf(r.verdict, sizeof(r.verdict), "not verified: %s",
				 r.sig.reason[0] ? r.sig.reason : "no --module-cert given");
		pass = r.ok && r.sig.verified;
		failed += !pass;
		if (c->json)
			json_object_array_add(mods, report_json(c->files.v[i], &r, pass));
		else
			report_print(&r, pass);
	}
	json_object_object_add(out, "kernel_release", json_object_new_string(release));
	json_object_object_add(out, "verdict", json_object_new_string(failed ? "fail" : "ok"));
	json_object_object_add(out, "failed", json_object_new_int((int)failed));
	json_object_object_add(out, "modules", json_object_get(mods));
	if (c->json)
		session_print_json(out);
	if (failed) {
		err_set(e, EXIT_VERIFY, "%zu of %zu module(s) failed", failed, c->files.n);
		/* Without a certificate nothing could be checked: the modules may well be fine. */
		if (c->module_certs.n == 0)
			err_hint(
				e,
				"pass the certificate that signed them: --module-cert FILE (NVIDIA_MODULE_CERT); each module's signer is shown above");
		else
			err_hint(
				e,
				"pass the certificate that signed the modules as --module-cert, or sign them with the key of one you pass, for this kernel (%s)",
				release);
		return -1;
	}
	return 0;
}

/* ---- config --------------------------------------------------------------------- */

static json_object *strv_json(const struct strv *s)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < s->n; i++)
		json_object_array_add(a, json_object_new_string(s->v[i]));
	return a;
}

/* One option's value under its key, from the table. */
static void option_json(json_object *o, const struct config *c, const struct config_option *opt)
{
	const void *field = (const char *)c + opt->offset;
	char key[64];

	switch (opt->kind) {
	case CONFIG_STRING:
		json_object_object_add(o, opt->json, session_json_string(*(char *const *)field));
		break;
	case CONFIG_LIST:
		json_object_object_add(o, opt->json, strv_json(field));
		break;
	case CONFIG_BOOL:
		json_object_object_add(o, opt->json, json_object_new_boolean(*(const bool *)field));
		break;
	case CONFIG_MAX_AGE:
		if (*(const unsigned *)field == INDEX_MAX_AGE_REPO) {
			json_object_object_add(o, opt->json, json_object_new_string("repository"));
			break;
		}
		/* fall through */
	case CONFIG_UINT:
		json_object_object_add(o, opt->json,
				       json_object_new_int64(*(const unsigned *)field));
		break;
	case CONFIG_LOG_FORMAT:
		json_object_object_add(
			o, opt->json,
			json_object_new_string(c->log_format == LOG_FORMAT_JSON ? "json" : "text"));
		break;
	case CONFIG_SPEED_FLOOR:
		snprintf(key, sizeof(key), "%s_bytes", opt->json);
		json_object_object_add(o, key, json_object_new_int64(c->speed_floor_bytes));
		snprintf(key, sizeof(key), "%s_s", opt->json);
		json_object_object_add(o, key, json_object_new_int64(c->speed_floor_s));
		break;
	case CONFIG_COUNT:
	case CONFIG_HELP:
	case CONFIG_VERSION:
		break;
	}
}

int config_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	int r = config_preflight(c, e);

	for (size_t i = 0; i < config_n_options; i++) {
		if (config_options[i].json)
			option_json(o, c, &config_options[i]);
	}
	json_object_object_add(o, "environment_read", strv_json(&c->env_used));
	json_object_object_add(o, "environment_unknown", strv_json(&c->env_unknown));
	session_print_json(o);
	return r;
}
