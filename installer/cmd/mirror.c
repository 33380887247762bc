// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mirror.h"
#include "cmd/mirror_dest.h"
#include "cmd/session.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/out.h"

/* Whether DRIVER is wanted: no --driver-version given, or one of them matches it. */
static bool driver_wanted(const struct config *c, const struct repo_index *idx,
			  const struct repo_driver *d)
{
	if (c->mirror_versions.n == 0)
		return true;
	for (size_t i = 0; i < c->mirror_versions.n; i++) {
		const char *v = c->mirror_versions.v[i];

		if (strcmp(v, "latest") == 0 && d == &idx->drivers[0])
			return true;
		if (strcmp(v, "default") == 0 && repo_driver_has_tag(d, "default"))
			return true;
		if (strcmp(v, "latest") != 0 && strcmp(v, "default") != 0 &&
		    repo_driver_wanted(idx, d, v))
			return true;
	}
	return false;
}

static bool kernel_wanted(const struct config *c, const char *kernel)
{
	if (c->mirror_kernels.n == 0)
		return true;
	for (size_t i = 0; i < c->mirror_kernels.n; i++) {
		if (strcmp(c->mirror_kernels.v[i], kernel) == 0)
			return true;
	}
	return false;
}

/*
 * A --kernel that no package of the index is for is a typo or a kernel not built yet:
 * refused before anything is copied, naming the kernels the index has.
 */
static int kernels_known(const struct config *c, const struct repo_index *idx, struct err *e)
{
	for (size_t i = 0; i < c->mirror_kernels.n; i++) {
		struct repo_names all = {0};
		char list[1024];

		if (repo_has_kernel(idx, c->mirror_kernels.v[i]))
			continue;
		(void)repo_kernels(idx, NULL, NULL, &all);
		repo_names_join(&all, list, sizeof(list));
		repo_names_done(&all);
		err_set(e, EXIT_NO_MATCH,
			"mirror: the index has no package for kernel '%s'; it has kernels: %s",
			c->mirror_kernels.v[i], list);
		err_hint(
			e,
			"pass one of those to --kernel, or add packages for %s to the repository first",
			c->mirror_kernels.v[i]);
		return -1;
	}
	return 0;
}

/*
 * Whether PKG's flavour is wanted: auto copies both; open or proprietary that flavour,
 * and packages that state none (an index from before flavours: what those nodes take).
 */
static bool module_type_wanted(const struct config *c, const struct repo_package *pkg)
{
	enum repo_kmt_policy policy = session_kmt_policy(c);

	return policy == REPO_KMT_AUTO || pkg->module_type == REPO_MT_UNSTATED ||
	       pkg->module_type == (policy == REPO_KMT_OPEN ? REPO_MT_OPEN : REPO_MT_PROPRIETARY);
}

/*
 * Anti-rollback for the mirror's own index: the one the destination holds, when it verifies
 * with the trusted keys, is replaced only by one that is not older under the same identity
 * (repo_index_identity), or under the key that signed it when it names its repository
 * and the new one does not: what a node that accepted it holds a record of.
 */
static int mirror_not_older(const struct config *c, struct mirror_dest *d, const struct source *src,
			    struct err *e)
{
	_cleanup_(mirror_held_done) struct mirror_held h = {0};
	_cleanup_(repo_index_freep) struct repo_index *held = NULL;
	char fpr[17], ident[REPO_IDENTITY_SIZE], held_ident[REPO_IDENTITY_SIZE];
	struct err ie;

	err_clear(&ie);
	if (d->ops->held(d, &h, e) < 0)
		return err_wrap(e, "mirror: '%s': the index it holds", c->mirror_to);
	if (!h.json)
		return 0;
	if (verify_index_signature(src->keys,
				   &(struct verify_signed){.data = h.json,
							   .len = h.len,
							   .sig = h.sig ? h.sig : "",
							   .sig_len = h.sig_len},
				   fpr, &ie) < 0 ||
	    repo_index_parse(h.json, h.len, &held, &ie) < 0) {
		log_kv(LOG_WARN, "mirror", "replacing an index that does not verify", "to",
		       c->mirror_to, "reason", ie.msg, LOG_END);
		return 0;
	}
	if (!held->has_generated)
		return 0;
	repo_index_identity(src->idx, src->fingerprint, ident, sizeof(ident));
	repo_index_identity(held, fpr, held_ident, sizeof(held_ident));
	if (strcmp(ident, held_ident) != 0 &&
	    !(held->repository && !src->idx->repository && strcmp(fpr, src->fingerprint) == 0))
		return 0;
	if (repo_check_not_older(src->idx, ident, held->generated_us, held->generated,
				 "the mirror holds", e) == 0)
		return 0;
	if (!c->allow_index_rollback)
		return err_wrap(e, "mirror: '%s'", c->mirror_to);
	log_kv(LOG_WARN, "mirror", "replacing the mirror's index with an older one", "generated",
	       src->idx->has_generated ? src->idx->generated : "none", "held", held->generated,
	       "identity", ident, LOG_END);
	err_clear(e);
	return 0;
}

static json_object *package_json(const struct repo_driver *d, const struct repo_package *pkg,
				 bool copied)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(pkg->path));
	json_object_object_add(o, "driver_version", json_object_new_string(d->version));
	json_object_object_add(o, "kernel", json_object_new_string(pkg->kernel));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)pkg->size));
	json_object_object_add(o, "sha256", json_object_new_string(pkg->sha256));
	json_object_object_add(
		o, "module_type",
		repo_module_type_name(pkg->module_type)
			? json_object_new_string(repo_module_type_name(pkg->module_type))
			: NULL);
	json_object_object_add(o, "action", json_object_new_string(copied ? "copied" : "kept"));
	return o;
}

static int by_path(const void *a, const void *b)
{
	json_object *x, *y;

	json_object_object_get_ex(*(json_object *const *)a, "path", &x);
	json_object_object_get_ex(*(json_object *const *)b, "path", &y);
	return strcmp(json_object_get_string(x), json_object_get_string(y));
}

/* What a mirror run came to: the packages the mirror holds, and how many it copied. */
struct mirror_tally {
	json_object *pkgs; /* each package wanted, copied or kept (package_json) */
	unsigned copied, kept;
	uint64_t net; /* bytes downloaded */
};

/* What the mirror holds now: docs/json.md, "mirror --json". */
static void print_json(const struct config *c, const struct source *src,
		       const struct mirror_tally *t)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();

	json_object_array_sort(t->pkgs, by_path);
	json_object_object_add(o, "to", json_object_new_string(c->mirror_to));
	json_object_object_add(o, "index_generated",
			       src->idx->has_generated ? json_object_new_string(src->idx->generated)
						       : NULL);
	json_object_object_add(o, "copied", json_object_new_int64(t->copied));
	json_object_object_add(o, "kept", json_object_new_int64(t->kept));
	json_object_object_add(o, "network_bytes", json_object_new_int64((int64_t)t->net));
	json_object_object_add(o, "packages", json_object_get(t->pkgs));
	session_print_json(o);
}

static bool package_wanted(const struct config *c, const struct repo_index *idx,
			   const struct repo_driver *d, const struct repo_package *pkg)
{
	return driver_wanted(c, idx, d) && kernel_wanted(c, pkg->kernel) &&
	       module_type_wanted(c, pkg);
}

/* Copies what is wanted and not there yet; counts both into T, lists them in CARRIED. */
static int copy_wanted(const struct config *c, struct source *src, struct mirror_dest *dst,
		       struct mirror_tally *t, struct mirror_carried *carried, struct err *e)
{
	for (size_t i = 0; i < src->idx->n_drivers; i++) {
		const struct repo_driver *d = &src->idx->drivers[i];

		for (size_t p = 0; p < d->n_pkgs; p++) {
			const struct repo_package *pkg = &d->pkgs[p];
			int have;

			if (!package_wanted(c, src->idx, d, pkg))
				continue;
			have = dst->ops->have(dst, pkg, e);
			if (have < 0 || (!have && dst->ops->copy(dst, src, pkg, &t->net, e) < 0))
				return -1;
			(*(have ? &t->kept : &t->copied))++;
			json_object_array_add(t->pkgs, package_json(d, pkg, !have));
			carried->v[carried->n++] = pkg;
		}
	}
	if (t->copied + t->kept == 0)
		return err_set(
			e, EXIT_NO_MATCH,
			"mirror: no package matches the --kernel, --driver-version and --kernel-module-type given");
	return 0;
}

/* --to: a registry (oci://), an OCI image layout (oci-layout:), else a directory. */
static int open_dest(const struct config *c, struct mirror_dest *ret, struct err *e)
{
	if (!c->mirror_to)
		return err_set(e, EXIT_USAGE, "mirror: --to DIR is required");
	if (strncmp(c->mirror_to, "oci://", 6) == 0)
		return mirror_push_open(c, c->mirror_to, ret, e);
	if (strncmp(c->mirror_to, "oci-layout:", 11) == 0)
		return mirror_layout_open(c, c->mirror_to, ret, e);
	if (strncmp(c->mirror_to, "file://", 7) == 0)
		return mirror_dir_open(c, c->mirror_to + 7, ret, e);
	if (strstr(c->mirror_to, "://"))
		return err_set(
			e, EXIT_USAGE,
			"mirror: --to '%s': not a directory, file://, oci:// or oci-layout: destination",
			c->mirror_to);
	return mirror_dir_open(c, c->mirror_to, ret, e);
}

static size_t count_packages(const struct repo_index *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < idx->n_drivers; i++)
		n += idx->drivers[i].n_pkgs;
	return n;
}

int mirror_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *pkgs = json_object_new_array();
	struct mirror_dest dst = {.dir_fd = -1};
	struct mirror_carried carried = {0};
	struct source_opts so = session_source_opts(c);
	struct source src = {0};
	struct mirror_tally t = {.pkgs = pkgs};
	uint64_t t0 = now_ns();
	int r = -1;

	if (open_dest(c, &dst, e) < 0)
		return -1;
	if (source_open(&so, NULL, 0, &src, e) < 0)
		goto out_dest;
	carried.v = calloc(count_packages(src.idx) + 1, sizeof(*carried.v));
	if (!carried.v) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
		goto out;
	}
	if (kernels_known(c, src.idx, e) < 0 || mirror_not_older(c, &dst, &src, e) < 0 ||
	    copy_wanted(c, &src, &dst, &t, &carried, e) < 0 ||
	    dst.ops->publish(&dst, &src, &carried, e) < 0)
		goto out;
	log_kv(LOG_INFO, "mirror", "mirror complete", "to", c->mirror_to, "kind", dst.ops->kind,
	       U64("copied", t.copied), U64("kept", t.kept), U64("network_bytes", t.net),
	       U64("duration_ms", ms_since(t0)), LOG_END);
	if (c->json)
		print_json(c, &src, &t);
	else
		out_line(stdout, "mirrored %u package(s), %u already present, to %s", t.copied,
			 t.kept, c->mirror_to);
	r = 0;
out:
	free(carried.v);
	source_done(&src);
out_dest:
	dst.ops->close(&dst);
	return r;
}
