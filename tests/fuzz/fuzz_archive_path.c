// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: the archive policy for member names, symlink targets and extended
 * attributes. Whatever is accepted must be relative and free of ".." components, and
 * an accepted attribute must be security.ima on firmware/ or kernel/: checked here,
 * not trusted. Input: NAME "\n" TARGET, the target doubling as an attribute
 * "NAME=VALUE".
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stage/unpack.h"
#include "stage/unpack_policy.h"

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

static void xattr(const char *path, char *attr)
{
	char *value = strchr(attr, '=');
	size_t len = value ? strlen(value + 1) : 0;
	struct err e;

	if (value)
		*value++ = '\0';
	err_clear(&e);
	if (unpack_check_xattr(path, true, attr, value ? value : "", len, &e) == 0 &&
	    (strcmp(attr, "security.ima") != 0 || len > UNPACK_IMA_MAX ||
	     (strncmp(path, "firmware/", 9) != 0 && strncmp(path, "kernel/", 7) != 0)))
		abort();
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
		/* Either verdict will do; only a crash or an accepted escape is a finding. */
		if (unpack_check_symlink(out, target, &e) < 0)
			err_clear(&e);
		xattr(out, target);
	}
	free(buf);
	return 0;
}
