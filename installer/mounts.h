/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mounts, read with libmount. This stage only reports: the install dir's
 * mount and its flags, since an install dir on a noexec file system (COS
 * mounts /home so) holds binaries that cannot run until it is remounted.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "util/err.h"

struct mount_info {
	char target[PATH_MAX]; /* mount point, as this process sees it */
	char fstype[64];
	char options[256]; /* per-mount (VFS) options */
	bool noexec;
};

/*
 * Finds the mount that holds the directory open as FD, from MOUNTINFO
 * (normally /proc/self/mountinfo). Returns 0, or -1 with e set.
 */
int mounts_lookup_fd(int fd, const char *mountinfo, struct mount_info *ret, struct err *e);
