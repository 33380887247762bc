/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The archive policy of docs/repository-format.md for one member at a time
 * (unpack_policy.c): its name, a symlink's target, an extended attribute. The unpacking
 * (unpack.c) holds each member to it before anything of it is written.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

/* A limit against decompression bombs (unpack.h has the others): a member path's depth. */
#define UNPACK_MAX_DEPTH 32

/*
 * The most bytes a security.ima value may have. An IMA signature (type 3, version 2) of
 * RSA-4096 is 521 bytes; the kernel's own bound on a signature it verifies is 1 KiB too.
 */
#define UNPACK_IMA_MAX 1024u

/*
 * The archive policy for one extended attribute NAME (VALUE, LEN bytes) on member PATH
 * (normalised), which IS_FILE when a regular file: only "security.ima", only on a regular
 * file under firmware/ or kernel/, 2 to UNPACK_IMA_MAX bytes whose first byte is an IMA
 * value type (1 digest, 3 signature, 4 digest with algorithm, 6 fs-verity signature).
 * Returns 0, or -1 with EXIT_VERIFY naming the member and the attribute.
 */
_must_check_ int unpack_check_xattr(const char *path, bool is_file, const char *name,
				    const void *value, size_t len, struct err *e);

/*
 * Normalises an archive member name into OUT: strips a leading "./" and a
 * trailing "/", then requires a relative path of plain components under one
 * of the allowed top-level directories, with no "..", no empty component and
 * no control character. Returns 0; 1 for the archive's own root ("./"),
 * which carries nothing; or -1 with EXIT_VERIFY.
 */
_must_check_ int unpack_check_path(const char *name, char *out, size_t size, struct err *e);

/*
 * Checks a symlink member: NAME (normalised) -> TARGET. TARGET must be
 * relative, and its ".." components must all come first and stay inside the
 * package. Together with the rule that no member is written through a
 * symlink, this keeps every link's physical target inside the package.
 */
_must_check_ int unpack_check_symlink(const char *name, const char *target, struct err *e);
