// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "stage/unpack_policy.h"
#include "util/str.h"

static const char *const top_dirs[] = {"kernel", "lib64", "bin", "firmware", "share"};

/* ---- path policy ------------------------------------------------------ */

int unpack_check_path(const char *name, char *out, size_t size, struct err *e)
{
	const char *p = name, *c;
	size_t len, depth = 0;
	bool top_ok = false;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (p[0] == '\0' || strcmp(p, ".") == 0)
		return 1;
	for (c = name; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return err_set(e, EXIT_VERIFY, "member name has a control character");
	}
	/*
	 * Names are compared, printed and published as UTF-8; a name in another encoding
	 * would get a different verdict from each archive format and locale.
	 */
	if (!str_is_utf8(name))
		return err_set(e, EXIT_VERIFY, "member name '%.64s' is not UTF-8", name);
	if (p[0] == '/')
		return err_set(e, EXIT_VERIFY, "member '%s' is an absolute path", name);
	len = strlen(p);
	if (len > 0 && p[len - 1] == '/')
		len--;
	if (len + 1 > size || len >= PATH_MAX)
		return err_set(e, EXIT_VERIFY, "member '%.64s...' has a name too long", name);
	memcpy(out, p, len);
	out[len] = '\0';
	for (c = out; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.'))
			return err_set(e, EXIT_VERIFY, "member '%s' has an empty or '.' component",
				       name);
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return err_set(e, EXIT_VERIFY, "member '%s' leaves the package ('..')",
				       name);
		if (n > NAME_MAX)
			return err_set(e, EXIT_VERIFY, "member '%.64s...' has a component too long",
				       name);
		if (depth++ == 0) {
			for (size_t i = 0; i < ARRAY_SIZE(top_dirs); i++)
				top_ok |=
					strlen(top_dirs[i]) == n && memcmp(top_dirs[i], c, n) == 0;
		}
		c += n;
		if (*c == '/')
			c++;
	}
	if (!top_ok)
		return err_set(e, EXIT_VERIFY,
			       "member '%s' is outside kernel/, lib64/, bin/, firmware/ and share/",
			       name);
	if (depth > UNPACK_MAX_DEPTH)
		return err_set(e, EXIT_VERIFY, "member '%.64s' is nested too deep", name);
	return 0;
}

int unpack_check_symlink(const char *name, const char *target, struct err *e)
{
	size_t up = 0, depth = 0;
	bool descending = false;
	const char *c;

	if (!target || !*target)
		return err_set(e, EXIT_VERIFY, "symlink '%s' has an empty target", name);
	if (target[0] == '/')
		return err_set(e, EXIT_VERIFY, "symlink '%s' -> '%s' is absolute", name, target);
	if (strlen(target) >= PATH_MAX)
		return err_set(
			e, EXIT_VERIFY,
			"symlink '%s' has a target too long (%zu bytes; a link holds at most %d)",
			name, strlen(target), PATH_MAX - 1);
	for (c = target; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return err_set(e, EXIT_VERIFY,
				       "symlink '%s' target has a control character", name);
	}
	if (!str_is_utf8(target))
		return err_set(e, EXIT_VERIFY, "symlink '%s' target is not UTF-8", name);
	/* The link's directory is at depth (components of NAME) - 1. */
	for (c = name; *c; c++)
		depth += *c == '/';
	for (c = target; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (descending)
				return err_set(
					e, EXIT_VERIFY,
					"symlink '%s' -> '%s': '..' after a name is not allowed",
					name, target);
			up++;
		} else if (n > 0 && !(n == 1 && c[0] == '.')) {
			descending = true;
		}
		c += n;
		if (*c == '/')
			c++;
	}
	if (up > depth)
		return err_set(e, EXIT_VERIFY, "symlink '%s' -> '%s' points outside the package",
			       name, target);
	return 0;
}

/* ---- extended attributes ------------------------------------------------ */

#define IMA_XATTR "security.ima"

/*
 * Only IMA's attribute, only where the kernel appraises what the driver brings: firmware
 * (FIRMWARE_CHECK) and modules (MODULE_CHECK). Anything else a tar can carry (user.*,
 * security.capability, trusted.*, an ACL as system.*) would change what a file may do
 * on the host: refused, not dropped, so a package means the same on every node.
 */
int unpack_check_xattr(const char *path, bool is_file, const char *name, const void *value,
		       size_t len, struct err *e)
{
	const unsigned char *v = value;

	if (strcmp(name, IMA_XATTR) != 0)
		return err_set(
			e, EXIT_VERIFY,
			"member '%s' carries extended attribute '%.64s'; a package may carry only security.ima, on files under firmware/ and kernel/",
			path, name);
	if (!is_file || (strncmp(path, "firmware/", 9) != 0 && strncmp(path, "kernel/", 7) != 0))
		return err_set(
			e, EXIT_VERIFY,
			"member '%s' carries extended attribute 'security.ima'; it is allowed only on files under firmware/ and kernel/",
			path);
	if (len < 2 || len > UNPACK_IMA_MAX)
		return err_set(
			e, EXIT_VERIFY,
			"member '%s' carries a security.ima of %zu bytes; an IMA value has 2 to %u",
			path, len, UNPACK_IMA_MAX);
	/* IMA_XATTR_DIGEST, EVM_IMA_XATTR_DIGSIG, IMA_XATTR_DIGEST_NG, IMA_VERITY_DIGSIG. */
	if (v[0] != 1 && v[0] != 3 && v[0] != 4 && v[0] != 6)
		return err_set(
			e, EXIT_VERIFY,
			"member '%s' carries a security.ima of type %u, not an IMA digest or signature (1, 3, 4 or 6)",
			path, v[0]);
	return 0;
}
