// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "host/hostpath.h"
#include "util/fs.h"

#define METRICS_SUFFIX ".prom"

/*
 * Directories the system owns: the root, the top-level FHS directories, their
 * standard children, the kernel's module and firmware trees, and the node
 * directories of Kubernetes (COS keeps kubelet and its tools in /home/kubernetes/bin).
 * Matched exactly: a directory below one of them (/usr/local/nvidia) is fine.
 */
static const char *const system_dirs[] = {
	"/",
	"/bin",
	"/boot",
	"/dev",
	"/etc",
	"/home",
	"/lib",
	"/lib32",
	"/lib64",
	"/libx32",
	"/media",
	"/mnt",
	"/opt",
	"/proc",
	"/root",
	"/run",
	"/sbin",
	"/srv",
	"/sys",
	"/tmp",
	"/usr",
	"/var",
	"/usr/bin",
	"/usr/sbin",
	"/usr/lib",
	"/usr/lib32",
	"/usr/lib64",
	"/usr/libx32",
	"/usr/libexec",
	"/usr/include",
	"/usr/share",
	"/usr/src",
	"/usr/games",
	"/usr/local",
	"/usr/local/bin",
	"/usr/local/sbin",
	"/usr/local/lib",
	"/usr/local/lib64",
	"/usr/local/libexec",
	"/usr/local/include",
	"/usr/local/share",
	"/usr/local/etc",
	"/usr/local/src",
	"/usr/local/games",
	"/usr/local/man",
	"/var/lib",
	"/var/cache",
	"/var/log",
	"/var/tmp",
	"/var/run",
	"/var/lock",
	"/var/spool",
	"/var/opt",
	"/var/mail",
	"/var/local",
	"/var/empty",
	"/run/lock",
	"/run/user",
	"/lib/modules",
	"/lib/firmware",
	"/usr/lib/modules",
	"/usr/lib/firmware",
	"/home/kubernetes",
	"/home/kubernetes/bin",
	"/etc/kubernetes",
	"/var/lib/kubelet",
};

/* Kernel file systems: nothing below them is a place to install into. */
static const char *const kernel_trees[] = {"/proc", "/sys", "/dev"};

static bool in_kernel_tree(const char *canon)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernel_trees); i++) {
		size_t n = strlen(kernel_trees[i]);

		if (strncmp(canon, kernel_trees[i], n) == 0 && canon[n] == '/')
			return true;
	}
	return false;
}

bool hostpath_is_system(const char *canon)
{
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++) {
		if (strcmp(canon, system_dirs[i]) == 0)
			return true;
	}
	return in_kernel_tree(canon);
}

/* What a system path is, for the message. */
static const char *describe(const char *canon)
{
	if (strcmp(canon, "/") == 0)
		return "the host's root";
	return in_kernel_tree(canon) ? "inside a kernel file system of the host"
				     : "a system directory of the host";
}

/* Appends "/NAME" (or NAME after a bare "/") to BUF. Returns 0, or -1 when it does not fit. */
static int path_append(char *buf, size_t size, const char *name, size_t len)
{
	size_t n = strlen(buf);

	if (n > 1 && n + 1 < size)
		buf[n++] = '/';
	else if (n == 0 && size > 1)
		buf[n++] = '/';
	if (n + len >= size)
		return -1;
	memcpy(buf + n, name, len);
	buf[n + len] = '\0';
	return 0;
}

/* The in-root path of FD: its path in this process minus the root's. */
static int in_root_path(const char *root, int fd, char *ret, size_t size)
{
	char p[PATH_MAX];
	size_t rn = strlen(root);
	int r = fs_fd_path(fd, p, sizeof(p));

	if (r < 0)
		return r;
	if (strcmp(root, "/") == 0) {
		snprintf(ret, size, "%s", p);
		return 0;
	}
	if (strncmp(p, root, rn) != 0 || (p[rn] != '/' && p[rn] != '\0'))
		return -EXDEV; /* cannot happen: the walk stays in the root */
	snprintf(ret, size, "%s", p[rn] ? p + rn : "/");
	return 0;
}

/*
 * The deepest directory of a path that exists (the root when none does): what the
 * writability and metrics checks look at, without walking again.
 */
struct deepest_dir {
	int fd;		   /* O_PATH; -1 until the walk hands one out */
	char at[PATH_MAX]; /* its canonical path */
	bool is_whole;	   /* it is the path itself */
};

static void deepest_dir_close(struct deepest_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
}

/*
 * The walk behind hostpath_resolve. With RET_DEEPEST, it also hands out the deepest
 * directory of PATH that exists.
 */
static int resolve_walk(int root_fd, const char *path, char *ret, size_t size,
			struct deepest_dir *ret_deepest, struct err *e)
{
	char root[PATH_MAX], prefix[PATH_MAX] = "/", canon[PATH_MAX] = "/", at[PATH_MAX] = "/";
	_cleanup_close_ int dir_fd = -1;
	const char *c = path;
	bool whole = true;
	int r;

	if ((r = fs_fd_path(root_fd, root, sizeof(root))) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "host root");
	if (ret_deepest && (dir_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "host root");
	/* Down the path while it exists: each prefix opened as the installer will open it. */
	while (*(c += strspn(c, "/"))) {
		size_t len = strcspn(c, "/");
		_cleanup_close_ int fd = -1, pfd = -1;
		char name[NAME_MAX + 1];
		struct stat st;
		struct err ie;

		if (len == 1 && c[0] == '.') {
			c += len;
			continue;
		}
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return err_set(e, EXIT_USAGE, "'%s' must not contain '..'", path);
		if (path_append(prefix, sizeof(prefix), c, len) < 0)
			return err_set(e, EXIT_USAGE, "'%s' is too long", path);
		fd = fs_open_in_root(root_fd, prefix, O_PATH | O_CLOEXEC, 0, 0, &ie);
		if (fd < 0 && err_errnum(&ie) == ENOENT) {
			/* Missing, or a link to nowhere: the installer would create through it. */
			pfd = fs_open_in_root(root_fd, canon, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
					      0, &ie);
			snprintf(name, sizeof(name), "%.*s", (int)len, c);
			if (pfd >= 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				return err_set(
					e, EXIT_USAGE,
					"'%s': '%s' is a link to a place that does not exist", path,
					prefix);
			whole = false;
			break;
		}
		if (fd < 0)
			return err_errno(e,
					 err_errnum(&ie) == ENOTDIR ? EXIT_USAGE : EXIT_UNEXPECTED,
					 err_errnum(&ie), "'%s': '%s'", path, prefix);
		if ((r = in_root_path(root, fd, canon, sizeof(canon))) < 0)
			return err_errno(e, EXIT_UNEXPECTED, -r, "'%s'", path);
		c += len;
		if (ret_deepest && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			close(dir_fd);
			dir_fd = TAKE_FD(fd);
			snprintf(at, sizeof(at), "%s", canon);
		} else {
			whole = false; /* the deepest directory is above PATH */
		}
	}
	/* The missing tail, as spelled (it holds no link: it does not exist yet). */
	while (*(c += strspn(c, "/"))) {
		size_t len = strcspn(c, "/");

		if (len == 2 && c[0] == '.' && c[1] == '.')
			return err_set(e, EXIT_USAGE, "'%s' must not contain '..'", path);
		if (!(len == 1 && c[0] == '.') && path_append(canon, sizeof(canon), c, len) < 0)
			return err_set(e, EXIT_USAGE, "'%s' is too long", path);
		c += len;
	}
	if (strlen(canon) >= size)
		return err_set(e, EXIT_USAGE, "'%s' is too long", path);
	snprintf(ret, size, "%s", canon);
	if (ret_deepest) {
		ret_deepest->fd = TAKE_FD(dir_fd);
		snprintf(ret_deepest->at, sizeof(ret_deepest->at), "%s", at);
		ret_deepest->is_whole = whole;
	}
	return 0;
}

int hostpath_resolve(int root_fd, const char *path, char *ret, size_t size, struct err *e)
{
	return resolve_walk(root_fd, path, ret, size, NULL, e);
}

/* Refuses PATH (option NAME) when CANON, where it resolves, is a system directory. */
static int refuse_system(struct err *e, const char *name, const char *path, const char *canon)
{
	if (hostpath_is_system(canon)) {
		const char *what = describe(canon);

		if (strcmp(path, canon) == 0)
			err_set(e, EXIT_USAGE, "%s '%s' is %s", name, path, what);
		else
			err_set(e, EXIT_USAGE, "%s '%s' resolves to '%s', %s", name, path, canon,
				what);
		err_hint(e, "give a directory of the installer's own, such as the default; " DOC_DIR
			    "/configuration.md lists what is refused");
		return -1;
	}
	return 0;
}

static int check_dir(int root_fd, const char *name, const char *path, char *canon, size_t size,
		     struct err *e)
{
	if (hostpath_resolve(root_fd, path, canon, size, e) < 0)
		return err_wrap(e, "%s", name);
	return refuse_system(e, name, path, canon);
}

/*
 * --metrics-file: a textfile-collector file (*.prom, the only files the
 * collector reads) in a directory that is not the system's, and absent or a
 * regular file whose first line is ours: never a file another program owns.
 */
static int check_metrics(int root_fd, const char *path, const char *mark, struct err *e)
{
	char canon[PATH_MAX], dir[PATH_MAX];
	const char *base = strrchr(path, '/') + 1;
	size_t blen = strlen(base);
	_cleanup_(deepest_dir_close) struct deepest_dir d = {.fd = -1};
	_cleanup_close_ int fd = -1;
	char head[128] = "";
	size_t mlen = strnlen(mark, sizeof(head) - 1);
	struct stat st;
	ssize_t n;

	if (blen <= strlen(METRICS_SUFFIX) ||
	    strcmp(base + blen - strlen(METRICS_SUFFIX), METRICS_SUFFIX) != 0)
		return err_set(
			e, EXIT_USAGE,
			"--metrics-file '%s' must name a *.prom file (the only files node-exporter's textfile collector reads)",
			path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
	if (resolve_walk(root_fd, dir, canon, sizeof(canon), &d, e) < 0)
		return err_wrap(e, "--metrics-file's directory");
	if (refuse_system(e, "--metrics-file's directory", dir, canon) < 0)
		return -1;
	if (!d.is_whole)
		return 0; /* the directory is created later, the file with it */
	if (fstatat(d.fd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			       ? 0
			       : err_errno(e, EXIT_UNEXPECTED, errno, "--metrics-file '%s'", path);
	if (S_ISREG(st.st_mode)) {
		fd = openat(d.fd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		/* Without a mark, no existing file is taken for ours. */
		n = fd < 0 || mlen == 0 ? -1 : read(fd, head, mlen);
		if (n >= 0)
			head[n] = '\0';
		if (n == 0 || (n > 0 && strcmp(head, mark) == 0))
			return 0;
	}
	err_set(e, EXIT_USAGE, "--metrics-file '%s' exists and is not a metrics file of ours",
		path);
	err_hint(
		e,
		"name a file of its own in the textfile collector's directory, such as /var/lib/node_exporter/textfile_collector/nvidia-driver-installer.prom");
	return -1;
}

int hostpath_check_config(const struct hostpath_opts *o, int root_fd, struct err *e)
{
	char canon[PATH_MAX];

	if (check_dir(root_fd, "--install-dir", o->install_dir, canon, sizeof(canon), e) < 0 ||
	    check_dir(root_fd, "--cache-dir", o->cache_dir, canon, sizeof(canon), e) < 0 ||
	    check_dir(root_fd, "--cdi-dir", o->cdi_dir, canon, sizeof(canon), e) < 0)
		return -1;
	for (size_t i = 0; i < o->n_host_mounts; i++) {
		if (check_dir(root_fd, "--host-mount", o->host_mounts[i], canon, sizeof(canon), e) <
		    0)
			return -1;
	}
	if (o->metrics_file &&
	    check_metrics(root_fd, o->metrics_file, o->metrics_mark ? o->metrics_mark : "", e) < 0)
		return -1;
	return 0;
}

int hostpath_check_writable(int root_fd, const char *name, const char *path, struct err *e)
{
	char canon[PATH_MAX], proc[64];
	_cleanup_(deepest_dir_close) struct deepest_dir d = {.fd = -1};
	struct statvfs sv;

	/* The nearest directory that exists decides: the rest is created in it. */
	if (resolve_walk(root_fd, path, canon, sizeof(canon), &d, e) < 0)
		return err_wrap(e, "%s", name);
	if (fstatvfs(d.fd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		err_set(e, EXIT_USAGE, "%s '%s' is on a read-only file system (at '%s')", name,
			path, d.at);
		err_hint(
			e,
			"mount the host's / read-write at --root (the DaemonSet's hostPath volume, not readOnly), or give a %s on a writable file system",
			name);
		return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", d.fd);
	if (faccessat(AT_FDCWD, proc, W_OK | X_OK, AT_EACCESS) < 0) {
		int r = errno;

		err_errno(e, EXIT_USAGE, r, "%s '%s': '%s' is not writable by uid %u", name, path,
			  d.at, (unsigned)geteuid());
		err_hint(
			e,
			"run the installer as root (a privileged init container, as the DaemonSet does)");
		return -1;
	}
	return 0;
}

int hostpath_check_install_writable(const struct hostpath_opts *o, int root_fd, struct err *e)
{
	if (hostpath_check_writable(root_fd, "--install-dir", o->install_dir, e) < 0 ||
	    hostpath_check_writable(root_fd, "--cache-dir", o->cache_dir, e) < 0 ||
	    hostpath_check_writable(root_fd, "the host's /run", "/run", e) < 0)
		return -1;
	return 0;
}
