// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fs.h"

#define FS_MAX_DEPTH 256
#define FS_MAX_LINKS 40

/*
 * The walk state: a stack of directory fds from the root down (the root fd
 * itself is never owned), and the path still to resolve.
 */
struct walk {
	int root_fd;
	int stack[FS_MAX_DEPTH];
	int depth;
	char *rest; /* malloc'd; components still to walk */
	int links;
};

static int walk_cur(const struct walk *w)
{
	return w->depth ? w->stack[w->depth - 1] : w->root_fd;
}

static void walk_pop_all(struct walk *w)
{
	while (w->depth > 0)
		close(w->stack[--w->depth]);
}

static void walk_done(struct walk *w)
{
	walk_pop_all(w);
	free(w->rest);
	w->rest = NULL;
}

/* Splices a symlink's target in front of what is left to walk. */
static int walk_splice(struct walk *w, const char *target, const char *rest)
{
	char *n;

	if (++w->links > FS_MAX_LINKS)
		return -ELOOP;
	if (asprintf(&n, "%s/%s", target, rest) < 0)
		return -ENOMEM;
	if (target[0] == '/')
		walk_pop_all(w);
	free(w->rest);
	w->rest = n;
	return 0;
}

/* Takes the next component off w->rest into comp; returns false at the end. */
static bool walk_next(struct walk *w, char *comp, size_t size, bool *ret_last)
{
	char *p = w->rest, *slash;
	size_t n;

	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			return false;
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		break;
	}
	if (n >= size)
		n = size - 1; /* caught by NAME_MAX below */
	memcpy(comp, p, n);
	comp[n] = '\0';
	p += n;
	while (*p == '/')
		p++;
	memmove(w->rest, p, strlen(p) + 1);
	*ret_last = w->rest[0] == '\0';
	return true;
}

static int walk_push(struct walk *w, int fd)
{
	if (w->depth == FS_MAX_DEPTH) {
		close(fd);
		return -ENAMETOOLONG;
	}
	w->stack[w->depth++] = fd;
	return 0;
}

/* Descends into directory COMP, creating it when asked. 0 or -errno. */
static int walk_enter(struct walk *w, const char *comp, bool mkdirs)
{
	int fd = openat(walk_cur(w), comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && mkdirs) {
		if (mkdirat(walk_cur(w), comp, 0755) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(walk_cur(w), comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	return walk_push(w, fd);
}

/* One step of the walk. Returns 1 to go on, 0 when the path is fully walked, or -errno. */
static int walk_step(struct walk *w, int flags, mode_t mode, unsigned fs_flags, int *ret_fd)
{
	char comp[NAME_MAX + 2], target[PATH_MAX];
	bool last;
	ssize_t n;
	int fd, lerr;

	if (!walk_next(w, comp, sizeof(comp), &last)) {
		/* The path named a directory we are already in ("/", "a/.."). */
		fd = openat(walk_cur(w), ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		*ret_fd = fd;
		return 0;
	}
	if (strlen(comp) > NAME_MAX)
		return -ENAMETOOLONG;
	if (strcmp(comp, "..") == 0) {
		if (w->depth > 0)
			close(w->stack[--w->depth]);
		if (last)
			return walk_step(w, flags, mode, fs_flags, ret_fd);
		return 1;
	}

	n = readlinkat(walk_cur(w), comp, target, sizeof(target));
	lerr = n < 0 ? errno : 0;
	/* O_NOFOLLOW in FLAGS means what FS_NOFOLLOW_LAST does, as it does for openat2. */
	if (n >= 0 && !(last && ((fs_flags & FS_NOFOLLOW_LAST) || (flags & O_NOFOLLOW)))) {
		if ((size_t)n >= sizeof(target))
			return -ENAMETOOLONG;
		target[n] = '\0';
		return walk_splice(w, target, w->rest) ?: 1;
	}
	if (n < 0 && lerr != EINVAL && lerr != ENOENT)
		return -lerr;

	if (!last) {
		int r = walk_enter(w, comp, fs_flags & FS_MKDIRS);
		return r < 0 ? r : 1;
	}
	if ((flags & O_DIRECTORY) && (fs_flags & FS_MKDIRS) && lerr == ENOENT) {
		if (mkdirat(walk_cur(w), comp, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	fd = openat(walk_cur(w), comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

/*
 * A lookup that writes nothing, done by the kernel: openat2(2) with RESOLVE_IN_ROOT
 * resolves symlinks and ".." inside root_fd as the walk does, in one system call instead
 * of two or three per component. RESOLVE_NO_MAGICLINKS: a /proc/PID/fd/N link would jump
 * out of the root, where the walk follows its text inside. Returns the fd, -errno for an
 * answer the walk would give too, or INT_MAX when the kernel cannot answer (no openat2,
 * a seccomp filter that refuses it, a rename race, a magic link): walk.
 *
 * Walked always: opens that create or write (one openat per component, where a test's
 * LD_PRELOAD, tests/tools/crashpoint.c, sees every one), and paths other than "/" that
 * end in "/" (the walk opens "file/" as "file"; the kernel says ENOTDIR). With FS_MKDIRS
 * a directory that is there already is found here, and one that is not is walked and made.
 */
static _Atomic bool kernel_unavailable;
static _Atomic unsigned long kernel_answers;

void fs_in_root_walk_only(bool on)
{
	kernel_unavailable = on;
}

unsigned long fs_in_root_kernel_answers(void)
{
	return kernel_answers;
}

static int open_in_root_kernel(int root_fd, const char *path, int flags, unsigned fs_flags)
{
	size_t len = strlen(path);
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC |
					      ((fs_flags & FS_NOFOLLOW_LAST) ? O_NOFOLLOW : 0)),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	/* O_TMPFILE holds O_DIRECTORY's bit: it is tested whole. */
	if (kernel_unavailable || len == 0 || (len > 1 && path[len - 1] == '/') ||
	    (flags & (O_CREAT | O_WRONLY | O_RDWR | O_TRUNC)) || (flags & O_TMPFILE) == O_TMPFILE)
		return INT_MAX;
	fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd >= 0) {
		kernel_answers++;
		return (int)fd;
	}
	if (fs_flags & FS_MKDIRS)
		return INT_MAX;
	switch (errno) {
	case ENOENT:
	case ENOTDIR:
	case EACCES:
	case ENAMETOOLONG:
	case EISDIR:
	case ENXIO:
		kernel_answers++;
		return -errno;
	case ENOSYS: /* no openat2, or a seccomp filter's answer for it: not again */
		kernel_unavailable = true;
		return INT_MAX;
	default: /* EPERM (seccomp or an LSM), EAGAIN, ELOOP, EXDEV, E2BIG, EINVAL, ... */
		return INT_MAX;
	}
}

int fs_open_in_root(int root_fd, const char *path, int flags, mode_t mode, unsigned fs_flags,
		    struct err *e)
{
	struct walk w = {.root_fd = root_fd};
	int r = open_in_root_kernel(root_fd, path, flags, fs_flags), fd = -1;

	if (r == INT_MAX) {
		w.rest = strdup(path);
		if (!w.rest)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "open '%s'", path);
		while ((r = walk_step(&w, flags, mode, fs_flags, &fd)) > 0)
			;
		walk_done(&w);
		if (r == 0)
			r = fd;
	}
	if (r < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "open '%s'", path);
	return r;
}

int fs_dir_in_root(int root_fd, const char *path, bool create, struct err *e)
{
	return fs_open_in_root(root_fd, path, O_RDONLY | O_DIRECTORY, 0, create ? FS_MKDIRS : 0, e);
}

/* Whether FD (the directory PATH) is this process's user's and no one else may write it. */
static int judge_own_dir(int fd, const char *path, struct err *e)
{
	struct stat st;
	char whose[32];

	if (fstat(fd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", path);
	if (st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (geteuid() == 0)
		snprintf(whose, sizeof(whose), "root's");
	else
		snprintf(whose, sizeof(whose), "uid %u's", (unsigned)geteuid());
	return err_set(
		e, EXIT_USAGE,
		"'%s' is uid %u's with mode %04o, not %s alone: another user could replace what is made in it; remove the directory, it is made again",
		path, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777, whose);
}

/*
 * Whether the parent PFD (PARENT) keeps others from renaming PATH away and putting theirs
 * there, after it was judged: root's or ours, and sticky where anyone may write it (/tmp).
 * A group that may write it is the host's choice (Ubuntu's /var/log is root:syslog 0775).
 */
static int judge_parent(int pfd, const char *path, const char *parent, struct err *e)
{
	struct stat st;

	if (fstat(pfd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", parent);
	if ((st.st_uid == 0 || st.st_uid == geteuid()) &&
	    (!(st.st_mode & S_IWOTH) || (st.st_mode & S_ISVTX)))
		return 0;
	return err_set(
		e, EXIT_USAGE,
		"'%s' can be replaced by another user: '%s' is uid %u's with mode %04o (root's, and sticky where anyone may write, is safe)",
		path, parent, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777);
}

int fs_own_dir_in_root(int root_fd, const char *path, mode_t mode, bool create, struct err *e)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char parent[PATH_MAX];
	_cleanup_close_ int pfd = -1, fd = -1;
	bool made = false;

	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return err_set(e, EXIT_UNEXPECTED, "'%s': no directory name", path);
	if (!slash || slash == path)
		snprintf(parent, sizeof(parent), "%s", slash ? "/" : ".");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	pfd = fs_dir_in_root(root_fd, parent, create, e);
	if (pfd < 0 || judge_parent(pfd, path, parent, e) < 0)
		return -1;
	/*
	 * In a sticky directory (/tmp) no one else can rename or remove what we made, and
	 * what someone else made first is theirs: the directory opened is judged by its fd.
	 */
	if (create && mkdirat(pfd, name, mode) == 0)
		made = true;
	else if (create && errno != EEXIST)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mkdir '%s'", path);
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return err_set(
			e, EXIT_USAGE,
			"'%s' is not a directory (a link, or a file): remove it, it is made again",
			path);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", path);
	if (judge_own_dir(fd, path, e) < 0)
		return -1;
	/* What we made has MODE whatever the umask; through the fd, the one judged. */
	if (made && fchmod(fd, mode) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "chmod '%s'", path);
	return TAKE_FD(fd);
}

/* EFBIG travels with it: a reader can tell a file too large from one that is not there. */
static int too_large(size_t max, struct err *e)
{
	err_set(e, EXIT_UNEXPECTED, "file larger than %zu bytes", max);
	e->sys_errno = EFBIG;
	return -1;
}

int fs_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > max)
				return too_large(max, e);
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "read");
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "read");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return too_large(max, e);
	if (!buf && !(buf = malloc(1)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "read");
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* FD, opened from NAME, when it is a regular file; else -1 with EINVAL (a FIFO, a device). */
static int only_regular(int fd, const char *name, struct err *e)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", name);
	if (!S_ISREG(st.st_mode))
		return err_errno(e, EXIT_UNEXPECTED, EINVAL, "'%s' is not a regular file", name);
	return fd;
}

/*
 * O_NONBLOCK: a FIFO planted where a file is expected is refused by only_regular, not
 * waited on for a writer (it means nothing to a regular file's reads). O_NOCTTY: a
 * terminal planted there does not become ours.
 */
#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

int fs_open_regular_at(int dirfd, const char *path, int flags, struct err *e)
{
	_cleanup_close_ int fd = openat(dirfd, path, READ_FLAGS | (flags & O_NOFOLLOW));

	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", path);
	return only_regular(fd, path, e) < 0 ? -1 : TAKE_FD(fd);
}

int fs_read_at(int dirfd, const char *name, size_t max, char **ret_buf, size_t *ret_len,
	       struct err *e)
{
	_cleanup_close_ int fd = fs_open_regular_at(dirfd, name, O_NOFOLLOW, e);

	if (fd < 0)
		return -1;
	if (fs_read_fd(fd, max, ret_buf, ret_len, e) < 0)
		return err_wrap(e, "'%s'", name);
	return 0;
}

int fs_read_path(const char *path, size_t max, char **ret_buf, size_t *ret_len, struct err *e)
{
	_cleanup_close_ int fd = fs_open_regular_at(AT_FDCWD, path, 0, e);

	if (fd < 0)
		return -1;
	if (fs_read_fd(fd, max, ret_buf, ret_len, e) < 0)
		return err_wrap(e, "'%s'", path);
	return 0;
}

int fs_open_regular_in_root(int root_fd, const char *path, unsigned fs_flags, struct err *e)
{
	_cleanup_close_ int fd = fs_open_in_root(root_fd, path, READ_FLAGS, 0, fs_flags, e);

	if (fd < 0 || only_regular(fd, path, e) < 0)
		return -1;
	return TAKE_FD(fd);
}

int fs_read_file_in_root(int root_fd, const char *path, size_t max, char **ret_buf, size_t *ret_len,
			 struct err *e)
{
	_cleanup_close_ int fd = fs_open_regular_in_root(root_fd, path, 0, e);
	size_t len = 0;

	if (fd < 0)
		return -1;
	if (fs_read_fd(fd, max, ret_buf, ret_len ? ret_len : &len, e) < 0)
		return err_wrap(e, "'%s'", path);
	return 0;
}

int fs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void random_suffix(char *buf, size_t size)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[16];
	size_t i;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t x = (uint64_t)getpid() * 2654435761u ^ (uint64_t)(uintptr_t)buf;
		memcpy(rnd, &x, sizeof(x));
		memcpy(rnd + 8, &x, sizeof(x));
	}
	for (i = 0; i + 1 < size && i < sizeof(rnd); i++)
		buf[i] = chars[rnd[i] % (sizeof(chars) - 1)];
	buf[i] = '\0';
}

/* A file to put in place: NAME in DIRFD, its bytes and its mode. */
struct replacement {
	int dirfd;
	const char *name;
	const void *buf;
	size_t len;
	mode_t mode;
};

/* F put in place through a temporary file; DURABLE: fsync the file and the directory. */
static int replace_at(const struct replacement *f, bool durable, struct err *e)
{
	int dirfd = f->dirfd;
	const char *name = f->name;
	char tmp[NAME_MAX + 1], sfx[9];
	_cleanup_close_ int fd = -1;
	int r;

	random_suffix(sfx, sizeof(sfx));
	if (snprintf(tmp, sizeof(tmp), ".%s.tmp-%s", name, sfx) >= (int)sizeof(tmp))
		return err_set(e, EXIT_UNEXPECTED, "write '%s': name too long", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, f->mode);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", tmp);
	r = fs_write_all(fd, f->buf, f->len);
	if (r == 0 && fchmod(fd, f->mode) < 0)
		r = -errno;
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return err_errno(e, EXIT_UNEXPECTED, -r, "write '%s'", name);
	}
	if (durable && fsync(dirfd) < 0 && errno != EINVAL && errno != EBADF)
		return err_errno(e, EXIT_UNEXPECTED, errno, "fsync directory of '%s'", name);
	return 0;
}

int fs_write_atomic_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
		       struct err *e)
{
	return replace_at(
		&(struct replacement){
			.dirfd = dirfd, .name = name, .buf = buf, .len = len, .mode = mode},
		true, e);
}

int fs_replace_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
		  struct err *e)
{
	return replace_at(
		&(struct replacement){
			.dirfd = dirfd, .name = name, .buf = buf, .len = len, .mode = mode},
		false, e);
}

static int rm_rf_children(int dfd, dev_t dev, struct err *e);

static int rm_rf_entry(int dirfd, const char *name, dev_t dev, struct err *e)
{
	struct stat st;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", name);
	if (S_ISDIR(st.st_mode)) {
		if (st.st_dev != dev)
			return err_set(e, EXIT_UNEXPECTED,
				       "remove '%s': is a mount point; unmount it first", name);
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "open '%s'", name);
		if (rm_rf_children(fd, dev, e) < 0)
			return err_wrap(e, "'%s'", name);
		if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", name);
		return 0;
	}
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove '%s'", name);
	return 0;
}

/* Takes ownership of dfd. */
static int rm_rf_children(int dfd, dev_t dev, struct err *e)
{
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		int r = errno;
		close(dfd);
		return err_errno(e, EXIT_UNEXPECTED, r, "read directory");
	}
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rm_rf_entry(dirfd(d), de->d_name, dev, e) < 0)
			return -1;
	}
	if (errno != 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "read directory");
	return 0;
}

int fs_rm_rf_at(int dirfd, const char *name, struct err *e)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : err_errno(e, EXIT_UNEXPECTED, errno, "stat '%s'", name);
	return rm_rf_entry(dirfd, name, st.st_dev, e);
}

int fs_mkdtemp_at(int dirfd, const char *prefix, char *ret_name, size_t size, struct err *e)
{
	char sfx[9];

	for (int tries = 0; tries < 16; tries++) {
		random_suffix(sfx, sizeof(sfx));
		if (snprintf(ret_name, size, "%s-%s", prefix, sfx) >= (int)size)
			return err_set(e, EXIT_UNEXPECTED, "mkdtemp '%s': name too long", prefix);
		if (mkdirat(dirfd, ret_name, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return err_errno(e, EXIT_UNEXPECTED, errno, "create '%s'", ret_name);
	}
	return err_set(e, EXIT_UNEXPECTED, "create '%s-*': no free name", prefix);
}

int fs_symlink_replace_at(int dirfd, const char *target, const char *name, struct err *e)
{
	char tmp[NAME_MAX + 1], sfx[9];

	random_suffix(sfx, sizeof(sfx));
	if (snprintf(tmp, sizeof(tmp), ".%s.tmp-%s", name, sfx) >= (int)sizeof(tmp))
		return err_set(e, EXIT_UNEXPECTED, "symlink '%s': name too long", name);
	if (symlinkat(target, dirfd, tmp) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "symlink '%s'", tmp);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		int r = errno;
		unlinkat(dirfd, tmp, 0);
		return err_errno(e, EXIT_UNEXPECTED, r, "rename '%s' to '%s'", tmp, name);
	}
	return 0;
}

bool fs_symlink_is(int dirfd, const char *name, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, target) == 0;
}

DIR *fs_opendir_at(int dirfd, const char *name, struct err *e)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "open directory '%s'", name);
		return NULL;
	}
	d = fdopendir(fd);
	if (!d) {
		err_errno(e, EXIT_UNEXPECTED, errno, "read directory '%s'", name);
		close(fd);
	}
	return d;
}

int fs_fd_path(int fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Pass WAIT false starts write-back of every file; pass true waits for files and dirs. */
static int sync_tree_pass(int dirfd, dev_t dev, bool wait, unsigned depth, struct err *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd;

	if (depth > 64)
		return err_set(e, EXIT_UNEXPECTED, "sync: the tree is too deep");
	fd = dup(dirfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_errno(e, EXIT_UNEXPECTED, errno, "sync: read directory");
	}
	while ((de = readdir(d))) {
		_cleanup_close_ int cfd = -1;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "sync: stat '%s'", de->d_name);
		if ((!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || st.st_dev != dev)
			continue;
		cfd = openat(dirfd, de->d_name,
			     (S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY) |
				     O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "sync: open '%s'", de->d_name);
		if (S_ISDIR(st.st_mode)) {
			if (sync_tree_pass(cfd, dev, wait, depth + 1, e) < 0)
				return -1;
		} else if (!wait) {
			(void)sync_file_range(cfd, 0, 0, SYNC_FILE_RANGE_WRITE);
		} else if (fsync(cfd) < 0) {
			return err_errno(e, EXIT_UNEXPECTED, errno, "sync: fsync '%s'", de->d_name);
		}
	}
	if (wait && fsync(dirfd) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "sync: fsync directory");
	return 0;
}

int fs_sync_tree(int dirfd, struct err *e)
{
	struct stat st;

	if (fstat(dirfd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "sync");
	if (sync_tree_pass(dirfd, st.st_dev, false, 0, e) < 0)
		return -1;
	return sync_tree_pass(dirfd, st.st_dev, true, 0, e);
}

char *fs_read_in_root(int root_fd, const char *path, size_t max, size_t *ret_len)
{
	char *buf = NULL;
	struct err e;

	if (fs_read_file_in_root(root_fd, path, max, &buf, ret_len, &e) < 0)
		return NULL;
	return buf;
}

int fs_dir_nofollow(int dirfd, const char *path)
{
	char buf[PATH_MAX], *save = NULL;
	int fd = -1;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next = openat(fd < 0 ? dirfd : fd, c,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int saved = errno;

		if (fd >= 0)
			close(fd);
		errno = saved;
		if (next < 0)
			return -1;
		fd = next;
	}
	return fd >= 0 ? fd : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}
