// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/carry.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

#define LIB64 "lib64"
/* Where a replacement or a copy is made before its rename; never carried itself. */
#define TMP_NAME ".nvidia-carry.tmp"
/* Deeper than any library tree: what lies below is left where it is, with a warning. */
#define MAX_DEPTH 16
#define LIST_MAX (8u << 20)

bool carry_is_driver_file(const char *name)
{
	size_t n = strlen(name);

	return strstr(name, "nvidia") || strncmp(name, "libcuda", 7) == 0 ||
	       strncmp(name, "libnv", 5) == 0 || strncmp(name, "nv", 2) == 0 ||
	       strncmp(name, "gsp_", 4) == 0 || (n > 3 && strcmp(name + n - 3, ".ko") == 0);
}

/* ---- the list of a version's own files ---------------------------------- */

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool names_has(const struct strv *l, const char *s)
{
	return l->n && bsearch(&s, l->v, l->n, sizeof(*l->v), by_string);
}

/* Collects the files and links under dirfd, as paths below PREFIX. */
static int collect(int dirfd, const char *prefix, unsigned depth, struct strv *l, struct err *e)
{
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;

	if (depth > MAX_DEPTH)
		return err_set(e, EXIT_VERIFY, "lib64/%s: deeper than %u directories", prefix,
			       MAX_DEPTH);
	dir = fs_opendir_at(dirfd, ".", e);
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		char path[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "",
			     de->d_name) >= (int)sizeof(path))
			return err_set(e, EXIT_VERIFY, "lib64: a path is too long");
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "stat 'lib64/%s'", path);
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(
				dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0)
				return err_errno(e, EXIT_UNEXPECTED, errno, "open 'lib64/%s'",
						 path);
			if (collect(sub, path, depth + 1, l, e) < 0)
				return -1;
		} else if (strv_push(l, path) < 0) {
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "lib64");
		}
	}
	return 0;
}

int carry_record(int version_fd, struct err *e)
{
	_cleanup_close_ int lfd =
		openat(version_fd, LIB64, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct strv l = {0};
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, off = 0;
	int r = -1;

	if (lfd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open '" LIB64 "'");
	if (collect(lfd, "", 0, &l, e) < 0)
		goto out;
	if (l.n) /* an empty lib64/: no array (qsort's NULL is undefined even for 0) */
		qsort(l.v, l.n, sizeof(*l.v), by_string);
	for (size_t i = 0; i < l.n; i++)
		len += strlen(l.v[i]) + 1;
	buf = malloc(len + 1);
	if (!buf) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "lib64");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++)
		off += (size_t)sprintf(buf + off, "%s\n", l.v[i]);
	/* Synced with the rest of the version before it is renamed into place. */
	r = fs_replace_at(version_fd, CARRY_OWN_LIST, buf, off, 0644, e);
out:
	strv_clear(&l);
	return r < 0 ? err_wrap(e, "record lib64's files") : 0;
}

/* Reads a version's list into L (sorted). 1 when the version has none (an older install). */
static int own_load(int version_fd, struct strv *l)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct err e;
	char *line, *save = NULL;

	if (fs_read_at(version_fd, CARRY_OWN_LIST, LIST_MAX, &buf, &len, &e) < 0) {
		if (err_errnum(&e) != ENOENT)
			log_kv(LOG_WARN, "publish",
			       "a version's list of its own files cannot be read; NVIDIA's file names stand for it",
			       "reason", e.msg, LOG_END);
		return 1;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strv_push(l, line) < 0) {
			strv_clear(l);
			return 1;
		}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), by_string);
	return 0;
}

/* ---- carrying ------------------------------------------------------------ */

struct carry {
	struct strv from, to;
	bool from_legacy, to_legacy;
	int from_lib; /* the old version's lib64/, where its links are judged */
	unsigned carried, kept, failed;
};

static bool is_own(const struct strv *l, bool legacy, const char *path, const char *base)
{
	return legacy ? carry_is_driver_file(base) : names_has(l, path);
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * The path (relative to lib64/) that the link text TARGET names from directory DIR, made
 * by the text alone, into OUT. False when TARGET is absolute or climbs out of lib64/.
 */
static bool join_inside(const char *dir, const char *target, char *out, size_t size)
{
	char buf[2 * PATH_MAX], *save = NULL, *parts[PATH_MAX / 2];
	size_t n = 0, off = 0;

	if (target[0] == '/')
		return false;
	snprintf(buf, sizeof(buf), "%s/%s", dir, target);
	for (char *p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0) {
			if (n == 0)
				return false;
			n--;
			continue;
		}
		if (n == ARRAY_SIZE(parts))
			return false;
		parts[n++] = p;
	}
	if (n == 0)
		return false;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(out + off, size - off, "%s%s", i ? "/" : "", parts[i]);

		if (w < 0 || (size_t)w >= size - off)
			return false;
		off += (size_t)w;
	}
	return true;
}

/* The text of the link PATH (relative to lib64/) into BUF, reached without following links. */
static bool read_link_inside(int lib_fd, const char *path, char *buf, size_t size)
{
	char dir[PATH_MAX];
	const char *base = base_of(path);
	_cleanup_close_ int dfd = -1;
	ssize_t n;

	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
	dfd = fs_dir_nofollow(lib_fd, dir);
	if (dfd < 0)
		return false;
	n = readlinkat(dfd, base, buf, size - 1);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

/*
 * Whether the link PATH of the old version is its own by where it resolves: its chain of
 * links stays inside lib64/ and ends at a file the version's list names (the soname link
 * the host's ldconfig makes beside a library, a link to one). Links are read, never
 * followed; a chain that leaves lib64/ (an absolute text, ".." above it) is another
 * installer's, carried as a link.
 */
static bool link_is_own(const struct carry *c, const char *path)
{
	char cur[PATH_MAX], text[PATH_MAX], next[PATH_MAX];

	snprintf(cur, sizeof(cur), "%s", path);
	for (unsigned hop = 0; hop < 8; hop++) {
		const char *base = base_of(cur);
		char dir[PATH_MAX];

		if (!read_link_inside(c->from_lib, cur, text, sizeof(text)))
			return false; /* not a link (another installer's file), or missing */
		snprintf(dir, sizeof(dir), "%.*s", (int)(base > cur ? base - cur - 1 : 0), cur);
		if (!join_inside(dir, text, next, sizeof(next)))
			return false;
		if (is_own(&c->from, c->from_legacy, next, base_of(next)))
			return true;
		snprintf(cur, sizeof(cur), "%s", next);
	}
	return false;
}

static void not_carried(struct carry *c, const char *path, const char *why, int errnum)
{
	c->failed++;
	log_kv(LOG_WARN, "publish",
	       "a file another installer put in lib64/ was not carried to the new version; install it again",
	       "path", path, "reason", errnum ? strerror(errnum) : why, LOG_END);
}

/* A copy of the regular file NAME (opened without following a link) as dst's TMP_NAME. */
static int copy_file(int src, const char *name, int dst)
{
	/* O_NONBLOCK: a FIFO put there since the lstat does not hang the switch. */
	_cleanup_close_ int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	char buf[1 << 16];
	struct stat st;
	ssize_t n;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	out = openat(dst, TMP_NAME, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((r = fs_write_all(out, buf, (size_t)n)) < 0)
			return r;
	}
	/*
	 * The owner and the permission bits, never set-id bits: a copy made by root of another
	 * user's set-id file must not become a set-id file of root's.
	 */
	if (fchown(out, st.st_uid, st.st_gid) < 0 || fchmod(out, st.st_mode & 0777) < 0 ||
	    fsync(out) < 0)
		return -errno;
	return 0;
}

/* Puts NAME of src (a file or a link, per ST) at dst's NAME. 0 or -errno. */
static int carry_entry(int src, int dst, const char *name, const struct stat *st, bool replace)
{
	char target[PATH_MAX];
	ssize_t n;
	int r = 0;

	(void)unlinkat(dst, TMP_NAME, 0); /* a leftover of an interrupted run */
	if (S_ISLNK(st->st_mode)) {
		/* The link's text, never what it leads to. */
		n = readlinkat(src, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, dst, replace ? TMP_NAME : name) < 0)
			return -errno;
	} else if (linkat(src, name, dst, replace ? TMP_NAME : name, 0) < 0) {
		/* Another file system under lib64/, a hard-link limit: a copy instead. */
		if (errno == EEXIST)
			return -EEXIST;
		r = copy_file(src, name, dst);
		if (r < 0) {
			(void)unlinkat(dst, TMP_NAME, 0);
			return r;
		}
		replace = true;
	}
	if (replace && renameat(dst, TMP_NAME, dst, name) < 0) {
		r = -errno;
		(void)unlinkat(dst, TMP_NAME, 0);
	}
	return r;
}

/*
 * Where the walk is: a directory of the old version's lib64/, the same directory in the new
 * version's, its path under lib64/ ("" at the top) and how deep it is.
 */
struct carry_dirs {
	int src, dst;
	const char *prefix;
	unsigned depth;
};

static void carry_dir(struct carry *c, const struct carry_dirs *in);

/* Directory NAME of IN (PATH under lib64/, ST its lstat), walked into. */
static void carry_subdir(struct carry *c, const struct carry_dirs *in, const char *name,
			 const char *path, const struct stat *st)
{
	_cleanup_close_ int s = -1, d = -1;
	bool created;

	if (in->depth >= MAX_DEPTH) {
		not_carried(c, path, "too deep", 0);
		return;
	}
	s = openat(in->src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0) {
		not_carried(c, path, NULL, errno);
		return;
	}
	created = mkdirat(in->dst, name, st->st_mode & 07777) == 0;
	if (!created && errno != EEXIST) {
		not_carried(c, path, NULL, errno);
		return;
	}
	/* What stands at that name in the new version must be a directory, not a link to one. */
	d = openat(in->dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0) {
		not_carried(c, path, "the new version has a file of that name", 0);
		return;
	}
	carry_dir(c,
		  &(struct carry_dirs){.src = s, .dst = d, .prefix = path, .depth = in->depth + 1});
	if (fsync(d) < 0)
		not_carried(c, path, NULL, errno);
	/* A directory of the old package's own, with nothing carried into it, is not made. */
	if (created)
		(void)unlinkat(in->dst, name, AT_REMOVEDIR); /* fails while it holds something */
}

static void carry_dir(struct carry *c, const struct carry_dirs *in)
{
	int src = in->src, dst = in->dst;
	const char *prefix = in->prefix;
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	struct err e;

	dir = fs_opendir_at(src, ".", &e);
	if (!dir) {
		not_carried(c, *prefix ? prefix : LIB64, e.msg, 0);
		return;
	}
	while ((de = readdir(dir))) {
		char path[PATH_MAX];
		struct stat st, there;
		bool exists;
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, TMP_NAME) == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "",
			     de->d_name) >= (int)sizeof(path)) {
			not_carried(c, de->d_name, "path too long", 0);
			continue;
		}
		if (fstatat(src, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			not_carried(c, path, NULL, errno);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			carry_subdir(c, in, de->d_name, path, &st);
			continue;
		}
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			not_carried(c, path, "neither a file nor a link", 0);
			continue;
		}
		if (is_own(&c->from, c->from_legacy, path, de->d_name))
			continue;
		if (S_ISLNK(st.st_mode) && link_is_own(c, path)) {
			log_kv(LOG_DEBUG, "publish",
			       "a link to the old version's own files stays behind", "path", path,
			       LOG_END);
			continue;
		}
		exists = fstatat(dst, de->d_name, &there, AT_SYMLINK_NOFOLLOW) == 0;
		if (exists &&
		    (S_ISDIR(there.st_mode) || is_own(&c->to, c->to_legacy, path, de->d_name))) {
			c->kept++;
			log_kv(LOG_WARN, "publish",
			       "a file another installer put in lib64/ has the name of one of the new version's: the new version's is kept",
			       "path", path, LOG_END);
			continue;
		}
		r = carry_entry(src, dst, de->d_name, &st, exists);
		if (r < 0) {
			not_carried(c, path, NULL, -r);
			continue;
		}
		c->carried++;
		log_kv(LOG_DEBUG, "publish", "carried to the new version", "path", path, LOG_END);
	}
}

unsigned carry_foreign(int from_version_fd, int to_version_fd)
{
	_cleanup_close_ int src =
		openat(from_version_fd, LIB64, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int dst =
		openat(to_version_fd, LIB64, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct carry c = {0};

	if (src < 0 || dst < 0) {
		if (src >= 0 || errno != ENOENT)
			log_kv(LOG_WARN, "publish", "lib64/ of a version cannot be opened",
			       "reason", strerror(errno), LOG_END);
		return 0;
	}
	c.from_lib = src;
	c.from_legacy = own_load(from_version_fd, &c.from) != 0;
	c.to_legacy = own_load(to_version_fd, &c.to) != 0;
	carry_dir(&c, &(struct carry_dirs){.src = src, .dst = dst, .prefix = ""});
	if (fsync(dst) < 0)
		not_carried(&c, LIB64, NULL, errno);
	if (c.carried || c.kept || c.failed)
		log_kv(LOG_INFO, "publish", "files of other installers carried to the new version",
		       U64("carried", c.carried), U64("kept_new", c.kept),
		       U64("not_carried", c.failed), "own_list",
		       c.from_legacy ? "none: NVIDIA's file names" : CARRY_OWN_LIST, LOG_END);
	strv_clear(&c.from);
	strv_clear(&c.to);
	return c.carried;
}
