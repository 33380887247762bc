/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, libarchive, libzstd, libkmod and libmount, loaded when first needed rather than
 * at exec.
 *
 * libcurl and libarchive pull about forty shared objects into the process (GnuTLS through
 * librtmp and libldap, Kerberos, libssh2, libxml2, ICU, ...), libkmod and libmount six more
 * (libblkid, libselinux, PCRE2, ...), and mapping and relocating those costs more than
 * everything else a re-run does: a node whose driver is installed and live, with a fresh
 * index in its cache and its mounts in place, needs none of them. The binary therefore
 * does not link them; callers load them with dlib_curl(), dlib_archive(), dlib_zstd(),
 * dlib_kmod() or dlib_mount() before their first use and call through the sym_ pointers
 * below (systemd's
 * pattern for optional libraries).
 *
 * The compiler checks each pointer against the library's own prototype (typeof), so a
 * changed signature in a new header fails the build, not the run. A pointer cannot carry
 * curl's check of argument types (typecheck-gcc.h wraps the names of curl_easy_setopt and
 * curl_easy_getinfo in macros); so the build compiles fetch.c once more with
 * DLIB_TYPECHECK, where the sym_ names are curl's own, and what curl's check refuses (a
 * string or pointer for a long option, a long for a string, a callback of the wrong type,
 * a wrong pointer for getinfo; it accepts an int for a long) fails the build: the
 * Makefile's typecheck object, built with optimisation, which the check needs.
 */
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <libkmod.h>
#include <libmount.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "util/err.h"

/* The sonames the headers are for; a new major version is a new soname, and a build error. */
#define DLIB_CURL_SONAME "libcurl.so.4"
#define DLIB_ARCHIVE_SONAME "libarchive.so.13"
#define DLIB_KMOD_SONAME "libkmod.so.2"
#define DLIB_MOUNT_SONAME "libmount.so.1"
#define DLIB_ZSTD_SONAME "libzstd.so.1"

#define DLSYM_PROTOTYPE(f) typeof(f) *sym_##f

extern DLSYM_PROTOTYPE(curl_global_init);
extern DLSYM_PROTOTYPE(curl_easy_init);
extern DLSYM_PROTOTYPE(curl_easy_cleanup);
extern DLSYM_PROTOTYPE(curl_easy_reset);
#ifdef DLIB_TYPECHECK
#define sym_curl_easy_setopt curl_easy_setopt
#define sym_curl_easy_getinfo curl_easy_getinfo
#else
extern DLSYM_PROTOTYPE(curl_easy_setopt);
extern DLSYM_PROTOTYPE(curl_easy_getinfo);
#endif
extern DLSYM_PROTOTYPE(curl_easy_perform);
extern DLSYM_PROTOTYPE(curl_easy_strerror);
#ifdef DLIB_TYPECHECK
#define sym_curl_slist_append curl_slist_append
#define sym_curl_slist_free_all curl_slist_free_all
#else
extern DLSYM_PROTOTYPE(curl_slist_append);
extern DLSYM_PROTOTYPE(curl_slist_free_all);
#endif

extern DLSYM_PROTOTYPE(archive_read_new);
extern DLSYM_PROTOTYPE(archive_read_free);
extern DLSYM_PROTOTYPE(archive_read_open);
extern DLSYM_PROTOTYPE(archive_read_next_header);
extern DLSYM_PROTOTYPE(archive_read_data_block);
extern DLSYM_PROTOTYPE(archive_read_support_filter_zstd);
extern DLSYM_PROTOTYPE(archive_read_support_filter_xz);
extern DLSYM_PROTOTYPE(archive_read_support_filter_gzip);
extern DLSYM_PROTOTYPE(archive_read_support_format_raw);
extern DLSYM_PROTOTYPE(archive_read_support_format_tar);
extern DLSYM_PROTOTYPE(archive_filter_code);
extern DLSYM_PROTOTYPE(archive_filter_name);
extern DLSYM_PROTOTYPE(archive_set_error);
extern DLSYM_PROTOTYPE(archive_errno);
extern DLSYM_PROTOTYPE(archive_error_string);
extern DLSYM_PROTOTYPE(archive_entry_pathname);
extern DLSYM_PROTOTYPE(archive_entry_filetype);
extern DLSYM_PROTOTYPE(archive_entry_perm);
extern DLSYM_PROTOTYPE(archive_entry_size);
extern DLSYM_PROTOTYPE(archive_entry_size_is_set);
extern DLSYM_PROTOTYPE(archive_entry_mtime);
extern DLSYM_PROTOTYPE(archive_entry_mtime_is_set);
extern DLSYM_PROTOTYPE(archive_entry_symlink);
extern DLSYM_PROTOTYPE(archive_entry_hardlink);
extern DLSYM_PROTOTYPE(archive_entry_xattr_reset);
extern DLSYM_PROTOTYPE(archive_entry_xattr_next);

extern DLSYM_PROTOTYPE(kmod_new);
extern DLSYM_PROTOTYPE(kmod_unref);
extern DLSYM_PROTOTYPE(kmod_set_log_fn);
extern DLSYM_PROTOTYPE(kmod_set_log_priority);
extern DLSYM_PROTOTYPE(kmod_module_new_from_path);
extern DLSYM_PROTOTYPE(kmod_module_new_from_name);
extern DLSYM_PROTOTYPE(kmod_module_new_from_name_lookup);
extern DLSYM_PROTOTYPE(kmod_module_get_info);
extern DLSYM_PROTOTYPE(kmod_module_info_get_key);
extern DLSYM_PROTOTYPE(kmod_module_info_get_value);
extern DLSYM_PROTOTYPE(kmod_module_info_free_list);
extern DLSYM_PROTOTYPE(kmod_module_get_name);
extern DLSYM_PROTOTYPE(kmod_module_get_path);
extern DLSYM_PROTOTYPE(kmod_module_unref);
extern DLSYM_PROTOTYPE(kmod_module_unref_list);
extern DLSYM_PROTOTYPE(kmod_module_get_module);
extern DLSYM_PROTOTYPE(kmod_module_get_dependencies);
extern DLSYM_PROTOTYPE(kmod_module_get_dependency_symbols);
extern DLSYM_PROTOTYPE(kmod_module_dependency_symbol_get_symbol);
extern DLSYM_PROTOTYPE(kmod_module_dependency_symbols_free_list);
extern DLSYM_PROTOTYPE(kmod_module_insert_module);
extern DLSYM_PROTOTYPE(kmod_module_remove_module);
extern DLSYM_PROTOTYPE(kmod_list_next);
extern DLSYM_PROTOTYPE(kmod_list_prev);
extern DLSYM_PROTOTYPE(kmod_list_last);

extern DLSYM_PROTOTYPE(mnt_new_table_from_file);
extern DLSYM_PROTOTYPE(mnt_unref_table);
extern DLSYM_PROTOTYPE(mnt_table_find_mountpoint);
extern DLSYM_PROTOTYPE(mnt_table_find_target);
extern DLSYM_PROTOTYPE(mnt_fs_get_vfs_options);
extern DLSYM_PROTOTYPE(mnt_fs_get_target);
extern DLSYM_PROTOTYPE(mnt_fs_get_fstype);
extern DLSYM_PROTOTYPE(mnt_optstr_get_option);
extern DLSYM_PROTOTYPE(mnt_new_context);
extern DLSYM_PROTOTYPE(mnt_free_context);
extern DLSYM_PROTOTYPE(mnt_context_set_optsmode);
extern DLSYM_PROTOTYPE(mnt_context_disable_mtab);
extern DLSYM_PROTOTYPE(mnt_context_disable_helpers);
extern DLSYM_PROTOTYPE(mnt_context_set_source);
extern DLSYM_PROTOTYPE(mnt_context_set_target);
extern DLSYM_PROTOTYPE(mnt_context_set_options);
extern DLSYM_PROTOTYPE(mnt_context_mount);
extern DLSYM_PROTOTYPE(mnt_context_umount);
extern DLSYM_PROTOTYPE(mnt_context_get_status);
extern DLSYM_PROTOTYPE(mnt_context_get_excode);
extern DLSYM_PROTOTYPE(mnt_context_get_syscall_errno);

/* libzstd: the frames of a package decompressed in parallel (stage/zframes.h). */
extern DLSYM_PROTOTYPE(ZSTD_createDCtx);
extern DLSYM_PROTOTYPE(ZSTD_freeDCtx);
extern DLSYM_PROTOTYPE(ZSTD_DCtx_reset);
extern DLSYM_PROTOTYPE(ZSTD_decompressDCtx);
extern DLSYM_PROTOTYPE(ZSTD_decompressStream);
extern DLSYM_PROTOTYPE(ZSTD_findFrameCompressedSize);
extern DLSYM_PROTOTYPE(ZSTD_getFrameContentSize);
extern DLSYM_PROTOTYPE(ZSTD_isError);
extern DLSYM_PROTOTYPE(ZSTD_getErrorName);
extern DLSYM_PROTOTYPE(ZSTD_getErrorCode);

/* libkmod's list macros call kmod_list_next and kmod_list_prev by name. */
#define dlib_kmod_list_foreach(it, first)                                                          \
	for ((it) = (first); (it); (it) = sym_kmod_list_next((first), (it)))
#define dlib_kmod_list_foreach_reverse(it, first)                                                  \
	for ((it) = sym_kmod_list_last(first); (it); (it) = sym_kmod_list_prev((first), (it)))

/*
 * Load the library and resolve every pointer above that belongs to it, once per process
 * (thread-safe; later calls return at once). A missing library or symbol is exit 1 with
 * the loader's reason: the container image ships both, so this is a broken image or host.
 */
_must_check_ int dlib_curl(struct err *e);
_must_check_ int dlib_archive(struct err *e);
_must_check_ int dlib_zstd(struct err *e);
_must_check_ int dlib_kmod(struct err *e);
_must_check_ int dlib_mount(struct err *e);

/*
 * The error setters of the loaded libraries (each returns -1, as util/err.h's): they read
 * the library's own reason through the pointers above, so they live with them.
 */
/* Appends curl's error buffer when filled, else curl_easy_strerror(rc). */
int dlib_err_curl(struct err *e, int code, int curl_rc, const char *errbuf, const char *fmt, ...)
	_printf_(5, 6);
/*
 * Appends libmount's reason for RC from mnt_context_mount/umount (it returns
 * -errno, a positive syscall errno, or its own codes): mnt_context_get_excode.
 * Carries the syscall errno (or -RC when RC is a negative errno).
 */
int dlib_err_libmount(struct err *e, int code, struct libmnt_context *cxt, int rc, const char *fmt,
		      ...) _printf_(5, 6);
/* Appends archive_error_string(a); carries archive_errno(a). */
int dlib_err_archive(struct err *e, int code, struct archive *a, const char *fmt, ...)
	_printf_(4, 5);
