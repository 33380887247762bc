// SPDX-License-Identifier: Apache-2.0
/*
 * fetch_mirrors (fetch.h): one fetch over the mirrors, in rounds separated by backoff,
 * each attempt given its share of the time budget. One attempt is fetch.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "source/fetch.h"
#include "source/fetcher.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

#define BACKOFF_BASE_MS 500
#define BACKOFF_CAP_MS 30000
/* No share of the budget is smaller than this (or than what is left, when that is less). */
#define SHARE_MIN_MS 1000

/* Exponential backoff with "equal jitter": half fixed, half random. */
static uint64_t backoff_ms(unsigned round, long retry_after_s)
{
	uint64_t d = BACKOFF_BASE_MS;
	uint32_t rnd = 0;

	for (unsigned i = 0; i < round && d < BACKOFF_CAP_MS; i++)
		d *= 2;
	if (d > BACKOFF_CAP_MS)
		d = BACKOFF_CAP_MS;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)now_ns();
	d = d / 2 + rnd % (d / 2 + 1);
	if (retry_after_s > 0 && (uint64_t)retry_after_s * 1000u > d)
		d = (uint64_t)retry_after_s * 1000u;
	return d;
}

/*
 * Sleeps MS, or less when SIGTERM or SIGINT comes (interrupt.h): in slices of at most
 * 100 ms, since the signal may interrupt another thread (the unpacker's) than this one.
 */
static void sleep_ms(uint64_t ms)
{
	uint64_t end = now_ns() + ms * 1000000u, now;

	while (!interrupt_signal() && (now = now_ns()) < end) {
		uint64_t slice = end - now < 100000000u ? end - now : 100000000u;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice};

		nanosleep(&ts, NULL);
	}
}

struct mirror_state {
	bool permanent;
	bool missing; /* its last answer: the file is not there */
	int code;
	char msg[512];
	char hint[ERR_HINT_MAX];
};

/*
 * Gives the next attempt 1/K of what is left, K the mirrors not retired (all when K is 1),
 * but not less than SHARE_MIN_MS.
 */
static void share_begin(struct fetcher *f, const struct mirror_state *st, size_t n)
{
	uint64_t share;
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += !st[i].permanent;
	f->share_deadline_ns = 0;
	f->share_spent = false;
	f->share_of = k;
	f->share_left_ms = remaining_ms(f);
	share = k > 1 ? f->share_left_ms / k : f->share_left_ms;
	if (share < SHARE_MIN_MS)
		share = SHARE_MIN_MS;
	if (share < f->share_left_ms)
		f->share_deadline_ns = now_ns() + share * 1000000u;
}

/* The worst cause wins: bad content over local trouble over an unreachable mirror. */
static int mirrors_fail(struct mirror_state *st, size_t n, unsigned attempts, uint64_t t0,
			struct err *e)
{
	char detail[ERR_MSG_MAX - 128];
	const char *hint = NULL, *other_hint = NULL;
	size_t len = 0;
	int code = EXIT_UNREACHABLE;
	bool all_missing = n > 0;

	detail[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		all_missing &= st[i].missing;
		if (st[i].msg[0] == '\0')
			continue; /* the time ran out before its turn */
		if (st[i].code == EXIT_VERIFY && !hint)
			hint = st[i].hint;
		if (st[i].code != EXIT_VERIFY && !other_hint && st[i].hint[0])
			other_hint = st[i].hint;
		if (st[i].code == EXIT_VERIFY)
			code = EXIT_VERIFY;
		else if (st[i].code != EXIT_UNREACHABLE && code != EXIT_VERIFY)
			code = st[i].code;
		if (len < sizeof(detail))
			len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%s%s",
						len ? "; " : "", st[i].msg);
	}
	if (code == EXIT_VERIFY) {
		err_set(e, EXIT_VERIFY, "%s", detail);
		if (hint && *hint)
			err_hint(e, "%s", hint);
		return -1;
	}
	if (all_missing) {
		err_set(e, EXIT_UNREACHABLE, "every mirror answered that it has no such file: %s",
			detail);
		err_hint(
			e,
			"check the URL in --repo (NVIDIA_DRIVER_REPO): every mirror answered that the file is not there");
		return FETCH_ALL_MISSING;
	}
	if (len == 0)
		snprintf(detail, sizeof(detail), "the time budget of the run was spent");
	/* Local trouble (a full cache disk): a mirror answered, this node could not keep it. */
	if (code != EXIT_UNREACHABLE)
		err_set(e, code, "%s", detail);
	else
		err_set(e, code, "no repository answered after %u attempt(s) in %.1f s: %s",
			attempts, (double)ms_since(t0) / 1000.0, detail);
	if (other_hint)
		err_hint(e, "%s", other_hint);
	else if (code == EXIT_UNREACHABLE)
		err_hint(
			e,
			"check --repo (NVIDIA_DRIVER_REPO) and the node's network; for an air gap, use a file:// mirror");
	return -1;
}

/* The attempt at mirror BASE ended with R and E: kept in ST, and said. */
static void mirror_failed(struct mirror_state *st, const char *base, enum fetch_result r,
			  const struct err *e)
{
	st->permanent = r != FETCH_TRANSIENT;
	st->missing = r == FETCH_MISSING;
	st->code = e->code;
	str_fmt_cut(st->msg, sizeof(st->msg), "%s", e->msg);
	snprintf(st->hint, sizeof(st->hint), "%s", e->hint);
	log_kv(LOG_WARN, "fetch", e->msg, "mirror", base, "retry", st->permanent ? "no" : "yes",
	       LOG_END);
}

int fetch_mirrors(struct fetcher *f, const struct fetch_request *q, size_t *ret_mirror,
		  struct err *e)
{
	char *const *bases = q->bases;
	size_t n = q->n_bases;
	_cleanup_free_ struct mirror_state *st = calloc(n ? n : 1, sizeof(*st));
	uint64_t t0 = now_ns();
	unsigned attempts = 0, failed_rounds = 0;

	if (!st)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "fetch");
	/*
	 * A round in which some mirror only spent its share of the budget (slow, but making
	 * progress) is not a failed one: it does not count against --fetch-retries, so the
	 * slow mirror gets what the others leave of the budget. The budget bounds the rounds.
	 */
	for (unsigned round = 0; failed_rounds <= f->retries; round++) {
		bool any_left = false, any_fault = false, any_slow = false;
		uint64_t wait;

		f->retry_after_s = 0;
		for (size_t k = 0; k < n; k++) {
			size_t i = (q->first + k) % n;
			enum fetch_result r;

			if (st[i].permanent)
				continue;
			if (interrupt_check(e, "the next attempt") < 0)
				return -1;
			if (remaining_ms(f) == 0)
				return mirrors_fail(st, n, attempts, t0, e);
			attempts++;
			err_clear(e);
			share_begin(f, st, n);
			r = q->attempt(f, bases[i], q->userdata, e);
			f->share_deadline_ns = 0;
			if (r == FETCH_OK) {
				*ret_mirror = i;
				return 0;
			}
			/*
			 * A transfer the signal ended is no mirror's fault: no retry, no other
			 * mirror.
			 */
			if (interrupt_check(e, "the end of the transfer") < 0)
				return -1;
			mirror_failed(&st[i], bases[i], r, e);
			any_left |= !st[i].permanent;
			any_slow |= f->share_spent;
			any_fault |= !st[i].permanent && !f->share_spent;
		}
		if (!any_slow)
			failed_rounds++;
		if (!any_left || failed_rounds > f->retries)
			break;
		/* Only a fault is waited for; a slow mirror is asked again at once. */
		if (!any_fault)
			continue;
		wait = backoff_ms(round, f->retry_after_s);
		if (wait >= remaining_ms(f))
			break;
		log_kv(LOG_INFO, "fetch", "waiting before the next attempt", U64("ms", wait),
		       LOG_END);
		sleep_ms(wait);
	}
	return mirrors_fail(st, n, attempts, t0, e);
}
