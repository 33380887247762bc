// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util/dlib.h"

_Static_assert(LIBCURL_VERSION_MAJOR >= 7 && LIBCURL_VERSION_MAJOR <= 8,
	       "libcurl " DLIB_CURL_SONAME " is for curl 7 and 8");
_Static_assert(ARCHIVE_VERSION_NUMBER >= 3000000 && ARCHIVE_VERSION_NUMBER < 4000000,
	       "libarchive " DLIB_ARCHIVE_SONAME " is for libarchive 3");

DLSYM_PROTOTYPE(curl_global_init);
DLSYM_PROTOTYPE(curl_easy_init);
DLSYM_PROTOTYPE(curl_easy_cleanup);
DLSYM_PROTOTYPE(curl_easy_reset);
DLSYM_PROTOTYPE(curl_easy_setopt);
DLSYM_PROTOTYPE(curl_easy_getinfo);
DLSYM_PROTOTYPE(curl_easy_perform);
DLSYM_PROTOTYPE(curl_easy_strerror);
DLSYM_PROTOTYPE(curl_slist_append);
DLSYM_PROTOTYPE(curl_slist_free_all);

DLSYM_PROTOTYPE(archive_read_new);
DLSYM_PROTOTYPE(archive_read_free);
DLSYM_PROTOTYPE(archive_read_open);
DLSYM_PROTOTYPE(archive_read_next_header);
DLSYM_PROTOTYPE(archive_read_data_block);
DLSYM_PROTOTYPE(archive_read_support_filter_zstd);
DLSYM_PROTOTYPE(archive_read_support_filter_xz);
DLSYM_PROTOTYPE(archive_read_support_filter_gzip);
DLSYM_PROTOTYPE(archive_read_support_format_raw);
DLSYM_PROTOTYPE(archive_read_support_format_tar);
DLSYM_PROTOTYPE(archive_filter_code);
DLSYM_PROTOTYPE(archive_filter_name);
DLSYM_PROTOTYPE(archive_set_error);
DLSYM_PROTOTYPE(archive_errno);
DLSYM_PROTOTYPE(archive_error_string);
DLSYM_PROTOTYPE(archive_entry_pathname);
DLSYM_PROTOTYPE(archive_entry_filetype);
DLSYM_PROTOTYPE(archive_entry_perm);
DLSYM_PROTOTYPE(archive_entry_size);
DLSYM_PROTOTYPE(archive_entry_size_is_set);
DLSYM_PROTOTYPE(archive_entry_mtime);
DLSYM_PROTOTYPE(archive_entry_mtime_is_set);
DLSYM_PROTOTYPE(archive_entry_symlink);
DLSYM_PROTOTYPE(archive_entry_hardlink);
DLSYM_PROTOTYPE(archive_entry_xattr_reset);
DLSYM_PROTOTYPE(archive_entry_xattr_next);

DLSYM_PROTOTYPE(ZSTD_createDCtx);
DLSYM_PROTOTYPE(ZSTD_freeDCtx);
DLSYM_PROTOTYPE(ZSTD_DCtx_reset);
DLSYM_PROTOTYPE(ZSTD_decompressDCtx);
DLSYM_PROTOTYPE(ZSTD_decompressStream);
DLSYM_PROTOTYPE(ZSTD_findFrameCompressedSize);
DLSYM_PROTOTYPE(ZSTD_getFrameContentSize);
DLSYM_PROTOTYPE(ZSTD_isError);
DLSYM_PROTOTYPE(ZSTD_getErrorName);
DLSYM_PROTOTYPE(ZSTD_getErrorCode);

DLSYM_PROTOTYPE(kmod_new);
DLSYM_PROTOTYPE(kmod_unref);
DLSYM_PROTOTYPE(kmod_set_log_fn);
DLSYM_PROTOTYPE(kmod_set_log_priority);
DLSYM_PROTOTYPE(kmod_module_new_from_path);
DLSYM_PROTOTYPE(kmod_module_new_from_name);
DLSYM_PROTOTYPE(kmod_module_new_from_name_lookup);
DLSYM_PROTOTYPE(kmod_module_get_info);
DLSYM_PROTOTYPE(kmod_module_info_get_key);
DLSYM_PROTOTYPE(kmod_module_info_get_value);
DLSYM_PROTOTYPE(kmod_module_info_free_list);
DLSYM_PROTOTYPE(kmod_module_get_name);
DLSYM_PROTOTYPE(kmod_module_get_path);
DLSYM_PROTOTYPE(kmod_module_unref);
DLSYM_PROTOTYPE(kmod_module_unref_list);
DLSYM_PROTOTYPE(kmod_module_get_module);
DLSYM_PROTOTYPE(kmod_module_get_dependencies);
DLSYM_PROTOTYPE(kmod_module_get_dependency_symbols);
DLSYM_PROTOTYPE(kmod_module_dependency_symbol_get_symbol);
DLSYM_PROTOTYPE(kmod_module_dependency_symbols_free_list);
DLSYM_PROTOTYPE(kmod_module_insert_module);
DLSYM_PROTOTYPE(kmod_module_remove_module);
DLSYM_PROTOTYPE(kmod_list_next);
DLSYM_PROTOTYPE(kmod_list_prev);
DLSYM_PROTOTYPE(kmod_list_last);

DLSYM_PROTOTYPE(mnt_new_table_from_file);
DLSYM_PROTOTYPE(mnt_unref_table);
DLSYM_PROTOTYPE(mnt_table_find_mountpoint);
DLSYM_PROTOTYPE(mnt_table_find_target);
DLSYM_PROTOTYPE(mnt_fs_get_vfs_options);
DLSYM_PROTOTYPE(mnt_fs_get_target);
DLSYM_PROTOTYPE(mnt_fs_get_fstype);
DLSYM_PROTOTYPE(mnt_optstr_get_option);
DLSYM_PROTOTYPE(mnt_new_context);
DLSYM_PROTOTYPE(mnt_free_context);
DLSYM_PROTOTYPE(mnt_context_set_optsmode);
DLSYM_PROTOTYPE(mnt_context_disable_mtab);
DLSYM_PROTOTYPE(mnt_context_disable_helpers);
DLSYM_PROTOTYPE(mnt_context_set_source);
DLSYM_PROTOTYPE(mnt_context_set_target);
DLSYM_PROTOTYPE(mnt_context_set_options);
DLSYM_PROTOTYPE(mnt_context_mount);
DLSYM_PROTOTYPE(mnt_context_umount);
DLSYM_PROTOTYPE(mnt_context_get_status);
DLSYM_PROTOTYPE(mnt_context_get_excode);
DLSYM_PROTOTYPE(mnt_context_get_syscall_errno);

struct dsym {
	void **ptr;
	const char *name;
};

#define DSYM(f)                                                                                    \
	{                                                                                          \
		(void **)&sym_##f, #f                                                              \
	}

static const struct dsym curl_syms[] = {
	DSYM(curl_global_init),	   DSYM(curl_easy_init),     DSYM(curl_easy_cleanup),
	DSYM(curl_easy_reset),	   DSYM(curl_easy_setopt),   DSYM(curl_easy_getinfo),
	DSYM(curl_easy_perform),   DSYM(curl_easy_strerror), DSYM(curl_slist_append),
	DSYM(curl_slist_free_all),
};

static const struct dsym archive_syms[] = {
	DSYM(archive_read_new),
	DSYM(archive_read_free),
	DSYM(archive_read_open),
	DSYM(archive_read_next_header),
	DSYM(archive_read_data_block),
	DSYM(archive_read_support_filter_zstd),
	DSYM(archive_read_support_filter_xz),
	DSYM(archive_read_support_filter_gzip),
	DSYM(archive_read_support_format_raw),
	DSYM(archive_read_support_format_tar),
	DSYM(archive_filter_code),
	DSYM(archive_filter_name),
	DSYM(archive_set_error),
	DSYM(archive_errno),
	DSYM(archive_error_string),
	DSYM(archive_entry_pathname),
	DSYM(archive_entry_filetype),
	DSYM(archive_entry_perm),
	DSYM(archive_entry_size),
	DSYM(archive_entry_size_is_set),
	DSYM(archive_entry_mtime),
	DSYM(archive_entry_mtime_is_set),
	DSYM(archive_entry_symlink),
	DSYM(archive_entry_hardlink),
	DSYM(archive_entry_xattr_reset),
	DSYM(archive_entry_xattr_next),
};

static const struct dsym zstd_syms[] = {
	DSYM(ZSTD_createDCtx),		DSYM(ZSTD_freeDCtx),
	DSYM(ZSTD_DCtx_reset),		DSYM(ZSTD_decompressDCtx),
	DSYM(ZSTD_decompressStream),	DSYM(ZSTD_findFrameCompressedSize),
	DSYM(ZSTD_getFrameContentSize), DSYM(ZSTD_isError),
	DSYM(ZSTD_getErrorName),	DSYM(ZSTD_getErrorCode),
};

static const struct dsym kmod_syms[] = {
	DSYM(kmod_new),
	DSYM(kmod_unref),
	DSYM(kmod_set_log_fn),
	DSYM(kmod_set_log_priority),
	DSYM(kmod_module_new_from_path),
	DSYM(kmod_module_new_from_name),
	DSYM(kmod_module_new_from_name_lookup),
	DSYM(kmod_module_get_info),
	DSYM(kmod_module_info_get_key),
	DSYM(kmod_module_info_get_value),
	DSYM(kmod_module_info_free_list),
	DSYM(kmod_module_get_name),
	DSYM(kmod_module_get_path),
	DSYM(kmod_module_unref),
	DSYM(kmod_module_unref_list),
	DSYM(kmod_module_get_module),
	DSYM(kmod_module_get_dependencies),
	DSYM(kmod_module_get_dependency_symbols),
	DSYM(kmod_module_dependency_symbol_get_symbol),
	DSYM(kmod_module_dependency_symbols_free_list),
	DSYM(kmod_module_insert_module),
	DSYM(kmod_module_remove_module),
	DSYM(kmod_list_next),
	DSYM(kmod_list_prev),
	DSYM(kmod_list_last),
};

static const struct dsym mount_syms[] = {
	DSYM(mnt_new_table_from_file),
	DSYM(mnt_unref_table),
	DSYM(mnt_table_find_mountpoint),
	DSYM(mnt_table_find_target),
	DSYM(mnt_fs_get_vfs_options),
	DSYM(mnt_fs_get_target),
	DSYM(mnt_fs_get_fstype),
	DSYM(mnt_optstr_get_option),
	DSYM(mnt_new_context),
	DSYM(mnt_free_context),
	DSYM(mnt_context_set_optsmode),
	DSYM(mnt_context_disable_mtab),
	DSYM(mnt_context_disable_helpers),
	DSYM(mnt_context_set_source),
	DSYM(mnt_context_set_target),
	DSYM(mnt_context_set_options),
	DSYM(mnt_context_mount),
	DSYM(mnt_context_umount),
	DSYM(mnt_context_get_status),
	DSYM(mnt_context_get_excode),
	DSYM(mnt_context_get_syscall_errno),
};

struct dlib {
	const char *soname, *package;
	const struct dsym *syms;
	size_t n_syms;
	int (*init)(struct err *e); /* once, after the symbols resolved; may be NULL */
	void *handle;		    /* never closed: the pointers live as long as the process */
};

/*
 * Once per process and under the lock: curl_global_init is not thread-safe before curl
 * 7.84, and with a fresh index the first transfer starts after the unpacker's threads.
 */
static int curl_init(struct err *e)
{
	if (sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(e, EXIT_UNEXPECTED, "fetch: libcurl initialisation failed");
	return 0;
}

#define LIB(soname, package, syms, init)                                                           \
	{                                                                                          \
		soname, package, syms, ARRAY_SIZE(syms), init, NULL                                \
	}
static struct dlib curl_lib = LIB(DLIB_CURL_SONAME, "libcurl4", curl_syms, curl_init);
static struct dlib archive_lib = LIB(DLIB_ARCHIVE_SONAME, "libarchive13", archive_syms, NULL);
static struct dlib zstd_lib = LIB(DLIB_ZSTD_SONAME, "libzstd1", zstd_syms, NULL);
static struct dlib kmod_lib = LIB(DLIB_KMOD_SONAME, "libkmod2", kmod_syms, NULL);
static struct dlib mount_lib = LIB(DLIB_MOUNT_SONAME, "libmount1", mount_syms, NULL);

#define DLIB_MAX_SYMS 32
_Static_assert(ARRAY_SIZE(curl_syms) <= DLIB_MAX_SYMS &&
		       ARRAY_SIZE(archive_syms) <= DLIB_MAX_SYMS &&
		       ARRAY_SIZE(zstd_syms) <= DLIB_MAX_SYMS &&
		       ARRAY_SIZE(kmod_syms) <= DLIB_MAX_SYMS &&
		       ARRAY_SIZE(mount_syms) <= DLIB_MAX_SYMS,
	       "DLIB_MAX_SYMS");

static pthread_mutex_t dlib_lock = PTHREAD_MUTEX_INITIALIZER;

static int dlib_load_locked(struct dlib *l, struct err *e)
{
	void *h, *p[DLIB_MAX_SYMS];

	if (l->handle)
		return 0;
	h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err_set(e, EXIT_UNEXPECTED, "cannot load %s: %s", l->soname, dlerror());
		err_hint(e, "install the %s package on the image (the project's Dockerfile does)",
			 l->package);
		return -1;
	}
	/* All or none: no pointer is set into a library that is closed again. */
	for (size_t i = 0; i < l->n_syms; i++) {
		p[i] = dlsym(h, l->syms[i].name);
		if (!p[i]) {
			err_set(e, EXIT_UNEXPECTED, "%s has no symbol %s: %s", l->soname,
				l->syms[i].name, dlerror());
			err_hint(
				e,
				"install a %s at least as new as the one the installer was built with",
				l->package);
			dlclose(h);
			return -1;
		}
	}
	for (size_t i = 0; i < l->n_syms; i++)
		*l->syms[i].ptr = p[i];
	if (l->init && l->init(e) < 0)
		return -1;
	l->handle = h;
	return 0;
}

static int dlib_load(struct dlib *l, struct err *e)
{
	int r;

	pthread_mutex_lock(&dlib_lock);
	r = dlib_load_locked(l, e);
	pthread_mutex_unlock(&dlib_lock);
	return r;
}

int dlib_curl(struct err *e)
{
	return dlib_load(&curl_lib, e);
}

int dlib_archive(struct err *e)
{
	return dlib_load(&archive_lib, e);
}

int dlib_zstd(struct err *e)
{
	return dlib_load(&zstd_lib, e);
}

int dlib_kmod(struct err *e)
{
	return dlib_load(&kmod_lib, e);
}

int dlib_mount(struct err *e)
{
	return dlib_load(&mount_lib, e);
}

int dlib_err_curl(struct err *e, int code, int curl_rc, const char *errbuf, const char *fmt, ...)
{
	char reason[CURL_ERROR_SIZE + 64];
	va_list ap;

	if (errbuf && *errbuf)
		snprintf(reason, sizeof(reason), "%s", errbuf);
	else
		snprintf(reason, sizeof(reason), "%s", sym_curl_easy_strerror((CURLcode)curl_rc));
	/* curl's buffer often ends with a newline; keep messages on one line. */
	reason[strcspn(reason, "\r\n")] = '\0';
	va_start(ap, fmt);
	err_vset_reason(e, code, 0, reason, fmt, ap);
	va_end(ap);
	return -1;
}

int dlib_err_libmount(struct err *e, int code, struct libmnt_context *cxt, int rc, const char *fmt,
		      ...)
{
	char reason[512] = "";
	int sys = sym_mnt_context_get_syscall_errno(cxt);
	va_list ap;

	if (!sys && rc < 0 && rc > -4096)
		sys = -rc;
	if (sym_mnt_context_get_excode(cxt, rc, reason, sizeof(reason)) == 0 || !reason[0])
		snprintf(reason, sizeof(reason), "%s", strerror(sys ? sys : EIO));
	va_start(ap, fmt);
	err_vset_reason(e, code, sys, reason, fmt, ap);
	va_end(ap);
	return -1;
}

int dlib_err_archive(struct err *e, int code, struct archive *a, const char *fmt, ...)
{
	const char *reason = a ? sym_archive_error_string(a) : NULL;
	int sys = a ? sym_archive_errno(a) : 0;
	va_list ap;

	if (sys < 0)
		sys = 0; /* ARCHIVE_ERRNO_MISC and friends are not system errors */
	va_start(ap, fmt);
	err_vset_reason(e, code, sys, reason ? reason : "unknown archive error", fmt, ap);
	va_end(ap);
	return -1;
}
