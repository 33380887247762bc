// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
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

/* The one place that reads the environment. */
static int config_from_env(struct config *c, struct err *e)
{
	static const struct {
		const char *name;
		size_t offset;
	} strings[] = {
		{"ROOT_MOUNT_DIR", offsetof(struct config, root)},
		{"NVIDIA_DRIVER_VERSION", offsetof(struct config, driver_version)},
		{"NVIDIA_INSTALL_DIR_HOST", offsetof(struct config, install_dir)},
		{"NVIDIA_INSTALL_DIR_CONTAINER", offsetof(struct config, container_dir)},
		{"NVIDIA_CACHE_DIR", offsetof(struct config, cache_dir)},
		{"NVIDIA_KERNEL_RELEASE", offsetof(struct config, kernel_release)},
		{"NVIDIA_KERNEL_KEYRING_CERT", offsetof(struct config, kernel_keyring_cert)},
		{"NVIDIA_CDI_DIR", offsetof(struct config, cdi_dir)},
		{"NVIDIA_METRICS_FILE", offsetof(struct config, metrics_file)},
	};
	const char *v;

	for (size_t i = 0; i < ARRAY_SIZE(strings); i++) {
		v = getenv(strings[i].name);
		if (v && *v && config_set((char **)((char *)c + strings[i].offset), v, e) < 0)
			return -1;
	}
	if ((v = getenv("NVIDIA_DRIVER_REPO")) && strv_push_split(&c->repos, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if ((v = getenv("NVIDIA_DRIVER_REPO_KEY")) && strv_push_split(&c->repo_keys, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if ((v = getenv("NVIDIA_MODULE_CERT")) && strv_push_split(&c->module_certs, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if ((v = getenv("NVIDIA_MODULES")) && strv_push_split(&c->modules, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if ((v = getenv("NVIDIA_MODULE_ARGS")) && strv_push_split(&c->module_args, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if (env_bool(getenv("NVIDIA_NO_UNLOAD_CONFLICTS")))
		c->no_unload_conflicts = true;
	if (env_bool(getenv("NVIDIA_SKIP_VERIFY")))
		c->skip_verify = true;
	if ((v = getenv("NVIDIA_HOST_MOUNT")) && strv_push_split(&c->host_mounts, v) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "configuration");
	if ((v = getenv("NVIDIA_FETCH_TIMEOUT")) && *v &&
	    config_set_uint(&c->fetch_timeout_s, "NVIDIA_FETCH_TIMEOUT", v, 1, 86400, e) < 0)
		return -1;
	if ((v = getenv("NVIDIA_FETCH_RETRIES")) && *v &&
	    config_set_uint(&c->fetch_retries, "NVIDIA_FETCH_RETRIES", v, 0, 100, e) < 0)
		return -1;
	if ((v = getenv("NVIDIA_INSTALLER_LOG_FORMAT")) && *v && config_set_log_format(c, v, e) < 0)
		return err_wrap(e, "NVIDIA_INSTALLER_LOG_FORMAT");
	if (env_bool(getenv("NVIDIA_SKIP_MODULES")))
		c->skip_modules = true;
	return 0;
}

int config_init(struct config *c, struct err *e)
{
	memset(c, 0, sizeof(*c));
	c->log_format = LOG_FORMAT_TEXT;
	c->log_level = LOG_INFO;
	c->fetch_timeout_s = DEFAULT_FETCH_TIMEOUT_S;
	c->fetch_retries = DEFAULT_FETCH_RETRIES;
	if (config_set(&c->root, "/", e) < 0 || config_set(&c->driver_version, "default", e) < 0 ||
	    config_set(&c->install_dir, DEFAULT_INSTALL_DIR, e) < 0 ||
	    config_set(&c->container_dir, DEFAULT_CONTAINER_DIR, e) < 0 ||
	    config_set(&c->cache_dir, DEFAULT_CACHE_DIR, e) < 0 ||
	    config_set(&c->cdi_dir, DEFAULT_CDI_DIR, e) < 0)
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
	free(c->metrics_file);
	strv_clear(&c->host_mounts);
	strv_clear(&c->files);
	memset(c, 0, sizeof(*c));
}

static bool url_scheme_ok(const char *u)
{
	return strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0 ||
	       strncmp(u, "file://", 7) == 0;
}

static int check_host_path(const char *name, const char *p, struct err *e)
{
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
	if (!repo_request_is_valid(c->driver_version)) {
		err_set(e, EXIT_USAGE,
			"driver version '%s' is not 'default', 'latest', a version "
			"(550.90.07) or a branch (550)",
			c->driver_version);
		return -1;
	}
	if (c->kernel_release && (strchr(c->kernel_release, '/') || !*c->kernel_release))
		return err_set(e, EXIT_USAGE, "kernel release '%s' is not a release name",
			       c->kernel_release);
	if (c->root[0] != '/')
		return err_set(e, EXIT_USAGE, "--root '%s' must be an absolute path", c->root);
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
