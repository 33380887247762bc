/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Write-back, started as each file is complete (writeback.c). The extractor (unpack.c)
 * hands each finished file to a thread that starts its write-back (sync_file_range,
 * which can block on the disk's queue: not in the extractor). By the time the tree is
 * flushed before publishing, most of it is on disk.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#define WRITEBACK_QUEUE 64

struct writeback {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int fd[WRITEBACK_QUEUE];
	unsigned head, tail;
	bool done;
	pthread_t thread;
	bool started;
};

/* Starts W's thread; where it cannot start, writeback_push skips every file. */
void writeback_start(struct writeback *w);
/* Queues FD's write-back; without the thread, or with the queue full, skips it. */
void writeback_push(struct writeback *w, int fd);
/* Ends W: the thread starts the write-back of what is queued and is joined. */
void writeback_stop(struct writeback *w);
