// SPDX-License-Identifier: Apache-2.0
/* status: what is installed, loaded and published on this node. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "build_info.h" /* INSTALLER_VERSION, INSTALLER_COMMIT: the Makefile makes it */
#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "expose/expose.h"
#include "source/source.h"
#include "util/jsonc.h"
#include "util/out.h"
#include "util/str.h"

static json_object *file_json(const char *path, bool present)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "present", json_object_new_boolean(present));
	return o;
}

/*
 * What status concludes about NVML: whether it must answer here (a GPU on the bus, the
 * nvidia module loaded, or the readiness marker claiming a working driver) and, when it
 * was asked, why it does not answer as the installed driver should ("" when it does).
 */
struct verdict {
	bool nvml_expected;
	bool nvml_answers;
	char nvml_error[sizeof(((struct nodestate *)0)->nvml_error)];
};

static void judge(const struct nodestate *s, struct verdict *v)
{
	struct err e;

	memset(v, 0, sizeof(*v));
	v->nvml_expected =
		s->installed && (s->host.n_gpus > 0 || s->loaded_version[0] || s->ready_present);
	if (!s->installed)
		return;
	err_clear(&e);
	if (!s->nvml_ok)
		snprintf(v->nvml_error, sizeof(v->nvml_error), "%s",
			 s->nvml_error[0] ? s->nvml_error : "NVML was not asked");
	else if (nvml_check(&s->nvml, s->manifest.driver_version, s->host.n_gpus, &e) < 0)
		str_fmt_cut(v->nvml_error, sizeof(v->nvml_error), "%s", e.msg);
	else
		v->nvml_answers = true;
}

static int by_minor(const void *a, const void *b)
{
	const struct nvml_gpu *x = a, *y = b;

	return (x->minor > y->minor) - (x->minor < y->minor);
}

/* null when NVML was not asked (nothing installed); else every key, null when unknown. */
static json_object *nvml_json(const struct nodestate *s, const struct verdict *v)
{
	struct nvml_gpu gpus[NVML_MAX_GPUS];
	json_object *o, *arr;
	unsigned n = s->nvml_ok ? s->nvml.n_gpus : 0;

	if (!s->installed)
		return NULL;
	o = json_object_new_object();
	arr = json_object_new_array();
	json_object_object_add(o, "answers", json_object_new_boolean(v->nvml_answers));
	json_object_object_add(o, "expected", json_object_new_boolean(v->nvml_expected));
	json_object_object_add(o, "error", session_json_nonempty(v->nvml_error));
	json_object_object_add(o, "driver_version",
			       s->nvml_ok ? session_json_nonempty(s->nvml.driver_version) : NULL);
	json_object_object_add(o, "cuda_version",
			       s->nvml_ok ? json_object_new_int(s->nvml.cuda_version) : NULL);
	memcpy(gpus, s->nvml.gpus, sizeof(gpus[0]) * n);
	qsort(gpus, n, sizeof(gpus[0]), by_minor);
	for (unsigned i = 0; i < n; i++) {
		json_object *g = json_object_new_object();

		json_object_object_add(g, "minor", json_object_new_int((int)gpus[i].minor));
		json_object_object_add(g, "name", json_object_new_string(gpus[i].name));
		json_object_object_add(g, "uuid", json_object_new_string(gpus[i].uuid));
		json_object_object_add(g, "memory_mib",
				       json_object_new_int64((int64_t)gpus[i].memory_mib));
		json_object_array_add(arr, g);
	}
	json_object_object_add(o, "gpus", arr);
	return o;
}

/* The manifest's keys, null when nothing is installed. */
static void add_installed(json_object *o, const struct nodestate *s, const char *running)
{
	const struct manifest *m = &s->manifest;
	bool in = s->installed;

	json_object_object_add(o, "driver_version",
			       in ? session_json_nonempty(m->driver_version) : NULL);
	json_object_object_add(o, "kernel_release",
			       in ? session_json_nonempty(m->kernel_release) : NULL);
	json_object_object_add(o, "kernel_matches",
			       in ? json_object_new_boolean(strcmp(m->kernel_release, running) == 0)
				  : NULL);
	json_object_object_add(o, "package_sha256",
			       in ? session_json_nonempty(m->package_sha256) : NULL);
	json_object_object_add(o, "package_size",
			       in ? json_object_new_int64((int64_t)m->package_size) : NULL);
	json_object_object_add(o, "installed_at",
			       in ? session_json_nonempty(m->installed_at) : NULL);
	json_object_object_add(o, "requested_version",
			       in ? session_json_nonempty(m->requested_version) : NULL);
	json_object_object_add(o, "repository", in ? session_json_nonempty(m->repository) : NULL);
	json_object_object_add(o, "key_fingerprint",
			       in ? session_json_nonempty(m->key_fingerprint) : NULL);
	json_object_object_add(o, "module_type", in ? session_json_nonempty(m->module_type) : NULL);
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

/* The record's documented keys only, whatever an older or newer installer wrote. */
static json_object *fallback_json(json_object *rec)
{
	static const char *const keys[] = {"reason", "at", "detail"};
	json_object *o, *v, *mirrors = json_object_new_array();

	if (!rec || !json_object_is_type(rec, json_type_object)) {
		json_object_put(mirrors);
		return NULL;
	}
	o = json_object_new_object();
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		json_object_object_add(o, keys[i],
				       json_object_object_get_ex(rec, keys[i], &v) &&
						       json_object_is_type(v, json_type_string)
					       ? json_object_get(v)
					       : NULL);
	if (json_object_object_get_ex(rec, "mirrors", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *m = json_object_array_get_idx(v, i);

			if (json_object_is_type(m, json_type_string))
				json_object_array_add(mirrors, json_object_get(m));
		}
	json_object_object_add(o, "mirrors", mirrors);
	return o;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct loaded_module *)a)->name,
		      ((const struct loaded_module *)b)->name);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The installer that answers: its release and the commit it was built from. */
static json_object *installer_json(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "version", json_object_new_string(INSTALLER_VERSION));
	json_object_object_add(o, "commit", json_object_new_string(INSTALLER_COMMIT));
	return o;
}

/*
 * What status reports: the node as collected and as judged, the running kernel's release,
 * and the records beside the install, each NULL where there is none.
 */
struct status_report {
	const struct nodestate *node;
	const struct verdict *verdict;
	const char *running;
	json_object *fallback; /* the repository fallback record of the last install */
	const struct pending *pending;
	const struct pending_failure *failure;
	const struct waiting *waiting; /* an install's wait for its package */
};

static void status_json(const struct config *c, const struct status_report *r)
{
	const struct nodestate *s = r->node;
	const struct verdict *v = r->verdict;
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	json_object *mods = json_object_new_array(), *nodes = json_object_new_array();
	char cdi[4200];

	json_object_object_add(o, "installed", json_object_new_boolean(s->installed));
	json_object_object_add(o, "ready",
			       json_object_new_boolean(s->ready_present && v->nvml_answers));
	json_object_object_add(o, "install_dir", json_object_new_string(c->install_dir));
	json_object_object_add(o, "container_dir", json_object_new_string(c->container_dir));
	json_object_object_add(o, "running_kernel", json_object_new_string(r->running));
	json_object_object_add(o, "pci_gpus", json_object_new_int((int)s->host.n_gpus));
	add_installed(o, s, r->running);
	json_object_object_add(o, "loaded_version", session_json_nonempty(s->loaded_version));
	json_object_object_add(o, "loaded_module_type", session_json_nonempty(s->loaded_type));
	for (size_t i = 0; i < s->host.n_modules; i++) {
		json_object *m = json_object_new_object();

		json_object_object_add(m, "name", json_object_new_string(s->host.modules[i].name));
		json_object_object_add(m, "version",
				       session_json_nonempty(s->host.modules[i].version));
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
		json_object_object_add(m, "noexec", json_object_new_boolean(s->mount.noexec));
		json_object_object_add(o, "mount", m);
	} else {
		json_object_object_add(o, "mount", NULL);
	}
	snprintf(cdi, sizeof(cdi), "%s/%s", c->cdi_dir, CDI_FILE);
	json_object_object_add(o, "cdi_spec", file_json(cdi, s->cdi_present));
	json_object_object_add(o, "cdi_conflict", session_json_nonempty(s->cdi_other));
	json_object_object_add(o, "labels", file_json(LABELS_FILE, s->labels_present));
	json_object_object_add(o, "ready_marker", file_json(READY_FILE, s->ready_present));
	json_object_object_add(o, "nvml", nvml_json(s, v));
	json_object_object_add(o, "repository_fallback", fallback_json(r->fallback));
	json_object_object_add(o, "pending_upgrade", session_pending_json(r->pending));
	json_object_object_add(o, "pending_failure", pfail_json(r->failure));
	json_object_object_add(o, "waiting_for_package",
			       r->waiting ? waiting_json(r->waiting) : NULL);
	json_object_object_add(o, "installer", installer_json());
	session_print_json(o);
}

/*
 * Our CDI spec, and another producer's of our kind: theirs serve once ours is withdrawn;
 * while both are there a runtime resolves neither's devices.
 */
static void cdi_text(const struct config *c, const struct nodestate *s)
{
	out_line(stdout, "cdi_spec:       %s/%s (%s)", c->cdi_dir, CDI_FILE,
		 s->cdi_present ? "present" : "absent");
	if (s->cdi_other[0] && s->cdi_present)
		out_line(
			stdout,
			"cdi_conflict:   %s, another producer's, declares %s as ours does: a runtime resolves neither's devices (the node agent withdraws ours at its next look; --cdi-kind or --cdi-replace)",
			s->cdi_other, c->cdi_kind);
	else if (s->cdi_other[0])
		out_line(
			stdout,
			"cdi_conflict:   %s, another producer's, declares %s: the node's devices are theirs (--cdi-kind or --cdi-replace)",
			s->cdi_other, c->cdi_kind);
}

static void status_text(const struct config *c, const struct status_report *r)
{
	const struct nodestate *s = r->node;
	const struct verdict *v = r->verdict;
	const struct manifest *m = &s->manifest;
	char line[1600];

	out_line(stdout, "installed:      %s", s->installed ? "yes" : "no");
	if (s->installed) {
		out_line(stdout, "driver_version: %s (requested: %s)", m->driver_version,
			 m->requested_version ? m->requested_version : "?");
		out_line(stdout, "kernel_release: %s%s", m->kernel_release,
			 strcmp(m->kernel_release, r->running) == 0
				 ? ""
				 : " (differs from the running kernel: reinstall)");
		if (m->module_type)
			out_line(stdout, "module_type:    %s", m->module_type);
		out_line(stdout, "package_sha256: %s", m->package_sha256);
		out_line(stdout, "repository:     %s", m->repository ? m->repository : "?");
		out_line(stdout, "installed_at:   %s", m->installed_at);
	}
	if (r->pending) {
		session_pending_text(r->pending, line, sizeof(line));
		out_line(stdout, "pending:        %s", line);
	}
	if (r->failure) {
		pfail_text(r->failure, line, sizeof(line));
		out_line(stdout, "pending failed: %s", line);
	}
	if (r->waiting) {
		session_waiting_text(r->waiting, line, sizeof(line));
		out_line(stdout, "waiting:        %s", line);
		out_line(stdout, "                (%s)", r->waiting->reason);
	}
	if (r->fallback)
		out_line(stdout,
			 "index:          from the node cache at the last install (%s, %s): %s",
			 json_str(r->fallback, "reason"), json_str(r->fallback, "at"),
			 json_str(r->fallback, "detail"));
	if (s->has_mount)
		out_line(stdout, "install_dir:    %s (on %s, %s %s)", c->install_dir,
			 s->mount.target, s->mount.fstype, s->mount.options);
	else
		out_line(stdout, "install_dir:    %s", c->install_dir);
	out_line(stdout, "loaded_version: %s%s%s%s",
		 s->loaded_version[0] ? s->loaded_version : "not loaded",
		 s->loaded_type[0] ? " (" : "", s->loaded_type,
		 s->loaded_type[0] ? " modules)" : "");
	out_part(stdout, "modules:       ");
	for (size_t i = 0; i < s->host.n_modules; i++)
		out_part(stdout, " %s%s%s%s", s->host.modules[i].name,
			 s->host.modules[i].version[0] ? " " : "", s->host.modules[i].version,
			 i + 1 < s->host.n_modules ? "," : "");
	out_line(stdout, "%s", s->host.n_modules ? "" : " none");
	out_part(stdout, "device_nodes:  ");
	for (size_t i = 0; i < s->n_nodes; i++)
		out_part(stdout, " %s", s->nodes[i]);
	out_line(stdout, "%s", s->n_nodes ? "" : " none");
	cdi_text(c, s);
	out_line(stdout, "labels:         %s (%s)", LABELS_FILE,
		 s->labels_present ? "present" : "absent");
	out_line(stdout, "ready:          %s",
		 s->ready_present && v->nvml_answers ? "yes"
		 : s->ready_present
			 ? "no (the readiness marker is present, but NVML does not answer)"
			 : "no");
	if (s->nvml_ok && v->nvml_answers) {
		out_line(stdout, "nvml:           driver %s, CUDA %d.%d, %u GPU(s)",
			 s->nvml.driver_version, s->nvml.cuda_version / 1000,
			 s->nvml.cuda_version % 1000 / 10, s->nvml.n_gpus);
		for (unsigned i = 0; i < s->nvml.n_gpus; i++)
			out_line(stdout, "                %u: %s, %s, %llu MiB", i,
				 s->nvml.gpus[i].name, s->nvml.gpus[i].uuid,
				 (unsigned long long)s->nvml.gpus[i].memory_mib);
	} else {
		out_line(stdout, "nvml:           %s",
			 v->nvml_error[0] ? v->nvml_error : "not checked");
	}
}

int status_run(const struct config *c, struct err *e)
{
	_cleanup_(json_object_putp) json_object *fallback = NULL;
	_cleanup_close_ int root_fd = -1;
	const struct nodestate_opts no = session_nodestate_opts(c);
	struct nodestate s;
	struct verdict v;
	struct utsname u;
	struct pending pd;
	struct pending_failure pf;
	struct waiting w;
	struct status_report rep;
	bool has_pending, has_failed, has_waiting;
	const char *running;
	int r = 0;

	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	running = session_release(c, &u);
	if (nodestate_collect(&no, root_fd, &s, e) < 0)
		return -1;
	/* Both forms list modules and device nodes by name, whatever order the kernel gave. */
	qsort(s.host.modules, s.host.n_modules, sizeof(s.host.modules[0]), by_name);
	qsort(s.nodes, s.n_nodes, sizeof(s.nodes[0]), by_string);
	fallback = fallback_record(c, root_fd);
	has_pending = session_pending(c, root_fd, &pd) == 1;
	has_failed = pfail_read(c, root_fd, &pf) == 1;
	has_waiting = session_waiting(c, root_fd, &w) == 1;
	judge(&s, &v);
	rep = (struct status_report){.node = &s,
				     .verdict = &v,
				     .running = running,
				     .fallback = fallback,
				     .pending = has_pending ? &pd : NULL,
				     .failure = has_failed ? &pf : NULL,
				     .waiting = has_waiting ? &w : NULL};
	if (c->json)
		status_json(c, &rep);
	else
		status_text(c, &rep);
	if (!s.installed) {
		err_set(e, EXIT_NO_MATCH, "no driver is installed in '%s'", c->install_dir);
		err_hint(e, "run 'nvidia-driver-installer install'");
		r = -1;
	} else if (v.nvml_expected && !v.nvml_answers) {
		/* Never "ready" nor exit 0 while the driver does not answer for the GPUs. */
		err_set(e, EXIT_DRIVER_CHECK,
			"status: driver %s is installed but NVML does not answer as it should: %s",
			s.manifest.driver_version, v.nvml_error);
		err_hint(e,
			 "see dmesg for NVRM errors and re-run install; 'doctor' checks the rest");
		r = -1;
	}
	nodestate_done(&s);
	return r;
}
