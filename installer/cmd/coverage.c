// SPDX-License-Identifier: Apache-2.0
/*
 * coverage: what a repository serves, by kernel, OS build and architecture, and whether it
 * serves one node image. The question is answered by repo_select, the function install
 * decides with, on a host described by the options instead of probed: a script can gate a
 * node-pool upgrade on the exit status. With --fleet, the same question for every row of a
 * fleet file, every driver version and flavour it lists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/session.h"
#include "host/host.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/out.h"
#include "util/str.h"

static json_object *names_json(const struct repo_names *n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n->n; i++)
		json_object_array_add(a, json_object_new_string(n->v[i]));
	return a;
}

/* Where the index came from, for the text header and the JSON keys. */
static const char *index_origin(const struct source *src)
{
	return src->from_cache ? "the node's cached index" : src->mirrors[src->mirror];
}

static void add_index_keys(json_object *o, const struct source *src)
{
	json_object_object_add(o, "repository",
			       src->from_cache ? NULL
					       : json_object_new_string(src->mirrors[src->mirror]));
	json_object_object_add(o, "index_generated",
			       src->idx->has_generated ? json_object_new_string(src->idx->generated)
						       : NULL);
	json_object_object_add(
		o, "index_from_cache",
		session_json_string(src->from_cache ? source_fallback_name(src->fallback) : NULL));
}

/* ---- the table ------------------------------------------------------------ */

struct row {
	const struct repo_driver *d;
	const struct repo_package *p;
};

/* NULL ("any") sorts first. */
static int cmp_any(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* By kernel, architecture, OS, build, then version, newest first. */
static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int r = strcmp(x->p->kernel, y->p->kernel);

	if (r == 0)
		r = strcmp(x->p->arch, y->p->arch);
	if (r == 0)
		r = cmp_any(x->p->os, y->p->os);
	if (r == 0)
		r = cmp_any(x->p->os_build, y->p->os_build);
	return r ? r : version_compare(y->d->version, x->d->version);
}

/* The package's kernel module flavour; "-" where the index does not state one. */
static const char *module_type_text(const struct repo_package *p)
{
	const char *t = repo_module_type_name(p->module_type);

	return t ? t : "-";
}

static void tags_text(const struct repo_driver *d, char *buf, size_t size)
{
	size_t len = 0;

	snprintf(buf, size, "-");
	for (size_t t = 0; t < d->n_tags && len < size; t++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", t ? "," : "", d->tags[t]);
}

static void table_text(const struct source *src, const struct row *rows, size_t n, size_t n_kernels)
{
	out_line(stdout, "repository: %s (index signed by key %s, generated %s)", index_origin(src),
		 src->fingerprint, src->idx->has_generated ? src->idx->generated : "unknown");
	out_line(stdout, "%-24s %-8s %-8s %-16s %-14s %-12s %s", "KERNEL", "ARCH", "OS", "OS_BUILD",
		 "VERSION", "MODULES", "TAGS");
	for (size_t i = 0; i < n; i++) {
		const struct repo_package *p = rows[i].p;
		char tags[128];

		tags_text(rows[i].d, tags, sizeof(tags));
		out_line(stdout, "%-24s %-8s %-8s %-16s %-14s %-12s %s", p->kernel, p->arch,
			 p->os ? p->os : "any", p->os_build ? p->os_build : "any",
			 rows[i].d->version, module_type_text(p), tags);
	}
	out_line(stdout, "%zu package(s): %zu kernel(s), %zu version(s)", n, n_kernels,
		 src->idx->n_drivers);
}

static json_object *version_json(const struct repo_driver *d)
{
	json_object *o = json_object_new_object(), *tags = json_object_new_array(), *ids = NULL;

	for (size_t t = 0; t < d->n_tags; t++)
		json_object_array_add(tags, json_object_new_string(d->tags[t]));
	if (d->has_pci_ids) {
		ids = json_object_new_array();
		for (size_t i = 0; i < d->n_pci_ids; i++) {
			char id[16];

			snprintf(id, sizeof(id), "%04x:%04x", d->pci_ids[i] >> 16,
				 d->pci_ids[i] & 0xffff);
			json_object_array_add(ids, json_object_new_string(id));
		}
	}
	json_object_object_add(o, "version", json_object_new_string(d->version));
	json_object_object_add(o, "tags", tags);
	json_object_object_add(o, "supported_pci_ids", ids);
	return o;
}

static json_object *package_json(const struct repo_driver *d, const struct repo_package *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "kernel", json_object_new_string(p->kernel));
	json_object_object_add(o, "arch", json_object_new_string(p->arch));
	json_object_object_add(o, "os", session_json_string(p->os));
	json_object_object_add(o, "os_build", session_json_string(p->os_build));
	json_object_object_add(o, "driver_version", json_object_new_string(d->version));
	json_object_object_add(o, "module_type",
			       session_json_string(repo_module_type_name(p->module_type)));
	json_object_object_add(o, "path", json_object_new_string(p->path));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)p->size));
	json_object_object_add(o, "sha256", json_object_new_string(p->sha256));
	json_object_object_add(o, "imex", json_object_new_boolean(p->imex));
	json_object_object_add(o, "nvsdm", json_object_new_boolean(p->nvsdm));
	return o;
}

/* ---- IMEX: what a package without it means for GPUs of a multi-node NVLink domain ---- */

/*
 * Whether CHOICE serves the IMEX that H's GPUs need for jobs across nodes (GB200, GB300:
 * host_imex_gpu). *RET_NEEDED: a GPU needs it and a driver is chosen. NOTE: "" when the
 * driver is as new as the GPU's first release, the package carries IMEX (the index's
 * packages[].imex: host_imex_lack) and the driver is as new as NVIDIA's DRA driver's
 * default gate needs (host_imex_gate), or nothing needs it; else the one line that says
 * what is missing or too old, why, and how to get it. Returns false where IMEX is missing
 * (a driver too old for the gate still serves it: its note stands beside true). A package
 * without IMEX still serves single-node jobs: the answer stays "served", the exit status 0
 * (docs/configuration.md, coverage). A driver older than the GPU's first release serves
 * none of it: the note says so, and the answer is the index's (its supported_pci_ids, where
 * make-repo add --supported-pci-ids recorded them, refuse such a GPU).
 */
static bool imex_note(const struct host *h, const struct repo_choice *ch, bool *ret_needed,
		      char *note, size_t size)
{
	const struct host_imex_gpu *row = NULL;
	const struct gpu *g = host_imex_first(h, &row);
	char why[256], fix[128], what[384];

	note[0] = '\0';
	*ret_needed = g && ch->driver;
	if (!*ret_needed)
		return true;
	switch (host_imex_lack(ch->driver->version, ch->pkg->imex, row, why, sizeof(why))) {
	case HOST_IMEX_SERVED:
		if (host_imex_gate(ch->driver->version, why, sizeof(why), fix, sizeof(fix)))
			str_fmt_cut(
				note, size,
				"GPU %04x:%04x (%s) needs IMEX for jobs across nodes (multi-node NVLink); %s; fix: %s",
				g->vendor, g->device, row->name, why, fix);
		return true;
	case HOST_IMEX_NOT_DRIVEN:
		str_fmt_cut(what, sizeof(what), "%s", why);
		break;
	case HOST_IMEX_NO_PROGRAMS:
		str_fmt_cut(what, sizeof(what),
			    "driver %s's package: %s, so the node serves single-node jobs only",
			    ch->driver->version, why);
		break;
	}
	str_fmt_cut(
		note, size,
		"GPU %04x:%04x (%s) needs IMEX for jobs across nodes (multi-node NVLink); %s; fix: a driver %s or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version)",
		g->vendor, g->device, row->name, what, host_imex_fix_version(row));
	return false;
}

/*
 * imex_note, nvsdm_note: whether CHOICE serves what H needs, and the note when not (or when
 * it serves with a caveat).
 */
typedef bool note_fn(const struct host *h, const struct repo_choice *ch, bool *ret_needed,
		     char *note, size_t size);

/*
 * KEY (null where H needs nothing of it, else whether CH serves it) and KEY_note (the note,
 * or null), from NOTE's answer.
 */
static void note_json(json_object *o, const char *key, note_fn *note_of, const struct host *h,
		      const struct repo_choice *ch)
{
	char note[512], note_key[32];
	bool needed, served = note_of(h, ch, &needed, note, sizeof(note));

	snprintf(note_key, sizeof(note_key), "%s_note", key);
	json_object_object_add(o, key, needed ? json_object_new_boolean(served) : NULL);
	json_object_object_add(o, note_key, note[0] ? json_object_new_string(note) : NULL);
}

/* ---- NVLink 5 telemetry: a package without libnvsdm, for DCGM (design.md) ----------- */

/*
 * Whether CHOICE carries the libnvsdm that DCGM needs on H (host_nvsdm_wanted: NVLink 5
 * switches), from the index's packages[].nvsdm. *RET_NEEDED: H wants it and a driver is
 * chosen. NOTE: "" when the package has it or nothing wants it; else one line saying what
 * is missing and how to get it. Telemetry, not serving: the answer and the exit status stay.
 */
static bool nvsdm_note(const struct host *h, const struct repo_choice *ch, bool *ret_needed,
		       char *note, size_t size)
{
	char what[96], fix[192];

	note[0] = '\0';
	*ret_needed = host_nvsdm_wanted(h, what, sizeof(what)) && ch->driver;
	if (!*ret_needed || ch->pkg->nvsdm)
		return true;
	host_nvsdm_fix(strtoul(ch->driver->version, NULL, 10), fix, sizeof(fix));
	str_fmt_cut(
		note, size,
		"%s: NVLink 5 switches, which DCGM (dcgm-exporter) reads through libnvsdm.so.1; driver %s's package carries none, so DCGM reports no NVSwitch metrics (the GPUs are served); fix: %s",
		what, ch->driver->version, fix);
	return false;
}

static int table(const struct config *c, const struct source *src, struct err *e)
{
	const struct repo_index *idx = src->idx;
	_cleanup_free_ struct row *rows = NULL;
	struct repo_names kernels = {0};
	size_t n = 0, total = 0;

	for (size_t i = 0; i < idx->n_drivers; i++)
		total += idx->drivers[i].n_pkgs;
	rows = calloc(total ? total : 1, sizeof(*rows));
	if (!rows || repo_kernels(idx, NULL, NULL, &kernels) < 0) {
		repo_names_done(&kernels);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "coverage");
	}
	for (size_t i = 0; i < idx->n_drivers; i++) {
		for (size_t p = 0; p < idx->drivers[i].n_pkgs; p++)
			rows[n++] = (struct row){&idx->drivers[i], &idx->drivers[i].pkgs[p]};
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	if (c->json) {
		_cleanup_(json_object_putp) json_object *o = json_object_new_object();
		json_object *versions = json_object_new_array(), *pkgs = json_object_new_array();

		add_index_keys(o, src);
		for (size_t i = 0; i < idx->n_drivers; i++)
			json_object_array_add(versions, version_json(&idx->drivers[i]));
		for (size_t i = 0; i < n; i++)
			json_object_array_add(pkgs, package_json(rows[i].d, rows[i].p));
		json_object_object_add(o, "kernels", names_json(&kernels));
		json_object_object_add(o, "versions", versions);
		json_object_object_add(o, "packages", pkgs);
		session_print_json(o);
	} else {
		table_text(src, rows, n, kernels.n);
	}
	repo_names_done(&kernels);
	return 0;
}

/* ---- the question: does the repository serve this node image? ------------ */

static void query_json(const struct config *c, const struct source *src, const struct host *h,
		       const struct repo_choice *choice, const struct err *why)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	struct repo_names kernels = {0}, versions = {0};
	json_object *gpus = json_object_new_array();
	bool served = choice->driver != NULL;

	/* The closest the repository comes, whether or not it serves the image. */
	(void)repo_kernels(src->idx, h, c->driver_version, &kernels);
	(void)repo_versions_for_host(src->idx, h, &versions);
	for (size_t i = 0; i < c->image_gpus.n; i++)
		json_object_array_add(gpus, json_object_new_string(c->image_gpus.v[i]));
	add_index_keys(o, src);
	json_object_object_add(o, "os", json_object_new_string(h->os_id));
	json_object_object_add(o, "os_build", session_json_string(h->os_build_id));
	json_object_object_add(o, "kernel", json_object_new_string(h->kernel));
	json_object_object_add(o, "arch", json_object_new_string(h->arch));
	json_object_object_add(o, "gpus", gpus);
	json_object_object_add(o, "request", json_object_new_string(c->driver_version));
	json_object_object_add(o, "served", json_object_new_boolean(served));
	json_object_object_add(o, "driver_version",
			       served ? json_object_new_string(choice->driver->version) : NULL);
	json_object_object_add(o, "package",
			       served ? package_json(choice->driver, choice->pkg) : NULL);
	json_object_object_add(o, "reason", served ? NULL : json_object_new_string(why->msg));
	note_json(o, "imex", imex_note, h, choice);
	note_json(o, "nvsdm", nvsdm_note, h, choice);
	json_object_object_add(o, "kernels", names_json(&kernels));
	json_object_object_add(o, "versions_for_kernel", names_json(&versions));
	session_print_json(o);
	repo_names_done(&kernels);
	repo_names_done(&versions);
}

static int query(const struct config *c, const struct source *src, const struct host *h,
		 struct err *e)
{
	struct repo_choice choice = {0};
	int r = repo_select(src->idx, h, c->driver_version, session_kmt_policy(c), &choice, e);

	if (r < 0 && e->code != EXIT_NO_MATCH)
		return -1; /* a malformed request: nothing to report on */
	/* The node's older copy answered: the mirrors' failure is why it is not served. */
	if (r < 0 && src->from_cache)
		r = source_fallback_failed(src, e);
	if (c->json) {
		query_json(c, src, h, &choice, e);
	} else if (r == 0) {
		char note[512];
		bool needed;

		out_line(stdout,
			 "served: %s%s%s, kernel %s (%s): '%s' is driver %s, package %s%s%s",
			 h->os_id, h->os_build_id ? " build " : "",
			 h->os_build_id ? h->os_build_id : "", h->kernel, h->arch,
			 c->driver_version, choice.driver->version, choice.pkg->path,
			 choice.pkg->module_type ? ", modules " : "",
			 choice.pkg->module_type ? module_type_text(choice.pkg) : "");
		imex_note(h, &choice, &needed, note, sizeof(note));
		if (note[0])
			out_line(stdout, "note: %s", note);
		nvsdm_note(h, &choice, &needed, note, sizeof(note));
		if (note[0])
			out_line(stdout, "note: %s", note);
	}
	return r;
}

/* ---- the fleet: every row of a fleet file, every version and flavour -------------- */

struct fleet_answer {
	const struct fleet_row *row;
	const struct host *host; /* the row's node image */
	size_t row_index;
	const char *request, *flavour;
	struct repo_choice choice; /* .driver NULL: not served */
	struct err why;
};

/*
 * Whether the pool's kernel can load CHOICE's modules: a row with "module_signer" trusts
 * only that key (a COS pool that enforces signatures trusts Google's key, an Ubuntu node
 * under Secure Boot Canonical's), named by key id or certificate digest, never by subject
 * (fleet_signer_matches). -1 with WHY set when it cannot.
 */
static int signer_check(const struct fleet_row *r, const struct repo_choice *ch, struct err *why)
{
	const struct repo_package *p = ch->pkg;

	if (fleet_signer_matches(r, p))
		return 0;
	if (p->has_signer)
		err_set(why, EXIT_NO_MATCH,
			"its kernel loads only modules signed by %s%s; driver %s's package is "
			"signed by '%s' (key %s, certificate sha256:%s)",
			r->signer_sha256[0] ? "the certificate " : "key ", r->module_signer,
			ch->driver->version, p->signer_subject, p->signer_key_id, p->signer_sha256);
	else
		err_set(why, EXIT_NO_MATCH,
			"its kernel loads only modules signed by %s%s; driver %s's package names "
			"no signer (packages[].signer)",
			r->signer_sha256[0] ? "the certificate " : "key ", r->module_signer,
			ch->driver->version);
	if (strcmp(r->os, "cos") == 0)
		err_hint(why,
			 "Google signs only the driver versions it ships for each COS build: "
			 "build that version with Google's signatures attached or kept "
			 "(" DOC_DIR "/building-packages.md), or serve a version Google signed");
	return -1;
}

static void fleet_answer_json(json_object *arr, const struct fleet_answer *a)
{
	json_object *o = json_object_new_object(), *gpus = json_object_new_array();
	bool served = a->choice.driver != NULL;
	const struct fleet_row *r = a->row;

	for (size_t i = 0; i < r->gpus.n; i++)
		json_object_array_add(gpus, json_object_new_string(r->gpus.v[i]));
	json_object_object_add(o, "row", json_object_new_int64((int64_t)a->row_index));
	json_object_object_add(o, "name", session_json_string(r->name));
	json_object_object_add(o, "os", json_object_new_string(r->os));
	json_object_object_add(o, "os_build", session_json_string(r->os_build));
	json_object_object_add(o, "kernel", json_object_new_string(r->kernel));
	json_object_object_add(o, "arch", json_object_new_string(r->arch));
	json_object_object_add(o, "gpus", gpus);
	json_object_object_add(o, "request", json_object_new_string(a->request));
	json_object_object_add(o, "flavour", json_object_new_string(a->flavour));
	json_object_object_add(o, "module_signer", session_json_string(r->module_signer));
	json_object_object_add(o, "served", json_object_new_boolean(served));
	json_object_object_add(o, "driver_version",
			       served ? json_object_new_string(a->choice.driver->version) : NULL);
	json_object_object_add(o, "package",
			       served ? package_json(a->choice.driver, a->choice.pkg) : NULL);
	json_object_object_add(o, "reason", served ? NULL : json_object_new_string(a->why.msg));
	json_object_object_add(
		o, "fix", served || !a->why.hint[0] ? NULL : json_object_new_string(a->why.hint));
	note_json(o, "imex", imex_note, a->host, &a->choice);
	note_json(o, "nvsdm", nvsdm_note, a->host, &a->choice);
	json_object_array_add(arr, o);
}

static void fleet_answer_text(const struct fleet_answer *a)
{
	char label[320], note[512], note2[512];
	bool needed;

	fleet_row_label(a->row, label, sizeof(label));
	imex_note(a->host, &a->choice, &needed, note, sizeof(note));
	nvsdm_note(a->host, &a->choice, &needed, note2, sizeof(note2));
	if (a->choice.driver)
		out_line(stdout, "served: %s: '%s' (%s) is driver %s, package %s%s%s%s%s%s%s",
			 label, a->request, a->flavour, a->choice.driver->version,
			 a->choice.pkg->path, a->choice.pkg->module_type ? ", modules " : "",
			 a->choice.pkg->module_type ? module_type_text(a->choice.pkg) : "",
			 note[0] ? "; note: " : "", note, note2[0] ? "; note: " : "", note2);
	else
		out_line(stdout, "not served: %s: '%s' (%s): %s%s%s", label, a->request, a->flavour,
			 a->why.msg, a->why.hint[0] ? "; fix: " : "", a->why.hint);
}

/* One question: ROW's REQUEST under FLAVOUR, on the host ROW describes. */
static void fleet_ask(const struct source *src, const struct host *h, struct fleet_answer *a)
{
	enum repo_kmt_policy p = REPO_KMT_AUTO;

	if (repo_kmt_policy_parse(a->flavour, &p) < 0 ||
	    repo_select(src->idx, h, a->request, p, &a->choice, &a->why) < 0 ||
	    signer_check(a->row, &a->choice, &a->why) < 0)
		a->choice.driver = NULL;
}

static int fleet_run(const struct config *c, const struct fleet *f, const struct source *src,
		     struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = c->json ? json_object_new_object() : NULL;
	json_object *arr = c->json ? json_object_new_array() : NULL;
	size_t asked = 0, missing = 0;
	char first[512] = "";

	for (size_t i = 0; i < f->n_rows; i++) {
		const struct fleet_row *r = &f->rows[i];
		struct host h = {0};
		struct err bad = {0};

		if (host_describe(&(struct host_image){.os = r->os,
						       .os_build = r->os_build,
						       .kernel = r->kernel,
						       .arch = r->arch,
						       .gpu_ids = r->gpus.v,
						       .n_gpus = r->gpus.n},
				  &h, &bad) < 0) {
			char label[320];

			fleet_row_label(r, label, sizeof(label));
			json_object_put(arr);
			err_set(e, EXIT_USAGE, "fleet row %zu (%s): %s", i, label, bad.msg);
			return -1;
		}
		for (size_t v = 0; v < r->versions.n; v++) {
			for (size_t fl = 0; fl < r->flavours.n; fl++) {
				struct fleet_answer a = {.row = r,
							 .host = &h,
							 .row_index = i,
							 .request = r->versions.v[v],
							 .flavour = r->flavours.v[fl]};

				fleet_ask(src, &h, &a);
				asked++;
				if (!a.choice.driver && missing++ == 0) {
					char label[320];

					fleet_row_label(r, label, sizeof(label));
					str_fmt_cut(first, sizeof(first), "%s: '%s' (%s)", label,
						    a.request, a.flavour);
				}
				if (c->json)
					fleet_answer_json(arr, &a);
				else
					fleet_answer_text(&a);
			}
		}
		host_done(&h);
	}
	if (c->json) {
		add_index_keys(o, src);
		json_object_object_add(o, "fleet", json_object_new_string(c->image_fleet));
		json_object_object_add(o, "asked", json_object_new_int64((int64_t)asked));
		json_object_object_add(o, "not_served", json_object_new_int64((int64_t)missing));
		json_object_object_add(o, "answers", arr);
		session_print_json(o);
	}
	if (missing) {
		err_set(e, EXIT_NO_MATCH,
			"%zu of the fleet's %zu questions are not served, first %s", missing, asked,
			first);
		err_hint(
			e,
			"build what is missing (the source tree's build-fleet script takes the same "
			"file), publish it, and ask again");
		return -1;
	}
	return 0;
}

/* Whether the options ask the question, and if they ask it whole. */
static int query_wanted(const struct config *c, struct err *e)
{
	bool some = c->image_os || c->image_os_build || c->image_kernel || c->image_gpus.n;

	if (c->image_fleet && some) {
		err_set(e, EXIT_USAGE, "--fleet asks for every row of its file");
		err_hint(e, "leave out --os, --os-build, --kernel and --gpu, or --fleet");
		return -1;
	}
	if (some && (!c->image_os || !c->image_kernel)) {
		err_set(e, EXIT_USAGE, "a node image is named by --os and --kernel together");
		err_hint(
			e,
			"pass both (and --os-build, --arch, --gpu as the image has them), or neither for the whole table");
		return -1;
	}
	return some;
}

int coverage_run(const struct config *c, struct err *e)
{
	_cleanup_close_ int root_fd = -1;
	_cleanup_(cache_freep) struct cache *cache = NULL;
	struct source_opts so = session_source_opts(c);
	_cleanup_free_ char *fleet_text = NULL;
	_cleanup_(fleet_freep) struct fleet *f = NULL;
	size_t fleet_len = 0;
	struct host h = {0};
	struct source src;
	int is_query = query_wanted(c, e), r;

	if (is_query < 0)
		return -1;
	/* The fleet file is read, and refused, before any repository is asked. */
	if (c->image_fleet &&
	    (fs_read_path(c->image_fleet, FLEET_MAX_BYTES, &fleet_text, &fleet_len, e) < 0 ||
	     fleet_parse(fleet_text, fleet_len, &f, e) < 0)) {
		return err_wrap(e, "--fleet %s", c->image_fleet);
	}
	if (is_query && host_describe(&(struct host_image){.os = c->image_os,
							   .os_build = c->image_os_build,
							   .kernel = c->image_kernel,
							   .arch = c->image_arch,
							   .gpu_ids = c->image_gpus.v,
							   .n_gpus = c->image_gpus.n},
				      &h, e) < 0)
		return -1;
	/* The node's cache, as list-versions reads it: the fallback when no mirror answers. */
	root_fd = session_open_root(c, e);
	if (root_fd < 0 || cache_open(root_fd, c->cache_dir, false, &cache, e) < 0 ||
	    source_open(&so, cache, 0, &src, e) < 0) {
		host_done(&h);
		return -1;
	}
	r = f ? fleet_run(c, f, &src, e) : is_query ? query(c, &src, &h, e) : table(c, &src, e);
	source_done(&src);
	host_done(&h);
	return r;
}
