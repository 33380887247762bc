// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <libkmod.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmods.h"
#include "util/fs.h"
#include "util/log.h"

DEFINE_POINTER_CLEANUP(struct kmod_module, kmod_module_unref)
DEFINE_POINTER_CLEANUP(struct kmod_list, kmod_module_info_free_list)

struct kmods {
	struct kmod_ctx *ctx;
	int moddir_fd; /* ROOT/lib/modules/RELEASE, or -1 */
	char release[128];
};

static void kmod_log(void *data, int priority, const char *file, int line, const char *fn,
		     const char *format, va_list args)
{
	char msg[512];

	(void)data, (void)priority, (void)file, (void)line, (void)fn;
	vsnprintf(msg, sizeof(msg), format, args);
	msg[strcspn(msg, "\n")] = '\0';
	log_msg(LOG_DEBUG, "kmod", "%s", msg);
}

int kmods_new(int root_fd, const char *release, struct kmods **ret, struct err *e)
{
	static const char *const no_config[] = {NULL};
	_cleanup_(kmods_freep) struct kmods *k = calloc(1, sizeof(*k));
	char path[300], dirname[64];

	if (!k)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kmod");
	snprintf(k->release, sizeof(k->release), "%s", release);
	snprintf(path, sizeof(path), "/lib/modules/%s", release);
	k->moddir_fd = fs_dir_in_root(root_fd, path, false, e);
	if (k->moddir_fd < 0) {
		log_msg(LOG_DEBUG, "kmod", "no host module tree: %s", e->msg);
		err_clear(e);
	}
	/* libkmod takes a path: the fd's magic link keeps the in-root resolution. */
	snprintf(dirname, sizeof(dirname), "/proc/self/fd/%d", k->moddir_fd);
	/* The host's modprobe.d is not ours to apply: options come from the command line. */
	k->ctx = kmod_new(k->moddir_fd >= 0 ? dirname : "/nonexistent", no_config);
	if (!k->ctx)
		return err_set(e, EXIT_UNEXPECTED, "kmod: kmod_new failed");
	kmod_set_log_fn(k->ctx, kmod_log, NULL);
	kmod_set_log_priority(k->ctx, log_enabled(LOG_DEBUG) ? 7 : 3);
	*ret = TAKE_PTR(k);
	return 0;
}

void kmods_free(struct kmods *k)
{
	if (!k)
		return;
	kmod_unref(k->ctx);
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
	_cleanup_(kmod_module_unrefp) struct kmod_module *m = NULL;
	_cleanup_(kmod_module_info_free_listp) struct kmod_list *info = NULL;
	struct kmod_list *it;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = kmod_module_new_from_path(k->ctx, path, &m);
	if (r < 0)
		return err_errno(e, r == -ENOENT ? EXIT_UNEXPECTED : EXIT_VERIFY, -r, "module '%s'",
				 path);
	r = kmod_module_get_info(m, &info);
	if (r < 0)
		return err_set(e, EXIT_VERIFY, "module '%s': no .modinfo: not a kernel module",
			       path);
	kmod_list_foreach(it, info)
	{
		const char *key = kmod_module_info_get_key(it),
			   *val = kmod_module_info_get_value(it);

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
		snprintf(ret->name, sizeof(ret->name), "%s", kmod_module_get_name(m));
	kmods_normalise_name(ret->name);
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
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "module '%s'", path);
	if (modsig_check_fd(fd, certs, &ret->sig, e) < 0)
		return err_wrap(e, "module '%s'", path);
	err_clear(&ie);
	ret->has_info = kmods_modinfo(k, path, &ret->info, &ie) == 0;
	ret->vermagic_ok = ret->has_info && vermagic_matches(ret->info.vermagic, release);

	ret->ok = false;
	ret->code = EXIT_VERIFY;
	if (!ret->has_info) {
		snprintf(ret->verdict, sizeof(ret->verdict), "not a kernel module (%s)", ie.msg);
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
