/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Downloads with libcurl: http://, https:// and file:// base URLs, mirrors
 * tried in order, transient faults retried with exponential backoff and
 * jitter (honouring Retry-After) inside one total time budget, resume of
 * partial files, and progress for long transfers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct fetcher;
struct tail;

struct fetch_opts {
	unsigned timeout_s;	  /* total budget for every transfer and wait of this run */
	unsigned retries;	  /* rounds over the mirrors after the first */
	unsigned low_speed_bytes; /* a transfer slower than this many bytes/s ... */
	unsigned low_speed_s;	  /* ... for this long is abandoned (and retried) */
	const char *ca_file;	  /* CA certificates trusted besides the system's, or NULL */
};

/* What one attempt against one mirror came to. */
enum fetch_result {
	FETCH_OK = 0,
	FETCH_TRANSIENT = -1, /* worth trying again later (reset, 5xx, timeout) */
	FETCH_PERMANENT = -2, /* this mirror will not do (404, bad signature, bad digest) */
};

/*
 * One attempt at BASE (a mirror's base URL). Fills e and returns a
 * fetch_result. USERDATA is the caller's.
 */
typedef enum fetch_result (*fetch_attempt_fn)(struct fetcher *f, const char *base, void *userdata,
					      struct err *e);

int fetcher_new(const struct fetch_opts *opts, struct fetcher **ret, struct err *e);
void fetcher_free(struct fetcher *f);
DEFINE_POINTER_CLEANUP(struct fetcher, fetcher_free)

/*
 * Runs FN against the N mirrors BASES, starting with index FIRST, in rounds
 * separated by backoff, until one succeeds, every mirror failed permanently,
 * the retries are spent or the time budget is. Returns 0 and the index of the
 * mirror that succeeded in *ret_mirror, or -1: EXIT_VERIFY when a mirror
 * served content that failed verification, else EXIT_UNREACHABLE, with a
 * message naming each mirror's last cause.
 */
int fetch_mirrors(struct fetcher *f, char *const *bases, size_t n, size_t first,
		  fetch_attempt_fn fn, void *userdata, size_t *ret_mirror, struct err *e);

/* Joins a base URL and a relative path with exactly one '/'. NULL on ENOMEM. */
char *fetch_url_join(const char *base, const char *rel);

/*
 * Fetches URL into memory, at most MAX bytes. Returns FETCH_OK with a
 * NUL-terminated malloc'd buffer, or another fetch_result with e set.
 */
enum fetch_result fetch_to_memory(struct fetcher *f, const char *url, size_t max, char **ret_buf,
				  size_t *ret_len, struct err *e);

/*
 * Downloads URL into FD (a partial file opened O_RDWR), resuming after the
 * bytes already there, and checks that the result is SIZE bytes with SHA256.
 * A mismatch empties FD and is FETCH_PERMANENT with EXIT_VERIFY. TAIL (may be
 * NULL) is told of every change of the file's length, for a reader following
 * it. *ret_net_bytes counts the bytes this call received from the network.
 */
enum fetch_result fetch_to_file(struct fetcher *f, const char *url, int fd, uint64_t size,
				const char *sha256, struct tail *tail, uint64_t *ret_net_bytes,
				struct err *e);
