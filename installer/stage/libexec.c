// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/libexec.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

static const char *const helpers[] = {HELPER_CDI_HOOK, "ldconfig"};

/* Our libexec directory, beside the binary or beside its bin/. Returns an fd or -1. */
static int open_libexec(char *where, size_t size)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0 || !(self[n] = '\0', slash = strrchr(self, '/')))
		return -1;
	*slash = '\0';
	for (const char *const *up = (const char *const[]){"", "../", NULL}; *up; up++) {
		int fd;

		/* A cut path could name another directory: too long is not found. */
		if (str_fmt(where, size, "%s/%s" HELPERS_LIBEXEC, self, *up) < 0)
			continue;
		fd = open(where, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	str_fmt_cut(where, size, "%s/" HELPERS_LIBEXEC " or %s/../" HELPERS_LIBEXEC, self, self);
	return -1;
}

static bool same(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && (b->st_mode & 07777) == 0755;
}

static int install_one(int src_dir, const char *where, int dst_dir, const char *name, struct err *e)
{
	_cleanup_close_ int src = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC),
			    dst = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat s, d;
	struct timespec ts[2];
	size_t len;

	if (src < 0 || fstat(src, &s) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno,
				 "helpers: %s/%s is missing: the installer's image is incomplete",
				 where, name);
	if (fstatat(dst_dir, name, &d, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(d.st_mode) &&
	    same(&s, &d))
		return 0;
	if (fs_read_fd(src, 64u << 20, &buf, &len, e) < 0 ||
	    fs_write_atomic_at(dst_dir, name, buf, len, 0755, e) < 0)
		return err_wrap(e, "helpers");
	/* Our time on the copy: the next run compares size and time, not bytes. */
	dst = openat(dst_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ts[0] = s.st_atim;
	ts[1] = s.st_mtim;
	if (dst < 0 || futimens(dst, ts) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "helpers: set the time of %s", name);
	return 0;
}

static bool is_helper(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(helpers); i++)
		if (strcmp(name, helpers[i]) == 0)
			return true;
	return false;
}

/* The directory is ours: what is not a helper goes (a run killed between a copy's temporary
 * file and its rename leaves one, and an older release's helper may have been dropped). */
static int sweep(int dir_fd, struct err *e)
{
	_cleanup_closedir_ DIR *dir = fs_opendir_at(dir_fd, ".", e);
	struct dirent *de;

	if (!dir)
		return err_wrap(e, "helpers");
	while ((de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    is_helper(de->d_name))
			continue;
		log_kv(LOG_INFO, "cdi", "removing a leftover helper file", "name", de->d_name,
		       LOG_END);
		if (fs_rm_rf_at(dir_fd, de->d_name, e) < 0)
			return err_wrap(e, "helpers");
	}
	return 0;
}

int libexec_install(int install_fd, struct err *e)
{
	char where[2 * PATH_MAX + 64];
	_cleanup_close_ int src = open_libexec(where, sizeof(where)), dst = -1;
	struct stat st;

	if (src < 0)
		return err_set(
			e, EXIT_UNEXPECTED,
			"helpers: no %s: the installer's image is incomplete (the CDI spec's hook comes from there)",
			where);
	/* Ours by name; anything but a real directory there (a planted link) goes. */
	if (fstatat(install_fd, HELPERS_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode) && unlinkat(install_fd, HELPERS_DIR, 0) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "helpers: remove %s", HELPERS_DIR);
	if (mkdirat(install_fd, HELPERS_DIR, 0755) < 0 && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "helpers: create %s", HELPERS_DIR);
	dst = openat(install_fd, HELPERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dst < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "helpers: open %s", HELPERS_DIR);
	if (sweep(dst, e) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(helpers); i++)
		if (install_one(src, where, dst, helpers[i], e) < 0)
			return -1;
	return 0;
}

int libexec_read(const char *name, char **ret_buf, size_t *ret_len, struct err *e)
{
	char where[2 * PATH_MAX + 64];
	_cleanup_close_ int dir = open_libexec(where, sizeof(where)), fd = -1;

	if (dir < 0)
		err_set(e, EXIT_UNEXPECTED, "helpers: no %s: the installer's image is incomplete",
			where);
	else if ((fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		err_errno(e, EXIT_UNEXPECTED, errno,
			  "helpers: %s/%s is missing: the installer's image is incomplete", where,
			  name);
	if (fd < 0) {
		err_hint(
			e,
			"ship the build's libexec/nvidia-driver-installer beside the binary (make install, or the image's /usr/libexec)");
		return -1;
	}
	return fs_read_fd(fd, 16u << 20, ret_buf, ret_len, e) < 0 ? err_wrap(e, "helpers") : 0;
}

int libexec_remove(int install_fd, struct err *e)
{
	return fs_rm_rf_at(install_fd, HELPERS_DIR, e) < 0 ? err_wrap(e, "helpers") : 0;
}
