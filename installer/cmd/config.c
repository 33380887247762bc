// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cdi.h"
#include "cmd/config.h"
#include "repo.h"

int strv_push(struct strv *s, const char *value)
{
	char **v = reallocarray(s->v, s->n + 2, sizeof(char *));

	if (!v)
		return -ENOMEM;
	s->v = v;
	if (!(v[s->n] = strdup(value)))
		return -ENOMEM;
	v[++s->n] = NULL;
	return 0;
}

int strv_push_split(struct strv *s, const char *list)
{
	_cleanup_free_ char *copy = strdup(list);
	char *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
		if (strv_push(s, tok) < 0)
			return -ENOMEM;
	}
	return 0;
}

void strv_clear(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int config_set(char **field, const char *value, struct err *e)
{
	char *v = strdup(value);

	if (!v)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	free(*field);
	*field = v;
	return 0;
}

int config_set_uint(unsigned *field, const char *name, const char *value, unsigned min,
		    unsigned max, struct err *e)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < min || v > max)
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a number from %u to %u", name, value,
			       min, max);
	*field = (unsigned)v;
	return 0;
}

int config_set_log_format(struct config *c, const char *value, struct err *e)
{
	if (strcmp(value, "text") == 0)
		c->log_format = LOG_FORMAT_TEXT;
	else if (strcmp(value, "json") == 0)
		c->log_format = LOG_FORMAT_JSON;
	else
		return err_set(e, EXIT_USAGE, "log format '%s' is not 'text' or 'json'", value);
	return 0;
}

static bool env_bool(const char *v)
{
	return v &&
	       (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0);
}

int config_set_speed_floor(struct config *c, const char *name, const char *value, struct err *e)
{
	char bytes[16];
	const char *colon = strchr(value, ':');

	if (!colon || (size_t)(colon - value) >= sizeof(bytes))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not BYTES_PER_SECOND:SECONDS", name,
			       value);
	snprintf(bytes, sizeof(bytes), "%.*s", (int)(colon - value), value);
	if (config_set_uint(&c->speed_floor_bytes, name, bytes, 1, 1u << 30, e) < 0 ||
	    config_set_uint(&c->speed_floor_s, name, colon + 1, 1, 3600, e) < 0)
		return -1;
	return 0;
}

enum env_kind { ENV_STRING, ENV_LIST, ENV_BOOL, ENV_UINT, ENV_LOG_FORMAT, ENV_SPEED_FLOOR };

/* Every environment variable the installer reads: the one place they are read. */
static const struct env_var {
	const char *name;
	enum env_kind kind;
	size_t offset;
	unsigned min, max; /* ENV_UINT */
} env_vars[] = {
	/* First: an error in a later variable is reported in the format asked for. */
	{"NVIDIA_INSTALLER_LOG_FORMAT", ENV_LOG_FORMAT, 0, 0, 0},
	{"ROOT_MOUNT_DIR", ENV_STRING, offsetof(struct config, root), 0, 0},
	{"NVIDIA_DRIVER_REPO", ENV_LIST, offsetof(struct config, repos), 0, 0},
	{"NVIDIA_DRIVER_REPO_KEY", ENV_LIST, offsetof(struct config, repo_keys), 0, 0},
	{"NVIDIA_DRIVER_VERSION", ENV_STRING, offsetof(struct config, driver_version), 0, 0},
	{"NVIDIA_INSTALL_DIR_HOST", ENV_STRING, offsetof(struct config, install_dir), 0, 0},
	{"NVIDIA_INSTALL_DIR_CONTAINER", ENV_STRING, offsetof(struct config, container_dir), 0, 0},
	{"NVIDIA_CACHE_DIR", ENV_STRING, offsetof(struct config, cache_dir), 0, 0},
	{"NVIDIA_KERNEL_RELEASE", ENV_STRING, offsetof(struct config, kernel_release), 0, 0},
	{"NVIDIA_SKIP_MODULES", ENV_BOOL, offsetof(struct config, skip_modules), 0, 0},
	{"NVIDIA_FETCH_TIMEOUT", ENV_UINT, offsetof(struct config, fetch_timeout_s), 1, 86400},
	{"NVIDIA_FETCH_RETRIES", ENV_UINT, offsetof(struct config, fetch_retries), 0, 100},
	{"NVIDIA_FETCH_SPEED_FLOOR", ENV_SPEED_FLOOR, 0, 0, 0},
	{"NVIDIA_CA_FILE", ENV_STRING, offsetof(struct config, ca_file), 0, 0},
	{"NVIDIA_INDEX_MAX_AGE", ENV_UINT, offsetof(struct config, index_max_age_s), 0,
	 REPO_MAX_AGE_LIMIT},
	{"NVIDIA_ALLOW_INDEX_ROLLBACK", ENV_BOOL, offsetof(struct config, allow_index_rollback), 0,
	 0},
	{"NVIDIA_MODULE_CERT", ENV_LIST, offsetof(struct config, module_certs), 0, 0},
	{"NVIDIA_MODULES", ENV_LIST, offsetof(struct config, modules), 0, 0},
	{"NVIDIA_MODULE_ARGS", ENV_LIST, offsetof(struct config, module_args), 0, 0},
	{"NVIDIA_NO_UNLOAD_CONFLICTS", ENV_BOOL, offsetof(struct config, no_unload_conflicts), 0,
	 0},
	{"NVIDIA_KERNEL_KEYRING_CERT", ENV_STRING, offsetof(struct config, kernel_keyring_cert), 0,
	 0},
	{"NVIDIA_CDI_DIR", ENV_STRING, offsetof(struct config, cdi_dir), 0, 0},
	{"NVIDIA_CDI_KIND", ENV_STRING, offsetof(struct config, cdi_kind), 0, 0},
	{"NVIDIA_CDI_REPLACE", ENV_BOOL, offsetof(struct config, cdi_replace), 0, 0},
	{"NVIDIA_METRICS_FILE", ENV_STRING, offsetof(struct config, metrics_file), 0, 0},
	{"NVIDIA_HOST_MOUNT", ENV_LIST, offsetof(struct config, host_mounts), 0, 0},
	{"NVIDIA_SKIP_VERIFY", ENV_BOOL, offsetof(struct config, skip_verify), 0, 0},
};

static int env_apply(struct config *c, const struct env_var *ev, const char *v, struct err *e)
{
	void *field = (char *)c + ev->offset;

	switch (ev->kind) {
	case ENV_STRING:
		return *v ? config_set(field, v, e) : 0;
	case ENV_LIST:
		return strv_push_split(field, v) < 0
			       ? err_errno(e, EXIT_UNEXPECTED, ENOMEM, "%s", ev->name)
			       : 0;
	case ENV_BOOL:
		if (env_bool(v))
			*(bool *)field = true;
		return 0;
	case ENV_UINT:
		return *v ? config_set_uint(field, ev->name, v, ev->min, ev->max, e) : 0;
	case ENV_LOG_FORMAT:
		return *v && config_set_log_format(c, v, e) < 0 ? err_wrap(e, "%s", ev->name) : 0;
	case ENV_SPEED_FLOOR:
		return *v ? config_set_speed_floor(c, ev->name, v, e) : 0;
	}
	return 0;
}

static int config_from_env(struct config *c, struct err *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		const char *v = getenv(env_vars[i].name);

		if (!v)
			continue;
		if (env_apply(c, &env_vars[i], v, e) < 0 ||
		    strv_push(&c->env_used, env_vars[i].name) < 0)
			return err_is_set(e) ? -1
					     : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "environment");
	}
	return 0;
}

int config_unknown_env(struct strv *ret)
{
	extern char **environ;

	for (char **p = environ; p && *p; p++) {
		size_t n = strcspn(*p, "=");
		bool known = false;

		if (strncmp(*p, "NVIDIA_", 7) != 0)
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(env_vars) && !known; i++)
			known = strlen(env_vars[i].name) == n &&
				strncmp(env_vars[i].name, *p, n) == 0;
		/* NVIDIA_VISIBLE_DEVICES and friends belong to the container toolkit. */
		if (!known && strncmp(*p, "NVIDIA_VISIBLE_DEVICES=", 23) != 0 &&
		    strncmp(*p, "NVIDIA_DRIVER_CAPABILITIES=", 27) != 0 &&
		    strncmp(*p, "NVIDIA_REQUIRE_", 15) != 0) {
			char name[128];

			snprintf(name, sizeof(name), "%.*s", (int)n, *p);
			if (strv_push(ret, name) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

int config_init(struct config *c, struct err *e)
{
	memset(c, 0, sizeof(*c));
	c->log_format = LOG_FORMAT_TEXT;
	c->log_level = LOG_INFO;
	c->fetch_timeout_s = DEFAULT_FETCH_TIMEOUT_S;
	c->speed_floor_bytes = DEFAULT_SPEED_FLOOR_BYTES;
	c->speed_floor_s = DEFAULT_SPEED_FLOOR_SECONDS;
	c->fetch_retries = DEFAULT_FETCH_RETRIES;
	c->index_max_age_s = INDEX_MAX_AGE_REPO;
	if (config_set(&c->root, "/", e) < 0 || config_set(&c->driver_version, "default", e) < 0 ||
	    config_set(&c->install_dir, DEFAULT_INSTALL_DIR, e) < 0 ||
	    config_set(&c->container_dir, DEFAULT_CONTAINER_DIR, e) < 0 ||
	    config_set(&c->cache_dir, DEFAULT_CACHE_DIR, e) < 0 ||
	    config_set(&c->cdi_dir, DEFAULT_CDI_DIR, e) < 0 ||
	    config_set(&c->cdi_kind, CDI_KIND, e) < 0)
		return -1;
	return config_from_env(c, e);
}

void config_done(struct config *c)
{
	free(c->root);
	free(c->driver_version);
	free(c->install_dir);
	free(c->container_dir);
	free(c->cache_dir);
	free(c->kernel_release);
	strv_clear(&c->repos);
	strv_clear(&c->repo_keys);
	strv_clear(&c->module_certs);
	strv_clear(&c->modules);
	strv_clear(&c->module_args);
	free(c->kernel_keyring_cert);
	free(c->cdi_dir);
	free(c->cdi_kind);
	free(c->metrics_file);
	free(c->ca_file);
	strv_clear(&c->host_mounts);
	strv_clear(&c->env_used);
	free(c->mirror_to);
	strv_clear(&c->mirror_kernels);
	strv_clear(&c->mirror_versions);
	strv_clear(&c->exec_argv);
	strv_clear(&c->files);
	memset(c, 0, sizeof(*c));
}

static bool url_scheme_ok(const char *u)
{
	return strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0 ||
	       strncmp(u, "file://", 7) == 0;
}

/*
 * Host paths get suffixes appended (".versions/<version>-<sha12>/firmware/nvidia/<version>/...",
 * mount and ld.so.conf lines): a path this long leaves them room within PATH_MAX, so that no
 * step after the switch finds it too long.
 */
#define HOST_PATH_MAX 1024

static int check_host_path(const char *name, const char *p, struct err *e)
{
	size_t len = strlen(p);

	if (len > HOST_PATH_MAX)
		return err_set(e, EXIT_USAGE, "%s is %zu bytes long; at most %d", name, len,
			       HOST_PATH_MAX);
	for (const char *c = p; *c; c += strcspn(c, "/")) {
		c += strspn(c, "/");
		if (strcspn(c, "/") > NAME_MAX)
			return err_set(e, EXIT_USAGE,
				       "%s '%.64s...' has a component longer than %d bytes", name,
				       p, NAME_MAX);
	}
	if (p[0] != '/')
		return err_set(e, EXIT_USAGE, "%s '%s' must be an absolute host path", name, p);
	if (strcmp(p, "/") == 0)
		return err_set(e, EXIT_USAGE, "%s must not be the host's root", name);
	for (const char *c = p; *c; c++) {
		if ((unsigned char)*c < 0x20)
			return err_set(e, EXIT_USAGE, "%s holds a control character", name);
	}
	for (const char *c = p; *c; c += strcspn(c, "/")) {
		c += strspn(c, "/");
		if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0'))
			return err_set(e, EXIT_USAGE, "%s '%s' must not contain '..'", name, p);
	}
	return 0;
}

static int bad_version(const char *v, struct err *e)
{
	return err_set(
		e, EXIT_USAGE,
		"driver version '%s' is not 'default', 'latest', a version (550.90.07) or a branch (550)",
		v);
}

int config_validate(const struct config *c, struct err *e)
{
	for (size_t i = 0; i < c->repos.n; i++) {
		if (!url_scheme_ok(c->repos.v[i])) {
			err_set(e, EXIT_USAGE,
				"repository '%s' is not an https://, http:// or file:// URL",
				c->repos.v[i]);
			return -1;
		}
	}
	for (size_t i = 0; i < c->mirror_versions.n; i++) {
		if (!repo_request_is_valid(c->mirror_versions.v[i]))
			return bad_version(c->mirror_versions.v[i], e);
	}
	if (!repo_request_is_valid(c->driver_version))
		return bad_version(c->driver_version, e);
	if (c->kernel_release && (strchr(c->kernel_release, '/') || !*c->kernel_release))
		return err_set(e, EXIT_USAGE, "kernel release '%s' is not a release name",
			       c->kernel_release);
	if (c->root[0] != '/')
		return err_set(e, EXIT_USAGE, "--root '%s' must be an absolute path", c->root);
	if (!cdi_kind_is_valid(c->cdi_kind))
		return err_set(
			e, EXIT_USAGE,
			"--cdi-kind '%s' is not a CDI kind: VENDOR/CLASS, each starting with a letter, ending with a letter or digit, of letters, digits, '-', '_', '.'",
			c->cdi_kind);
	if (check_host_path("--install-dir", c->install_dir, e) < 0 ||
	    check_host_path("--container-dir", c->container_dir, e) < 0 ||
	    check_host_path("--cache-dir", c->cache_dir, e) < 0 ||
	    check_host_path("--cdi-dir", c->cdi_dir, e) < 0 ||
	    (c->metrics_file && check_host_path("--metrics-file", c->metrics_file, e) < 0))
		return -1;
	for (size_t i = 0; i < c->host_mounts.n; i++) {
		if (check_host_path("--host-mount", c->host_mounts.v[i], e) < 0)
			return -1;
	}
	return 0;
}
