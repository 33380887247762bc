// SPDX-License-Identifier: Apache-2.0
/* What every command shares: the host root, the kernel release, the lock (cmd.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "util/fs.h"
#include "util/log.h"

#define LOCK_PATH "/run/nvidia-driver-installer.lock"

int session_open_root(const struct config *c, struct err *e)
{
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		err_errno(e, EXIT_USAGE, errno, "host root '%s'", c->root);
		err_hint(
			e,
			"mount the host's / into the container and pass it as --root (ROOT_MOUNT_DIR)");
	}
	return fd;
}

const char *session_release(const struct config *c, struct utsname *u)
{
	if (c->kernel_release)
		return c->kernel_release;
	uname(u);
	return u->release;
}

/*
 * Opens the lock file, never through a link planted at its name: such a link is
 * removed and the file made anew.
 */
static int lock_open(int root_fd, struct err *e)
{
	int fd = fs_open_in_root(root_fd, LOCK_PATH, O_RDWR | O_CREAT, 0644,
				 FS_MKDIRS | FS_NOFOLLOW_LAST, e);
	_cleanup_close_ int dfd = -1;
	char dir[sizeof(LOCK_PATH)];
	const char *base = strrchr(LOCK_PATH, '/') + 1;

	if (fd >= 0 || err_errnum(e) != ELOOP)
		return fd;
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - LOCK_PATH), LOCK_PATH);
	dfd = fs_dir_in_root(root_fd, dir, false, e);
	if (dfd < 0)
		return -1;
	if (unlinkat(dfd, base, 0) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove the link at '%s'", LOCK_PATH);
	log_kv(LOG_WARN, "lock", "a link planted at the lock's name was removed, not followed",
	       "lock", LOCK_PATH, LOG_END);
	err_clear(e);
	return fs_open_in_root(root_fd, LOCK_PATH, O_RDWR | O_CREAT, 0644,
			       FS_MKDIRS | FS_NOFOLLOW_LAST, e);
}

int session_lock(int root_fd, struct err *e)
{
	int fd = lock_open(root_fd, e);

	if (fd < 0)
		return err_wrap(e, "lock");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK) {
			close(fd);
			return err_errno(e, EXIT_UNEXPECTED, errno, "lock '%s'", LOCK_PATH);
		}
		log_kv(LOG_INFO, "lock", "another installer is running; waiting for it", "lock",
		       LOCK_PATH, LOG_END);
		while (flock(fd, LOCK_EX) < 0) {
			if (errno != EINTR) {
				close(fd);
				return err_errno(e, EXIT_UNEXPECTED, errno, "lock '%s'", LOCK_PATH);
			}
		}
	}
	return fd;
}
