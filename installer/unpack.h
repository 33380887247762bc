/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unpacking a driver package (a zstd, xz or gzip tar) into a private staging
 * directory, under the archive policy of docs/repository-format.md. The
 * package's bytes are hashed as they are read, so a cached package is
 * verified in the same pass that unpacks it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Limits against decompression bombs; generous for a real driver (~400 MB unpacked). */
#define UNPACK_MAX_ENTRY_SIZE (4ull << 30)
#define UNPACK_MAX_TOTAL_SIZE (16ull << 30)
#define UNPACK_MAX_ENTRIES 100000u
#define UNPACK_MAX_DEPTH 32

struct unpack_stats {
	unsigned files, dirs, symlinks;
	uint64_t bytes;	   /* unpacked file bytes */
	uint64_t declared; /* file sizes as the headers declare them (holes included) */
};

/*
 * Normalises an archive member name into OUT: strips a leading "./" and a
 * trailing "/", then requires a relative path of plain components under one
 * of the allowed top-level directories, with no "..", no empty component and
 * no control character. Returns 0; 1 for the archive's own root ("./"),
 * which carries nothing; or -1 with EXIT_VERIFY.
 */
int unpack_check_path(const char *name, char *out, size_t size, struct err *e);

/*
 * Checks a symlink member: NAME (normalised) -> TARGET. TARGET must be
 * relative, and its ".." components must all come first and stay inside the
 * package. Together with the rule that no member is written through a
 * symlink, this keeps every link's physical target inside the package.
 */
int unpack_check_symlink(const char *name, const char *target, struct err *e);

/*
 * Unpacks the package in pkg_fd (read from its current offset) into
 * staging_fd. The bytes read must number SIZE and hash to SHA256, or the
 * call fails with EXIT_VERIFY; so does any policy violation. On failure the
 * staging directory holds a partial tree that the caller removes.
 */
int unpack_package(int pkg_fd, uint64_t size, const char *sha256, int staging_fd,
		   struct unpack_stats *ret, struct err *e);
