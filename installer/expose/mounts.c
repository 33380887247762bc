// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "expose/mounts.h"
#include "util/dlib.h"
#include "util/fs.h"
#include "util/log.h"

DEFINE_POINTER_CLEANUP(struct libmnt_table, sym_mnt_unref_table)

int mounts_lookup_fd(int fd, const char *mountinfo, struct mount_info *ret, struct err *e)
{
	_cleanup_(sym_mnt_unref_tablep) struct libmnt_table *tb = NULL;
	char path[PATH_MAX];
	struct libmnt_fs *fs;
	const char *opts;
	int r;

	if ((r = fs_fd_path(fd, path, sizeof(path))) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "mounts: path of fd %d", fd);
	if (dlib_mount(e) < 0)
		return -1;
	tb = sym_mnt_new_table_from_file(mountinfo);
	if (!tb)
		return err_set(e, EXIT_UNEXPECTED, "mounts: cannot parse '%s'", mountinfo);
	fs = sym_mnt_table_find_mountpoint(tb, path, MNT_ITER_BACKWARD);
	if (!fs)
		return err_set(e, EXIT_UNEXPECTED, "mounts: no mount holds '%s'", path);
	opts = sym_mnt_fs_get_vfs_options(fs);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->target, sizeof(ret->target), "%s", sym_mnt_fs_get_target(fs));
	snprintf(ret->fstype, sizeof(ret->fstype), "%s",
		 sym_mnt_fs_get_fstype(fs) ? sym_mnt_fs_get_fstype(fs) : "?");
	snprintf(ret->options, sizeof(ret->options), "%s", opts ? opts : "");
	ret->noexec = opts && sym_mnt_optstr_get_option(opts, "noexec", NULL, NULL) == 0;
	return 0;
}

/* ---- making mounts --------------------------------------------------------- */

DEFINE_POINTER_CLEANUP(struct libmnt_context, sym_mnt_free_context)

/* Per-mount flags a remount must restate, or it drops them. */
static const char *const kept_flags[] = {"ro",	       "nosuid",   "nodev",	 "noatime",
					 "nodiratime", "relatime", "strictatime"};

static struct libmnt_context *context(struct err *e)
{
	struct libmnt_context *cxt;

	if (dlib_mount(e) < 0)
		return NULL;
	cxt = sym_mnt_new_context();
	if (!cxt) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mount");
		return NULL;
	}
	/* Never consult fstab or mtab, never run mount helpers: every call says it all. */
	sym_mnt_context_set_optsmode(cxt, MNT_OMODE_NOTAB);
	sym_mnt_context_disable_mtab(cxt, 1);
	sym_mnt_context_disable_helpers(cxt, 1);
	return cxt;
}

static int do_mount(const char *source, const char *target, const char *options, struct err *e)
{
	_cleanup_(sym_mnt_free_contextp) struct libmnt_context *cxt = context(e);
	int rc;

	if (!cxt)
		return -1;
	sym_mnt_context_set_source(cxt, source);
	sym_mnt_context_set_target(cxt, target);
	sym_mnt_context_set_options(cxt, options);
	rc = sym_mnt_context_mount(cxt);
	if (rc != 0 || sym_mnt_context_get_status(cxt) != 1)
		return dlib_err_libmount(e, EXIT_UNEXPECTED, cxt, rc, "mount %s '%s' (%s)", source,
					 target, options);
	return 0;
}

static int do_umount(const char *target, struct err *e)
{
	_cleanup_(sym_mnt_free_contextp) struct libmnt_context *cxt = context(e);
	int rc;

	if (!cxt)
		return -1;
	sym_mnt_context_set_target(cxt, target);
	rc = sym_mnt_context_umount(cxt);
	if (rc != 0)
		return dlib_err_libmount(e, EXIT_UNEXPECTED, cxt, rc, "umount '%s'", target);
	return 0;
}

/* The mount at exactly PATH, if there is one (libmount loaded). */
static bool mounted_at(const char *path, struct mount_info *ret)
{
	_cleanup_(sym_mnt_unref_tablep) struct libmnt_table *tb =
		sym_mnt_new_table_from_file("/proc/self/mountinfo");
	struct libmnt_fs *fs = tb ? sym_mnt_table_find_target(tb, path, MNT_ITER_BACKWARD) : NULL;
	const char *opts;

	if (!fs)
		return false;
	opts = sym_mnt_fs_get_vfs_options(fs);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->target, sizeof(ret->target), "%s", path);
	snprintf(ret->options, sizeof(ret->options), "%s", opts ? opts : "");
	ret->noexec = opts && sym_mnt_optstr_get_option(opts, "noexec", NULL, NULL) == 0;
	return true;
}

/* "remount,bind,exec" plus the flags the mount at PATH has now. */
static void remount_options(const struct mount_info *m, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "remount,bind,exec");

	for (size_t i = 0; i < ARRAY_SIZE(kept_flags) && len < size; i++) {
		if (sym_mnt_optstr_get_option(m->options, kept_flags[i], NULL, NULL) == 0)
			len += (size_t)snprintf(buf + len, size - len, ",%s", kept_flags[i]);
	}
}

/* Bind-mounts SOURCE onto TARGET with exec, through a private staging point. */
static int bind_exec(const char *source, const char *target, const char *run_dir, struct err *e)
{
	char stage[PATH_MAX], opts[256];
	struct mount_info m;
	struct err ue;
	int r = -1;

	snprintf(stage, sizeof(stage), "%s/exec-XXXXXX", run_dir);
	if (!mkdtemp(stage))
		return err_errno(e, EXIT_UNEXPECTED, errno, "mounts: staging point in '%s'",
				 run_dir);
	if (do_mount(source, stage, "bind", e) < 0)
		goto out_rmdir;
	/* Private: nothing done to the staging point reaches the host. */
	if (do_mount("none", stage, "private", e) < 0 || !mounted_at(stage, &m))
		goto out_umount;
	remount_options(&m, opts, sizeof(opts));
	if (do_mount("none", stage, opts, e) < 0 || do_mount(stage, target, "bind", e) < 0)
		goto out_umount;
	r = 0;
out_umount:
	err_clear(&ue);
	if (do_umount(stage, &ue) < 0)
		log_msg(LOG_WARN, "mounts", "%s", ue.msg);
out_rmdir:
	rmdir(stage);
	return r;
}

static void record(int record_fd, const char *path)
{
	_cleanup_free_ char *old = NULL, *text = NULL;
	size_t len = 0;
	struct err e;

	if (fs_read_at(record_fd, "mounts", 1 << 16, &old, &len, &e) < 0)
		old = NULL;
	if (asprintf(&text, "%s%s\n", old ? old : "", path) < 0)
		return;
	if (fs_write_atomic_at(record_fd, "mounts", text, strlen(text), 0644, &e) < 0)
		log_msg(LOG_WARN, "mounts", "%s", e.msg);
}

/*
 * Whether PATH is the root of a mount that allows exec, asked of the kernel: statx's
 * STATX_ATTR_MOUNT_ROOT, and statvfs's ST_NOEXEC, the flag of that very mount. 1 or 0;
 * -1 when the kernel cannot say (no STATX_ATTR_MOUNT_ROOT before Linux 5.8).
 */
static int exec_mount_at(const char *path)
{
	struct statvfs sv;
	struct statx stx;

	if (statx(AT_FDCWD, path, 0, 0, &stx) < 0 ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return -1;
	if (!(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return 0;
	if (statvfs(path, &sv) < 0)
		return -1;
	return !(sv.f_flag & ST_NOEXEC);
}

static int expose_one(const char *source, const char *target, const char *run_dir, int record_fd,
		      struct err *e)
{
	struct mount_info m;
	int done = exec_mount_at(target);

	if (done < 0) {
		if (dlib_mount(e) < 0)
			return -1;
		done = mounted_at(target, &m) && !m.noexec;
	}
	if (done) {
		log_kv(LOG_DEBUG, "mounts", "already mounted", "target", target, LOG_END);
		return 0;
	}
	if (bind_exec(source, target, run_dir, e) < 0)
		return err_wrap(e, "mounts");
	record(record_fd, target);
	log_kv(LOG_INFO, "mounts", "exec bind mount in place", "target", target, LOG_END);
	return 1;
}

int mounts_expose(int dir_fd, const char *run_dir, char *const *targets, size_t n_targets,
		  int record_fd, struct err *e)
{
	char path[PATH_MAX];
	struct mount_info m;
	struct statvfs sv;
	int made = 0, r;

	if ((r = fs_fd_path(dir_fd, path, sizeof(path))) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "mounts: install dir");
	/*
	 * The kernel says whether the mount the directory is on is noexec (the common
	 * answer, no); libmount reads mountinfo only to say more about one that is.
	 */
	if (fstatvfs(dir_fd, &sv) == 0 && !(sv.f_flag & ST_NOEXEC)) {
		m.noexec = false;
	} else {
		if (mounts_lookup_fd(dir_fd, "/proc/self/mountinfo", &m, e) < 0)
			return -1;
		if (m.noexec)
			log_kv(LOG_INFO, "mounts",
			       "the install dir is on a noexec mount: it is bind-mounted exec",
			       "mount", m.target, "fstype", m.fstype, "options", m.options,
			       LOG_END);
	}
	if (m.noexec) {
		if ((r = expose_one(path, path, run_dir, record_fd, e)) < 0)
			return -1;
		made += r;
	}
	for (size_t i = 0; i < n_targets; i++) {
		if ((r = expose_one(path, targets[i], run_dir, record_fd, e)) < 0)
			return -1;
		made += r;
	}
	return made;
}

int mounts_withdraw(int record_fd, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	char *lines[64];
	size_t n = 0;

	if (fs_read_at(record_fd, "mounts", 1 << 16, &text, &len, e) < 0) {
		err_clear(e);
		return 0;
	}
	for (char *l = strtok(text, "\n"); l && n < ARRAY_SIZE(lines); l = strtok(NULL, "\n"))
		lines[n++] = l;
	if (n > 0 && dlib_mount(e) < 0)
		return err_wrap(e, "mounts");
	while (n > 0) {
		struct mount_info m;
		const char *t = lines[--n];

		if (mounted_at(t, &m) && do_umount(t, e) < 0)
			return err_wrap(e, "mounts");
		log_kv(LOG_INFO, "mounts", "unmounted", "target", t, LOG_END);
	}
	if (unlinkat(record_fd, "mounts", 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mounts: remove record");
	return 0;
}
