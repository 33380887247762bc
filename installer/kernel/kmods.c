// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kmods.h"
#include "kernel/modsig.h"
#include "util/dlib.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

DEFINE_POINTER_CLEANUP(struct kmod_module, sym_kmod_module_unref)
DEFINE_POINTER_CLEANUP(struct kmod_list, sym_kmod_module_info_free_list)
DEFINE_POINTER_CLEANUP(struct kmod_list, sym_kmod_module_dependency_symbols_free_list)

struct kmods {
	struct kmod_ctx *ctx; /* made on first use: kmods_ctx() */
	int root_fd;	      /* not owned */
	int moddir_fd;	      /* ROOT/lib/modules/RELEASE, or -1 */
	char release[128];
	uint64_t insert_ns; /* inside the kernel's insertion calls, summed */
	unsigned gpudirect; /* KMODS_GDRDRV, KMODS_NVIDIA_FS: those live modules are ours */
};

/* libkmod's logger: FORMAT is libkmod's own. */
__attribute__((format(printf, 6, 0))) static void kmod_log(void *data, int priority,
							   const char *file, int line,
							   const char *fn, const char *format,
							   va_list args)
{
	char msg[512];

	(void)data, (void)priority, (void)file, (void)line, (void)fn;
	vsnprintf(msg, sizeof(msg), format, args);
	msg[strcspn(msg, "\n")] = '\0';
	log_msg(LOG_DEBUG, "kmod", "%s", msg);
}

/*
 * libkmod's context, loaded and made on first use: what a run needs from the kernel's
 * live state (sysfs, /proc) is read without it, and a re-run that finds the driver live
 * inserts, removes and inspects nothing. NULL with e set on failure.
 */
static struct kmod_ctx *kmods_ctx(struct kmods *k, struct err *e)
{
	static const char *const no_config[] = {NULL};
	char dirname[64];

	if (k->ctx)
		return k->ctx;
	if (dlib_kmod(e) < 0)
		return NULL;
	/* libkmod takes a path: the fd's magic link keeps the in-root resolution. */
	snprintf(dirname, sizeof(dirname), "/proc/self/fd/%d", k->moddir_fd);
	/* The host's modprobe.d is not ours to apply: options come from the command line. */
	k->ctx = sym_kmod_new(k->moddir_fd >= 0 ? dirname : "/nonexistent", no_config);
	if (!k->ctx) {
		err_set(e, EXIT_UNEXPECTED, "kmod: kmod_new failed");
		return NULL;
	}
	sym_kmod_set_log_fn(k->ctx, kmod_log, NULL);
	sym_kmod_set_log_priority(k->ctx, log_enabled(LOG_DEBUG) ? 7 : 3);
	return k->ctx;
}

int kmods_new(int root_fd, const char *release, struct kmods **ret, struct err *e)
{
	_cleanup_(kmods_freep) struct kmods *k = calloc(1, sizeof(*k));
	char path[300];

	if (!k)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kmod");
	k->root_fd = root_fd;
	snprintf(k->release, sizeof(k->release), "%s", release);
	snprintf(path, sizeof(path), "/lib/modules/%s", release);
	k->moddir_fd = fs_dir_in_root(root_fd, path, false, e);
	if (k->moddir_fd < 0) {
		log_msg(LOG_DEBUG, "kmod", "no host module tree: %s", e->msg);
		err_clear(e);
	}
	*ret = TAKE_PTR(k);
	return 0;
}

void kmods_free(struct kmods *k)
{
	if (!k)
		return;
	if (k->ctx)
		sym_kmod_unref(k->ctx);
	if (k->moddir_fd >= 0)
		close(k->moddir_fd);
	free(k);
}

void kmods_normalise_name(char *name)
{
	for (; *name; name++) {
		if (*name == '-')
			*name = '_';
	}
}

int kmods_modinfo(struct kmods *k, const char *path, struct kmods_info *ret, struct err *e)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	_cleanup_(sym_kmod_module_info_free_listp) struct kmod_list *info = NULL;
	struct kmod_list *it;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!kmods_ctx(k, e))
		return -1;
	r = sym_kmod_module_new_from_path(k->ctx, path, &m);
	if (r < 0)
		return err_errno(e, r == -ENOENT ? EXIT_UNEXPECTED : EXIT_VERIFY, -r, "module '%s'",
				 path);
	r = sym_kmod_module_get_info(m, &info);
	if (r < 0)
		return err_set(e, EXIT_VERIFY, "module '%s': no .modinfo: not a kernel module",
			       path);
	dlib_kmod_list_foreach(it, info)
	{
		const char *key = sym_kmod_module_info_get_key(it),
			   *val = sym_kmod_module_info_get_value(it);

		if (!val)
			continue;
		if (strcmp(key, "name") == 0)
			snprintf(ret->name, sizeof(ret->name), "%s", val);
		else if (strcmp(key, "version") == 0)
			snprintf(ret->version, sizeof(ret->version), "%s", val);
		else if (strcmp(key, "vermagic") == 0)
			snprintf(ret->vermagic, sizeof(ret->vermagic), "%s", val);
		else if (strcmp(key, "depends") == 0)
			snprintf(ret->depends, sizeof(ret->depends), "%s", val);
	}
	/* Kbuild ends vermagic with a space; it only gets in the way of messages. */
	for (size_t n = strlen(ret->vermagic); n > 0 && ret->vermagic[n - 1] == ' ';)
		ret->vermagic[--n] = '\0';
	if (!ret->name[0])
		snprintf(ret->name, sizeof(ret->name), "%s", sym_kmod_module_get_name(m));
	kmods_normalise_name(ret->name);
	return 0;
}

int kmods_imports(struct kmods *k, const char *path, const char *symbol, struct err *e)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	_cleanup_(sym_kmod_module_dependency_symbols_free_listp) struct kmod_list *syms = NULL;
	struct kmod_list *it;
	int r;

	if (!kmods_ctx(k, e))
		return -1;
	if ((r = sym_kmod_module_new_from_path(k->ctx, path, &m)) < 0 ||
	    ((r = sym_kmod_module_get_dependency_symbols(m, &syms)) < 0 && r != -ENODATA &&
	     r != -ENOENT))
		return err_errno(e, EXIT_VERIFY, -r, "module '%s': its imported symbols", path);
	dlib_kmod_list_foreach(it, syms)
	{
		if (strcmp(sym_kmod_module_dependency_symbol_get_symbol(it) ?: "", symbol) == 0)
			return 1;
	}
	return 0;
}

/* vermagic starts with the release the module was built for. */
static bool vermagic_matches(const char *vermagic, const char *release)
{
	size_t n = strlen(release);

	return strncmp(vermagic, release, n) == 0 && (vermagic[n] == ' ' || vermagic[n] == '\0');
}

int kmods_inspect(struct kmods *k, const char *path, const struct modsig_certs *certs,
		  const char *release, struct kmods_report *ret, struct err *e)
{
	_cleanup_close_ int fd = -1;
	const char *base = strrchr(path, '/');
	struct err ie;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->file, sizeof(ret->file), "%s", base ? base + 1 : path);
	/* A libkmod that cannot be loaded is the image's fault, not the module's. */
	if (!kmods_ctx(k, e))
		return -1;
	fd = fs_open_regular_at(AT_FDCWD, path, 0, e);
	if (fd < 0) {
		if (err_errnum(e) == EINVAL)
			err_hint(
				e,
				"pass the module's .ko file itself, not a FIFO, device or directory");
		return err_wrap(e, "module");
	}
	if (modsig_check_fd(fd, certs, &ret->sig, e) < 0)
		return err_wrap(e, "module '%s'", path);
	err_clear(&ie);
	ret->has_info = kmods_modinfo(k, path, &ret->info, &ie) == 0;
	ret->vermagic_ok = ret->has_info && vermagic_matches(ret->info.vermagic, release);

	ret->ok = false;
	ret->code = EXIT_VERIFY;
	if (!ret->has_info) {
		str_fmt_cut(ret->verdict, sizeof(ret->verdict), "not a kernel module (%s)", ie.msg);
	} else if (modsig_certs_count(certs) > 0 && !ret->sig.verified) {
		snprintf(ret->verdict, sizeof(ret->verdict), "signature rejected: %s",
			 ret->sig.reason);
	} else if (!ret->vermagic_ok) {
		ret->code = EXIT_KERNEL_REFUSED;
		snprintf(ret->verdict, sizeof(ret->verdict),
			 "built for another kernel: vermagic '%s', running kernel %s",
			 ret->info.vermagic, release);
	} else {
		ret->ok = true;
		ret->code = EXIT_OK;
		snprintf(ret->verdict, sizeof(ret->verdict), "%s",
			 ret->sig.verified ? "ok" : "ok (signature not checked: no --module-cert)");
	}
	return 0;
}

/* ---- live state ---------------------------------------------------------------- */

static char *sys_read(struct kmods *k, const char *name, const char *attr)
{
	char path[256], *buf = NULL;
	struct err e;

	snprintf(path, sizeof(path), "/sys/module/%s/%s", name, attr);
	if (fs_read_file_in_root(k->root_fd, path, 4096, &buf, NULL, &e) < 0)
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* Here, not in kmods_set.c: the loading asks it, and kmods_set.c builds on this file. */
bool kmods_set_has(const struct kmods_set *set, const char *name)
{
	for (size_t j = 0; j < set->n; j++) {
		if (strcmp(set->e[j].name, name) == 0)
			return true;
	}
	return false;
}

enum kmods_state kmods_get_state(struct kmods *k, const char *name)
{
	_cleanup_free_ char *s = sys_read(k, name, "initstate");
	_cleanup_close_ int fd = -1;
	char path[256];
	struct err e;

	if (s) {
		if (strcmp(s, "live") == 0)
			return KMODS_LIVE;
		return strcmp(s, "coming") == 0 ? KMODS_COMING : KMODS_GOING;
	}
	/* A directory without initstate: built into the kernel. */
	snprintf(path, sizeof(path), "/sys/module/%s", name);
	fd = fs_dir_in_root(k->root_fd, path, false, &e);
	return fd >= 0 ? KMODS_BUILTIN : KMODS_ABSENT;
}

int kmods_loaded_version(struct kmods *k, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *v = NULL;

	if (kmods_get_state(k, name) != KMODS_LIVE || !(v = sys_read(k, name, "version")))
		return -1;
	snprintf(buf, size, "%s", v);
	return 0;
}

int kmods_loaded_module_type(struct kmods *k, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *t = NULL;

	if (kmods_get_state(k, name) != KMODS_LIVE || !(t = sys_read(k, name, "taint")))
		return -1;
	snprintf(buf, size, "%s", strchr(t, 'P') ? "proprietary" : "open");
	return 0;
}

static int refcnt(struct kmods *k, const char *name)
{
	_cleanup_free_ char *s = sys_read(k, name, "refcnt");

	return s ? atoi(s) : 0;
}

/*
 * The entries of directory PATH under the root that KEEP accepts (all but
 * dot-files when NULL), comma-separated into BUF; returns how many.
 */
static int list_dir(struct kmods *k, const char *path, bool (*keep)(const char *), char *buf,
		    size_t size)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	size_t len = 0;
	int n = 0, fd;

	buf[0] = '\0';
	fd = fs_dir_in_root(k->root_fd, path, false, &e);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (keep && !keep(de->d_name)))
			continue;
		n++;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
						de->d_name);
	}
	return n;
}

/* Holders of NAME, comma-separated, into BUF; returns how many. */
static int holders(struct kmods *k, const char *name, char *buf, size_t size)
{
	char path[256];

	/* No module has a name that long (MODULE_NAME_LEN is 64): none holds it. */
	if (snprintf(path, sizeof(path), "/sys/module/%s/holders", name) >= (int)sizeof(path)) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	return list_dir(k, path, NULL, buf, size);
}

void kmods_claim_gpudirect(struct kmods *k, unsigned which)
{
	k->gpudirect |= which;
}

/*
 * The driver's modules: nvidia* but nvidiafb, and GDRCopy's gdrdrv and GPUDirect Storage's
 * nvidia_fs (which hold nvidia) only where ours (kmods_claim_gpudirect: our load inserted
 * them). One loaded by another (the GPU Operator's gdrcopy and gds containers) holds the
 * driver from outside: the driver is in use, never unloaded under it.
 */
static bool is_driver_module(const struct kmods *k, const char *name)
{
	if (strcmp(name, "gdrdrv") == 0)
		return k->gpudirect & KMODS_GDRDRV;
	if (strcmp(name, "nvidia_fs") == 0)
		return k->gpudirect & KMODS_NVIDIA_FS;
	return strncmp(name, "nvidia", 6) == 0 && strcmp(name, "nvidiafb") != 0;
}

/* The live nvidia* modules. */
static size_t loaded_driver(struct kmods *k, char names[][KMODS_NAME_MAX], size_t max)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	size_t n = 0;
	int fd = fs_dir_in_root(k->root_fd, "/sys/module", false, &e);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) && n < max) {
		/* A name too long for NAMES is no driver module of ours: skipped. */
		if (is_driver_module(k, de->d_name) &&
		    kmods_get_state(k, de->d_name) == KMODS_LIVE &&
		    str_fmt(names[n], KMODS_NAME_MAX, "%s", de->d_name) == 0)
			n++;
	}
	return n;
}

/*
 * Appends to BUF the processes that hold /dev/nvidia* open (from ROOT/proc), but for
 * OURS: the installer's own processes, which are no workload (kmods_check_idle).
 */
size_t kmods_open_users(int root_fd, const pid_t *ours, size_t n_ours, char *buf, size_t size)
{
	_cleanup_closedir_ DIR *proc = NULL;
	struct dirent *pe;
	size_t len = strlen(buf), found = 0;
	struct err e;
	int pfd = fs_dir_in_root(root_fd, "/proc", false, &e);

	if (pfd < 0 || !(proc = fdopendir(pfd))) {
		if (pfd >= 0)
			close(pfd);
		return 0;
	}
	while ((pe = readdir(proc))) {
		_cleanup_closedir_ DIR *fds = NULL;
		struct dirent *fe;
		char fdpath[300];

		bool is_ours = false;

		if (!isdigit((unsigned char)pe->d_name[0]))
			continue;
		for (size_t i = 0; i < n_ours && !is_ours; i++)
			is_ours = strtol(pe->d_name, NULL, 10) == (long)ours[i];
		if (is_ours)
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/fd", pe->d_name);
		fds = fs_opendir_at(dirfd(proc), fdpath, &e);
		while (fds && (fe = readdir(fds))) {
			char target[256], comm[64] = "?", commpath[300];
			_cleanup_close_ int cfd = -1;
			ssize_t n = readlinkat(dirfd(fds), fe->d_name, target, sizeof(target) - 1);

			if (n <= 0)
				continue;
			target[n] = '\0';
			if (strncmp(target, "/dev/nvidia", 11) != 0 &&
			    strcmp(target, "/dev/gdrdrv") != 0)
				continue;
			snprintf(commpath, sizeof(commpath), "%s/comm", pe->d_name);
			cfd = openat(dirfd(proc), commpath, O_RDONLY | O_CLOEXEC);
			if (cfd >= 0 && (n = read(cfd, comm, sizeof(comm) - 1)) > 0)
				comm[strcspn(comm, "\n")] = '\0';
			if (len < size)
				len += (size_t)snprintf(buf + len, size - len,
							"%s%s open in pid %s (%s)", len ? "; " : "",
							target, pe->d_name, comm);
			found++;
			break; /* one line per process */
		}
	}
	return found;
}

int kmods_check_idle(struct kmods *k, const pid_t *ours, size_t n_ours, struct err *e)
{
	char names[KMODS_MAX * 2][KMODS_NAME_MAX], why[1024] = "";
	size_t n = loaded_driver(k, names, ARRAY_SIZE(names)), len = 0;

	for (size_t i = 0; i < n; i++) {
		char hs[256], *tok, *save = NULL;
		int nh = holders(k, names[i], hs, sizeof(hs)), users = refcnt(k, names[i]) - nh;

		for (tok = strtok_r(hs, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!is_driver_module(k, tok) && len < sizeof(why))
				len += (size_t)snprintf(why + len, sizeof(why) - len,
							"%s%s is held by module %s",
							len ? "; " : "", names[i], tok);
		}
		if (users > 0 && len < sizeof(why))
			len += (size_t)snprintf(why + len, sizeof(why) - len,
						"%s%s has %d reference(s) beyond its own modules",
						len ? "; " : "", names[i], users);
	}
	kmods_open_users(k->root_fd, ours, n_ours, why, sizeof(why));
	if (!why[0])
		return 0;
	err_set(e, EXIT_IN_USE, "driver in use: %s", why);
	err_hint(
		e,
		"drain the node (stop GPU workloads and nvidia-persistenced) or reboot; the loaded driver was left untouched");
	return -1;
}

static int remove_one(struct kmods *k, const char *name, struct err *e)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	int r;

	if (!kmods_ctx(k, e))
		return -1;
	r = sym_kmod_module_new_from_name(k->ctx, name, &m);
	if (r == 0)
		r = sym_kmod_module_remove_module(m, 0);
	if (r == -EBUSY || r == -EAGAIN) {
		err_set(e, EXIT_IN_USE, "driver in use: module %s is busy", name);
		err_hint(e, "drain the node (stop GPU workloads) or reboot");
		return -1;
	}
	if (r < 0 && r != -ENOENT)
		return err_errno(e, EXIT_KERNEL_REFUSED, -r, "unload module %s", name);
	log_kv(LOG_INFO, "kernel", "module unloaded", "module", name, LOG_END);
	return 0;
}

int kmods_unload_driver(struct kmods *k, struct err *e)
{
	char names[KMODS_MAX * 2][KMODS_NAME_MAX];
	size_t n = loaded_driver(k, names, ARRAY_SIZE(names));
	bool done[KMODS_MAX * 2] = {false};

	/* Holders first: a module goes when no other loaded driver module holds it. */
	for (size_t left = n; left > 0;) {
		bool progress = false;

		for (size_t i = 0; i < n; i++) {
			char hs[256], *tok, *save = NULL;
			bool held = false;

			if (done[i])
				continue;
			holders(k, names[i], hs, sizeof(hs));
			for (tok = strtok_r(hs, ",", &save); tok && !held;
			     tok = strtok_r(NULL, ",", &save))
				held = kmods_get_state(k, tok) == KMODS_LIVE;
			if (held)
				continue;
			if (remove_one(k, names[i], e) < 0)
				return -1;
			done[i] = progress = true;
			left--;
		}
		if (!progress)
			return err_set(
				e, EXIT_IN_USE,
				"driver in use: its modules hold each other or are held from outside");
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------------- */

/* What this call loaded, to unload on failure. */
struct loaded {
	char names[KMODS_MAX * 4][KMODS_NAME_MAX];
	size_t n;
};

static void rollback(struct kmods *k, struct loaded *l)
{
	while (l->n > 0) {
		struct err e;

		err_clear(&e);
		if (remove_one(k, l->names[--l->n], &e) < 0)
			log_msg(LOG_WARN, "kernel", "rollback: %s", e.msg);
	}
}

/*
 * Whether the file or directory open as FD is on another file system than the kernel's
 * own modules (ROOT/lib/modules/RELEASE), the one LoadPin pins when the kernel loads its
 * first module at boot: 1, 0, or -1 when either cannot be read.
 */
int kmods_other_fs(const struct kmods *k, int fd)
{
	struct kmods_tree tree = {k->release, k->moddir_fd};

	return kmods_tree_other_fs(&tree, fd);
}

static bool already_loaded(struct loaded *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->names[i], name) == 0)
			return true;
	}
	return false;
}

static int insert(struct kmods *k, const struct insertion *in, struct loaded *l,
		  const struct ktrust *trust, struct err *e)
{
	const char *name = in->name, *options = in->options;
	_cleanup_close_ int kmsg_fd = kmods_kmsg_open_end();
	uint64_t t0 = now_ns();
	int r = sym_kmod_module_insert_module(in->m, 0, options && *options ? options : NULL);

	k->insert_ns += now_ns() - t0;

	if (r == -EEXIST)
		return 0; /* loaded meanwhile */
	if (r < 0) {
		struct kmods_tree tree = {k->release, k->moddir_fd};

		kmods_explain(&tree, -r, in, trust, kmsg_fd, e);
		/* The kernel's errno travels with the words (EINVAL: a parameter refused). */
		e->sys_errno = -r;
		return -1;
	}
	if (l->n < ARRAY_SIZE(l->names))
		snprintf(l->names[l->n++], KMODS_NAME_MAX, "%s", name);
	log_kv(LOG_INFO, "kernel", "module loaded", "module", name, "options",
	       options && *options ? options : "", LOG_END);
	return 0;
}

/* In-tree module NAME, from the kernel's own modules.dep. */
static int lookup_intree(struct kmods *k, const char *name, struct kmod_module **ret, struct err *e)
{
	struct kmod_module *m = NULL;

	if (!kmods_ctx(k, e))
		return -1;
	if (sym_kmod_module_new_from_name_lookup(k->ctx, name, &m) < 0 || !m ||
	    !sym_kmod_module_get_path(m)) {
		if (m)
			sym_kmod_module_unref(m);
		err_set(e, EXIT_KERNEL_REFUSED,
			"the driver needs module %s, which kernel %s has neither built in nor in /lib/modules/%s",
			name, k->release, k->release);
		err_hint(e, "install the kernel's module package (e.g. linux-modules-%s)",
			 k->release);
		return -1;
	}
	*ret = m;
	return 0;
}

bool kmods_has_intree(struct kmods *k, const char *name)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	enum kmods_state st = kmods_get_state(k, name);
	struct err e;

	return st == KMODS_LIVE || st == KMODS_BUILTIN || lookup_intree(k, name, &m, &e) == 0;
}

/* Appends NAME to the comma-separated list in BUF unless it is there. */
static void append_name(char *buf, size_t size, const char *name)
{
	size_t len = strlen(buf), n = strlen(name);
	const char *p = buf;

	while (*p) {
		size_t w = strcspn(p, ",");

		if (w == n && strncmp(p, name, n) == 0)
			return;
		p += w + (p[w] == ',');
	}
	snprintf(buf + len, size - len, "%s%s", len ? "," : "", name);
}

int kmods_resolve_intree(struct kmods *k, const struct kmods_set *set, char *buf, size_t size,
			 struct err *e)
{
	buf[0] = '\0';
	for (size_t i = 0; i < set->n; i++) {
		char deps[sizeof(set->e[i].info.depends)], *tok, *save = NULL;

		snprintf(deps, sizeof(deps), "%s", set->e[i].info.depends);
		for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
			enum kmods_state st;
			struct kmod_list *all, *it;

			kmods_normalise_name(tok);
			st = kmods_get_state(k, tok);
			if (kmods_set_has(set, tok) || st == KMODS_BUILTIN)
				continue;
			if (st != KMODS_LIVE && lookup_intree(k, tok, &m, e) < 0)
				return -1;
			/* modules.dep lists the whole closure, deepest last. */
			all = m ? sym_kmod_module_get_dependencies(m) : NULL;
			if (all) {
				dlib_kmod_list_foreach_reverse(it, all)
				{
					struct kmod_module *d = sym_kmod_module_get_module(it);

					append_name(buf, size, sym_kmod_module_get_name(d));
					sym_kmod_module_unref(d);
				}
				sym_kmod_module_unref_list(all);
			}
			append_name(buf, size, tok);
		}
	}
	return 0;
}

/* Loads in-tree module NAME and, first, what it depends on (modules.dep). */
static int ensure_intree(struct kmods *k, const char *name, struct loaded *l, int depth,
			 const struct ktrust *trust, struct err *e)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	struct kmod_list *deps, *it;
	enum kmods_state st = kmods_get_state(k, name);
	int r = 0;

	if (st == KMODS_LIVE || st == KMODS_BUILTIN || already_loaded(l, name))
		return 0;
	if (depth > 16)
		return err_set(e, EXIT_KERNEL_REFUSED, "module dependencies nest too deep at %s",
			       name);
	if (lookup_intree(k, name, &m, e) < 0)
		return -1;
	deps = sym_kmod_module_get_dependencies(m);
	dlib_kmod_list_foreach(it, deps)
	{
		struct kmod_module *d = sym_kmod_module_get_module(it);

		if (r == 0)
			r = ensure_intree(k, sym_kmod_module_get_name(d), l, depth + 1, trust, e);
		sym_kmod_module_unref(d);
	}
	sym_kmod_module_unref_list(deps);
	if (r < 0)
		return -1;
	return insert(
		k, &(struct insertion){.m = m, .name = name, .path = sym_kmod_module_get_path(m)},
		l, trust, e);
}

static int load_entry(struct kmods *k, const struct kmods_set *set, const struct kmods_entry *en,
		      struct loaded *l, const struct ktrust *trust, struct err *e)
{
	_cleanup_(sym_kmod_module_unrefp) struct kmod_module *m = NULL;
	char deps[sizeof(en->info.depends)], *tok, *save = NULL;
	int r;

	snprintf(deps, sizeof(deps), "%s", en->info.depends);
	for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		kmods_normalise_name(tok);
		if (!kmods_set_has(set, tok) && ensure_intree(k, tok, l, 0, trust, e) < 0)
			return -1;
	}
	if (!kmods_ctx(k, e))
		return -1;
	r = sym_kmod_module_new_from_path(k->ctx, en->path, &m);
	if (r < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "module %s", en->name);
	return insert(k,
		      &(struct insertion){
			      .m = m, .name = en->name, .path = en->path, .options = en->options},
		      l, trust, e);
}

uint64_t kmods_insert_ns(const struct kmods *k)
{
	return k->insert_ns;
}

int kmods_load_set(struct kmods *k, const struct kmods_set *set, const struct ktrust *trust,
		   struct err *e)
{
	struct loaded l = {.n = 0};

	for (size_t i = 0; i < set->n; i++) {
		if (kmods_get_state(k, set->e[i].name) == KMODS_LIVE)
			continue;
		if (set->e[i].was_live) {
			rollback(k, &l);
			err_set(e, EXIT_UNEXPECTED,
				"module %s was unloaded while this run was checking the driver",
				set->e[i].name);
			err_hint(e, "run the installer again; nothing was loaded");
			return -1;
		}
		if (load_entry(k, set, &set->e[i], &l, trust, e) < 0) {
			/* Nothing of the set stays half-loaded. */
			rollback(k, &l);
			return -1;
		}
	}
	return (int)l.n;
}

/* ---- conflicts ----------------------------------------------------------------- */

/* PCI addresses ("0000:01:00.0"), not bind, unbind, module, ... */
static bool is_pci_address(const char *name)
{
	return isxdigit((unsigned char)name[0]) && strchr(name, ':');
}

/* The PCI addresses driver NAME is bound to, comma-separated; how many. */
static int bound_devices(struct kmods *k, const char *name, char *buf, size_t size)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/%s", name);
	return list_dir(k, path, is_pci_address, buf, size);
}

int kmods_resolve_conflicts(struct kmods *k, bool may_unload, bool dry, struct err *e)
{
	static const char *const conflicts[] = {"nova_drm", "nova_core", "nouveau"};

	for (size_t i = 0; i < ARRAY_SIZE(conflicts); i++) {
		const char *name = conflicts[i];
		enum kmods_state st = kmods_get_state(k, name);
		char bound[256], hs[256];
		int users;

		if (st == KMODS_ABSENT)
			continue;
		if (st == KMODS_BUILTIN) {
			if (bound_devices(k, name, bound, sizeof(bound)) == 0)
				continue;
			err_set(e, EXIT_IN_USE, "%s is built into the kernel and drives %s", name,
				bound);
			err_hint(e, "boot with %s.modeset=0 or module_blacklist=%s", name, name);
			return -1;
		}
		users = refcnt(k, name);
		if (!may_unload || users > 0) {
			holders(k, name, hs, sizeof(hs));
			err_set(e, EXIT_IN_USE, "conflicting driver %s is loaded%s%s%s", name,
				users > 0 ? " and in use" : "", hs[0] ? " by " : "", hs);
			err_hint(e, "%sblacklist %s (modprobe.blacklist=%s) and reboot",
				 may_unload ? "" : "drop --no-unload-conflicts, or ", name, name);
			return -1;
		}
		if (!dry && remove_one(k, name, e) < 0)
			return err_wrap(e, "conflicting driver");
	}
	return 0;
}
