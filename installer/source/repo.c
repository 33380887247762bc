// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/repo.h"
#include "source/repo_caps.h"
#include "source/repo_kmt.h"
#include "source/repo_names.h"
#include "source/version.h"
#include "util/jsonc.h"

DEFINE_POINTER_CLEANUP(json_tokener, json_tokener_free)

/* ---- parsing ---------------------------------------------------------- */

static int get_string(json_object *o, const char *key, bool required, const char *where, char **ret,
		      struct err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		if (required)
			return err_set(e, EXIT_VERIFY, "%s: missing \"%s\"", where, key);
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return err_set(e, EXIT_VERIFY, "%s: \"%s\" must be a string", where, key);
	if (json_object_get_string_len(v) == 0 ||
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return err_set(e, EXIT_VERIFY, "%s: \"%s\" is empty or holds NUL", where, key);
	*ret = strdup(json_object_get_string(v));
	if (!*ret)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	return 0;
}

static int get_array(json_object *o, const char *key, bool required, const char *where,
		     json_object **ret, struct err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		*ret = NULL;
		return required ? err_set(e, EXIT_VERIFY, "%s: missing \"%s\"", where, key) : 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return err_set(e, EXIT_VERIFY, "%s: \"%s\" must be an array", where, key);
	*ret = v;
	return 0;
}

/* Paths are URL paths relative to the base: a conservative character set, no escapes. */
static bool package_path_is_safe(const char *p)
{
	const char *c;

	if (p[0] == '/' || strlen(p) > 1024)
		return false;
	for (c = p; *c; c++) {
		if (!isalnum((unsigned char)*c) && !strchr("._-+~/", *c))
			return false;
	}
	for (c = p; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/')
			c++;
		if (*c == '\0' && c[-1] == '/')
			return false;
	}
	return true;
}

static const char *arch_normalise(const char *a)
{
	if (strcmp(a, "amd64") == 0)
		return "x86_64";
	if (strcmp(a, "arm64") == 0)
		return "aarch64";
	return a;
}

static int parse_sha256(json_object *o, const char *where, char out[65], struct err *e)
{
	_cleanup_free_ char *s = NULL;

	if (get_string(o, "sha256", true, where, &s, e) < 0)
		return -1;
	if (strlen(s) != 64)
		return err_set(e, EXIT_VERIFY, "%s: \"sha256\" must be 64 hex digits", where);
	for (int i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return err_set(e, EXIT_VERIFY, "%s: \"sha256\" must be 64 hex digits",
				       where);
		out[i] = (char)tolower((unsigned char)s[i]);
	}
	out[64] = '\0';
	return 0;
}

/* One string member of "signer": 1 to SIZE-1 bytes, each passing OK. */
static int signer_string(json_object *s, const char *key, int (*ok)(int), char *out, size_t size)
{
	json_object *v;
	const char *str;
	size_t len;

	if (!json_object_object_get_ex(s, key, &v) || !json_object_is_type(v, json_type_string))
		return -1;
	str = json_object_get_string(v);
	len = strlen(str);
	if (len == 0 || len >= size)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!ok((unsigned char)str[i]))
			return -1;
	}
	memcpy(out, str, len + 1);
	return 0;
}

static int is_key_id_char(int c)
{
	return isdigit(c) || (c >= 'A' && c <= 'F') || c == ':';
}

static int is_lower_hex(int c)
{
	return isdigit(c) || (c >= 'a' && c <= 'f');
}

/* "signer": {"subject", "key_id", "sha256"}; optional, strict when present. */
static int parse_signer(json_object *o, const char *where, struct repo_package *p, struct err *e)
{
	json_object *s;

	if (!json_object_object_get_ex(o, "signer", &s))
		return 0;
	if (!json_object_is_type(s, json_type_object) ||
	    signer_string(s, "subject", isprint, p->signer_subject, sizeof(p->signer_subject)) <
		    0 ||
	    signer_string(s, "key_id", is_key_id_char, p->signer_key_id, sizeof(p->signer_key_id)) <
		    0 ||
	    signer_string(s, "sha256", is_lower_hex, p->signer_sha256, sizeof(p->signer_sha256)) <
		    0 ||
	    strlen(p->signer_sha256) != 64)
		return err_set(
			e, EXIT_VERIFY,
			"%s: \"signer\" must be an object with \"subject\" (printable), \"key_id\" (hex pairs) and \"sha256\" (64 lower-case hex digits)",
			where);
	p->has_signer = true;
	return 0;
}

/* "imex", "nvsdm": JSON booleans, optional (docs/repository-format.md); absent is false. */
static int parse_flag(json_object *o, const char *key, const char *where, bool *ret, struct err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return err_set(e, EXIT_VERIFY, "%s: \"%s\" must be true or false", where, key);
	*ret = json_object_get_boolean(v);
	return 0;
}

static int parse_package(json_object *o, const char *where, struct repo_package *p, struct err *e)
{
	json_object *v;
	int64_t size;

	if (!json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_VERIFY, "%s: must be an object", where);
	if (get_string(o, "kernel", true, where, &p->kernel, e) < 0 ||
	    get_string(o, "arch", true, where, &p->arch, e) < 0 ||
	    get_string(o, "os", false, where, &p->os, e) < 0 ||
	    get_string(o, "os_build", false, where, &p->os_build, e) < 0 ||
	    get_string(o, "path", true, where, &p->path, e) < 0 ||
	    parse_sha256(o, where, p->sha256, e) < 0)
		return -1;
	if (strcmp(arch_normalise(p->arch), p->arch) != 0) {
		char *a = strdup(arch_normalise(p->arch));
		if (!a)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
		free(p->arch);
		p->arch = a;
	}
	if (!package_path_is_safe(p->path))
		return err_set(
			e, EXIT_VERIFY,
			"%s: \"path\" '%s' must be relative, without '..', using only letters, digits and ._-+~/",
			where, p->path);
	if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int))
		return err_set(e, EXIT_VERIFY, "%s: \"size\" must be an integer", where);
	size = json_object_get_int64(v);
	if (size <= 0 || (uint64_t)size > REPO_PACKAGE_MAX)
		return err_set(e, EXIT_VERIFY, "%s: \"size\" %lld out of range", where,
			       (long long)size);
	p->size = (uint64_t)size;
	if (parse_signer(o, where, p, e) < 0 || repo_kmt_parse_package(o, where, p, e) < 0 ||
	    parse_flag(o, "imex", where, &p->imex, e) < 0 ||
	    parse_flag(o, "nvsdm", where, &p->nvsdm, e) < 0 ||
	    repo_gpudirect_parse_package(o, where, p, e) < 0 ||
	    repo_caps_parse_package(o, where, p, e) < 0)
		return -1;
	if (!json_object_object_get_ex(o, "unpacked_size", &v))
		return 0;
	size = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || size <= 0 ||
	    (uint64_t)size > REPO_PACKAGE_MAX)
		return err_set(e, EXIT_VERIFY,
			       "%s: \"unpacked_size\" must be an integer from 1 to 2^40", where);
	p->unpacked_size = (uint64_t)size;
	return 0;
}

static int parse_strings(json_object *arr, const char *where, const char *key, char ***ret,
			 size_t *ret_n, struct err *e)
{
	size_t n = json_object_array_length(arr);

	*ret = calloc(n ? n : 1, sizeof(char *));
	if (!*ret)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(v, json_type_string))
			return err_set(e, EXIT_VERIFY, "%s: \"%s\" must hold strings", where, key);
		(*ret)[i] = strdup(json_object_get_string(v));
		if (!(*ret)[i])
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
		*ret_n = i + 1;
	}
	return 0;
}

static int parse_pci_ids(json_object *arr, const char *where, struct repo_driver *d, struct err *e)
{
	size_t n = json_object_array_length(arr);

	d->has_pci_ids = true;
	d->pci_ids = calloc(n ? n : 1, sizeof(uint32_t));
	if (!d->pci_ids)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(v, json_type_string) ||
		    repo_parse_pci_id(json_object_get_string(v), &d->pci_ids[i]) < 0)
			return err_set(
				e, EXIT_VERIFY,
				"%s: \"supported_pci_ids\"[%zu] must look like \"10de:2330\"",
				where, i);
		d->n_pci_ids = i + 1;
	}
	return 0;
}

static int parse_driver(json_object *o, size_t index, struct repo_driver *d, struct err *e)
{
	json_object *tags, *pci, *pkgs;
	char where[96];

	snprintf(where, sizeof(where), "drivers[%zu]", index);
	if (!json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_VERIFY, "%s: must be an object", where);
	if (get_string(o, "version", true, where, &d->version, e) < 0)
		return -1;
	if (!version_is_valid(d->version))
		return err_set(e, EXIT_VERIFY, "%s: \"version\" '%.64s' is not a dotted number",
			       where, d->version);
	snprintf(where, sizeof(where), "driver %s", d->version);
	if (get_array(o, "tags", false, where, &tags, e) < 0 ||
	    get_array(o, "supported_pci_ids", false, where, &pci, e) < 0 ||
	    get_array(o, "packages", true, where, &pkgs, e) < 0)
		return -1;
	if (tags && parse_strings(tags, where, "tags", &d->tags, &d->n_tags, e) < 0)
		return -1;
	if ((pci && parse_pci_ids(pci, where, d, e) < 0) ||
	    repo_kmt_parse_driver(o, where, d, e) < 0)
		return -1;
	d->pkgs = calloc(json_object_array_length(pkgs) + 1, sizeof(*d->pkgs));
	if (!d->pkgs)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	for (size_t i = 0; i < json_object_array_length(pkgs); i++) {
		char pwhere[160];

		snprintf(pwhere, sizeof(pwhere), "%s: packages[%zu]", where, i);
		d->n_pkgs = i + 1;
		if (parse_package(json_object_array_get_idx(pkgs, i), pwhere, &d->pkgs[i], e) < 0)
			return -1;
	}
	return repo_kmt_check_layout(d, where, e);
}

/* N decimal digits at S, as a number; -1 unless all N are digits. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days from 1970-01-01 to Y-M-D in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int repo_parse_time(const char *s, int64_t *ret_us)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, dim;
	int64_t frac = 0, scale = 100000;
	const char *p;

	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return -1;
	y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
	h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 59)
		return -1;
	dim = mdays[mo - 1] + (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
	if (d > dim)
		return -1;
	p = s + 19;
	if (*p == '.') {
		if (!isdigit((unsigned char)p[1]))
			return -1;
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac += scale > 0 ? (*p - '0') * scale : 0;
	}
	if (strcmp(p, "Z") != 0)
		return -1;
	*ret_us = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000000) + frac;
	return 0;
}

/* "repository": a name without spaces, e.g. a DNS name and a path. */
static int parse_repository(json_object *root, struct repo_index *idx, struct err *e)
{
	const char *c;

	if (get_string(root, "repository", false, "index", &idx->repository, e) < 0)
		return -1;
	if (!idx->repository)
		return 0;
	for (c = idx->repository; *c; c++) {
		if (!isalnum((unsigned char)*c) && !strchr("._-:/", *c))
			break;
	}
	if (*c || strlen(idx->repository) > REPO_ID_MAX)
		return err_set(
			e, EXIT_VERIFY,
			"index: \"repository\" must be 1 to %d letters, digits or ._-:/ (like \"drivers.example.com/nvidia\")",
			REPO_ID_MAX);
	return 0;
}

void repo_index_identity(const struct repo_index *idx, const char *fpr, char *buf, size_t size)
{
	if (idx->repository)
		snprintf(buf, size, "repository:%s", idx->repository);
	else
		snprintf(buf, size, "%s", fpr);
}

int repo_check_not_older(const struct repo_index *idx, const char *ident, int64_t seen_us,
			 const char *seen, const char *holder, struct err *e)
{
	char what[REPO_IDENTITY_SIZE + 8];

	if (idx->has_generated && idx->generated_us >= seen_us)
		return 0;
	if (strncmp(ident, "repository:", 11) == 0)
		snprintf(what, sizeof(what), "repository %s", ident + 11);
	else
		snprintf(what, sizeof(what), "key %s", ident);
	if (idx->has_generated)
		err_set(e, EXIT_VERIFY,
			"index generated %s is older than the one generated %s that %s (%s): a replayed or stale index",
			idx->generated, seen, holder, what);
	else
		err_set(e, EXIT_VERIFY,
			"index has no \"generated\" time, so it is older than the one generated %s that %s (%s): a replayed or stale index",
			seen, holder, what);
	err_hint(
		e,
		"resync the stale mirror from its repository ('nvidia-driver-installer mirror'), or have the repository re-sign its current index ('make-repo sign'); see " DOC_DIR
		"/repository-format.md, Anti-rollback");
	return -1;
}

static int driver_cmp_newest_first(const void *a, const void *b)
{
	return version_compare(((const struct repo_driver *)b)->version,
			       ((const struct repo_driver *)a)->version);
}

static int parse_root(json_object *root, struct repo_index *idx, struct err *e)
{
	json_object *fmt, *drivers, *gen, *age;

	if (!json_object_is_type(root, json_type_object))
		return err_set(e, EXIT_VERIFY, "index: top level must be an object");
	if (!json_object_object_get_ex(root, "format", &fmt) ||
	    !json_object_is_type(fmt, json_type_int))
		return err_set(e, EXIT_VERIFY, "index: missing integer \"format\"");
	if (json_object_get_int64(fmt) != REPO_FORMAT) {
		err_set(e, EXIT_VERIFY,
			"index: format %lld is not supported (this installer reads %d)",
			(long long)json_object_get_int64(fmt), REPO_FORMAT);
		err_hint(e, "upgrade the installer, or point it at a repository in format %d",
			 REPO_FORMAT);
		return -1;
	}
	idx->format = REPO_FORMAT;
	if (json_object_object_get_ex(root, "generated", &gen)) {
		const char *g = json_object_is_type(gen, json_type_string)
					? json_object_get_string(gen)
					: NULL;

		if (!g || strlen(g) >= sizeof(idx->generated) ||
		    repo_parse_time(g, &idx->generated_us) < 0)
			return err_set(
				e, EXIT_VERIFY,
				"index: \"generated\" is not a UTC time like 2026-11-30T04:13:03Z");
		snprintf(idx->generated, sizeof(idx->generated), "%s", g);
		idx->has_generated = true;
	}
	if (json_object_object_get_ex(root, "max_age", &age)) {
		int64_t v = json_object_get_int64(age);

		if (!json_object_is_type(age, json_type_int) || v < 0 || v > REPO_MAX_AGE_LIMIT)
			return err_set(e, EXIT_VERIFY,
				       "index: \"max_age\" must be an integer from 0 to %d seconds",
				       REPO_MAX_AGE_LIMIT);
		idx->max_age_s = (unsigned)v;
	}
	if (parse_repository(root, idx, e) < 0 ||
	    get_array(root, "drivers", true, "index", &drivers, e) < 0)
		return -1;
	idx->drivers = calloc(json_object_array_length(drivers) + 1, sizeof(*idx->drivers));
	if (!idx->drivers)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	for (size_t i = 0; i < json_object_array_length(drivers); i++) {
		idx->n_drivers = i + 1;
		if (parse_driver(json_object_array_get_idx(drivers, i), i, &idx->drivers[i], e) < 0)
			return err_wrap(e, "index");
	}
	qsort(idx->drivers, idx->n_drivers, sizeof(*idx->drivers), driver_cmp_newest_first);
	for (size_t i = 1; i < idx->n_drivers; i++) {
		if (version_compare(idx->drivers[i - 1].version, idx->drivers[i].version) == 0)
			return err_set(e, EXIT_VERIFY, "index: driver %s is listed twice",
				       idx->drivers[i].version);
	}
	return 0;
}

int repo_index_parse(const char *buf, size_t len, struct repo_index **ret, struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(64);
	_cleanup_(json_object_putp) json_object *root = NULL;
	_cleanup_(repo_index_freep) struct repo_index *idx = NULL;

	if (!tok || len > REPO_INDEX_MAX || len > INT32_MAX)
		return err_set(e, EXIT_VERIFY, "index: too large or out of memory (%zu bytes)",
			       len);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success)
		return err_set(e, EXIT_VERIFY, "index: not valid JSON at byte %zu: %s",
			       json_tokener_get_parse_end(tok),
			       json_tokener_error_desc(json_tokener_get_error(tok)));
	if (json_tokener_get_parse_end(tok) != len)
		return err_set(e, EXIT_VERIFY, "index: trailing bytes after the JSON document");
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "index");
	if (parse_root(root, idx, e) < 0)
		return -1;
	*ret = TAKE_PTR(idx);
	return 0;
}

static void package_done(struct repo_package *p)
{
	free(p->kernel);
	free(p->arch);
	free(p->os);
	free(p->os_build);
	free(p->path);
}

void repo_index_free(struct repo_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n_drivers; i++) {
		struct repo_driver *d = &idx->drivers[i];

		free(d->version);
		for (size_t t = 0; t < d->n_tags; t++)
			free(d->tags[t]);
		free(d->tags);
		free(d->pci_ids);
		repo_kmt_driver_done(d);
		for (size_t p = 0; p < d->n_pkgs; p++)
			package_done(&d->pkgs[p]);
		free(d->pkgs);
	}
	free(idx->drivers);
	free(idx->repository);
	free(idx);
}

/* ---- selection -------------------------------------------------------- */

bool repo_driver_has_tag(const struct repo_driver *d, const char *tag)
{
	for (size_t i = 0; i < d->n_tags; i++) {
		if (strcmp(d->tags[i], tag) == 0)
			return true;
	}
	return false;
}

/* Whether PKG is for HOST's architecture, OS and build, whatever its kernel. */
static bool package_fits_image(const struct repo_package *p, const struct host *h)
{
	if (strcmp(p->arch, arch_normalise(h->arch)) != 0)
		return false;
	/* A package for a distribution serves its rebuilds too (ID_LIKE), kernel for kernel. */
	if (p->os && !host_os_is(h, p->os))
		return false;
	return !p->os_build || (h->os_build_id && strcmp(p->os_build, h->os_build_id) == 0);
}

/* -1 when PKG does not fit HOST, else how specific it is (0 generic .. 2 per build). */
static int package_fit(const struct repo_package *p, const struct host *h)
{
	if (strcmp(p->kernel, h->kernel) != 0 || !package_fits_image(p, h))
		return -1;
	return (p->os != NULL) + (p->os_build != NULL);
}

/* Whether every GPU of H is in D's "supported_pci_ids" (when given); else the first not. */
static const struct gpu *first_unsupported(const struct repo_driver *d, const struct host *h)
{
	for (size_t g = 0; d->has_pci_ids && g < h->n_gpus; g++) {
		uint32_t id = (uint32_t)h->gpus[g].vendor << 16 | h->gpus[g].device;
		bool found = false;

		for (size_t i = 0; i < d->n_pci_ids && !found; i++)
			found = d->pci_ids[i] == id;
		if (!found)
			return &h->gpus[g];
	}
	return NULL;
}

enum repo_verdict repo_driver_judge(const struct repo_driver *d, const struct host *h,
				    enum repo_kmt_policy policy, struct repo_judgement *ret)
{
	const struct repo_package *best[REPO_MT_COUNT] = {NULL};
	int best_fit[REPO_MT_COUNT] = {-1, -1, -1};
	_cleanup_free_ uint32_t *ids = NULL;
	unsigned avail = 0;

	memset(ret, 0, sizeof(*ret));
	/*
	 * Per flavour, the most specific package; of equals the first listed wins: a
	 * variant that installers ignoring its field must not take is listed after
	 * (repository-format.md, "How the format evolves").
	 */
	for (size_t i = 0; i < d->n_pkgs; i++) {
		enum repo_module_type t = d->pkgs[i].module_type;
		int fit = package_fit(&d->pkgs[i], h);

		if (fit > best_fit[t]) {
			best_fit[t] = fit;
			best[t] = &d->pkgs[i];
		}
	}
	for (unsigned t = REPO_MT_PROPRIETARY; t < REPO_MT_COUNT; t++)
		avail |= best[t] ? 1u << t : 0;
	if (!avail && !best[REPO_MT_UNSTATED])
		return ret->verdict = REPO_NO_PACKAGE;
	if (!avail) {
		/* No flavour stated for this host: judged as before the field existed. */
		if (policy != REPO_KMT_AUTO) {
			snprintf(
				ret->kmt.reason, sizeof(ret->kmt.reason),
				"--kernel-module-type %s: the packages of %s for kernel %s do not say their module type (packages[].module_type)",
				policy == REPO_KMT_OPEN ? "open" : "proprietary", d->version,
				h->kernel);
			return ret->verdict = REPO_MODULE_TYPE;
		}
		ret->gpu = first_unsupported(d, h);
		if (ret->gpu)
			return ret->verdict = REPO_GPU_UNSUPPORTED;
		ret->pkg = best[REPO_MT_UNSTATED];
		return ret->verdict = REPO_OK;
	}
	ids = calloc(h->n_gpus + 1, sizeof(*ids));
	if (!ids) {
		snprintf(ret->kmt.reason, sizeof(ret->kmt.reason), "out of memory");
		return ret->verdict = REPO_MODULE_TYPE;
	}
	for (size_t g = 0; g < h->n_gpus; g++)
		ids[g] = (uint32_t)h->gpus[g].vendor << 16 | h->gpus[g].device;
	repo_kmt_decide(&(struct repo_kmt_request){.driver = d,
						   .gpus = ids,
						   .n_gpus = h->n_gpus,
						   .policy = policy,
						   .avail = avail,
						   .kernel = h->kernel},
			&ret->kmt);
	if (!ret->kmt.ok)
		return ret->verdict = REPO_MODULE_TYPE;
	ret->pkg = best[ret->kmt.type];
	return ret->verdict = REPO_OK;
}

bool repo_request_is_valid(const char *request)
{
	return strcmp(request, "default") == 0 || strcmp(request, "latest") == 0 ||
	       version_is_valid(request);
}

bool repo_driver_wanted(const struct repo_index *idx, const struct repo_driver *d,
			const char *request)
{
	if (strcmp(request, "latest") == 0)
		return true;
	if (strcmp(request, "default") == 0)
		return repo_driver_has_tag(d, "default");
	if (!version_matches(request, d->version))
		return false;
	/* A prefix of D's version: wanted unless the request names a listed version. */
	for (size_t i = 0; i < idx->n_drivers; i++) {
		if (version_compare(request, idx->drivers[i].version) == 0)
			return &idx->drivers[i] == d;
	}
	return true;
}

const struct repo_driver *repo_resolve_tag(const struct repo_index *idx, const struct host *h,
					   enum repo_kmt_policy policy, const char *request)
{
	struct repo_judgement j;

	/* Drivers are sorted newest first: the first that qualifies wins. */
	for (size_t i = 0; i < idx->n_drivers; i++) {
		if (repo_driver_wanted(idx, &idx->drivers[i], request) &&
		    repo_driver_judge(&idx->drivers[i], h, policy, &j) == REPO_OK)
			return &idx->drivers[i];
	}
	return NULL;
}

/* ---- what the index offers ------------------------------------------------ */

void repo_names_done(struct repo_names *n)
{
	free(n->v);
	n->v = NULL;
	n->n = 0;
}

/* Adds NAME unless it is there; 0, or -1 on ENOMEM (the list keeps what it had). */
static int names_add(struct repo_names *n, const char *name)
{
	const char **v;

	for (size_t i = 0; i < n->n; i++) {
		if (strcmp(n->v[i], name) == 0)
			return 0;
	}
	v = reallocarray(n->v, n->n + 1, sizeof(*v));
	if (!v)
		return -1;
	n->v = v;
	n->v[n->n++] = name;
	return 0;
}

int repo_kernels(const struct repo_index *idx, const struct host *h, const char *request,
		 struct repo_names *ret)
{
	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *d = &idx->drivers[i];

		if (request && !repo_driver_wanted(idx, d, request))
			continue;
		for (size_t p = 0; p < d->n_pkgs; p++) {
			if ((!h || package_fits_image(&d->pkgs[p], h)) &&
			    names_add(ret, d->pkgs[p].kernel) < 0)
				return -1;
		}
	}
	return 0;
}

bool repo_has_kernel(const struct repo_index *idx, const char *kernel)
{
	for (size_t i = 0; i < idx->n_drivers; i++) {
		for (size_t p = 0; p < idx->drivers[i].n_pkgs; p++) {
			if (strcmp(idx->drivers[i].pkgs[p].kernel, kernel) == 0)
				return true;
		}
	}
	return false;
}

int repo_versions_for_host(const struct repo_index *idx, const struct host *h,
			   struct repo_names *ret)
{
	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *d = &idx->drivers[i];
		bool fits = false;

		for (size_t p = 0; p < d->n_pkgs && !fits; p++)
			fits = package_fit(&d->pkgs[p], h) >= 0;
		if (fits && names_add(ret, d->version) < 0)
			return -1;
	}
	return 0;
}

/* The length of NAME shown: the whole, or (MAJOR) its first component. */
static int shown_len(const char *name, bool major)
{
	return (int)(major ? strcspn(name, ".") : strlen(name));
}

/*
 * "a, b, c and 4 more" of N (the first REPO_NAMES_SHOWN, and as many as fit in SIZE), or
 * "none". MAJOR shows each name's first component and skips repeats of the one before.
 */
static void names_join(const char *const *v, size_t n, bool major, char *buf, size_t size)
{
	size_t len = 0, shown = 0, total = 0;

	snprintf(buf, size, "none");
	for (size_t i = 0; i < n; i++) {
		int l = shown_len(v[i], major);

		if (major && i > 0 && shown_len(v[i - 1], true) == l &&
		    strncmp(v[i - 1], v[i], (size_t)l) == 0)
			continue;
		total++;
		/* Room kept for ", " and " and NNNNN more". */
		if (shown == total - 1 && shown < REPO_NAMES_SHOWN && len + (size_t)l + 24 < size) {
			len += (size_t)snprintf(buf + len, size - len, "%s%.*s", shown ? ", " : "",
						l, v[i]);
			shown++;
		}
	}
	if (total > shown)
		snprintf(buf + len, size - len, " and %zu more", total - shown);
}

void repo_names_join(const struct repo_names *n, char *buf, size_t size)
{
	names_join(n->v, n->n, false, buf, size);
}

void repo_describe_offer(const struct repo_index *idx, const struct host *h, char *buf, size_t size)
{
	struct repo_names versions = {0}, tags = {0}, fit = {0};
	char v[256], b[128], t[128], f[256];

	for (size_t i = 0; i < idx->n_drivers; i++) {
		(void)names_add(&versions, idx->drivers[i].version);
		for (size_t j = 0; j < idx->drivers[i].n_tags; j++)
			(void)names_add(&tags, idx->drivers[i].tags[j]);
	}
	(void)repo_versions_for_host(idx, h, &fit);
	names_join(versions.v, versions.n, false, v, sizeof(v));
	names_join(versions.v, versions.n, true, b, sizeof(b));
	names_join(tags.v, tags.n, false, t, sizeof(t));
	names_join(fit.v, fit.n, false, f, sizeof(f));
	snprintf(
		buf, size,
		"it has versions %s (branches %s; tags %s), of which these have a package for kernel %s: %s",
		v, b, t, h->kernel, f);
	repo_names_done(&versions);
	repo_names_done(&tags);
	repo_names_done(&fit);
}

static void describe_host(const struct host *h, char *buf, size_t size)
{
	snprintf(buf, size, "kernel %s (%s, os %s%s%s)", h->kernel, h->arch, h->os_id,
		 h->os_build_id ? " build " : "", h->os_build_id ? h->os_build_id : "");
}

/* SUBJECT starts the sentence: "driver 550.90.07 has no", "no driver of branch 550 has a". */
static int select_fail_no_package(const struct repo_index *idx, const struct host *h,
				  const char *request, const char *subject, struct err *e)
{
	struct repo_names kernels = {0}, versions = {0};
	char klist[512], vlist[256], hostdesc[512], image[320];
	size_t n_kernels;

	/* What is closest: other kernels for this image, other versions for this kernel. */
	(void)repo_kernels(idx, h, request, &kernels);
	(void)repo_versions_for_host(idx, h, &versions);
	repo_names_join(&kernels, klist, sizeof(klist));
	repo_names_join(&versions, vlist, sizeof(vlist));
	n_kernels = kernels.n;
	repo_names_done(&kernels);
	repo_names_done(&versions);
	describe_host(h, hostdesc, sizeof(hostdesc));
	snprintf(image, sizeof(image), "%s%s%s on %s", h->os_id ? h->os_id : "linux",
		 h->os_build_id ? " build " : "", h->os_build_id ? h->os_build_id : "",
		 arch_normalise(h->arch));
	err_set(e, EXIT_NO_MATCH,
		"%s package for %s; packages exist for kernels: %s%s%s; versions with a package for kernel %s: %s",
		subject, hostdesc, klist, n_kernels ? "" : " for ", n_kernels ? "" : image,
		h->kernel, vlist);
	if (n_kernels)
		err_hint(
			e,
			"run a node image with one of those kernels, or add a package for %s to the repository",
			h->kernel);
	else
		err_hint(e, "add a package for kernel %s, %s, to the repository", h->kernel, image);
	return -1;
}

/*
 * What the drivers REQUEST names came to when none was taken: the first of them, the first
 * module flavour refusal, and the first GPU a driver does not support (with that driver).
 */
struct select_misses {
	const struct repo_driver *first_wanted;
	const struct gpu *bad_gpu;
	const struct repo_driver *gpu_driver;
	char kmt_reason[REPO_REASON_MAX];
};

/* No driver of the index matches REQUEST at all: what the index has instead. */
static int select_fail_no_driver(const struct repo_index *idx, const struct host *h,
				 const char *request, struct err *e)
{
	char offer[1024];

	repo_describe_offer(idx, h, offer, sizeof(offer));
	if (strcmp(request, "default") == 0) {
		err_set(e, EXIT_NO_MATCH, "no driver in the repository is tagged 'default'; %s",
			offer);
		err_hint(e, "pass --driver-version latest or a version; see list-versions");
	} else {
		err_set(e, EXIT_NO_MATCH, "no driver in the repository matches version '%s'; %s",
			request, offer);
		err_hint(e, "pass one of those to --driver-version; see list-versions");
	}
	return -1;
}

/*
 * Why no driver REQUEST names was taken, from M: none matches, a module flavour was
 * refused, a GPU is not supported, or (the rest) no package is built for this host.
 */
static int select_fail(const struct repo_index *idx, const struct host *h, const char *request,
		       const struct select_misses *m, struct err *e)
{
	const struct repo_driver *first = m->first_wanted;
	char what[128];

	if (!first)
		return select_fail_no_driver(idx, h, request, e);
	if (m->kmt_reason[0]) {
		err_set(e, EXIT_NO_MATCH, "%s", m->kmt_reason);
		err_hint(
			e,
			"see each flavour's GPUs with list-versions; choose a driver or --kernel-module-type (NVIDIA_KERNEL_MODULE_TYPE) that suits every GPU of the node");
		return -1;
	}
	if (m->bad_gpu) {
		err_set(e, EXIT_NO_MATCH, "driver %s does not support GPU %04x:%04x at %s",
			m->gpu_driver->version, m->bad_gpu->vendor, m->bad_gpu->device,
			m->bad_gpu->bdf);
		err_hint(
			e,
			"choose a driver that lists %04x:%04x in supported_pci_ids; see list-versions",
			m->bad_gpu->vendor, m->bad_gpu->device);
		return -1;
	}
	if (strcmp(request, "latest") == 0)
		snprintf(what, sizeof(what), "no driver in the repository has a");
	else if (strcmp(request, "default") == 0)
		snprintf(what, sizeof(what), "the default driver %s has no", first->version);
	else if (version_compare(request, first->version) == 0)
		snprintf(what, sizeof(what), "driver %s has no", first->version);
	else
		snprintf(what, sizeof(what), "no driver of branch %s has a", request);
	return select_fail_no_package(idx, h, request, what, e);
}

/*
 * The drivers REQUEST names, judged for H in the index's order: 0 and *RET for the first
 * that serves, else -1 with M saying why none did.
 */
static int select_scan(const struct repo_index *idx, const struct host *h, const char *request,
		       enum repo_kmt_policy policy, struct repo_choice *ret,
		       struct select_misses *m)
{
	struct repo_judgement j;

	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *d = &idx->drivers[i];

		if (!repo_driver_wanted(idx, d, request))
			continue;
		if (!m->first_wanted)
			m->first_wanted = d;
		switch (repo_driver_judge(d, h, policy, &j)) {
		case REPO_OK:
			ret->driver = d;
			ret->pkg = j.pkg;
			return 0;
		case REPO_GPU_UNSUPPORTED:
			if (!m->bad_gpu) {
				m->bad_gpu = j.gpu;
				m->gpu_driver = d;
			}
			break;
		case REPO_MODULE_TYPE:
			if (!m->kmt_reason[0])
				snprintf(m->kmt_reason, sizeof(m->kmt_reason), "%s", j.kmt.reason);
			break;
		case REPO_NO_PACKAGE:
			break;
		}
	}
	return -1;
}

int repo_select(const struct repo_index *idx, const struct host *h, const char *request,
		enum repo_kmt_policy policy, struct repo_choice *ret, struct err *e)
{
	struct select_misses m = {.first_wanted = NULL};

	if (!repo_request_is_valid(request))
		return err_set(
			e, EXIT_USAGE,
			"driver version '%s' is not 'default', 'latest', a version or a branch",
			request);
	if (select_scan(idx, h, request, policy, ret, &m) == 0)
		return 0;
	return select_fail(idx, h, request, &m, e);
}

int repo_wanted(const struct repo_index *idx, const struct host *h, const char *request,
		enum repo_kmt_policy policy, struct repo_want *ret)
{
	struct select_misses m = {.first_wanted = NULL};
	struct repo_choice c;

	if (!repo_request_is_valid(request) || select_scan(idx, h, request, policy, &c, &m) == 0 ||
	    !m.first_wanted || m.kmt_reason[0] || m.bad_gpu)
		return 0;
	ret->driver = m.first_wanted;
	ret->module_type = repo_kmt_wanted(m.first_wanted, h, policy);
	return 1;
}
