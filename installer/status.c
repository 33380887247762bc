// SPDX-License-Identifier: Apache-2.0
/* status: what is installed, loaded and published on this node. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cache.h"
#include "cdi.h"
#include "install.h"
#include "nodeinfo.h"
#include "nodestate.h"

DEFINE_POINTER_CLEANUP(json_object, json_object_put)

static json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static json_object *file_json(const char *path, bool present)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "present", json_object_new_boolean(present));
	return o;
}

static json_object *nvml_json(const struct nodestate *s)
{
	json_object *o, *gpus;

	if (!s->nvml_ok) {
		if (!s->nvml_error[0])
			return NULL;
		o = json_object_new_object();
		json_object_object_add(o, "error", json_object_new_string(s->nvml_error));
		return o;
	}
	o = json_object_new_object();
	gpus = json_object_new_array();
	json_object_object_add(o, "driver_version", json_object_new_string(s->nvml.driver_version));
	json_object_object_add(o, "cuda_version", json_object_new_int(s->nvml.cuda_version));
	for (unsigned i = 0; i < s->nvml.n_gpus; i++) {
		json_object *g = json_object_new_object();

		json_object_object_add(g, "name", json_object_new_string(s->nvml.gpus[i].name));
		json_object_object_add(g, "uuid", json_object_new_string(s->nvml.gpus[i].uuid));
		json_object_object_add(g, "minor", json_object_new_int((int)s->nvml.gpus[i].minor));
		json_object_object_add(g, "memory_mib",
				       json_object_new_int64((int64_t)s->nvml.gpus[i].memory_mib));
		json_object_array_add(gpus, g);
	}
	json_object_object_add(o, "gpus", gpus);
	return o;
}

static void add_installed(json_object *o, const struct nodestate *s, const char *running)
{
	const struct manifest *m = &s->manifest;

	json_object_object_add(o, "driver_version", json_object_new_string(m->driver_version));
	json_object_object_add(o, "kernel_release", json_object_new_string(m->kernel_release));
	json_object_object_add(o, "kernel_matches",
			       json_object_new_boolean(strcmp(m->kernel_release, running) == 0));
	json_object_object_add(o, "package_sha256", json_object_new_string(m->package_sha256));
	json_object_object_add(o, "package_size", json_object_new_int64((int64_t)m->package_size));
	json_object_object_add(o, "installed_at", json_object_new_string(m->installed_at));
	json_object_object_add(o, "requested_version", str_or_null(m->requested_version));
	json_object_object_add(o, "repository", str_or_null(m->repository));
	json_object_object_add(o, "key_fingerprint", str_or_null(m->key_fingerprint));
}

/*
 * The record the last install left when it asked the mirrors and served from the node's
 * cached index instead (cache_fallback_put), or NULL: none, or unreadable.
 */
static json_object *fallback_record(const struct config *c, int root_fd)
{
	_cleanup_(cache_freep) struct cache *cache = NULL;
	_cleanup_free_ char *text = NULL;
	struct err e;

	err_clear(&e);
	if (cache_open(root_fd, c->cache_dir, false, &cache, &e) != 0 ||
	    cache_fallback_get(cache, &text, &e) != 0)
		return NULL;
	return json_tokener_parse(text);
}

static const char *json_str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : "?";
}

static void status_json(const struct config *c, const struct nodestate *s, const char *running,
			json_object *fallback)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	json_object *mods = json_object_new_array(), *nodes = json_object_new_array();
	char cdi[4200];

	json_object_object_add(o, "installed", json_object_new_boolean(s->installed));
	json_object_object_add(o, "install_dir", json_object_new_string(c->install_dir));
	json_object_object_add(o, "container_dir", json_object_new_string(c->container_dir));
	json_object_object_add(o, "running_kernel", json_object_new_string(running));
	if (s->installed)
		add_installed(o, s, running);
	json_object_object_add(o, "loaded_version", str_or_null(s->loaded_version));
	for (size_t i = 0; i < s->host.n_modules; i++) {
		json_object *m = json_object_new_object();

		json_object_object_add(m, "name", json_object_new_string(s->host.modules[i].name));
		json_object_object_add(m, "version", str_or_null(s->host.modules[i].version));
		json_object_array_add(mods, m);
	}
	json_object_object_add(o, "modules", mods);
	for (size_t i = 0; i < s->n_nodes; i++)
		json_object_array_add(nodes, json_object_new_string(s->nodes[i]));
	json_object_object_add(o, "device_nodes", nodes);
	if (s->has_mount) {
		json_object *m = json_object_new_object();

		json_object_object_add(m, "target", json_object_new_string(s->mount.target));
		json_object_object_add(m, "fstype", json_object_new_string(s->mount.fstype));
		json_object_object_add(m, "options", json_object_new_string(s->mount.options));
		json_object_object_add(o, "mount", m);
	}
	snprintf(cdi, sizeof(cdi), "%s/%s", c->cdi_dir, CDI_FILE);
	json_object_object_add(o, "cdi_spec", file_json(cdi, s->cdi_present));
	json_object_object_add(o, "cdi_conflict", str_or_null(s->cdi_other));
	json_object_object_add(o, "labels", file_json(LABELS_FILE, s->labels_present));
	json_object_object_add(o, "ready", json_object_new_boolean(s->ready_present));
	json_object_object_add(o, "nvml", nvml_json(s));
	json_object_object_add(o, "repository_fallback",
			       fallback ? json_object_get(fallback) : NULL);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
}

static void status_text(const struct config *c, const struct nodestate *s, const char *running,
			json_object *fallback)
{
	const struct manifest *m = &s->manifest;

	printf("installed:      %s\n", s->installed ? "yes" : "no");
	if (s->installed) {
		printf("driver_version: %s (requested: %s)\n", m->driver_version,
		       m->requested_version ? m->requested_version : "?");
		printf("kernel_release: %s%s\n", m->kernel_release,
		       strcmp(m->kernel_release, running) == 0
			       ? ""
			       : " (differs from the running kernel: reinstall)");
		printf("package_sha256: %s\n", m->package_sha256);
		printf("repository:     %s\n", m->repository ? m->repository : "?");
		printf("installed_at:   %s\n", m->installed_at);
	}
	if (fallback)
		printf("index:          from the node cache at the last install (%s, %s): %s\n",
		       json_str(fallback, "reason"), json_str(fallback, "at"),
		       json_str(fallback, "detail"));
	printf("install_dir:    %s", c->install_dir);
	if (s->has_mount)
		printf(" (on %s, %s %s)", s->mount.target, s->mount.fstype, s->mount.options);
	printf("\nloaded_version: %s\nmodules:       ",
	       s->loaded_version[0] ? s->loaded_version : "not loaded");
	for (size_t i = 0; i < s->host.n_modules; i++)
		printf(" %s%s%s%s", s->host.modules[i].name,
		       s->host.modules[i].version[0] ? " " : "", s->host.modules[i].version,
		       i + 1 < s->host.n_modules ? "," : "");
	printf("%s\ndevice_nodes:  ", s->host.n_modules ? "" : " none");
	for (size_t i = 0; i < s->n_nodes; i++)
		printf(" %s", s->nodes[i]);
	printf("%s\n", s->n_nodes ? "" : " none");
	printf("cdi_spec:       %s/%s (%s)\n", c->cdi_dir, CDI_FILE,
	       s->cdi_present ? "present" : "absent");
	if (s->cdi_other[0])
		printf("cdi_conflict:   %s, another producer's, declares %s: the node's devices "
		       "are theirs (--cdi-kind or --cdi-replace)\n",
		       s->cdi_other, c->cdi_kind);
	printf("labels:         %s (%s)\n", LABELS_FILE, s->labels_present ? "present" : "absent");
	printf("ready:          %s\n", s->ready_present ? "yes" : "no");
	if (s->nvml_ok) {
		printf("nvml:           driver %s, CUDA %d.%d, %u GPU(s)\n", s->nvml.driver_version,
		       s->nvml.cuda_version / 1000, s->nvml.cuda_version % 1000 / 10,
		       s->nvml.n_gpus);
		for (unsigned i = 0; i < s->nvml.n_gpus; i++)
			printf("                %u: %s, %s, %llu MiB\n", i, s->nvml.gpus[i].name,
			       s->nvml.gpus[i].uuid,
			       (unsigned long long)s->nvml.gpus[i].memory_mib);
	} else {
		printf("nvml:           %s\n", s->nvml_error[0] ? s->nvml_error : "not checked");
	}
}

int status_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *fallback = NULL;
	_cleanup_close_ int root_fd = -1;
	struct nodestate s;
	struct utsname u;
	const char *running;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	running = session_release(c, &u);
	if (nodestate_collect(c, root_fd, &s, e) < 0)
		return -1;
	fallback = fallback_record(c, root_fd);
	if (c->json)
		status_json(c, &s, running, fallback);
	else
		status_text(c, &s, running, fallback);
	if (!s.installed) {
		nodestate_done(&s);
		err_set(e, EXIT_NO_MATCH, "status: no driver is installed in '%s'", c->install_dir);
		err_hint(e, "run 'nvidia-driver-installer install'");
		return -1;
	}
	nodestate_done(&s);
	return 0;
}
