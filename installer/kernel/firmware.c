// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/firmware.h"
#include "util/fs.h"
#include "util/log.h"

#define FW_PARAM "/sys/module/firmware_class/parameters/path"

/* firmware_class.path now, without its newline; "" when unset or unreadable. */
static void param_get(int root_fd, char *buf, size_t size)
{
	_cleanup_free_ char *v = NULL;
	struct err e;

	buf[0] = '\0';
	if (fs_read_file_in_root(root_fd, FW_PARAM, PATH_MAX, &v, NULL, &e) < 0)
		return;
	v[strcspn(v, "\n")] = '\0';
	snprintf(buf, size, "%s", v);
}

/* Writes firmware_class.path; VALUE "" clears it (a lone NUL: a 0-byte write stores nothing). */
static int param_set(int root_fd, const char *value, struct err *e)
{
	/*
	 * O_TRUNC is a no-op on sysfs; it keeps a plain file (a test root) exact. O_NONBLOCK:
	 * a FIFO planted there is refused (ENXIO without a reader), not waited on.
	 */
	_cleanup_close_ int fd =
		fs_open_in_root(root_fd, FW_PARAM, O_WRONLY | O_TRUNC | O_NONBLOCK, 0, 0, e);
	struct stat st;
	int r;

	if (fd < 0)
		return err_wrap(e, "firmware");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return err_errno(e, EXIT_UNEXPECTED, EINVAL, "firmware: '%s' is not a regular file",
				 FW_PARAM);
	r = value[0] ? fs_write_all(fd, value, strlen(value)) : fs_write_all(fd, "", 1);
	if (r < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "firmware: write %s", FW_PARAM);
	return 0;
}

/* Links /lib/firmware/nvidia/VERSION to TARGET. 0, 1 when the host has its own, -errno. */
static int link_into_lib(int root_fd, const char *version, const char *target)
{
	_cleanup_close_ int lib = -1, nv = -1;
	struct err e;
	struct stat st;

	lib = fs_dir_in_root(root_fd, "/lib/firmware", false, &e);
	if (lib < 0)
		return err_errnum(&e) ? -err_errnum(&e) : -EIO;
	if (mkdirat(lib, "nvidia", 0755) < 0 && errno != EEXIST)
		return -errno;
	nv = openat(lib, "nvidia", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (nv < 0)
		return -errno;
	/* Ours already, or the host's own (a directory, or a link someone else made). */
	if (fstatat(nv, version, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return fs_symlink_is(nv, version, target) ? 0 : 1;
	/* Probe writability first: a read-only /lib (COS) must not fail half-way. */
	if (faccessat(nv, ".", W_OK, AT_EACCESS) < 0)
		return -errno;
	if (fs_symlink_replace_at(nv, target, version, &e) < 0)
		return err_errnum(&e) ? -err_errnum(&e) : -EIO;
	return 0;
}

int firmware_expose(int root_fd, const char *install_dir, const char *version, struct err *e)
{
	char target[PATH_MAX], fw_dir[PATH_MAX], current[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(target, sizeof(target), "%s/firmware/nvidia/%s", install_dir, version);
	fd = fs_dir_in_root(root_fd, target, false, e);
	if (fd < 0) {
		err_clear(e);
		log_kv(LOG_DEBUG, "firmware", "the package has no GSP firmware", "dir", target,
		       LOG_END);
		return 0;
	}
	r = link_into_lib(root_fd, version, target);
	if (r >= 0) {
		log_kv(LOG_INFO, "firmware",
		       r == 1 ? "the host provides this version's firmware"
			      : "GSP firmware linked into /lib/firmware",
		       "version", version, LOG_END);
		return 0;
	}
	/* /lib/firmware cannot take it (read-only on COS): point the loader at ours. */
	snprintf(fw_dir, sizeof(fw_dir), "%s/firmware", install_dir);
	param_get(root_fd, current, sizeof(current));
	if (strcmp(current, fw_dir) == 0)
		return 0;
	if (current[0]) {
		log_kv(LOG_WARN, "firmware",
		       "firmware_class.path is set by someone else: not changing it; the kernel may not find the GSP firmware",
		       "path", current, "ours", fw_dir, "lib_firmware", strerror(-r), LOG_END);
		return 0;
	}
	if (param_set(root_fd, fw_dir, e) < 0)
		return -1;
	log_kv(LOG_INFO, "firmware", "firmware_class.path points at the install dir", "path",
	       fw_dir, "lib_firmware", strerror(-r), LOG_END);
	return 0;
}

int firmware_withdraw(int root_fd, const char *install_dir, struct err *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int nv = -1;
	char prefix[PATH_MAX], current[PATH_MAX];
	struct dirent *de;

	snprintf(prefix, sizeof(prefix), "%s/firmware", install_dir);
	param_get(root_fd, current, sizeof(current));
	if (strcmp(current, prefix) == 0 && param_set(root_fd, "", e) < 0)
		return -1;
	nv = fs_dir_in_root(root_fd, "/lib/firmware/nvidia", false, e);
	if (nv < 0) {
		err_clear(e);
		return 0;
	}
	d = fs_opendir_at(nv, ".", e);
	while (d && (de = readdir(d))) {
		char link[PATH_MAX];
		ssize_t n = readlinkat(nv, de->d_name, link, sizeof(link) - 1);

		if (n <= 0)
			continue;
		link[n] = '\0';
		/* Only our links: into INSTALL_DIR/firmware/. */
		if (strncmp(link, prefix, strlen(prefix)) == 0 && link[strlen(prefix)] == '/')
			unlinkat(nv, de->d_name, 0);
	}
	return 0;
}
