/* SPDX-License-Identifier: Apache-2.0 */
/* Scratch directories for unit tests: made under /tmp, removed with all they hold. */
#pragma once

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
