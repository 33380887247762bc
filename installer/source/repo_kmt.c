// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel module flavours in the index: parsing packages[].module_type,
 * drivers[].module_types and drivers[].gpu_names, checking the layout older
 * installers rely on, and deciding which flavour a host takes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "source/repo_kmt.h"

#define GPU_NAME_MAX 128

const char *repo_module_type_name(enum repo_module_type t)
{
	switch (t) {
	case REPO_MT_OPEN:
		return "open";
	case REPO_MT_PROPRIETARY:
		return "proprietary";
	case REPO_MT_UNSTATED:
		break;
	}
	return NULL;
}

int repo_parse_pci_id(const char *s, uint32_t *ret)
{
	uint16_t vendor, device;

	if (host_parse_pci_id(s, &vendor, &device) < 0)
		return -1;
	*ret = (uint32_t)vendor << 16 | device;
	return 0;
}

int repo_kmt_policy_parse(const char *s, enum repo_kmt_policy *ret)
{
	if (strcmp(s, "auto") == 0)
		*ret = REPO_KMT_AUTO;
	else if (strcmp(s, "open") == 0)
		*ret = REPO_KMT_OPEN;
	else if (strcmp(s, "proprietary") == 0)
		*ret = REPO_KMT_PROPRIETARY;
	else
		return -1;
	return 0;
}

/* ---- parsing ---------------------------------------------------------- */

static int type_from_name(const char *s, enum repo_module_type *ret)
{
	if (strcmp(s, "open") == 0)
		*ret = REPO_MT_OPEN;
	else if (strcmp(s, "proprietary") == 0)
		*ret = REPO_MT_PROPRIETARY;
	else
		return -1;
	return 0;
}

int repo_kmt_parse_package(json_object *o, const char *where, struct repo_package *p, struct err *e)
{
	json_object *v;

	p->module_type = REPO_MT_UNSTATED;
	if (!json_object_object_get_ex(o, "module_type", &v))
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    type_from_name(json_object_get_string(v), &p->module_type) < 0)
		return err_set(e, EXIT_VERIFY,
			       "%s: \"module_type\" must be \"open\" or \"proprietary\"", where);
	return 0;
}

static int parse_list(json_object *arr, const char *where, const char *what,
		      struct repo_pci_list *l, struct err *e)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return err_set(e, EXIT_VERIFY, "%s: %s must be an array", where, what);
	n = json_object_array_length(arr);
	l->known = true;
	l->ids = calloc(n ? n : 1, sizeof(uint32_t));
	if (!l->ids)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(v, json_type_string) ||
		    repo_parse_pci_id(json_object_get_string(v), &l->ids[i]) < 0)
			return err_set(e, EXIT_VERIFY, "%s: %s[%zu] must look like \"10de:2330\"",
				       where, what, i);
		l->n = i + 1;
	}
	return 0;
}

static int parse_module_types(json_object *mt, const char *where, struct repo_driver *d,
			      struct err *e)
{
	if (!json_object_is_type(mt, json_type_object))
		return err_set(
			e, EXIT_VERIFY,
			"%s: \"module_types\" must be an object with \"open\" and/or \"proprietary\"",
			where);
	json_object_object_foreach(mt, key, val)
	{
		enum repo_module_type t;
		json_object *ids;
		char what[96];

		if (type_from_name(key, &t) < 0)
			return err_set(
				e, EXIT_VERIFY,
				"%s: \"module_types\" has \"%.32s\"; a flavour is \"open\" or \"proprietary\"",
				where, key);
		if (!json_object_is_type(val, json_type_object))
			return err_set(e, EXIT_VERIFY,
				       "%s: \"module_types\".\"%s\" must be an object", where, key);
		if (!json_object_object_get_ex(val, "supported_pci_ids", &ids))
			continue;
		snprintf(what, sizeof(what), "\"module_types\".\"%s\".\"supported_pci_ids\"", key);
		if (parse_list(ids, where, what, &d->module_types[t], e) < 0)
			return -1;
	}
	return 0;
}

static bool name_is_printable(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > GPU_NAME_MAX)
		return false;
	for (; *s; s++) {
		if (!isprint((unsigned char)*s))
			return false;
	}
	return true;
}

static int parse_gpu_names(json_object *names, const char *where, struct repo_driver *d,
			   struct err *e)
{
	size_t n = 0;

	if (!json_object_is_type(names, json_type_object))
		return err_set(
			e, EXIT_VERIFY,
			"%s: \"gpu_names\" must be an object like {\"10de:1db1\": \"Tesla V100\"}",
			where);
	d->gpu_names = calloc((size_t)json_object_object_length(names) + 1, sizeof(*d->gpu_names));
	if (!d->gpu_names)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	json_object_object_foreach(names, key, val)
	{
		uint32_t id;

		if (repo_parse_pci_id(key, &id) < 0 ||
		    !json_object_is_type(val, json_type_string) ||
		    !name_is_printable(json_object_get_string(val)))
			return err_set(
				e, EXIT_VERIFY,
				"%s: \"gpu_names\" must map ids like \"10de:1db1\" to printable names of 1 to %d characters",
				where, GPU_NAME_MAX);
		d->gpu_names[n].id = id;
		d->gpu_names[n].name = strdup(json_object_get_string(val));
		if (!d->gpu_names[n].name)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
		d->n_gpu_names = ++n;
	}
	return 0;
}

int repo_kmt_parse_driver(json_object *o, const char *where, struct repo_driver *d, struct err *e)
{
	json_object *v;

	if (json_object_object_get_ex(o, "module_types", &v) &&
	    parse_module_types(v, where, d, e) < 0)
		return -1;
	if (json_object_object_get_ex(o, "gpu_names", &v) && parse_gpu_names(v, where, d, e) < 0)
		return -1;
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int specificity(const struct repo_package *p)
{
	return (p->os != NULL) + (p->os_build != NULL);
}

/* Whether every host O fits also fits P (P's os and build limits are O's or wider). */
static bool limits_within(const struct repo_package *p, const struct repo_package *o)
{
	return (!p->os || same_str(p->os, o->os)) &&
	       (!p->os_build || same_str(p->os_build, o->os_build));
}

static bool lists_equal(const struct repo_driver *d, const struct repo_pci_list *l)
{
	if (d->n_pci_ids != l->n)
		return false;
	for (size_t i = 0; i < l->n; i++) {
		bool found = false;

		for (size_t j = 0; j < d->n_pci_ids && !found; j++)
			found = d->pci_ids[j] == l->ids[i];
		if (!found)
			return false;
	}
	return true;
}

int repo_kmt_check_layout(const struct repo_driver *d, const char *where, struct err *e)
{
	const struct repo_pci_list *prop = &d->module_types[REPO_MT_PROPRIETARY];

	if (prop->known && d->has_pci_ids && !lists_equal(d, prop))
		return err_set(
			e, EXIT_VERIFY,
			"%s: \"supported_pci_ids\" differs from \"module_types\".\"proprietary\": older installers judge the proprietary package by it, so it must be that list",
			where);
	for (size_t i = 0; i < d->n_pkgs; i++) {
		const struct repo_package *o = &d->pkgs[i];

		if (o->module_type != REPO_MT_OPEN)
			continue;
		for (size_t j = 0; j < d->n_pkgs; j++) {
			const struct repo_package *p = &d->pkgs[j];

			if (p->module_type != REPO_MT_PROPRIETARY ||
			    strcmp(p->kernel, o->kernel) != 0 || strcmp(p->arch, o->arch) != 0 ||
			    !limits_within(p, o))
				continue;
			/* A host O fits also fits P: an older installer must take P there. */
			if (specificity(o) > specificity(p) ||
			    (specificity(o) == specificity(p) && i < j))
				return err_set(
					e, EXIT_VERIFY,
					"%s: packages[%zu] (open) would be taken by older installers before packages[%zu] (proprietary): list the open package after it, and no more specific",
					where, i, j);
		}
	}
	return 0;
}

void repo_kmt_driver_done(struct repo_driver *d)
{
	for (size_t t = 0; t < REPO_MT_COUNT; t++)
		free(d->module_types[t].ids);
	for (size_t i = 0; i < d->n_gpu_names; i++)
		free(d->gpu_names[i].name);
	free(d->gpu_names);
}

/* ---- the decision ------------------------------------------------------- */

const char *repo_gpu_name(const struct repo_driver *d, uint32_t id)
{
	for (size_t i = 0; i < d->n_gpu_names; i++) {
		if (d->gpu_names[i].id == id)
			return d->gpu_names[i].name;
	}
	return NULL;
}

/* "GPU 10de:1db1 (Tesla V100-SXM2-16GB)", or "GPU 10de:1db1" without a name. */
static const char *gpu_desc(const struct repo_driver *d, uint32_t id, char *buf, size_t size)
{
	const char *name = repo_gpu_name(d, id);

	snprintf(buf, size, "GPU %04x:%04x%s%s%s", id >> 16, id & 0xffff, name ? " (" : "",
		 name ? name : "", name ? ")" : "");
	return buf;
}

/*
 * The GPUs flavour T supports: its own list, else for the proprietary flavour the
 * driver's "supported_pci_ids" (which is that list where both flavours are offered);
 * NULL when not known.
 */
static const struct repo_pci_list *flavour_list(const struct repo_driver *d,
						enum repo_module_type t, struct repo_pci_list *tmp)
{
	if (d->module_types[t].known)
		return &d->module_types[t];
	if (t == REPO_MT_PROPRIETARY && d->has_pci_ids) {
		*tmp = (struct repo_pci_list){.known = true, .ids = d->pci_ids, .n = d->n_pci_ids};
		return tmp;
	}
	return NULL;
}

/* 1 listed, 0 not, -1 not known. */
static int supports(const struct repo_pci_list *l, uint32_t id)
{
	if (!l)
		return -1;
	for (size_t i = 0; i < l->n; i++) {
		if (l->ids[i] == id)
			return 1;
	}
	return 0;
}

static unsigned branch_of(const char *version)
{
	return (unsigned)strtoul(version, NULL, 10);
}

#define HAS(avail, t) (((avail) >> (t)) & 1u)

static void refuse(struct repo_kmt_decision *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void refuse(struct repo_kmt_decision *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
	r->ok = false;
}

static void take(struct repo_kmt_decision *r, enum repo_module_type t)
{
	r->ok = true;
	r->type = t;
}

/* --kernel-module-type open or proprietary: that flavour, for every GPU it lists. */
static void decide_explicit(const struct repo_kmt_request *q, enum repo_module_type want,
			    struct repo_kmt_decision *r)
{
	const struct repo_driver *d = q->driver;
	enum repo_module_type other = want == REPO_MT_OPEN ? REPO_MT_PROPRIETARY : REPO_MT_OPEN;
	const char *wname = repo_module_type_name(want), *oname = repo_module_type_name(other);
	struct repo_pci_list tmp;
	const struct repo_pci_list *l = flavour_list(d, want, &tmp);
	char g[192];

	if (!HAS(q->avail, want)) {
		refuse(r,
		       "--kernel-module-type %s: this repository has no %s modules of %s for kernel %s%s%s%s",
		       wname, wname, d->version, q->kernel, HAS(q->avail, other) ? " (only " : "",
		       HAS(q->avail, other) ? oname : "", HAS(q->avail, other) ? ")" : "");
		return;
	}
	for (size_t i = 0; i < q->n_gpus; i++) {
		if (supports(l, q->gpus[i]) == 0) {
			refuse(r, "%s is not supported by the %s modules of %s",
			       gpu_desc(d, q->gpus[i], g, sizeof(g)), wname, d->version);
			return;
		}
	}
	take(r, want);
	if (HAS(q->avail, other))
		snprintf(r->excluded[other], sizeof(r->excluded[other]),
			 "--kernel-module-type %s asks for the %s modules", wname, wname);
}

/* Why the open flavour cannot be judged for a GPU: the index gives no list for it. */
static const char *const unknown_open = "its open modules do not list the GPUs they support";

/* The GPUs that decide under auto, by index: -1 where none does. */
struct auto_needs {
	long open; /* the first GPU only the open modules support */
	long prop; /* the first GPU the open modules do not (or may not) support */
};

/*
 * Under auto, which GPU needs which flavour, from the open and proprietary lists LO and LP
 * (NULL: not known). False, with R refused, when a GPU has no flavour that supports it or
 * two GPUs need different ones.
 */
static bool auto_needs(const struct repo_kmt_request *q, const struct repo_pci_list *lo,
		       const struct repo_pci_list *lp, struct auto_needs *ret,
		       struct repo_kmt_decision *r)
{
	const struct repo_driver *d = q->driver;
	char g[192], g2[192];

	*ret = (struct auto_needs){.open = -1, .prop = -1};
	for (size_t i = 0; i < q->n_gpus; i++) {
		int o = supports(lo, q->gpus[i]), p = supports(lp, q->gpus[i]);

		if (o != 1 && p == 0) {
			if (o == 0)
				refuse(r, "%s is not supported by %s in any flavour",
				       gpu_desc(d, q->gpus[i], g, sizeof(g)), d->version);
			else
				refuse(r,
				       "%s is not supported by the proprietary modules of %s, and %s",
				       gpu_desc(d, q->gpus[i], g, sizeof(g)), d->version,
				       unknown_open);
			return false;
		}
		if (o == 1 && p == 0 && ret->open < 0)
			ret->open = (long)i;
		if (o != 1 && ret->prop < 0)
			ret->prop = (long)i;
	}
	if (ret->open >= 0 && ret->prop >= 0) {
		refuse(r,
		       "%s needs the open modules and %s the proprietary ones: no flavour of %s drives both",
		       gpu_desc(d, q->gpus[ret->open], g, sizeof(g)),
		       gpu_desc(d, q->gpus[ret->prop], g2, sizeof(g2)), d->version);
		return false;
	}
	return true;
}

/* Under auto, GPU I needs the open modules. */
static void auto_take_open(const struct repo_kmt_request *q, size_t i, struct repo_kmt_decision *r)
{
	const struct repo_driver *d = q->driver;
	char g[192];

	gpu_desc(d, q->gpus[i], g, sizeof(g));
	if (!HAS(q->avail, REPO_MT_OPEN)) {
		refuse(r,
		       "%s needs the open modules; this repository has only proprietary modules of %s for kernel %s",
		       g, d->version, q->kernel);
		return;
	}
	take(r, REPO_MT_OPEN);
	if (HAS(q->avail, REPO_MT_PROPRIETARY))
		snprintf(r->excluded[REPO_MT_PROPRIETARY], REPO_REASON_MAX,
			 "%s is not supported by the proprietary modules of %s", g, d->version);
}

/* Under auto, GPU I needs the proprietary modules (LO: the open list, NULL: not known). */
static void auto_take_proprietary(const struct repo_kmt_request *q, size_t i,
				  const struct repo_pci_list *lo, struct repo_kmt_decision *r)
{
	const struct repo_driver *d = q->driver;
	char g[192];

	gpu_desc(d, q->gpus[i], g, sizeof(g));
	if (!HAS(q->avail, REPO_MT_PROPRIETARY)) {
		if (lo)
			refuse(r,
			       "%s needs the proprietary modules; this repository has only open modules of %s for kernel %s",
			       g, d->version, q->kernel);
		else
			refuse(r,
			       "this repository has only open modules of %s for kernel %s, and %s; --kernel-module-type open takes them anyway",
			       d->version, q->kernel, unknown_open);
		return;
	}
	take(r, REPO_MT_PROPRIETARY);
	if (!HAS(q->avail, REPO_MT_OPEN))
		return;
	if (lo)
		snprintf(r->excluded[REPO_MT_OPEN], REPO_REASON_MAX,
			 "%s is not supported by the open modules of %s", g, d->version);
	else
		snprintf(r->excluded[REPO_MT_OPEN], REPO_REASON_MAX,
			 "%s (module_types.open); --kernel-module-type open takes them",
			 unknown_open);
}

/*
 * Under auto, every GPU (if any) is supported by both flavours, or the open list is not
 * known (LO NULL): the branch decides.
 */
static void auto_take_by_branch(const struct repo_kmt_request *q, const struct repo_pci_list *lo,
				struct repo_kmt_decision *r)
{
	const struct repo_driver *d = q->driver;
	unsigned branch = branch_of(d->version);
	enum repo_module_type pref;

	pref = branch >= REPO_OPEN_DEFAULT_BRANCH && lo ? REPO_MT_OPEN : REPO_MT_PROPRIETARY;
	if (!HAS(q->avail, pref))
		pref = pref == REPO_MT_OPEN ? REPO_MT_PROPRIETARY : REPO_MT_OPEN;
	take(r, pref);
	if (pref == REPO_MT_OPEN && HAS(q->avail, REPO_MT_PROPRIETARY))
		snprintf(
			r->excluded[REPO_MT_PROPRIETARY], REPO_REASON_MAX,
			"from branch %d NVIDIA installs the open modules where the GPUs support them (%s is of branch %u)",
			REPO_OPEN_DEFAULT_BRANCH, d->version, branch);
	else if (pref == REPO_MT_PROPRIETARY && HAS(q->avail, REPO_MT_OPEN))
		snprintf(
			r->excluded[REPO_MT_OPEN], REPO_REASON_MAX,
			"%s is of branch %u: before %d NVIDIA installs the proprietary modules where the GPUs support both; --kernel-module-type open takes the open ones",
			d->version, branch, REPO_OPEN_DEFAULT_BRANCH);
}

/*
 * auto, NVIDIA's rule: a GPU that only one flavour supports decides; when every GPU is
 * supported by both, the open modules from branch REPO_OPEN_DEFAULT_BRANCH on, the
 * proprietary ones before. The open flavour is taken only where the index lists the
 * GPUs it supports; a proprietary flavour without a list is judged as every driver
 * without "supported_pci_ids" always was: it supports every GPU.
 */
static void decide_auto(const struct repo_kmt_request *q, struct repo_kmt_decision *r)
{
	struct repo_pci_list tmp;
	const struct repo_pci_list *lo = flavour_list(q->driver, REPO_MT_OPEN, NULL),
				   *lp = flavour_list(q->driver, REPO_MT_PROPRIETARY, &tmp);
	struct auto_needs needs;

	if (!auto_needs(q, lo, lp, &needs, r))
		return;
	if (needs.open >= 0)
		auto_take_open(q, (size_t)needs.open, r);
	else if (needs.prop >= 0)
		auto_take_proprietary(q, (size_t)needs.prop, lo, r);
	else
		auto_take_by_branch(q, lo, r);
}

void repo_kmt_decide(const struct repo_kmt_request *q, struct repo_kmt_decision *ret)
{
	memset(ret, 0, sizeof(*ret));
	switch (q->policy) {
	case REPO_KMT_OPEN:
		decide_explicit(q, REPO_MT_OPEN, ret);
		break;
	case REPO_KMT_PROPRIETARY:
		decide_explicit(q, REPO_MT_PROPRIETARY, ret);
		break;
	case REPO_KMT_AUTO:
		decide_auto(q, ret);
		break;
	}
}

/*
 * The flavour a package of D for H would have to be: the one POLICY names; under auto,
 * the one repo_kmt_decide takes for H's GPUs were both built (D's lists of the GPUs each
 * supports decide), else the one D's packages state, else proprietary (a driver that
 * states none is judged as before flavours existed).
 */
enum repo_module_type repo_kmt_wanted(const struct repo_driver *d, const struct host *h,
				      enum repo_kmt_policy policy)
{
	_cleanup_free_ uint32_t *ids = NULL;
	struct repo_kmt_decision k;
	unsigned stated = 0;

	if (policy != REPO_KMT_AUTO)
		return policy == REPO_KMT_OPEN ? REPO_MT_OPEN : REPO_MT_PROPRIETARY;
	for (size_t i = 0; i < d->n_pkgs; i++)
		if (d->pkgs[i].module_type != REPO_MT_UNSTATED)
			stated |= 1u << d->pkgs[i].module_type;
	if (!stated)
		return REPO_MT_PROPRIETARY;
	ids = calloc(h->n_gpus + 1, sizeof(*ids));
	for (size_t g = 0; ids && g < h->n_gpus; g++)
		ids[g] = (uint32_t)h->gpus[g].vendor << 16 | h->gpus[g].device;
	if (ids) {
		repo_kmt_decide(&(struct repo_kmt_request){.driver = d,
							   .gpus = ids,
							   .n_gpus = h->n_gpus,
							   .policy = policy,
							   .avail = 1u << REPO_MT_PROPRIETARY |
								    1u << REPO_MT_OPEN,
							   .kernel = h->kernel},
				&k);
		if (k.ok)
			return k.type;
	}
	return stated == 1u << REPO_MT_OPEN ? REPO_MT_OPEN : REPO_MT_PROPRIETARY;
}
