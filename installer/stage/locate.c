// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/locate.h"
#include "stage/wrap.h"
#include "util/fs.h"

#define ICD_DIR "share/vulkan/icd.d"
/* An ICD file is a few hundred bytes of JSON. */
#define ICD_MAX (1u << 20)

/* Whether NAME in DIRFD is a regular file with an execute bit (links are not). */
static bool is_program(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 0111);
}

/* usr/bin/NAME: the program itself, one inode with the file in bin/ or bin/.real/. */
static int link_programs(int sfd, struct err *e)
{
	_cleanup_close_ int bin_fd = fs_dir_in_root(sfd, "bin", false, e), ub_fd = -1, real_fd = -1;
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;

	if (bin_fd < 0 || (ub_fd = fs_dir_in_root(sfd, "usr/bin", true, e)) < 0)
		return -1;
	real_fd = openat(bin_fd, WRAP_REAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (real_fd < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open 'bin/" WRAP_REAL_DIR "'");
	if (!(dir = fs_opendir_at(bin_fd, ".", e)))
		return -1;
	while ((de = readdir(dir))) {
		int from = real_fd >= 0 && is_program(real_fd, de->d_name) ? real_fd : bin_fd;

		if (de->d_name[0] == '.' || !is_program(from, de->d_name))
			continue;
		if (linkat(from, de->d_name, ub_fd, de->d_name, 0) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "link 'usr/bin/%s'",
					 de->d_name);
	}
	return 0;
}

static bool is_icd_name(const char *name)
{
	size_t n = strlen(name);

	return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

/* vulkan/icd.d/: the package's ICD files, copied (GKE mounts the directory elsewhere). */
static int copy_icds(int sfd, struct err *e)
{
	_cleanup_close_ int icd_fd = fs_dir_in_root(sfd, "vulkan/icd.d", true, e), src_fd = -1;
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;

	if (icd_fd < 0)
		return -1;
	src_fd = openat(sfd, ICD_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src_fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? 0
			       : err_errno(e, EXIT_UNEXPECTED, errno, "open '" ICD_DIR "'");
	if (!(dir = fs_opendir_at(src_fd, ".", e)))
		return -1;
	while ((de = readdir(dir))) {
		_cleanup_free_ char *buf = NULL;
		struct stat st;
		size_t len;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!is_icd_name(de->d_name) ||
		    fstatat(src_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_size > (off_t)ICD_MAX)
			return err_set(e, EXIT_VERIFY,
				       "package has '" ICD_DIR
				       "/%s', not a Vulkan ICD file (a regular *.json file of at "
				       "most 1 MiB)",
				       de->d_name);
		if (fs_read_at(src_fd, de->d_name, ICD_MAX, &buf, &len, e) < 0)
			return err_wrap(e, "package's '" ICD_DIR "/%s'", de->d_name);
		if (fs_replace_at(icd_fd, de->d_name, buf, len, 0644, e) < 0)
			return err_wrap(e, "'vulkan/icd.d/%s'", de->d_name);
	}
	return 0;
}

const char *const locate_loader_files[] = {LOCATE_LOADER_FILES, NULL};

/*
 * PATH under SFD, when there: a regular file reached through folders, no link on the way
 * (O_NOFOLLOW at each step). The CDI spec mounts each alone (expose/cdi.c
 * cdi_graphics_files), and runc refuses a mount whose source is a dangling link, or a
 * folder where the loader reads a file: every GPU container of the node would fail.
 */
static int check_loader_file(int sfd, const char *path, struct err *e)
{
	char dir[256];
	const char *base = strrchr(path, '/');
	_cleanup_close_ int dfd = -1;
	struct stat st;

	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
	dfd = fs_dir_nofollow(sfd, dir);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ELOOP && errno != ENOTDIR)
			return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", dir);
	} else if (fstatat(dfd, base + 1, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", path);
	} else if (S_ISREG(st.st_mode)) {
		return 0;
	}
	return err_set(
		e, EXIT_VERIFY,
		"package has '%s' %s: a loader file the CDI spec mounts must be a regular file, no link on its path",
		path, dfd < 0 ? "under a link or a file" : "that is not a regular file");
}

int locate_shape(int sfd, struct err *e)
{
	_cleanup_close_ int lib_fd = -1;

	if (link_programs(sfd, e) < 0)
		return err_wrap(e, "usr/bin");
	if ((lib_fd = fs_dir_in_root(sfd, "lib", true, e)) < 0)
		return err_wrap(e, "lib");
	if (symlinkat("../firmware", lib_fd, "firmware") < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "link 'lib/firmware'");
	for (size_t i = 0; locate_loader_files[i]; i++) {
		if (check_loader_file(sfd, locate_loader_files[i], e) < 0)
			return -1;
	}
	return copy_icds(sfd, e);
}
