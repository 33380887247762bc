// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"
#include "kernel/kargs.h"
#include "kernel/kmods.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jsonfile.h"

#define RECORD_PATH KARGS_RECORD_DIR "/" KARGS_RECORD_NAME

void kargs_record_done(struct kargs_record *r)
{
	strv_clear(&r->args);
}

static int string_field(json_object *o, const char *key, char *out, size_t size)
{
	json_object *v;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -1;
	return str_fmt(out, size, "%s", json_object_get_string(v));
}

/*
 * The record's directory (made if need be with CREATE), once it is known to resolve
 * inside the host's /run: a link planted there that leads elsewhere could make a record
 * outlive the boot. Returns an fd, or -1: *OUTSIDE tells that case, and a path that
 * resolves nowhere (a dangling link, a file on the way), where no record can be kept
 * either, from a failure.
 */
static int record_dir(int root_fd, bool create, bool *outside, struct err *e)
{
	char canon[PATH_MAX];

	*outside = false;
	if (hostpath_resolve(root_fd, KARGS_RECORD_DIR, canon, sizeof(canon), e) < 0) {
		*outside = true;
		return -1;
	}
	if (strncmp(canon, "/run/", 5) != 0) {
		*outside = true;
		return err_set(
			e, EXIT_UNEXPECTED,
			"'%s' resolves to '%s', outside the host's /run: no record kept there",
			KARGS_RECORD_DIR, canon);
	}
	return fs_dir_in_root(root_fd, KARGS_RECORD_DIR, create, e);
}

/*
 * A record that cannot serve (WHAT: "damaged", or "unreadable" with E's cause kept) is
 * removed when found, so that it is said once: it is ours, in the checked directory, and
 * without it a change is compared with what the kernel shows. Returns -1.
 */
static int unusable(int dfd, const char *what, bool keep_cause, struct err *e)
{
	bool gone = err_errnum(e) != ENOMEM && unlinkat(dfd, KARGS_RECORD_NAME, 0) == 0;

	if (keep_cause)
		return err_wrap(e, "module parameters record '%s': %s%s", RECORD_PATH, what,
				gone ? ", removed" : "");
	return err_set(e, EXIT_UNEXPECTED, "module parameters record '%s': %s%s", RECORD_PATH, what,
		       gone ? ", removed" : "");
}

int kargs_read(int root_fd, struct kargs_record *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	_cleanup_free_ char *buf = NULL;
	struct kargs_record r = {.driver_version = ""};
	json_object *list;
	bool outside;
	_cleanup_close_ int dfd = record_dir(root_fd, false, &outside, e);
	size_t len;

	/* None where none can be kept (and none is read from where a link leads). */
	if (dfd < 0 && (outside || err_errnum(e) == ENOENT))
		return err_clear(e), 1;
	if (dfd < 0)
		return err_wrap(e, "module parameters record");
	if (fs_read_at(dfd, KARGS_RECORD_NAME, 64 << 10, &buf, &len, e) < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1)
					       : unusable(dfd, "unreadable", true, e);
	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    string_field(o, "driver_version", r.driver_version, sizeof(r.driver_version)) < 0 ||
	    !r.driver_version[0] ||
	    string_field(o, "module_type", r.module_type, sizeof(r.module_type)) < 0 ||
	    !json_object_object_get_ex(o, "module_args", &list) ||
	    !json_object_is_type(list, json_type_array))
		return unusable(dfd, "damaged", false, e);
	/* Optional (records before it have none): GDRCopy's and GDS's modules of our load. */
	if (json_object_object_get_ex(o, "gpudirect_modules", &list)) {
		for (size_t i = 0; json_object_is_type(list, json_type_array) &&
				   i < json_object_array_length(list);
		     i++) {
			const char *m = json_object_get_string(json_object_array_get_idx(list, i));

			r.gpudirect |= !m			     ? 0u
				       : strcmp(m, "gdrdrv") == 0    ? KMODS_GDRDRV
				       : strcmp(m, "nvidia_fs") == 0 ? KMODS_NVIDIA_FS
								     : 0u;
		}
	}
	json_object_object_get_ex(o, "module_args", &list);
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *a = json_object_array_get_idx(list, i);
		char module[KMODS_NAME_MAX], kv[512];
		int r2;

		if (!json_object_is_type(a, json_type_string)) {
			strv_clear(&r.args);
			return unusable(dfd, "damaged", false, e);
		}
		/*
		 * What --module-arg refuses, no load of ours gave: a restore that gave it would
		 * fail on it and leave the node without the driver it had.
		 */
		if (kmods_parse_arg(json_object_get_string(a), module, sizeof(module), kv,
				    sizeof(kv), e) < 0) {
			strv_clear(&r.args);
			return unusable(dfd, "damaged", true, e);
		}
		if ((r2 = strv_push(&r.args, json_object_get_string(a))) < 0) {
			strv_clear(&r.args);
			return err_errno(e, EXIT_UNEXPECTED, -r2, "module parameters record");
		}
	}
	*ret = r;
	return 0;
}

int kargs_write(int root_fd, const struct kargs_record *r, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	json_object *list = json_object_new_array();
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *s = NULL;
	bool outside;

	if (!o || !list) {
		json_object_put(list);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "module parameters record");
	}
	json_object_object_add(o, "format", json_object_new_int(1));
	json_object_object_add(o, "driver_version", json_object_new_string(r->driver_version));
	json_object_object_add(o, "module_type", json_object_new_string(r->module_type));
	for (size_t i = 0; i < r->args.n; i++)
		json_object_array_add(list, json_object_new_string(r->args.v[i]));
	json_object_object_add(o, "module_args", list);
	if (r->gpudirect) {
		json_object *g = json_object_new_array();

		if (r->gpudirect & KMODS_GDRDRV)
			json_object_array_add(g, json_object_new_string("gdrdrv"));
		if (r->gpudirect & KMODS_NVIDIA_FS)
			json_object_array_add(g, json_object_new_string("nvidia_fs"));
		json_object_object_add(o, "gpudirect_modules", g);
	}
	s = jsonfile_text(o);
	if (!s)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "module parameters record");
	dfd = record_dir(root_fd, true, &outside, e);
	if (dfd < 0 || fs_write_atomic_at(dfd, KARGS_RECORD_NAME, s, strlen(s), 0644, e) < 0)
		return err_wrap(e, "module parameters record");
	return 0;
}

int kargs_remove(int root_fd, struct err *e)
{
	bool outside;
	_cleanup_close_ int dfd = record_dir(root_fd, false, &outside, e);

	if (dfd < 0)
		return outside || err_errnum(e) == ENOENT ? (err_clear(e), 0)
							  : err_wrap(e, "module parameters record");
	if (unlinkat(dfd, KARGS_RECORD_NAME, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", RECORD_PATH);
	return 0;
}

struct param {
	char name[192]; /* "module.KEY", the module with '_' */
	const char *value;
};

/*
 * "MODULE.KEY" of A, the module spelled as the kernel names it ('_' for '-'); all of A when
 * it has no '=' (parse_set's value is empty then).
 */
static void param_name(const char *a, char name[192])
{
	const char *eq = strchr(a, '=');

	snprintf(name, 192, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
	for (char *c = name; *c && *c != '.'; c++)
		if (*c == '-')
			*c = '_';
}

/* The set ARGS as (name, value) pairs, a repeated name keeping its last value. */
static size_t parse_set(char *const *args, size_t n, struct param *out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(args[i], '=');
		struct param p = {.value = eq ? eq + 1 : ""};
		size_t j;

		param_name(args[i], p.name);
		for (j = 0; j < m && strcmp(out[j].name, p.name) != 0; j++)
			;
		out[j] = p;
		if (j == m)
			m++;
	}
	return m;
}

static const struct param *find(const struct param *set, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(set[i].name, name) == 0)
			return &set[i];
	return NULL;
}

static void add(char *buf, size_t size, size_t *len, const char *name, const char *from,
		const char *to)
{
	if (*len < size)
		*len += (size_t)snprintf(buf + *len, size - *len, "%s%s: %s -> %s",
					 *len ? ", " : "", name, from, to);
}

bool kargs_diff(char *const *recorded, size_t n_recorded, char *const *requested,
		size_t n_requested, char *buf, size_t size)
{
	_cleanup_free_ struct param *old = calloc(n_recorded + 1, sizeof(*old));
	_cleanup_free_ struct param *new = calloc(n_requested + 1, sizeof(*new));
	size_t n_old, n_new, len = 0;
	bool differ = false;

	if (size)
		buf[0] = '\0';
	/* No memory to tell: a difference, which the reload that follows will settle. */
	if (!old || !new)
		return true;
	n_old = parse_set(recorded, n_recorded, old);
	n_new = parse_set(requested, n_requested, new);
	for (size_t i = 0; i < n_old; i++) {
		const struct param *p = find(new, n_new, old[i].name);

		if (p && strcmp(p->value, old[i].value) == 0)
			continue;
		add(buf, size, &len, old[i].name, old[i].value, p ? p->value : "(default)");
		differ = true;
	}
	for (size_t i = 0; i < n_new; i++) {
		if (find(old, n_old, new[i].name))
			continue;
		add(buf, size, &len, new[i].name, "(default)", new[i].value);
		differ = true;
	}
	return differ;
}

int kargs_merge(char *const *defaults, size_t n_defaults, char *const *requested,
		size_t n_requested, struct strv *ret, size_t *n_overridden)
{
	*n_overridden = 0;
	for (size_t i = 0; i < n_defaults; i++) {
		char dn[192], rn[192];
		bool given = false;

		param_name(defaults[i], dn);
		for (size_t j = 0; j < n_requested && !given; j++) {
			param_name(requested[j], rn);
			given = strcmp(dn, rn) == 0;
		}
		if (given) {
			(*n_overridden)++;
			continue;
		}
		if (strv_push(ret, defaults[i]) < 0)
			return -ENOMEM;
	}
	for (size_t j = 0; j < n_requested; j++)
		if (strv_push(ret, requested[j]) < 0)
			return -ENOMEM;
	return 0;
}

int kargs_for_modules(char *const *defaults, size_t n_defaults, char *const *modules,
		      size_t n_modules, struct strv *ret, struct strv *ret_ignored)
{
	for (size_t i = 0; i < n_defaults; i++) {
		char dn[192], mn[KMODS_NAME_MAX];
		bool loaded = false;

		/* "MODULE.KEY", the module as the kernel spells it: cut at the dot. */
		param_name(defaults[i], dn);
		*strchrnul(dn, '.') = '\0';
		for (size_t j = 0; j < n_modules && !loaded; j++) {
			snprintf(mn, sizeof(mn), "%s", modules[j]);
			kmods_normalise_name(mn);
			loaded = strcmp(dn, mn) == 0;
		}
		if (strv_push(loaded ? ret : ret_ignored, defaults[i]) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* One "options MODULE KEY=VALUE..." line (LINE, number NO) pushed to RET. */
static int package_line(char *line, unsigned no, struct strv *ret, struct err *e)
{
	char *save = NULL, *word = strtok_r(line, " \t", &save), *module;
	size_t n = 0;

	if (!word || word[0] == '#')
		return 0;
	if (strcmp(word, "options") != 0)
		return err_set(
			e, EXIT_VERIFY,
			"%s line %u: '%s': a package may give only 'options MODULE KEY=VALUE...'",
			KARGS_PACKAGE_FILE, no, word);
	module = strtok_r(NULL, " \t", &save);
	if (!module)
		return err_set(e, EXIT_VERIFY, "%s line %u: 'options' without a module",
			       KARGS_PACKAGE_FILE, no);
	for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
		char arg[600], mod[KMODS_NAME_MAX], parsed[512];

		if (kv[0] == '#')
			break;
		if (str_fmt(arg, sizeof(arg), "%s.%s", module, kv) < 0 || !strchr(kv, '=') ||
		    kmods_parse_arg(arg, mod, sizeof(mod), parsed, sizeof(parsed), e) < 0) {
			err_clear(e);
			return err_set(
				e, EXIT_VERIFY,
				"%s line %u: '%s %s' is not a module parameter --module-arg could give",
				KARGS_PACKAGE_FILE, no, module, kv);
		}
		if (strv_push(ret, arg) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "%s", KARGS_PACKAGE_FILE);
		n++;
	}
	if (!n)
		return err_set(e, EXIT_VERIFY, "%s line %u: 'options %s' gives no KEY=VALUE",
			       KARGS_PACKAGE_FILE, no, module);
	return 0;
}

int kargs_package_defaults(int drivers_fd, struct strv *ret, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	unsigned no = 0;
	size_t len;

	if (fs_read_at(drivers_fd, KARGS_PACKAGE_FILE, KARGS_PACKAGE_MAX, &buf, &len, e) < 0) {
		if (err_errnum(e) == ENOENT)
			return err_clear(e), 0;
		e->code = EXIT_VERIFY;
		return err_wrap(e, "the package's %s", KARGS_PACKAGE_FILE);
	}
	if (strlen(buf) != len)
		return err_set(e, EXIT_VERIFY, "the package's %s holds a NUL byte",
			       KARGS_PACKAGE_FILE);
	/* strtok_r would merge empty lines and miscount: lines are cut by hand. */
	for (char *line = buf, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		no++;
		if (package_line(line, no, ret, e) < 0)
			return err_wrap(e, "package");
	}
	return 0;
}
