// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expose/cdi.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jsonfile.h"
#include "util/str.h"

/* ---- kinds and versions, by the CDI library's rules ------------------------------- */

/* cncf-tags/container-device-interface, pkg/parser/parser.go, validateVendorOrClassName. */
static bool name_is_valid(const char *s, size_t len)
{
	if (len == 0 || !isalpha((unsigned char)s[0]) || !isalnum((unsigned char)s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return false;
	return true;
}

bool cdi_kind_is_valid(const char *kind)
{
	const char *slash = strchr(kind, '/');

	return slash && name_is_valid(kind, (size_t)(slash - kind)) &&
	       name_is_valid(slash + 1, strlen(slash + 1));
}

static size_t array_len(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		       ? json_object_array_length(v)
		       : 0;
}

static size_t object_len(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) &&
			       json_object_is_type(v, json_type_object)
		       ? (size_t)json_object_object_length(v)
		       : 0;
}

static json_object *member(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool string_set(json_object *o, const char *key)
{
	const char *s = json_object_get_string(member(o, key));

	return member(o, key) && s && *s;
}

/* Whether any element of EDITS' array KEY has a non-empty string FIELD. */
static bool any_field(json_object *edits, const char *key, const char *field)
{
	for (size_t i = 0; i < array_len(edits, key); i++)
		if (string_set(json_object_array_get_idx(member(edits, key), i), field))
			return true;
	return false;
}

enum { V030, V040, V050, V060, V070, V110 };
static const char *const version_names[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "1.1.0"};

/* What one containerEdits needs (specs-go/version.go: requiresV040 ... requiresV110). */
static int edits_need(json_object *edits)
{
	json_object *rdt = member(edits, "intelRdt");

	if (array_len(edits, "netDevices") > 0 ||
	    (rdt &&
	     (member(rdt, "schemata") || json_object_get_boolean(member(rdt, "enableMonitoring")))))
		return V110;
	if (rdt || array_len(edits, "additionalGids") > 0)
		return V070;
	if (any_field(edits, "deviceNodes", "hostPath"))
		return V050;
	if (any_field(edits, "mounts", "type"))
		return V040;
	return V030;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

const char *cdi_min_version_of(const char *json)
{
	_cleanup_(json_object_putp) json_object *spec = json_tokener_parse(json);
	json_object *devices = member(spec, "devices");
	const char *kind = json_object_get_string(member(spec, "kind")), *class;
	int need;

	if (!spec)
		return version_names[V030];
	need = edits_need(member(spec, "containerEdits"));
	if (object_len(spec, "annotations") > 0)
		need = MAX(need, V060);
	class = kind ? strchr(kind, '/') : NULL;
	if (class && strchr(class + 1, '.'))
		need = MAX(need, V060);
	for (size_t i = 0; i < array_len(spec, "devices"); i++) {
		json_object *d = json_object_array_get_idx(devices, i);
		const char *name = json_object_get_string(member(d, "name"));

		need = MAX(need, edits_need(member(d, "containerEdits")));
		if (object_len(d, "annotations") > 0)
			need = MAX(need, V060);
		if (name && isdigit((unsigned char)name[0]))
			need = MAX(need, V050);
	}
	return version_names[need];
}

/* ---- the spec ---------------------------------------------------------------------- */

static json_object *node(const char *path)
{
	json_object *n = json_object_new_object();

	json_object_object_add(n, "path", json_object_new_string(path));
	return n;
}

static json_object *paths(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, node(v[i]));
	return a;
}

static json_object *gpu_node(unsigned minor)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/nvidia%u", minor);
	return node(path);
}

/* G's /dev/nvidiaN and its DRM nodes (graphics), added to TO, or to a new array. */
static json_object *gpu_nodes(const struct cdi_gpu *g, json_object *to)
{
	json_object *nodes = to ? to : json_object_new_array();

	json_object_array_add(nodes, gpu_node(g->minor));
	for (unsigned i = 0; i < g->n_drm && i < CDI_MAX_DRM; i++)
		json_object_array_add(nodes, node(g->drm[i]));
	return nodes;
}

static json_object *device(const char *name, json_object *nodes)
{
	json_object *d = json_object_new_object(), *edits = json_object_new_object();

	json_object_object_add(edits, "deviceNodes", nodes);
	json_object_object_add(d, "name", json_object_new_string(name));
	json_object_object_add(d, "containerEdits", edits);
	return d;
}

static json_object *strings(const char *const *v)
{
	json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static json_object *mount_with(const char *host, const char *container, const char *mode)
{
	json_object *m = json_object_new_object();

	json_object_object_add(m, "hostPath", json_object_new_string(host));
	json_object_object_add(m, "containerPath", json_object_new_string(container));
	json_object_object_add(
		m, "options",
		strings((const char *const[]){mode, "nosuid", "nodev", "bind", NULL}));
	return m;
}

static json_object *mount(const char *host, const char *container)
{
	return mount_with(host, container, "ro");
}

/*
 * The hook's deadline for the ldconfig it runs on the image, and the runtime's for the
 * hook (the OCI hook "timeout", in CDI's Hook since its first version: no newer
 * cdiVersion is needed). The hook's comes first, so that a hostile image ends in the
 * hook's own error, not in a bare kill; neither lets it hold a container's creation.
 */
#define HOOK_LDCONFIG_TIMEOUT "20"
#define HOOK_TIMEOUT_S 30

/* The ld-cache hook: helpers/cdi-hook.c says what it does with its arguments. */
static json_object *ldcache_hook(const char *path, const char *folder)
{
	json_object *h = json_object_new_object();

	json_object_object_add(h, "hookName", json_object_new_string("createContainer"));
	json_object_object_add(h, "path", json_object_new_string(path));
	json_object_object_add(
		h, "args",
		strings((const char *const[]){"nvidia-cdi-hook", "update-ldcache", "--folder",
					      folder, "--timeout", HOOK_LDCONFIG_TIMEOUT, NULL}));
	json_object_object_add(h, "timeout", json_object_new_int(HOOK_TIMEOUT_S));
	return h;
}

const struct cdi_config_file cdi_graphics_files[] = {
	{"share/vulkan/icd.d/nvidia_icd.json", "/etc/vulkan/icd.d/nvidia_icd.json"},
	{"share/vulkan/implicit_layer.d/nvidia_layers.json",
	 "/etc/vulkan/implicit_layer.d/nvidia_layers.json"},
	{"share/glvnd/egl_vendor.d/10_nvidia.json", "/usr/share/glvnd/egl_vendor.d/10_nvidia.json"},
	{"share/egl/egl_external_platform.d/15_nvidia_gbm.json",
	 "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json"},
	{"share/egl/egl_external_platform.d/10_nvidia_wayland.json",
	 "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json"},
	{"share/egl/egl_external_platform.d/09_nvidia_wayland2.json",
	 "/usr/share/egl/egl_external_platform.d/09_nvidia_wayland2.json"},
	{"share/egl/egl_external_platform.d/20_nvidia_xcb.json",
	 "/usr/share/egl/egl_external_platform.d/20_nvidia_xcb.json"},
	{"share/egl/egl_external_platform.d/20_nvidia_xlib.json",
	 "/usr/share/egl/egl_external_platform.d/20_nvidia_xlib.json"},
	{"share/nvidia/nvoptix.bin", "/usr/share/nvidia/nvoptix.bin"},
	{NULL, NULL},
};

/* The graphics files IN says the install dir has, each mounted alone where loaders read. */
static void add_config_files(const struct cdi_input *in, json_object *mounts)
{
	char host[4096];

	for (unsigned i = 0; cdi_graphics_files[i].package_path; i++) {
		if (!(in->config_files & (1u << i)))
			continue;
		snprintf(host, sizeof(host), "%s/%s", in->install_dir,
			 cdi_graphics_files[i].package_path);
		json_object_array_add(mounts, mount(host, cdi_graphics_files[i].container_path));
	}
}

static json_object *common_edits(const struct cdi_input *in)
{
	json_object *edits = json_object_new_object(), *nodes = json_object_new_array();
	json_object *mounts = json_object_new_array();
	char host[4096], ctr[4096];

	for (size_t i = 0; i < in->n_shared; i++)
		json_object_array_add(nodes, node(in->shared_nodes[i]));
	for (const char *const *sub = (const char *const[]){"lib64", "bin", NULL}; *sub; sub++) {
		snprintf(host, sizeof(host), "%s/%s", in->install_dir, *sub);
		snprintf(ctr, sizeof(ctr), "%s/%s", in->container_dir, *sub);
		json_object_array_add(mounts, mount(host, ctr));
	}
	/* MPS's clients talk to its daemon through sockets there: read-write, at its path. */
	if (in->mps_pipe_dir)
		json_object_array_add(mounts, mount_with(in->mps_pipe_dir, in->mps_pipe_dir, "rw"));
	add_config_files(in, mounts);
	json_object_object_add(edits, "deviceNodes", nodes);
	json_object_object_add(edits, "mounts", mounts);
	if (in->hook_path) {
		json_object *hooks = json_object_new_array();

		snprintf(ctr, sizeof(ctr), "%s/lib64", in->container_dir);
		json_object_array_add(hooks, ldcache_hook(in->hook_path, ctr));
		json_object_object_add(edits, "hooks", hooks);
	}
	return edits;
}

/* A MIG device's nodes: its GPU's, and the capabilities of its two instances. */
static json_object *mig_nodes(const struct cdi_mig *m)
{
	json_object *nodes = json_object_new_array();
	char path[64];

	json_object_array_add(nodes, gpu_node(m->gpu_minor));
	snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%ld", m->gi_cap);
	json_object_array_add(nodes, node(path));
	snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%ld", m->ci_cap);
	json_object_array_add(nodes, node(path));
	return nodes;
}

/*
 * The MIG devices, by "GPU:INDEX" and by UUID, each also in "all" (whose nodes are a set:
 * a GPU's node once). A GPU in MIG mode has no device of its own: a container given it
 * whole could not use it (nvidia-container-toolkit, pkg/nvcdi: MIG-enabled GPUs are left
 * out of the full GPUs).
 */
static void add_migs(const struct cdi_input *in, json_object *devices, json_object *all)
{
	char name[32], path[64];

	for (size_t i = 0; i < in->n_migs; i++) {
		const struct cdi_mig *m = &in->migs[i];

		snprintf(name, sizeof(name), "%u:%u", m->gpu, m->index);
		json_object_array_add(devices, device(name, mig_nodes(m)));
		if (m->uuid[0])
			json_object_array_add(devices, device(m->uuid, mig_nodes(m)));
		if (i == 0 || in->migs[i - 1].gpu_minor != m->gpu_minor)
			json_object_array_add(all, gpu_node(m->gpu_minor));
		snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%ld", m->gi_cap);
		json_object_array_add(all, node(path));
		snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%ld", m->ci_cap);
		json_object_array_add(all, node(path));
	}
}

char *cdi_render(const struct cdi_input *in)
{
	_cleanup_(json_object_putp) json_object *spec = json_object_new_object();
	json_object *devices = json_object_new_array(), *all = json_object_new_array();
	const char *text;
	char name[sizeof("18446744073709551615")]; /* any size_t */

	for (size_t i = 0; i < in->n_gpus; i++) {
		snprintf(name, sizeof(name), "%u", in->gpus[i].index);
		json_object_array_add(devices, device(name, gpu_nodes(&in->gpus[i], NULL)));
		if (in->gpus[i].uuid[0])
			json_object_array_add(
				devices, device(in->gpus[i].uuid, gpu_nodes(&in->gpus[i], NULL)));
		gpu_nodes(&in->gpus[i], all);
	}
	add_migs(in, devices, all);
	json_object_array_add(devices, device("all", all));
	/*
	 * GDRCopy's and GPUDirect Storage's nodes only to who asks, as nvidia-container-toolkit
	 * gives them only on NVIDIA_GDRCOPY / NVIDIA_GDS=enabled (internal/modifier/cdi.go:
	 * 133-141, its "mode=gdrcopy"/"mode=gds" devices of pkg/nvcdi/gated.go:57-71).
	 */
	if (in->n_gdrcopy)
		json_object_array_add(devices,
				      device("gdrcopy", paths(in->gdrcopy_nodes, in->n_gdrcopy)));
	if (in->n_gds)
		json_object_array_add(devices, device("gds", paths(in->gds_nodes, in->n_gds)));
	/* A placeholder first, so that the key leads the file; the content decides it. */
	json_object_object_add(spec, "cdiVersion", json_object_new_string(""));
	json_object_object_add(spec, "kind",
			       json_object_new_string(in->kind ? in->kind : CDI_KIND));
	json_object_object_add(spec, "devices", devices);
	json_object_object_add(spec, "containerEdits", common_edits(in));
	text = json_object_to_json_string(spec);
	json_object_object_add(spec, "cdiVersion",
			       json_object_new_string(cdi_min_version_of(text)));
	return jsonfile_text(spec);
}

/* ---- other producers --------------------------------------------------------------- */

/* A YAML scalar as written after "kind:": quotes and a trailing comment dropped. */
static int yaml_scalar(const char *p, const char *end, char *ret, size_t size)
{
	const char *q;
	size_t n;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end && (*p == '"' || *p == '\'')) {
		q = memchr(p + 1, *p, (size_t)(end - p - 1));
		if (!q)
			return -1;
		p++;
	} else {
		for (q = p; q < end && *q != '#' && *q != '\r'; q++)
			;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
			q--;
	}
	n = (size_t)(q - p);
	if (n == 0 || n >= size)
		return -1;
	memcpy(ret, p, n);
	ret[n] = '\0';
	return 0;
}

int cdi_spec_kind(const char *text, size_t len, bool yaml, char *ret, size_t size)
{
	if (!yaml) {
		_cleanup_(json_object_putp) json_object *o = json_tokener_parse(text);
		const char *k = json_object_get_string(member(o, "kind"));

		if (!o || !json_object_is_type(member(o, "kind"), json_type_string) ||
		    strlen(k) >= size)
			return -1;
		snprintf(ret, size, "%s", k);
		return 0;
	}
	/* YAML: the top-level mapping's "kind" (a line that starts with it, unindented). */
	for (const char *p = text, *end = text + len; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > 5 && strncmp(p, "kind:", 5) == 0)
			return yaml_scalar(p + 5, eol, ret, size);
		p = eol + 1;
	}
	return -1;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Whether TEXT (a spec of ours or not) mounts something from under INSTALL_DIR. */
static bool mounts_from(const char *text, const char *install_dir)
{
	_cleanup_(json_object_putp) json_object *o = json_tokener_parse(text);
	json_object *edits = member(o, "containerEdits"), *mounts = member(edits, "mounts");
	size_t n = strlen(install_dir);

	for (size_t i = 0; i < array_len(edits, "mounts"); i++) {
		const char *h = json_object_get_string(
			member(json_object_array_get_idx(mounts, i), "hostPath"));

		if (h && strncmp(h, install_dir, n) == 0 && h[n] == '/')
			return true;
	}
	return false;
}

/*
 * A file as the kernel knows it. A name is no proof: --cdi-dir /run/cdi and the runtimes'
 * /var/run/cdi are one directory where /var/run links to /run (every systemd host), so
 * are /var/run/cdi and /var/run/cdi/, and a spec may be a link to another.
 */
struct file_id {
	dev_t dev;
	ino_t ino;
};

static bool is_one_of(const struct stat *st, const struct file_id *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (st->st_dev == ids[i].dev && st->st_ino == ids[i].ino)
			return true;
	return false;
}

/* Our spec files, as the kernel knows them: what a search for another producer's skips. */
struct our_specs {
	struct file_id id[2];
	size_t n;
};

/*
 * Our specs in P's cdi_dir: CDI_FILE, and a legacy CDI_LEGACY_FILE that mounts from
 * P's install_dir, each a regular file there (written by rename, never a link).
 */
static void our_files(const struct cdi_place *p, struct our_specs *ret)
{
	struct err e;
	_cleanup_close_ int dir = fs_dir_in_root(p->root_fd, p->cdi_dir, false, &e);
	_cleanup_free_ char *text = NULL;
	struct stat st;
	size_t len;

	ret->n = 0;
	if (dir < 0)
		return;
	if (fstatat(dir, CDI_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		ret->id[ret->n++] = (struct file_id){st.st_dev, st.st_ino};
	if (fs_read_at(dir, CDI_LEGACY_FILE, CDI_SPEC_MAX, &text, &len, &e) == 0 &&
	    mounts_from(text, p->install_dir) &&
	    fstatat(dir, CDI_LEGACY_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ret->id[ret->n++] = (struct file_id){st.st_dev, st.st_ino};
}

/* The directories the runtimes read, and ours: each once, however it is named. */
struct spec_dirs {
	const char *name[3];
	int fd[3];
	size_t n;
};

static void spec_dirs_close(struct spec_dirs *d)
{
	for (size_t i = 0; i < d->n; i++)
		close(d->fd[i]);
	d->n = 0;
}

/*
 * The CDI library walks a directory only where its name is one (filepath.Walk lstat()s
 * its root, pkg/cdi/spec-dirs.go): a standard directory that is a link is not read, and
 * is not opened here either. A link on the way (/var/run) is followed, inside the root.
 */
static void spec_dirs_open(const struct cdi_place *p, struct spec_dirs *d)
{
	const char *names[] = {CDI_STATIC_DIR, CDI_DYNAMIC_DIR, p->cdi_dir};
	struct file_id seen[ARRAY_SIZE(names)];

	d->n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct err e;
		struct stat st;
		int fd = fs_open_in_root(p->root_fd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC,
					 0, i < 2 ? FS_NOFOLLOW_LAST : 0, &e);

		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || is_one_of(&st, seen, d->n)) {
			close(fd);
			continue;
		}
		seen[d->n] = (struct file_id){st.st_dev, st.st_ino};
		d->name[d->n] = names[i];
		d->fd[d->n++] = fd;
	}
}

/* DIR/NAME into BUF, without the trailing slashes DIR may be given with. 0, or -1 (too long). */
static int join(char *buf, size_t size, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return str_fmt(buf, size, "%.*s/%s", (int)n, strcmp(dir, "/") == 0 ? "" : dir, name);
}

/*
 * The spec NAME in DIR (host path) as the CDI library reads it (os.ReadFile: a link is
 * followed, here inside the host root), when it is a regular file of at most
 * CDI_SPEC_MAX bytes and none of OURS. A FIFO (which would make the reader wait for a
 * writer), a device or a directory is not a spec. Returns 0 with *ret_text (malloc'd)
 * and *ret_len, or -1.
 */
static int read_candidate(int root_fd, const char *dir, const char *name,
			  const struct our_specs *ours, char **ret_text, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	char path[PATH_MAX];
	struct stat st;
	struct err e;

	if (join(path, sizeof(path), dir, name) < 0)
		return -1;
	fd = fs_open_in_root(root_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0, 0, &e);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CDI_SPEC_MAX ||
	    is_one_of(&st, ours->id, ours->n))
		return -1;
	return fs_read_fd(fd, CDI_SPEC_MAX, ret_text, ret_len, &e);
}

/* A question asked of each spec: FN with its text and ARG, 1 when the spec is the one. */
struct spec_match {
	int (*fn)(const char *text, size_t len, bool yaml, void *arg);
	void *arg;
};

/*
 * Each spec of another producer (read_candidate's rule, every *.json and *.yaml of the
 * directories the runtimes read) goes to M; the first it takes has its host path written
 * to RET. Returns 1 taken, 0 none.
 */
static int find_spec(const struct cdi_place *p, const struct spec_match *m, char *ret, size_t size)
{
	_cleanup_(spec_dirs_close) struct spec_dirs d = {.n = 0};
	struct our_specs ours;

	our_files(p, &ours);
	spec_dirs_open(p, &d);
	for (size_t i = 0; i < d.n; i++) {
		struct err e;
		_cleanup_closedir_ DIR *dir = fs_opendir_at(d.fd[i], ".", &e);
		struct dirent *de;

		while (dir && (de = readdir(dir))) {
			bool yaml = has_suffix(de->d_name, ".yaml");
			_cleanup_free_ char *text = NULL;
			size_t len;

			if ((!yaml && !has_suffix(de->d_name, ".json")) ||
			    read_candidate(p->root_fd, d.name[i], de->d_name, &ours, &text, &len) <
				    0 ||
			    !m->fn(text, len, yaml, m->arg) ||
			    join(ret, size, d.name[i], de->d_name) < 0)
				continue;
			return 1;
		}
	}
	return 0;
}

static int declares_kind(const char *text, size_t len, bool yaml, void *arg)
{
	char k[256];

	return cdi_spec_kind(text, len, yaml, k, sizeof(k)) == 0 && strcmp(k, arg) == 0;
}

int cdi_find_other(const struct cdi_place *p, const char *kind, char *ret, size_t size)
{
	const struct spec_match m = {declares_kind, (void *)kind};

	return find_spec(p, &m, ret, size);
}

/*
 * The first host path under PLACE's install_dir that TEXT names and that does not resolve
 * under its root, into RET. A spec names paths as JSON or YAML strings: each starts at
 * install_dir + "/" after a quote, a space or the start of a line, and ends at a quote,
 * a blank, a comma or a bracket. Returns 1 found, 0 none.
 */
static int missing_path(const struct cdi_place *place, const char *text, char *ret, size_t size)
{
	const char *install_dir = place->install_dir;
	size_t n = strlen(install_dir);

	for (const char *p = strstr(text, install_dir); p; p = strstr(p + 1, install_dir)) {
		char path[PATH_MAX];
		size_t len;
		struct err e;
		int fd;

		if ((p > text && !strchr("\"' \n\t", p[-1])) || p[n] != '/')
			continue;
		len = strcspn(p, "\"' \n\t\r,]}");
		if (len >= sizeof(path))
			continue;
		memcpy(path, p, len);
		path[len] = '\0';
		fd = fs_open_in_root(place->root_fd, path, O_PATH | O_CLOEXEC, 0, 0, &e);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		str_fmt_cut(ret, size, "%s", path);
		return 1;
	}
	return 0;
}

struct stale_query {
	const struct cdi_place *place;
	struct cdi_stale *ret;
};

static int names_missing(const char *text, size_t len, bool yaml, void *arg)
{
	const struct stale_query *q = arg;

	(void)len;
	(void)yaml;
	return missing_path(q->place, text, q->ret->missing, sizeof(q->ret->missing));
}

int cdi_find_stale(const struct cdi_place *p, struct cdi_stale *ret)
{
	struct stale_query q = {p, ret};
	const struct spec_match m = {names_missing, &q};

	return find_spec(p, &m, ret->spec, sizeof(ret->spec));
}

/* ---- what --cdi-replace set aside -------------------------------------------------- */

/*
 * The record of it, in the install dir (ours, and kept across reboots as /etc/cdi is):
 * each spec's host path and the inode of the file moved, so that uninstall puts back that
 * file and nothing else. No device number: it may change at a reboot (btrfs).
 */
#define CDI_RECORD ".cdi-set-aside.json"

static json_object *record_read(int install_fd)
{
	_cleanup_free_ char *text = NULL;
	json_object *r = NULL;
	struct err e;
	size_t len;

	if (fs_read_at(install_fd, CDI_RECORD, CDI_SPEC_MAX, &text, &len, &e) == 0)
		r = json_tokener_parse(text);
	if (!json_object_is_type(member(r, "set_aside"), json_type_array)) {
		json_object_put(r);
		r = json_object_new_object();
		json_object_object_add(r, "set_aside", json_object_new_array());
	}
	return r;
}

static int record_write(int install_fd, json_object *record, struct err *e)
{
	_cleanup_free_ char *json = jsonfile_text(record), *text = NULL;

	if (!json || asprintf(&text, "%s\n", json) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cdi");
	if (fs_write_atomic_at(install_fd, CDI_RECORD, text, strlen(text), 0644, e) < 0)
		return err_wrap(e, "cdi: record what is set aside");
	return 0;
}

/* PATH's directory (host path), opened, and its last component in *ret_base. */
static int open_parent(int root_fd, const char *path, const char **ret_base, struct err *e)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;

	if (!dir || !slash[1])
		return err_set(e, EXIT_UNEXPECTED, "cdi: bad path '%s'", path);
	*ret_base = slash + 1;
	return fs_dir_in_root(root_fd, *dir ? dir : "/", false, e);
}

int cdi_set_aside(const struct cdi_place *p, const char *path, struct err *e)
{
	_cleanup_(json_object_putp) json_object *record = NULL;
	_cleanup_close_ int fd = -1, install_fd = -1;
	json_object *entry;
	char aside[NAME_MAX + 1];
	const char *base;
	struct stat st;

	fd = open_parent(p->root_fd, path, &base, e);
	if (fd < 0)
		return err_wrap(e, "cdi");
	if (str_fmt(aside, sizeof(aside), "%s%s", base, CDI_SET_ASIDE) < 0)
		return err_set(e, EXIT_UNEXPECTED, "cdi: name too long to set aside: '%s'", path);
	if (fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: stat '%s'", path);
	install_fd = fs_dir_in_root(p->root_fd, p->install_dir, false, e);
	if (install_fd < 0)
		return err_wrap(e, "cdi");
	/* The record first: a crash between the two leaves an entry naming nothing. */
	record = record_read(install_fd);
	entry = json_object_new_object();
	json_object_object_add(entry, "spec", json_object_new_string(path));
	json_object_object_add(entry, "inode", json_object_new_int64((int64_t)st.st_ino));
	json_object_array_add(member(record, "set_aside"), entry);
	if (record_write(install_fd, record, e) < 0)
		return -1;
	if (renameat(fd, base, fd, aside) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: set '%s' aside", path);
	return 0;
}

/* Puts back the file recorded as set aside from PATH, if it is still the one moved. */
static int restore_one(int root_fd, const char *path, int64_t inode, struct err *e)
{
	_cleanup_close_ int fd = -1;
	char aside[NAME_MAX + 1];
	const char *base;
	struct stat st;

	fd = open_parent(root_fd, path, &base, e);
	if (fd < 0 || str_fmt(aside, sizeof(aside), "%s%s", base, CDI_SET_ASIDE) < 0) {
		err_clear(e);
		return 0;
	}
	if (fstatat(fd, aside, &st, AT_SYMLINK_NOFOLLOW) < 0 || (int64_t)st.st_ino != inode)
		return 0;
	/* RENAME_NOREPLACE: a spec written since then stays; ours is not the judge. */
	if (renameat2(fd, aside, fd, base, RENAME_NOREPLACE) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: restore '%s'", path);
	return 0;
}

/*
 * What is still set aside in the spec directories once the record is done: a spec of
 * ours (it mounts from P's install_dir: one that an earlier version took for another's)
 * is removed; the first other one goes to RET, for a warning. 0 or -1.
 */
static int find_left_aside(const struct cdi_place *p, char *ret, size_t size, struct err *e)
{
	_cleanup_(spec_dirs_close) struct spec_dirs d = {.n = 0};

	spec_dirs_open(p, &d);
	for (size_t i = 0; i < d.n; i++) {
		_cleanup_closedir_ DIR *dir = fs_opendir_at(d.fd[i], ".", e);
		struct dirent *de;

		err_clear(e);
		while (dir && (de = readdir(dir))) {
			_cleanup_free_ char *text = NULL;
			size_t len;

			if (!has_suffix(de->d_name, CDI_SET_ASIDE))
				continue;
			if (fs_read_at(d.fd[i], de->d_name, CDI_SPEC_MAX, &text, &len, e) == 0 &&
			    mounts_from(text, p->install_dir)) {
				if (unlinkat(d.fd[i], de->d_name, 0) < 0 && errno != ENOENT)
					return err_errno(e, EXIT_UNEXPECTED, errno,
							 "cdi: remove %s/%s", d.name[i],
							 de->d_name);
			} else if (!ret[0] && join(ret, size, d.name[i], de->d_name) < 0) {
				ret[0] = '\0';
			}
			err_clear(e);
		}
	}
	return 0;
}

int cdi_restore_set_aside(const struct cdi_place *p, char *ret_left, size_t size, struct err *e)
{
	_cleanup_close_ int install_fd = fs_dir_in_root(p->root_fd, p->install_dir, false, e);
	_cleanup_(json_object_putp) json_object *record = NULL;
	json_object *list;

	ret_left[0] = '\0';
	err_clear(e);
	if (install_fd >= 0) {
		record = record_read(install_fd);
		list = member(record, "set_aside");
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			json_object *entry = json_object_array_get_idx(list, i);
			const char *spec = json_object_get_string(member(entry, "spec"));

			if (spec &&
			    restore_one(p->root_fd, spec,
					json_object_get_int64(member(entry, "inode")), e) < 0)
				return -1;
		}
		if (unlinkat(install_fd, CDI_RECORD, 0) < 0 && errno != ENOENT)
			return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: remove %s/%s",
					 p->install_dir, CDI_RECORD);
	}
	return find_left_aside(p, ret_left, size, e);
}

/* ---- our file ---------------------------------------------------------------------- */

/* Removes the legacy spec in DIR, P's cdi_dir, when it is ours (mounts from P's install_dir). */
static int remove_legacy(int dir, const struct cdi_place *p, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (fs_read_at(dir, CDI_LEGACY_FILE, CDI_SPEC_MAX, &text, &len, e) < 0) {
		err_clear(e);
		return 0;
	}
	if (!mounts_from(text, p->install_dir))
		return 0;
	if (unlinkat(dir, CDI_LEGACY_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: remove %s/%s", p->cdi_dir,
				 CDI_LEGACY_FILE);
	return 0;
}

int cdi_write(const struct cdi_place *p, const struct cdi_input *in, struct err *e)
{
	_cleanup_free_ char *json = NULL, *old = NULL, *text = NULL;
	_cleanup_close_ int dir = -1;
	size_t len;

	/* The legacy spec is judged ours by P's install dir: the spec must name that one. */
	if (strcmp(in->install_dir, p->install_dir) != 0)
		return err_set(e, EXIT_UNEXPECTED,
			       "cdi: a spec of the install dir '%s' placed for '%s'",
			       in->install_dir, p->install_dir);
	json = cdi_render(in);
	if (!json || asprintf(&text, "%s\n", json) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "cdi");
	dir = fs_dir_in_root(p->root_fd, p->cdi_dir, true, e);
	if (dir < 0)
		return err_wrap(e, "cdi");
	if (remove_legacy(dir, p, e) < 0)
		return -1;
	if (fs_read_at(dir, CDI_FILE, CDI_SPEC_MAX, &old, &len, e) == 0 && strcmp(old, text) == 0)
		return 0;
	err_clear(e);
	if (fs_write_atomic_at(dir, CDI_FILE, text, strlen(text), 0644, e) < 0)
		return err_wrap(e, "cdi");
	return 1;
}

int cdi_remove(const struct cdi_place *p, struct err *e)
{
	_cleanup_close_ int dir = fs_dir_in_root(p->root_fd, p->cdi_dir, false, e);

	if (dir < 0) {
		err_clear(e);
		return 0;
	}
	if (remove_legacy(dir, p, e) < 0)
		return -1;
	if (unlinkat(dir, CDI_FILE, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cdi: remove %s/%s", p->cdi_dir,
				 CDI_FILE);
	return 0;
}

int cdi_our_kind(const struct cdi_place *p, char *ret, size_t size)
{
	struct err e;
	_cleanup_close_ int dir = fs_dir_in_root(p->root_fd, p->cdi_dir, false, &e);
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (dir < 0 || fs_read_at(dir, CDI_FILE, CDI_SPEC_MAX, &text, &len, &e) < 0)
		return -1;
	return cdi_spec_kind(text, len, false, ret, size);
}

/* More specs of our kind set aside in one call than any node holds: a loop, not a node. */
#define SETTLE_MAX 64

int cdi_settle(const struct cdi_place *p, const struct cdi_rule *r, struct cdi_settled *ret,
	       struct err *e)
{
	struct our_specs ours;
	bool failed = false;

	memset(ret, 0, sizeof(*ret));
	for (unsigned i = 0; i < SETTLE_MAX && !failed; i++) {
		if (cdi_find_other(p, r->kind, ret->theirs, sizeof(ret->theirs)) != 1) {
			ret->theirs[0] = '\0';
			return 1;
		}
		our_files(p, &ours);
		if (!r->replace) {
			if (ours.n == 0)
				return 0;
			failed = cdi_remove(p, e) < 0;
			ret->withdrew = !failed;
			if (!failed)
				return 0;
		} else if (!(failed = cdi_set_aside(p, ret->theirs, e) < 0)) {
			str_fmt_cut(ret->set_aside, sizeof(ret->set_aside), "%s", ret->theirs);
			ret->n_set_aside++;
		}
	}
	if (!failed)
		err_set(e, EXIT_UNEXPECTED, "cdi: more than %d specs of kind %s set aside at once",
			SETTLE_MAX, r->kind);
	our_files(p, &ours);
	ret->conflict = ours.n > 0;
	return -1;
}
