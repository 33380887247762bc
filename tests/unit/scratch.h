/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unit tests' one scratch fixture: a directory under /tmp (a host root, or a place for
 * key and certificate files), an fd on it, and helpers to fill it without a shell. Every
 * test that needs files takes it, as cmocka state:
 *
 *	static void test_x(void **state) { struct scratch_fixture *f = *state; ... }
 *	...
 *	scratch_unit_test(test_x),
 *
 * or embeds it in a fixture of its own (scratch_init, scratch_fini). The directory is
 * removed with all it holds after each test, links as links, whether the test passed or not.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct scratch_fixture {
	char root[64];
	int fd;
};

static inline int scratch_unlink(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Makes /tmp/ndi-NAME-XXXXXX into BUF (at least 64 bytes). Returns 0 or -1. */
static inline int scratch_make(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "/tmp/ndi-%s-XXXXXX", name);
	return mkdtemp(buf) ? 0 : -1;
}

/* Removes DIR and everything below it, links as links (nothing they point to). 0 or -1. */
static inline int scratch_remove(const char *dir)
{
	return nftw(dir, scratch_unlink, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes the scratch directory of test program NAME into *F. Returns 0 or -1. */
static inline int scratch_init(struct scratch_fixture *f, const char *name)
{
	f->fd = -1;
	if (scratch_make(f->root, sizeof(f->root), name) < 0)
		return -1;
	f->fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return f->fd < 0 ? -1 : 0;
}

/* Closes the fd and removes the directory with all it holds. Returns 0 or -1. */
static inline int scratch_fini(struct scratch_fixture *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	return scratch_remove(f->root) < 0 ? -1 : 0;
}

/* cmocka setup: a fixture named after the test program, in *state. Returns 0 or -1. */
static inline int scratch_setup(void **state)
{
	struct scratch_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	return scratch_init(f, program_invocation_short_name);
}

/* cmocka teardown of scratch_setup's fixture. Returns 0 or -1. */
static inline int scratch_teardown(void **state)
{
	struct scratch_fixture *f = *state;
	int r = scratch_fini(f);

	free(f);
	return r;
}

/* A test with a fresh scratch fixture as its state. */
#define scratch_unit_test(fn) cmocka_unit_test_setup_teardown(fn, scratch_setup, scratch_teardown)

/* The absolute path of REL inside F, into BUF; returns BUF. */
static inline const char *scratch_path(const struct scratch_fixture *f, const char *rel, char *buf,
				       size_t size)
{
	snprintf(buf, size, "%s/%s", f->root, rel);
	return buf;
}

/* Makes directory REL under DIRFD and its parents, as `mkdir -p`. Returns 0 or -1. */
static inline int scratch_mkdirs(int dirfd, const char *rel)
{
	char p[512];
	size_t n;

	while (*rel == '/')
		rel++;
	n = strlen(rel);

	if (n >= sizeof(p))
		return -1;
	memcpy(p, rel, n + 1);
	for (char *s = p; *s; s++) {
		if (*s != '/' || s == p)
			continue;
		*s = '\0';
		if (mkdirat(dirfd, p, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdirat(dirfd, p, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Writes TEXT as file REL under DIRFD, replacing it, its directories made. Returns 0 or -1. */
static inline int scratch_write(int dirfd, const char *rel, const char *text)
{
	const char *slash;
	size_t len = strlen(text);
	ssize_t w;
	int fd;

	while (*rel == '/')
		rel++;
	slash = strrchr(rel, '/');
	if (slash) {
		char dir[512];

		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
		if (scratch_mkdirs(dirfd, dir) < 0)
			return -1;
	}
	fd = openat(dirfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	w = write(fd, text, len);
	if (close(fd) < 0 || w < 0 || (size_t)w != len)
		return -1;
	return 0;
}
