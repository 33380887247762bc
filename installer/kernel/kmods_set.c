// SPDX-License-Identifier: Apache-2.0
/*
 * The set of modules to load: their files in the package, the order their dependencies
 * give, and the parameters --module-arg gives each (kmods.h). Split from kmods.c, which
 * keeps the kernel's live state, the loading and the conflicts.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kmods.h"
#include "util/str.h"

int kmods_parse_arg(const char *arg, char *module, size_t msize, char *kv, size_t kvsize,
		    struct err *e)
{
	const char *dot = strchr(arg, '.'), *eq = strchr(arg, '=');
	size_t mlen;

	if (!dot || !eq || dot > eq || dot == arg || eq == dot + 1 || !eq[1])
		return err_set(e, EXIT_USAGE, "module argument '%s' is not MODULE.KEY=VALUE", arg);
	/* Shown in JSON and kept in the record: text, as module names and parameters are. */
	if (!str_is_utf8(arg))
		return err_set(e, EXIT_USAGE, "module argument '%s' is not UTF-8", arg);
	for (const char *c = arg; c < dot; c++) {
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
			return err_set(e, EXIT_USAGE, "module argument '%s': bad module name", arg);
	}
	for (const char *c = dot + 1; c < eq; c++) {
		if (!isalnum((unsigned char)*c) && *c != '_')
			return err_set(e, EXIT_USAGE, "module argument '%s': bad parameter name",
				       arg);
	}
	for (const char *c = eq + 1; *c; c++) {
		if (isspace((unsigned char)*c) || *c == '"')
			return err_set(e, EXIT_USAGE,
				       "module argument '%s': values cannot hold spaces or quotes",
				       arg);
		if (iscntrl((unsigned char)*c))
			return err_set(
				e, EXIT_USAGE,
				"module argument '%s': values cannot hold control characters", arg);
	}
	mlen = (size_t)(dot - arg);
	if (mlen >= msize || strlen(dot + 1) >= kvsize)
		return err_set(e, EXIT_USAGE, "module argument '%s' is too long", arg);
	memcpy(module, arg, mlen);
	module[mlen] = '\0';
	kmods_normalise_name(module);
	snprintf(kv, kvsize, "%s", dot + 1);
	return 0;
}

/* Opens NAME.ko (with '-' or '_', as packages spell it either way) in drivers_fd. */
static int find_module_file(int drivers_fd, const char *name, char *path, size_t size)
{
	char dashed[KMODS_NAME_MAX], file[KMODS_NAME_MAX + 4];

	snprintf(dashed, sizeof(dashed), "%s", name);
	for (char *c = dashed; *c; c++) {
		if (*c == '_')
			*c = '-';
	}
	for (int i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s.ko", i == 0 ? dashed : name);
		if (faccessat(drivers_fd, file, R_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			snprintf(path, size, "/proc/self/fd/%d/%s", drivers_fd, file);
			return 0;
		}
	}
	return -1;
}

static bool depends_on(const struct kmods_entry *a, const char *name)
{
	char deps[sizeof(a->info.depends)], *tok, *save = NULL;

	snprintf(deps, sizeof(deps), "%s", a->info.depends);
	for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		kmods_normalise_name(tok);
		if (strcmp(tok, name) == 0)
			return true;
	}
	return false;
}

/* Orders the set so that every module follows what it depends on (within the set). */
static int set_sort(struct kmods_set *s, struct err *e)
{
	struct kmods_set out = {.n = 0};
	bool placed[KMODS_MAX] = {false};

	while (out.n < s->n) {
		bool progress = false;

		for (size_t i = 0; i < s->n; i++) {
			bool ready = !placed[i];

			for (size_t j = 0; j < s->n && ready; j++)
				ready = placed[j] || j == i || !depends_on(&s->e[i], s->e[j].name);
			if (ready) {
				out.e[out.n++] = s->e[i];
				placed[i] = progress = true;
			}
		}
		if (!progress)
			return err_set(e, EXIT_VERIFY,
				       "the driver's modules depend on each other in a cycle");
	}
	*s = out;
	return 0;
}

static int set_apply_args(struct kmods_set *s, char *const *args, size_t n_args, struct err *e)
{
	for (size_t a = 0; a < n_args; a++) {
		char module[KMODS_NAME_MAX], kv[512];
		struct kmods_entry *target = NULL;

		if (kmods_parse_arg(args[a], module, sizeof(module), kv, sizeof(kv), e) < 0)
			return -1;
		for (size_t i = 0; i < s->n && !target; i++) {
			if (strcmp(s->e[i].name, module) == 0)
				target = &s->e[i];
		}
		if (!target)
			return err_set(
				e, EXIT_USAGE,
				"module argument '%s' names '%s', which is not in the set being loaded",
				args[a], module);
		if (strlen(target->options) + strlen(kv) + 2 > sizeof(target->options))
			return err_set(e, EXIT_USAGE, "too many arguments for module %s", module);
		if (target->options[0])
			strcat(target->options, " ");
		strcat(target->options, kv);
	}
	return 0;
}

int kmods_set_build(struct kmods *k, const struct kmods_set_request *q, struct kmods_set *s,
		    struct err *e)
{
	memset(s, 0, sizeof(*s));
	if (q->n_names > KMODS_MAX)
		return err_set(e, EXIT_USAGE, "at most %d modules", KMODS_MAX);
	for (size_t i = 0; i < q->n_names; i++) {
		struct kmods_entry *en = &s->e[s->n];

		snprintf(en->name, sizeof(en->name), "%s", q->names[i]);
		kmods_normalise_name(en->name);
		for (size_t j = 0; j < s->n; j++) {
			if (strcmp(s->e[j].name, en->name) == 0)
				return err_set(e, EXIT_USAGE, "module %s is listed twice",
					       en->name);
		}
		if (find_module_file(q->drivers_fd, en->name, en->path, sizeof(en->path)) < 0) {
			err_set(e, EXIT_VERIFY, "the package has no %s.ko in kernel/", q->names[i]);
			err_hint(
				e,
				"pick modules the package has with --modules, or rebuild the package with them (build-driver-package --modules; --gdrcopy for gdrdrv, --gds for nvidia-fs)");
			return -1;
		}
		_Static_assert(sizeof(en->info.name) == sizeof(en->name), "module name sizes");
		if (!q->modinfo)
			memcpy(en->info.name, en->name, sizeof(en->name));
		else if (kmods_modinfo(k, en->path, &en->info, e) < 0)
			return -1;
		s->n++;
	}
	if (set_sort(s, e) < 0)
		return -1;
	return set_apply_args(s, q->args, q->n_args, e);
}

bool kmods_all_live(struct kmods *k, char *const *names, size_t n_names)
{
	for (size_t i = 0; i < n_names; i++) {
		char name[KMODS_NAME_MAX];

		snprintf(name, sizeof(name), "%s", names[i]);
		kmods_normalise_name(name);
		if (kmods_get_state(k, name) != KMODS_LIVE)
			return false;
	}
	return true;
}
