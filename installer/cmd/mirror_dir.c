// SPDX-License-Identifier: Apache-2.0
/*
 * mirror --to DIR (or file://DIR): the repository's HTTP layout (docs/repository-format.md)
 * in a directory of this process's, for file:// or any static web server.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mirror_dest.h"
#include "util/fs.h"
#include "util/log.h"

void mirror_held_done(struct mirror_held *h)
{
	free(h->json);
	free(h->sig);
	*h = (struct mirror_held){0};
}

bool mirror_is_package(int fd, const struct repo_package *pkg)
{
	_cleanup_(sha256_freep) struct sha256 *sha = sha256_new();
	char buf[1 << 16], got[65];
	struct stat st;
	ssize_t n;

	if (!sha || fstat(fd, &st) < 0 || (uint64_t)st.st_size != pkg->size)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sha256_update(sha, buf, (size_t)n);
	return n == 0 && sha256_final_hex(sha, got) == 0 && strcmp(got, pkg->sha256) == 0;
}

/* Whether DIR/PATH (resolved inside DIR, a regular file) already is PKG. */
static int dir_have(struct mirror_dest *d, const struct repo_package *pkg, struct err *e)
{
	struct err ie;
	_cleanup_close_ int fd =
		fs_open_regular_in_root(d->dir_fd, pkg->path, FS_NOFOLLOW_LAST, &ie);

	(void)e;
	return fd >= 0 && mirror_is_package(fd, pkg);
}

/*
 * The partial file PART in DFD, for this run to write. One an interrupted run left is
 * resumed only when it is a regular file with no other link: the package's bytes go
 * into whatever inode the name holds, so a hard link planted there would have a file
 * outside the mirror receive them. Anything else at that name is removed (the name,
 * never what it links to), and the file made fresh.
 */
int mirror_open_part(int dfd, const char *part, struct err *e)
{
	struct stat st, fst;
	int fd;

	if (fstatat(dfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1) {
		fd = openat(dfd, part, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		/* The same file as the one judged, and still alone. */
		if (fd >= 0 && fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino &&
		    fst.st_dev == st.st_dev && S_ISREG(fst.st_mode) && fst.st_nlink == 1)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	if (unlinkat(dfd, part, 0) < 0 && errno != ENOENT)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: remove '%s'", part);
	fd = openat(dfd, part, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: create '%s'", part);
	return fd;
}

static int dir_copy(struct mirror_dest *d, struct source *src, const struct repo_package *pkg,
		    uint64_t *net, struct err *e)
{
	char dir[PATH_MAX], part[PATH_MAX];
	const char *slash = strrchr(pkg->path, '/');
	_cleanup_close_ int dfd = -1, fd = -1;
	uint64_t got = 0;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - pkg->path) : 1,
		 slash ? pkg->path : ".");
	dfd = fs_dir_in_root(d->dir_fd, dir, true, e);
	if (dfd < 0 && err_errnum(e) == ENOTDIR) {
		/*
		 * Something of --to's own is in the way: the fix is there, not in the repository.
		 */
		e->code = EXIT_USAGE;
		err_hint(
			e,
			"remove the file in '%s' that stands where '%s' needs a directory, then run mirror again",
			d->c->mirror_to, dir);
	}
	if (dfd < 0)
		return err_wrap(e, "mirror");
	snprintf(part, sizeof(part), "%s.part", slash ? slash + 1 : pkg->path);
	fd = mirror_open_part(dfd, part, e);
	if (fd < 0)
		return -1;
	if (source_download(src, pkg, fd, NULL, &got, e) < 0)
		return -1;
	*net += got;
	if (fsync(fd) < 0 || renameat(dfd, part, dfd, slash ? slash + 1 : pkg->path) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: publish '%s'", pkg->path);
	return 0;
}

/* --to without its file:// */
static const char *dir_path(const struct config *c)
{
	return strncmp(c->mirror_to, "file://", 7) == 0 ? c->mirror_to + 7 : c->mirror_to;
}

/*
 * The mirror as a node reads it: TO/PATH opened as file:// (or a static HTTP server
 * serving TO) opens it, following every link in it as the file system does. What was
 * written inside TO is not what a node gets when a link planted in TO (packages/, a
 * kernel's directory) leads elsewhere: then the mirror cannot serve, and says so.
 */
static int served_as_written(const struct config *c, const struct repo_package *pkg, struct err *e)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	const char *why = "other bytes than the index's";
	struct err ie;

	if (snprintf(path, sizeof(path), "%s/%s", dir_path(c), pkg->path) >= (int)sizeof(path))
		return err_set(e, EXIT_USAGE, "mirror: '%s/%s': path too long", dir_path(c),
			       pkg->path);
	fd = fs_open_regular_at(AT_FDCWD, path, 0, &ie);
	if (fd >= 0 && mirror_is_package(fd, pkg))
		return 0;
	if (fd < 0)
		why = err_errnum(&ie) ? strerror(err_errnum(&ie)) : ie.msg;
	err_set(e, EXIT_USAGE,
		"mirror: '%s' does not read back as the package copied there (%s): a node would not get it from this mirror",
		path, why);
	err_hint(
		e,
		"remove the link planted in '%s' (a package's directory there leads outside it), then run mirror again",
		c->mirror_to);
	return -1;
}

/* Every package copied or kept, read back as a node would, before the index says it is there. */
static int dir_publish(struct mirror_dest *d, const struct source *src,
		       const struct mirror_carried *carried, struct err *e)
{
	for (size_t i = 0; i < carried->n; i++) {
		if (served_as_written(d->c, carried->v[i], e) < 0)
			return -1;
	}
	/* The index last, byte for byte: its signature is the original's. */
	if (fs_write_atomic_at(d->dir_fd, "index.json", src->index_json, src->index_len, 0644, e) <
		    0 ||
	    fs_write_atomic_at(d->dir_fd, "index.json.sig", src->index_sig, src->sig_len, 0644, e) <
		    0)
		return err_wrap(e, "mirror");
	return 0;
}

static int dir_held(struct mirror_dest *d, struct mirror_held *ret, struct err *e)
{
	struct err ie;

	*ret = (struct mirror_held){0};
	if (faccessat(d->dir_fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	/* One that cannot be read is judged as one that does not verify (mirror.c): empty. */
	if (fs_read_at(d->dir_fd, "index.json", REPO_INDEX_MAX, &ret->json, &ret->len, &ie) < 0) {
		ret->json = strdup("");
		ret->len = 0;
		return ret->json ? 0 : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	}
	if (fs_read_at(d->dir_fd, "index.json.sig", VERIFY_SIG_MAX, &ret->sig, &ret->sig_len, &ie) <
	    0) {
		ret->sig = NULL;
		ret->sig_len = 0;
	}
	return 0;
}

static void dir_close(struct mirror_dest *d)
{
	if (d->dir_fd >= 0)
		close(d->dir_fd);
	d->dir_fd = -1;
}

static const struct mirror_dest_ops dir_ops = {
	.kind = "directory",
	.held = dir_held,
	.have = dir_have,
	.copy = dir_copy,
	.publish = dir_publish,
	.close = dir_close,
};

/* --to, a path of this process's (not of the host root), made when missing. */
int mirror_dir_open(const struct config *c, const char *path, struct mirror_dest *ret,
		    struct err *e)
{
	_cleanup_close_ int base =
		open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (base < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror");
	fd = fs_dir_in_root(base, path, true, e);
	if (fd < 0)
		return err_wrap(e, "mirror: --to");
	*ret = (struct mirror_dest){.ops = &dir_ops, .c = c, .dir_fd = fd};
	return 0;
}
