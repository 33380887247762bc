// SPDX-License-Identifier: Apache-2.0
#include "source/source.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/jsonc.h"

#define FLEET_MAX_STRING 256

DEFINE_POINTER_CLEANUP(json_tokener, json_tokener_free)

static void row_done(struct fleet_row *r)
{
	free(r->name);
	free(r->os);
	free(r->os_build);
	free(r->kernel);
	free(r->arch);
	free(r->module_signer);
	strv_clear(&r->versions);
	strv_clear(&r->flavours);
	strv_clear(&r->gpus);
}

void fleet_free(struct fleet *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_rows; i++)
		row_done(&f->rows[i]);
	free(f->rows);
	free(f);
}

static bool good_string(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > FLEET_MAX_STRING || !str_is_utf8(s))
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20)
			return false;
	}
	return true;
}

static int get_string(json_object *o, const char *key, const char *where, bool required, char **ret,
		      struct err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return err_set(e, EXIT_USAGE, "%s has no \"%s\"", where, key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string) || !good_string(json_object_get_string(v)))
		return err_set(e, EXIT_USAGE,
			       "%s: \"%s\" is not a string of 1 to %d printable characters", where,
			       key, FLEET_MAX_STRING);
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fleet");
}

static int get_list(json_object *o, const char *key, const char *where, bool required,
		    struct strv *ret, struct err *e)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, key, &v)) {
		if (required)
			return err_set(e, EXIT_USAGE, "%s has no \"%s\"", where, key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_array) || (n = json_object_array_length(v)) == 0 ||
	    n > 64)
		return err_set(e, EXIT_USAGE, "%s: \"%s\" is not a list of 1 to 64 strings", where,
			       key);
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(v, i);

		if (!json_object_is_type(s, json_type_string) ||
		    !good_string(json_object_get_string(s)))
			return err_set(e, EXIT_USAGE, "%s: \"%s\"[%zu] is not a printable string",
				       where, key, i);
		for (size_t j = 0; j < ret->n; j++) {
			if (strcmp(ret->v[j], json_object_get_string(s)) == 0)
				return err_set(e, EXIT_USAGE, "%s: \"%s\" lists '%s' twice", where,
					       key, ret->v[j]);
		}
		if (strv_push(ret, json_object_get_string(s)) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fleet");
	}
	return 0;
}

static const char *const row_keys[] = {
	"name",	    "os",   "build",	     "kernel",	  "arch", "driver_versions",
	"flavours", "gpus", "module_signer", "build_args"};

static int parse_row(json_object *o, const char *where, struct fleet_row *r, struct err *e)
{
	json_object *args;

	if (!json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_USAGE, "%s is not an object", where);
	json_object_object_foreach(o, key, val)
	{
		bool known = false;

		(void)val;
		for (size_t i = 0; i < sizeof(row_keys) / sizeof(*row_keys); i++)
			known = known || strcmp(key, row_keys[i]) == 0;
		if (!known)
			return err_set(
				e, EXIT_USAGE,
				"%s: unknown key \"%.64s\" (a row has name, os, build, kernel, "
				"arch, driver_versions, flavours, gpus, module_signer, build_args)",
				where, key);
	}
	if (get_string(o, "name", where, false, &r->name, e) < 0 ||
	    get_string(o, "os", where, true, &r->os, e) < 0 ||
	    get_string(o, "build", where, false, &r->os_build, e) < 0 ||
	    get_string(o, "kernel", where, true, &r->kernel, e) < 0 ||
	    get_string(o, "arch", where, false, &r->arch, e) < 0 ||
	    get_list(o, "driver_versions", where, true, &r->versions, e) < 0 ||
	    get_list(o, "flavours", where, false, &r->flavours, e) < 0 ||
	    get_list(o, "gpus", where, false, &r->gpus, e) < 0 ||
	    get_string(o, "module_signer", where, false, &r->module_signer, e) < 0)
		return -1;
	/* build_args is scripts/build-fleet's: only its shape is checked here. */
	if (json_object_object_get_ex(o, "build_args", &args)) {
		struct strv tmp = {0};
		int rr = get_list(o, "build_args", where, true, &tmp, e);

		strv_clear(&tmp);
		if (rr < 0)
			return -1;
	}
	if (!r->arch && !(r->arch = strdup("x86_64")))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fleet");
	if (r->flavours.n == 0 && strv_push(&r->flavours, "auto") < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fleet");
	for (size_t i = 0; i < r->flavours.n; i++) {
		const char *f = r->flavours.v[i];

		if (strcmp(f, "proprietary") != 0 && strcmp(f, "open") != 0 &&
		    strcmp(f, "auto") != 0)
			return err_set(e, EXIT_USAGE,
				       "%s: flavour '%s' is not proprietary, open or auto", where,
				       f);
	}
	return 0;
}

int fleet_parse(const char *buf, size_t len, struct fleet **ret, struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(16);
	_cleanup_(json_object_putp) json_object *root = NULL;
	_cleanup_(fleet_freep) struct fleet *f = NULL;
	json_object *v, *images;
	size_t n;

	if (!tok || len > FLEET_MAX_BYTES)
		return err_set(e, EXIT_USAGE, "the fleet file is larger than %u bytes",
			       FLEET_MAX_BYTES);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success)
		return err_set(e, EXIT_USAGE, "the fleet file is not valid JSON at byte %zu: %s",
			       json_tokener_get_parse_end(tok),
			       json_tokener_error_desc(json_tokener_get_error(tok)));
	if (json_tokener_get_parse_end(tok) != len)
		return err_set(e, EXIT_USAGE, "the fleet file has bytes after its JSON document");
	if (!json_object_is_type(root, json_type_object))
		return err_set(e, EXIT_USAGE, "the fleet file is not a JSON object");
	json_object_object_foreach(root, key, val)
	{
		(void)val;
		if (strcmp(key, "fleet") != 0 && strcmp(key, "images") != 0)
			return err_set(e, EXIT_USAGE,
				       "the fleet file has an unknown key \"%.64s\" (it has fleet "
				       "and images)",
				       key);
	}
	if (!json_object_object_get_ex(root, "fleet", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) != 1)
		return err_set(
			e, EXIT_USAGE,
			"the fleet file does not say \"fleet\": 1 (the only format there is)");
	if (!json_object_object_get_ex(root, "images", &images) ||
	    !json_object_is_type(images, json_type_array) ||
	    (n = json_object_array_length(images)) == 0 || n > FLEET_MAX_ROWS)
		return err_set(e, EXIT_USAGE,
			       "the fleet file's \"images\" is not a list of 1 to %d rows",
			       FLEET_MAX_ROWS);
	f = calloc(1, sizeof(*f));
	if (!f || !(f->rows = calloc(n, sizeof(*f->rows))))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fleet");
	for (size_t i = 0; i < n; i++) {
		char where[32];

		str_fmt_cut(where, sizeof(where), "images[%zu]", i);
		f->n_rows = i + 1;
		if (parse_row(json_object_array_get_idx(images, i), where, &f->rows[i], e) < 0)
			return -1;
	}
	*ret = TAKE_PTR(f);
	return 0;
}

void fleet_row_label(const struct fleet_row *r, char *buf, size_t size)
{
	if (r->name)
		str_fmt_cut(buf, size, "%s", r->name);
	else
		str_fmt_cut(buf, size, "%s%s%s kernel %s (%s)", r->os, r->os_build ? " build " : "",
			    r->os_build ? r->os_build : "", r->kernel, r->arch);
}
