/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unpacking a driver package (a zstd, xz or gzip tar) into a private staging
 * directory, under the archive policy of docs/repository-format.md. A cached
 * package's bytes are hashed as they are read, so it is verified in the same
 * pass that unpacks it; a package being downloaded is unpacked as it arrives,
 * and the download's own digest decides.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct tail;

/* Limits against decompression bombs; generous for a real driver (~400 MB unpacked). */
#define UNPACK_MAX_ENTRY_SIZE (4ull << 30)
#define UNPACK_MAX_TOTAL_SIZE (16ull << 30)
#define UNPACK_MAX_ENTRIES 100000u
/*
 * Without a signed "unpacked_size", a package may unpack to this many times its signed
 * size (a real driver: 3 to 4), and to at least UNPACK_MIN_LIMIT (tar pads to 10 KiB).
 */
#define UNPACK_RATIO 16u
#define UNPACK_MIN_LIMIT (1ull << 20)

/*
 * How much a package's bytes, not yet verified, may take: the decompressed stream and the
 * file sizes its members declare each stay within BYTES.
 */
struct unpack_limit {
	uint64_t bytes;
	const char *why; /* "its signed unpacked_size", ... */
};

/*
 * The limit for a package of SIZE bytes whose index gives UNPACKED_SIZE (0: none): that,
 * else UNPACK_RATIO times SIZE (at least UNPACK_MIN_LIMIT); never above
 * UNPACK_MAX_TOTAL_SIZE.
 */
struct unpack_limit unpack_limit_for(uint64_t size, uint64_t unpacked_size);

struct unpack_stats {
	unsigned files, dirs, symlinks;
	uint64_t bytes;	       /* unpacked file bytes */
	uint64_t declared;     /* file sizes as the headers declare them (holes included) */
	unsigned ima;	       /* files given the security.ima the package carries for them */
	unsigned ima_unstored; /* files whose security.ima the host could not store */
	int ima_errno;	       /* why the first of those was refused (EOPNOTSUPP, EPERM) */
	char ima_first[256];   /* and its member name */
	uint64_t frames;       /* zstd frames (0: an xz or gzip package) */
	uint64_t streamed;     /* of those, decompressed as a stream: too big to hand over whole */
	unsigned workers;      /* threads decompressing the frames */
};

/* The IMA policy as /sys/kernel/security/ima/policy lists it. */
struct unpack_ima_policy {
	const char *text; /* LEN bytes; NULL when not there or not shown (EACCES) */
	size_t len;
	const char *unreadable; /* why it is there but could not be read whole, or NULL */
};

/*
 * Whether the host enforces IMA appraisal on the files a package carries (firmware
 * loads, module loads), from CMDLINE (/proc/cmdline) and POLICY. A policy that is there
 * but unreadable counts as enforcing unless the command line turns appraisal to log, fix
 * or off. Writes the reason either way into WHY (SIZE bytes). docs/design.md, "IMA
 * signatures", says why these.
 */
bool unpack_ima_enforced(const char *cmdline, const struct unpack_ima_policy *policy, char *why,
			 size_t size);

/*
 * After an unpack whose stats ST count files whose security.ima the host could not store:
 * a warning (returns 0) where the host under ROOT_FD does not enforce IMA appraisal, and
 * -1 with EXIT_KERNEL_REFUSED where it does (the kernel would refuse those files).
 * Returns 0 at once when every value was stored.
 */
_must_check_ int unpack_ima_verdict(int root_fd, const struct unpack_stats *st, struct err *e);

/* A package to unpack: its file, what the index says it is, its bound, and where it goes. */
struct unpack_request {
	int pkg_fd;	    /* read from its current offset */
	uint64_t size;	    /* the bytes read must number this ... */
	const char *sha256; /* ... and hash to this */
	const struct unpack_limit *limit;
	int staging_fd;
};

/*
 * Unpacks the package Q->pkg_fd into Q->staging_fd. The bytes read must number
 * Q->size and hash to Q->sha256, or the call fails with EXIT_VERIFY; so does any
 * policy violation, and a package that unpacks beyond Q->limit (decompression
 * stops there). On failure the staging directory holds a partial tree that the
 * caller removes.
 */
_must_check_ int unpack_package(const struct unpack_request *q, struct unpack_stats *ret,
				struct err *e);

/*
 * Unpacks the package another thread is writing to pkg_fd, following TAIL
 * (util/tail.h), into staging_fd, then waits for the writer. Returns 0 when
 * the members unpacked under the policy and the writer completed the file
 * (size and SHA-256 checked by the download); 1 when the writer cut the file
 * back below what was read, so the tree must be made again from the finished
 * file; -1 with e set otherwise (EXIT_UNREACHABLE "the download did not
 * complete" when the writer failed: its own error is the one to report). The
 * staging directory is the caller's to remove on anything but 0.
 */
_must_check_ int unpack_follow(int pkg_fd, struct tail *tail, const struct unpack_limit *limit,
			       int staging_fd, struct unpack_stats *ret, struct err *e);
