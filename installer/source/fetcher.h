/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fetcher's state, shared by the two halves of the transfers: one transfer, its
 * sink, progress and verdict (fetch.c), and the rounds over the mirrors with their
 * backoff and each attempt's share of the time budget (fetch_mirrors.c). Nothing else
 * reads it: the others hold a struct fetcher only by pointer (fetch.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/dlib.h"
#include "util/log.h"

struct fetcher {
	CURL *curl;
	uint64_t deadline_ns;
	unsigned timeout_s;
	unsigned retries;
	unsigned low_speed_bytes, low_speed_s;
	char *ca_file;
	long retry_after_s; /* from the last response, 0 when none */
	/*
	 * This attempt's share of the budget (0: the whole budget): with K mirrors still in
	 * play an attempt may take 1/K of what is left, so that a mirror that stays just
	 * above the speed floor cannot spend the time of the mirrors after it.
	 */
	uint64_t share_deadline_ns;
	unsigned share_of;	/* K */
	uint64_t share_left_ms; /* what was left of the budget when the share was given */
	bool share_binding;	/* the transfer's timeout is the share, not the budget */
	uint64_t transfer_timeout_ms;
	bool share_spent; /* the last attempt ended because its share was spent */
	uint64_t transfer_started_ns;
	bool tty;
	bool not_regular;	       /* the last file:// URL named what is not a regular file */
	const struct fetch_http *http; /* what the next transfers carry (fetch_http_set) */
	struct curl_slist *headers;    /* HTTP's headers, as the transfer under way sends them */
	char errbuf[CURL_ERROR_SIZE];
};

/* Milliseconds left of F's budget, 0 when it is spent. */
static inline uint64_t remaining_ms(const struct fetcher *f)
{
	uint64_t now = now_ns();

	return now >= f->deadline_ns ? 0 : (f->deadline_ns - now) / 1000000u;
}
