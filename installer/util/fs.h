/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File-system helpers that never leave a directory they were given.
 *
 * Host paths are opened relative to a root directory fd with the semantics of
 * openat2(RESOLVE_IN_ROOT): ".." stops at the root and absolute symlink targets
 * restart at the root, so a host symlink such as /home -> /var/home lands in
 * the host's /var/home and never in the installer container's. The kernel
 * resolves the path when it can (openat2 with RESOLVE_IN_ROOT); where it
 * cannot (no openat2, a seccomp filter's refusal, FS_MKDIRS) the path is
 * walked in user space one component at a time, with the same answers.
 *
 * Also: whole-file reads with a size limit, atomic and durable replacement
 * (temp file, fsync, rename), symlink swaps, a recursive remove that stays on
 * its file system, and syncing one tree. Failures carry their errno in the
 * struct err (err_errnum); fs_write_all and fs_fd_path return -errno.
 */
#pragma once

#include <stdbool.h>
#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

enum fs_flags {
	FS_MKDIRS = 1 << 0, /* create missing directories (0755) on the way */
	FS_NOFOLLOW_LAST =
		1 << 1 /* do not resolve a symlink in the last component (as O_NOFOLLOW) */
};

/*
 * Opens PATH (absolute or relative, both taken relative to root_fd) with
 * openat(2) FLAGS and MODE, resolving symlinks inside root_fd. With FS_MKDIRS
 * and O_DIRECTORY in FLAGS the last component is created too.
 * Returns the new fd, or -1 with e set (message naming PATH; err_errnum(e) says why:
 * ENOENT, ELOOP for a symlink last component under FS_NOFOLLOW_LAST, EACCES, ...).
 */
_must_check_ int fs_open_in_root(int root_fd, const char *path, int flags, mode_t mode,
				 unsigned fs_flags, struct err *e);

/*
 * Resolves every in-root path by walking it, as on a kernel without openat2(2) (or where
 * seccomp refuses it). For tests, which check that both ways give the same answers.
 */
void fs_in_root_walk_only(bool on);
/* How many in-root lookups the kernel answered so far (tests: the fast path is taken). */
unsigned long fs_in_root_kernel_answers(void);

/* Opens (and with create, makes) the directory PATH under root_fd. Returns an O_DIRECTORY fd. */
_must_check_ int fs_dir_in_root(int root_fd, const char *path, bool create, struct err *e);

/*
 * Opens the directory PATH under ROOT_FD (with CREATE, makes it with MODE, and its parents)
 * only where it is this process's user's alone: its last component a directory, not a
 * link, owned by our effective uid, writable by no group or other, in a parent that no one
 * else can rename it out of (root's or ours, sticky where anyone may write). For a
 * directory that others may make first (one in /tmp) and where we put what must stay ours
 * (a daemon's socket). Returns an O_DIRECTORY fd, or -1: EXIT_USAGE naming the owner, the
 * mode and the fix (remove it) for one not ours, err_errnum ENOENT where it is missing and
 * not CREATE.
 */
_must_check_ int fs_own_dir_in_root(int root_fd, const char *path, mode_t mode, bool create,
				    struct err *e);

/*
 * Reads at most MAX bytes of fd (whole file); NUL-terminates the buffer.
 * Returns 0 and sets *ret_buf and *ret_len, or -1 (file larger than MAX is an error).
 */
_must_check_ int fs_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len, struct err *e);

/*
 * The one reader of files the installer expects to be regular (host files under the root,
 * records, a module given on the command line): opened without blocking, and what is not
 * a regular file (a FIFO, a device, a directory) refused with EINVAL before any read, so
 * none can make a reader wait; at most MAX bytes, more is an error with EFBIG.
 */

/*
 * Opens PATH (relative to dirfd, or absolute) for reading; O_NOFOLLOW in FLAGS refuses a
 * symlink in its last component (ELOOP). Returns the fd, or -1 with e set.
 */
_must_check_ int fs_open_regular_at(int dirfd, const char *path, int flags, struct err *e);

/*
 * Reads the file NAME under dirfd whole, not following a symlink in NAME's last component;
 * NUL-terminated. Returns 0 and sets *ret_buf and *ret_len, or -1 with e set.
 */
_must_check_ int fs_read_at(int dirfd, const char *name, size_t max, char **ret_buf,
			    size_t *ret_len, struct err *e);

/*
 * Opens PATH under root_fd (resolved inside it; FS_NOFOLLOW_LAST in FS_FLAGS as for
 * fs_open_in_root) for reading. Returns the fd, or -1 with e set.
 */
_must_check_ int fs_open_regular_in_root(int root_fd, const char *path, unsigned fs_flags,
					 struct err *e);

/*
 * Reads the file PATH of this process's (a --repo-key, a --module-cert: links followed)
 * whole, NUL-terminated. Returns 0 and sets *ret_buf and *ret_len, or -1 with e set.
 */
_must_check_ int fs_read_path(const char *path, size_t max, char **ret_buf, size_t *ret_len,
			      struct err *e);

/*
 * Reads the file PATH under root_fd (resolved inside it) whole, NUL-terminated. Returns 0
 * and sets *ret_buf and *ret_len (when given), or -1 with e set: err_errnum(e) is ENOENT
 * for a file that is not there, EINVAL for one that is not a regular file, EFBIG for one
 * larger than MAX, or the errno of the open or read.
 */
_must_check_ int fs_read_file_in_root(int root_fd, const char *path, size_t max, char **ret_buf,
				      size_t *ret_len, struct err *e);

/*
 * fs_read_file_in_root for the host files whose absence is an answer (sysfs, procfs, the
 * ld configuration): the buffer, or NULL whatever the cause. Its length goes to *ret_len
 * when given.
 */
char *fs_read_in_root(int root_fd, const char *path, size_t max, size_t *ret_len);

/* Writes all of BUF to fd, retrying short writes and EINTR. 0 or -errno. */
int fs_write_all(int fd, const void *buf, size_t len);

/*
 * Replaces NAME in dirfd with BUF atomically: temp file in the same directory,
 * fsync, rename, fsync of the directory. Returns 0 or -1.
 */
_must_check_ int fs_write_atomic_at(int dirfd, const char *name, const void *buf, size_t len,
				    mode_t mode, struct err *e);
/*
 * The same without the two fsyncs: readers see the old or the new content, never a mix,
 * but after a crash the file may be either, or empty. For records that may be lost.
 */
_must_check_ int fs_replace_at(int dirfd, const char *name, const void *buf, size_t len,
			       mode_t mode, struct err *e);

/*
 * Removes NAME under dirfd recursively without following symlinks and
 * without crossing into other mounts. A missing NAME is success.
 */
_must_check_ int fs_rm_rf_at(int dirfd, const char *name, struct err *e);

/*
 * Creates a fresh private (0700) directory PREFIX-<8 random chars> under dirfd; its name
 * goes to ret_name.
 */
_must_check_ int fs_mkdtemp_at(int dirfd, const char *prefix, char *ret_name, size_t size,
			       struct err *e);

/* Replaces (or creates) symlink NAME -> TARGET atomically. Returns 0 or -1. */
_must_check_ int fs_symlink_replace_at(int dirfd, const char *target, const char *name,
				       struct err *e);

/*
 * Opens directory NAME under dirfd for readdir(), not following a symlink in
 * NAME. Returns a DIR (which owns its own fd) or NULL with e set.
 */
_must_check_ DIR *fs_opendir_at(int dirfd, const char *name, struct err *e);

/*
 * Makes the tree under dirfd durable: every regular file and directory in it,
 * not following symlinks and not crossing into other mounts. Write-back of all
 * files is started first and then waited for, so the disk sees one batch. Only
 * this tree is written, not the rest of its file system (which syncfs would).
 * Returns 0 or -1.
 */
_must_check_ int fs_sync_tree(int dirfd, struct err *e);

/* The path fd refers to, as this process sees it (/proc/self/fd). 0 or -errno. */
int fs_fd_path(int fd, char *buf, size_t size);

/*
 * Opens the directory PATH (relative, '/'-separated) under dirfd, following no symlink in
 * any component. Returns an fd, or -1 with errno set (ELOOP or ENOTDIR for a link).
 */
int fs_dir_nofollow(int dirfd, const char *path);

/* Whether NAME under dirfd is a symlink whose target is exactly TARGET. */
bool fs_symlink_is(int dirfd, const char *name, const char *target);
