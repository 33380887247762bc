/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A zstd stream decompressed frame by frame on every core, handed on in order.
 *
 * A package written as independent frames (make-repo pack: one per 4 MiB of tar, each
 * declaring its size) is still one zstd stream to zstd, tar and older installers. Here one
 * thread reads the compressed bytes (the caller's reader hashes them as it reads) and cuts
 * them at frame boundaries (ZSTD_findFrameCompressedSize walks only block headers); whole
 * frames go to a pool of workers, one per CPU, which decompress them at once each into a
 * buffer of the declared size; the consumer takes the buffers back in stream order. At
 * most workers + 2 frames are in flight, so memory is bounded whatever the package's size.
 *
 * A frame that does not fit that (no declared size, more than ZFRAMES_FRAME_MAX either
 * way: a package written as one frame, as before) is decompressed as a stream by the
 * reading thread itself, in blocks, in its turn: single-frame packages go as fast as they
 * did with one decompressing thread. Skippable frames are skipped.
 *
 * The limit counts declared sizes as frames are cut, before anything is decompressed, and
 * the bytes a streamed frame yields; after the consumer stops, the reader reads on to the
 * end (or the limit), so that whether the stream passes the limit does not depend on
 * where the consumer stopped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

#define ZFRAMES_FRAME_MAX (8u << 20)
#define ZFRAMES_WORKERS_MAX 8u

/* The next compressed bytes: >0 with *ret set, 0 at the end, -1 with errno set. */
typedef ssize_t (*zframes_read_fn)(void *ud, const void **ret);

struct zframes;

/* A zstd frame's magic (0xFD2FB528) or a skippable frame's at the start of BUF. */
bool zframes_is_zstd(const void *buf, size_t len);

/* Workers for this process: its CPUs (sched_getaffinity), 1 to ZFRAMES_WORKERS_MAX. */
unsigned zframes_workers(void);

/* Where the compressed bytes come from: READ(UD), after FIRST_LEN bytes read already. */
struct zframes_source {
	zframes_read_fn read;
	void *ud;
	const void *first;
	size_t first_len;
};

/*
 * Starts reading SRC with WORKERS decompressing; at most LIMIT bytes may come out.
 * libzstd must be loaded (dlib_zstd()).
 */
int zframes_start(struct zframes **ret, const struct zframes_source *src, uint64_t limit,
		  unsigned workers, struct err *e);

/*
 * The next decompressed bytes in stream order: >0 with *ret valid until the next call,
 * 0 at the end, -1 when the stream failed (zframes_error says why).
 */
ssize_t zframes_next(struct zframes *z, const void **ret);

/* Why zframes_next failed: an errno-like code (EFBIG past the limit) and libzstd's words. */
int zframes_error(const struct zframes *z, const char **msg);

/*
 * Stops: the reader reads on to the end of the stream or the limit, the workers end, all
 * is freed. Returns whether the stream passed the limit; *frames: the zstd frames it cut,
 * *streamed: how many of them it decompressed itself (too big to hand over whole).
 */
bool zframes_stop(struct zframes *z, uint64_t *frames, uint64_t *streamed);
