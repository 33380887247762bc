/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A file that one thread writes while another reads it: the download appends to
 * the cache's partial file, the unpacker follows behind. The writer announces how
 * many bytes from the start are written; the reader waits for bytes past its
 * offset. The file is the buffer: the writer never waits for the reader, and the
 * memory used stays the same whatever the package's size.
 *
 * The writer may cut the file back (a server that ignored a range request, a
 * mirror whose copy failed verification). When it cuts below what the reader has
 * consumed, the reader's bytes are no longer the file's: the tail is marked stale,
 * the reader stops, and the caller starts over from the finished file.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum tail_state {
	TAIL_WRITING,
	TAIL_COMPLETE, /* the writer finished: the file is whole and verified */
	TAIL_FAILED,   /* the writer gave up */
};

struct tail {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t written;  /* bytes [0, written) are in the file */
	uint64_t consumed; /* the reader has taken bytes [0, consumed) */
	enum tail_state state;
	bool stale; /* cut back below what the reader consumed */
};

void tail_init(struct tail *t);
void tail_destroy(struct tail *t);

/* Writer: bytes [0, written) are now in the file (less than before: it was cut back). */
void tail_written(struct tail *t, uint64_t written);
/* Writer: no more changes; COMPLETE when the file is whole and verified. */
void tail_finish(struct tail *t, enum tail_state state);

/*
 * Reader: waits until bytes past OFF are written and claims up to MAX of them,
 * returning how many (0: the writer finished and there are no more). A claim is
 * made before the bytes are read, so a cut that races with the read is seen.
 * -1 when the writer failed or the tail is stale: nothing the reader made from
 * it may be used.
 */
int64_t tail_claim(struct tail *t, uint64_t off, uint64_t max);
/* Reader: it is done, successfully or not; waits for the writer and returns its state. */
enum tail_state tail_reader_done(struct tail *t, bool *ret_stale);
