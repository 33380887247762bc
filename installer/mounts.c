// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <libmount.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mounts.h"

DEFINE_POINTER_CLEANUP(struct libmnt_table, mnt_unref_table)

int mounts_lookup_fd(int fd, const char *mountinfo, struct mount_info *ret, struct err *e)
{
	_cleanup_(mnt_unref_tablep) struct libmnt_table *tb = NULL;
	char proc[64], path[PATH_MAX];
	struct libmnt_fs *fs;
	const char *opts;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, sizeof(path) - 1);
	if (n < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mounts: readlink '%s'", proc);
	path[n] = '\0';
	tb = mnt_new_table_from_file(mountinfo);
	if (!tb)
		return err_set(e, EXIT_UNEXPECTED, "mounts: cannot parse '%s'", mountinfo);
	fs = mnt_table_find_mountpoint(tb, path, MNT_ITER_BACKWARD);
	if (!fs)
		return err_set(e, EXIT_UNEXPECTED, "mounts: no mount holds '%s'", path);
	opts = mnt_fs_get_vfs_options(fs);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->target, sizeof(ret->target), "%s", mnt_fs_get_target(fs));
	snprintf(ret->fstype, sizeof(ret->fstype), "%s",
		 mnt_fs_get_fstype(fs) ? mnt_fs_get_fstype(fs) : "?");
	snprintf(ret->options, sizeof(ret->options), "%s", opts ? opts : "");
	ret->noexec = opts && mnt_optstr_get_option(opts, "noexec", NULL, NULL) == 0;
	return 0;
}
