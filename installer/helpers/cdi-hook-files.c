// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook's hooks that make one file or link in the container (cdi-hook.c has their
 * contract): create-symlinks, chmod, update-application-profile, and
 * disable-device-node-modification, whose mount the hook makes itself.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "helpers/cdi-hook.h"

/* ---- create-symlinks, chmod ----------------------------------------------- */

void symlinks_child(const struct opts *o, int unused)
{
	(void)unused;
	for (size_t i = 0; i < o->link.n; i++) {
		const char *spec = o->link.v[i], *sep = strstr(spec, "::");
		char target[PATH_MAX], link[PATH_MAX], cur[PATH_MAX], tmp[PATH_MAX + 32], *slash;
		ssize_t len;

		snprintf(target, sizeof(target), "%.*s", (int)(sep - spec), spec);
		snprintf(link, sizeof(link), "%s", sep + 2);
		len = readlink(link, cur, sizeof(cur) - 1);
		if (len >= 0 && (cur[len] = '\0', strcmp(cur, target) == 0))
			continue;
		slash = strrchr(link, '/');
		if (slash > link) {
			*slash = '\0';
			make_dirs(link, 0755);
			*slash = '/';
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp-nvidia-cdi-hook", link);
		(void)unlink(tmp);
		if (symlink(target, tmp) < 0 || rename(tmp, link) < 0)
			die("link %s -> %s in the container: %s", link, target, strerror(errno));
	}
}

void chmod_child(const struct opts *o, int unused)
{
	mode_t mode = (mode_t)strtoul(o->mode, NULL, 8);

	(void)unused;
	for (size_t i = 0; i < o->path.n; i++) {
		struct stat st;

		if (stat(o->path.v[i], &st) < 0 || (st.st_mode & 07777) == mode)
			continue;
		if (chmod(o->path.v[i], mode) < 0 && errno != EPERM && errno != EACCES)
			die("chmod %s in the container: %s", o->path.v[i], strerror(errno));
	}
}

/* ---- update-application-profile ------------------------------------------- */

void profile_child(const struct opts *o, int unused)
{
	DIR *d = opendir("/dev");
	struct dirent *de;
	uint64_t mask = 0;
	char text[256];

	(void)o;
	(void)unused;
	while (d && (de = readdir(d))) {
		const char *s = de->d_name + 6;
		struct stat st;

		if (strncmp(de->d_name, "nvidia", 6) != 0 || !*s)
			continue;
		while (isdigit((unsigned char)*s))
			s++;
		if (*s || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode) || minor(st.st_rdev) >= 64)
			continue;
		mask |= UINT64_C(1) << minor(st.st_rdev);
	}
	if (d)
		closedir(d);
	if (!mask)
		return;
	make_dirs(PROFILE_DIR, 0555);
	snprintf(
		text, sizeof(text),
		"{\"profiles\":[{\"name\":\"_container_\",\"settings\":[\"EGLVisibleDGPUDevices\",0x%llx]}],\"rules\":[{\"pattern\":[],\"profile\":\"_container_\"}]}",
		(unsigned long long)mask);
	write_file(PROFILE_FILE, text, 0444);
}

/* ---- disable-device-node-modification ------------------------------------- */

/*
 * The host's params with "ModifyDeviceFiles: 1" made 0, into *RET; false when the host's
 * driver does not modify device files (no params, or not 1): nothing to do.
 */
static bool params_without_modify(char **ret)
{
	int fd = open(PARAMS, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? read_all(fd, PARAMS_MAX) : NULL, *at;

	if (fd >= 0)
		close(fd);
	if (!text)
		return false;
	at = strstr(text, "ModifyDeviceFiles: 1\n");
	if (!at || (at != text && at[-1] != '\n')) {
		free(text);
		return false;
	}
	at[strlen("ModifyDeviceFiles: ")] = '0';
	*ret = text;
	return true;
}

static int resolve_in(int root_fd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
}

/*
 * The copy on a tmpfs of its own at /run/nvidia-cdi-hook-PID in the container, bind-mounted
 * read-only over its /proc/driver/nvidia/params; every path resolved inside the root.
 */
int disable_device_node_modification(const struct opts *o)
{
	int root_fd = open_container_root(o->spec), run_fd, dir_fd, fs_fd, mnt_fd, file_fd, tree_fd,
	    target_fd;
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV |
					    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
	char dir[64], *text;

	if (!params_without_modify(&text))
		return 0;
	target_fd = resolve_in(root_fd, PARAMS + 1, O_PATH | O_NOFOLLOW);
	if (target_fd < 0) {
		if (errno == ENOENT)
			return 0; /* the container has no procfs there: nothing reads it */
		die("%s in the container: %s", PARAMS, strerror(errno));
	}
	run_fd = resolve_in(root_fd, "run", O_PATH | O_DIRECTORY);
	if (run_fd < 0)
		die("/run in the container: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "nvidia-cdi-hook-%d", (int)getpid());
	if (mkdirat(run_fd, dir, 0755) < 0 && errno != EEXIST)
		die("mkdir /run/%s in the container: %s", dir, strerror(errno));
	dir_fd = openat(run_fd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	fs_fd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (dir_fd < 0 || fs_fd < 0 ||
	    syscall(SYS_fsconfig, fs_fd, FSCONFIG_SET_STRING, "size", "64k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt_fd = (int)syscall(SYS_fsmount, fs_fd, FSMOUNT_CLOEXEC, 0)) < 0 ||
	    syscall(SYS_move_mount, mnt_fd, "", dir_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die("a tmpfs at /run/%s in the container: %s", dir, strerror(errno));
	file_fd = openat(mnt_fd, "params", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (file_fd < 0 || write(file_fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    close(file_fd) < 0)
		die("write the params copy: %s", strerror(errno));
	tree_fd =
		(int)syscall(SYS_open_tree, mnt_fd, "params", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree_fd < 0 ||
	    syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0 ||
	    syscall(SYS_move_mount, tree_fd, "", target_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die("mount the params copy over %s in the container: %s", PARAMS, strerror(errno));
	free(text);
	return 0;
}
