// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: the archive policy for member names and symlink targets. Whatever is
 * accepted must be relative and free of ".." components: checked here, not trusted.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_clean(const char *p)
{
	const char *c = p;

	if (p[0] == '/' || p[0] == '\0')
		abort();
	while (c) {
		if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0'))
			abort();
		c = strchr(c, '/');
		c = c ? c + 1 : NULL;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *target, out[PATH_MAX];
	struct err e;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	target = strchr(buf, '\n');
	target = target ? (*target = '\0', target + 1) : buf;
	err_clear(&e);
	if (unpack_check_path(buf, out, sizeof(out), &e) == 0) {
		check_clean(out);
		err_clear(&e);
		/* Accepted or refused, both are answers; a crash is not. */
		if (unpack_check_symlink(out, target, &e) < 0)
			err_clear(&e);
	}
	free(buf);
	return 0;
}
