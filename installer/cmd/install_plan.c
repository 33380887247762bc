// SPDX-License-Identifier: Apache-2.0
/* install's plan as it is shown by a dry run: text, and JSON (docs/json.md). */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/install_plan.h"
#include "cmd/session.h"
#include "util/out.h"
#include "util/cleanup.h"

void install_describe_modules(const struct host *h, char *buf, size_t size)
{
	size_t len = 0;

	snprintf(buf, size, "%s", h->modules_known ? "none" : "unknown (no /proc/modules)");
	for (size_t i = 0; i < h->n_modules && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s", i ? ", " : "",
					h->modules[i].name, h->modules[i].version[0] ? " " : "",
					h->modules[i].version);
}

void install_plan_print(const struct config *c, const struct plan *p)
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

DEFINE_POINTER_CLEANUP(json_object, json_object_put)

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
	return o;
}

void install_plan_print_json(const struct config *c, const struct plan *p, const struct ktrust *t)
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
