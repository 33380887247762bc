// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cdi.h"
#include "util/fs.h"

#define CDI_VERSION "0.6.0"

DEFINE_POINTER_CLEANUP(json_object, json_object_put)

static json_object *node(const char *path)
{
	json_object *n = json_object_new_object();

	json_object_object_add(n, "path", json_object_new_string(path));
	return n;
}

static json_object *gpu_node(unsigned minor)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/nvidia%u", minor);
	return node(path);
}

static json_object *device(const char *name, json_object *nodes)
{
	json_object *d = json_object_new_object(), *edits = json_object_new_object();

	json_object_object_add(edits, "deviceNodes", nodes);
	json_object_object_add(d, "name", json_object_new_string(name));
	json_object_object_add(d, "containerEdits", edits);
	return d;
}

static json_object *mount(const char *host, const char *container)
{
	json_object *m = json_object_new_object(), *opts = json_object_new_array();

	for (const char *const *o = (const char *const[]){"ro", "nosuid", "nodev", "bind", NULL};
	     *o; o++)
		json_object_array_add(opts, json_object_new_string(*o));
	json_object_object_add(m, "hostPath", json_object_new_string(host));
	json_object_object_add(m, "containerPath", json_object_new_string(container));
	json_object_object_add(m, "options", opts);
	return m;
}

static json_object *common_edits(const struct cdi_input *in)
{
	json_object *edits = json_object_new_object(), *nodes = json_object_new_array();
	json_object *mounts = json_object_new_array(), *env = json_object_new_array();
	char host[4096], ctr[4096], ld[4200];

	for (size_t i = 0; i < in->n_shared; i++)
		json_object_array_add(nodes, node(in->shared_nodes[i]));
	for (const char *const *sub = (const char *const[]){"lib64", "bin", NULL}; *sub; sub++) {
		snprintf(host, sizeof(host), "%s/%s", in->install_dir, *sub);
		snprintf(ctr, sizeof(ctr), "%s/%s", in->container_dir, *sub);
		json_object_array_add(mounts, mount(host, ctr));
	}
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s/lib64", in->container_dir);
	json_object_array_add(env, json_object_new_string(ld));
	json_object_object_add(edits, "env", env);
	json_object_object_add(edits, "deviceNodes", nodes);
	json_object_object_add(edits, "mounts", mounts);
	return edits;
}

char *cdi_render(const struct cdi_input *in)
{
	_cleanup_(json_object_putp) json_object *spec = json_object_new_object();
	json_object *devices = json_object_new_array(), *all = json_object_new_array();
	char name[16];

	for (size_t i = 0; i < in->n_gpus; i++) {
		json_object *by_index = json_object_new_array();

		json_object_array_add(by_index, gpu_node(in->gpus[i].minor));
		snprintf(name, sizeof(name), "%zu", i);
		json_object_array_add(devices, device(name, by_index));
		if (in->gpus[i].uuid[0]) {
			json_object *by_uuid = json_object_new_array();

			json_object_array_add(by_uuid, gpu_node(in->gpus[i].minor));
			json_object_array_add(devices, device(in->gpus[i].uuid, by_uuid));
		}
		json_object_array_add(all, gpu_node(in->gpus[i].minor));
	}
	json_object_array_add(devices, device("all", all));
	json_object_object_add(spec, "cdiVersion", json_object_new_string(CDI_VERSION));
	json_object_object_add(spec, "kind", json_object_new_string(CDI_KIND));
	json_object_object_add(spec, "devices", devices);
	json_object_object_add(spec, "containerEdits", common_edits(in));
	return strdup(json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_SPACED |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
}

int cdi_write(int root_fd, const char *cdi_dir, const struct cdi_input *in, struct err *e)
{
	_cleanup_free_ char *json = cdi_render(in), *old = NULL, *text = NULL;
	_cleanup_close_ int dir = -1;
	size_t len;

	if (!json || asprintf(&text, "%s\n", json) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cdi");
	dir = fs_dir_in_root(root_fd, cdi_dir, true, e);
	if (dir < 0)
		return err_wrap(e, "cdi");
	if (fs_read_at(dir, CDI_FILE, 1 << 20, &old, &len, e) == 0 && strcmp(old, text) == 0)
		return 0;
	err_clear(e);
	if (fs_write_atomic_at(dir, CDI_FILE, text, strlen(text), 0644, e) < 0)
		return err_wrap(e, "cdi");
	return 1;
}

int cdi_remove(int root_fd, const char *cdi_dir, struct err *e)
{
	_cleanup_close_ int dir = fs_dir_in_root(root_fd, cdi_dir, false, e);

	if (dir < 0) {
		err_clear(e);
		return 0;
	}
	if (unlinkat(dir, CDI_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: remove %s/%s", cdi_dir, CDI_FILE);
	return 0;
}
