/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch directories for unit tests: made under /tmp, removed with all they hold. */
#pragma once

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* A cmocka fixture: a scratch directory and an fd on it, as a host root. */
struct scratch_fixture {
	char root[64];
	int fd;
};

/* Makes the fixture for test file NAME into *state. Returns 0 or -1. */
static inline int scratch_fixture_setup(void **state, const char *name)
{
	struct scratch_fixture *f = calloc(1, sizeof(*f));

	if (!f || scratch_make(f->root, sizeof(f->root), name) < 0) {
		free(f);
		return -1;
	}
	f->fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = f;
	return f->fd < 0 ? -1 : 0;
}

static inline int scratch_fixture_teardown(void **state)
{
	struct scratch_fixture *f = *state;
	int r;

	close(f->fd);
	r = scratch_remove(f->root);
	free(f);
	return r < 0 ? -1 : 0;
}
