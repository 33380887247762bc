// SPDX-License-Identifier: Apache-2.0
/*
 * install --wait-for-package (cmd/install_wait.h). Why the wait is the installer's, in the
 * init container, and not the agent's: docs/design.md, "A kernel nobody built for".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/install_plan.h"
#include "cmd/install_wait.h"
#include "cmd/session.h"
#include "util/cleanup.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

uint64_t install_wait_next_ms(uint64_t prev_ms, unsigned cap_s)
{
	uint64_t cap = (uint64_t)cap_s * 1000u, next = prev_ms ? prev_ms * 2u : WAIT_FIRST_MS;

	return next < cap ? next : cap;
}

/* Whether E is the refusal a new package lifts; then *RET, what the node needs. */
static bool wants_package(const struct run *run, const struct err *e, struct repo_want *ret)
{
	const struct plan *p = &run->p;

	return e->code == EXIT_NO_MATCH && p->src.idx &&
	       repo_wanted(p->src.idx, &p->host, run->c->driver_version, session_kmt_policy(run->c),
			   ret) == 1;
}

/* The record's what: the host, the driver and flavour W names, the refusal E. */
static void describe(struct run *run, const struct repo_want *w, const struct err *e)
{
	struct waiting *r = &run->waiting;
	const struct host *h = &run->p.host;

	snprintf(r->kernel, sizeof(r->kernel), "%s", h->kernel);
	snprintf(r->arch, sizeof(r->arch), "%s", h->arch);
	snprintf(r->os, sizeof(r->os), "%s", h->os_id ? h->os_id : "linux");
	snprintf(r->os_build, sizeof(r->os_build), "%s", h->os_build_id ? h->os_build_id : "");
	snprintf(r->driver_version, sizeof(r->driver_version), "%s", w->driver->version);
	snprintf(r->flavour, sizeof(r->flavour), "%s", repo_module_type_name(w->module_type));
	snprintf(r->reason, sizeof(r->reason), "%s", e->msg);
}

/* The record and the metrics say what the run waits for and when it asks next. */
static void record(struct run *run, const struct wait_calls *calls, const struct err *e)
{
	struct err we;

	err_clear(&we);
	if (waiting_write(publish_fd(run->dir), &run->waiting, &we) < 0)
		log_msg(LOG_WARN, "wait", "%s", we.msg);
	run->is_waiting = true;
	calls->report(run, e);
	run->is_waiting = false;
}

/* Whether the record in the install dir is this run's: its pid and since, not another's. */
static bool own_record(const struct run *run)
{
	struct waiting w;
	struct err e;

	err_clear(&e);
	return waiting_read(publish_fd(run->dir), &w, &e) == 0 && w.pid == run->waiting.pid &&
	       w.since == run->waiting.since;
}

/*
 * The wait is over (installed, given up, or a signal): its record goes, under the node lock
 * only. Without it (a signal while it slept unlocked), the lock is tried without waiting: a
 * run that holds it, or wrote the record since, owns the record now, and it stays.
 */
static void wait_clear(struct run *run)
{
	_cleanup_close_ int fd = -1;
	struct err e;

	err_clear(&e);
	if (!run->dir)
		return;
	if (run->lock_fd < 0 && (fd = session_lock_try(run->root_fd, &e)) < 0) {
		if (err_errnum(&e) != EWOULDBLOCK)
			log_msg(LOG_WARN, "wait", "%s", e.msg);
		return;
	}
	if (own_record(run) && waiting_clear(publish_fd(run->dir), &e) < 0)
		log_msg(LOG_WARN, "wait", "%s", e.msg);
}

/* The node lock again, and what a run killed meanwhile left removed. 0 or -1. */
static int relock(struct run *run, struct err *e)
{
	run->lock_fd = session_lock(run->root_fd, e);
	if (run->lock_fd < 0)
		return -1;
	return publish_cleanup(run->dir, e);
}

/*
 * Sleeps until the next check, without the node lock (status, doctor and the agent read
 * the node meanwhile; an install by hand may run), and takes it again. -1 with E for a
 * signal, or a lock that could not be taken.
 */
static int sleep_unlocked(struct run *run, uint64_t ms, struct err *e)
{
	close(run->lock_fd);
	run->lock_fd = -1;
	err_clear(e);
	if (interrupt_sleep(ms) < 0 && interrupt_check(e, "the next check for a package") < 0)
		return -1;
	return relock(run, e);
}

/* A check: the mirrors asked afresh (no reuse of the node's copy), the plan made. */
static int check(struct run *run, struct err *e)
{
	struct plan *p = &run->p;

	err_clear(e);
	source_done(&p->src);
	memset(&p->choice, 0, sizeof(p->choice));
	return install_plan_make(run, false, e);
}

/* Whether the wait has lasted past --wait-for-package-max (0: never). */
static bool past_limit(const struct run *run, int64_t now)
{
	unsigned max = run->c->wait_max_s;

	return max > 0 && now - run->waiting.since >= (int64_t)max;
}

/*
 * After check failed with E: 1 to wait on (the same refusal, with W's what, or a repository
 * that does not answer now), 0 for an error that ends the wait.
 */
static int still_waiting(struct run *run, struct err *e)
{
	struct repo_want w;

	if (wants_package(run, e, &w)) {
		describe(run, &w, e);
		return 1;
	}
	if (e->code == EXIT_UNREACHABLE) {
		log_kv(LOG_WARN, "wait",
		       "the repository did not answer: waiting on, asked again at the next check",
		       "error", e->msg, LOG_END);
		return 1;
	}
	return 0;
}

static void log_wait(const struct run *run, uint64_t ms)
{
	const struct waiting *w = &run->waiting;

	log_kv(LOG_INFO, "wait", "waiting for the repository to serve this node's package",
	       "kernel", w->kernel, "driver_version", w->driver_version, "flavour", w->flavour,
	       "arch", w->arch, "os", w->os, "os_build", w->os_build,
	       U64("next_check_s", ms / 1000u), LOG_END);
}

int install_wait(struct run *run, const struct wait_calls *calls, struct err *e)
{
	const struct config *c = run->c;
	struct repo_want want;
	uint64_t ms = 0;
	int64_t now;

	if (!c->wait_for_package || c->dry_run || run->lock_fd < 0 || !run->dir ||
	    !wants_package(run, e, &want))
		return -1;
	describe(run, &want, e);
	run->waiting.since = (int64_t)time(NULL);
	run->waiting.pid = (int64_t)getpid();
	log_kv(LOG_WARN, "wait", "no package for this node yet: waiting for the repository",
	       "reason", e->msg, LOG_END);
	if (!run->ask)
		log_kv(LOG_INFO, "wait", "the wait is not published on the Node", "reason",
		       run->ask_off, LOG_END);
	for (;;) {
		(void)nodeask_wants(run->ask, &run->waiting);
		now = (int64_t)time(NULL);
		if (past_limit(run, now)) {
			wait_clear(run);
			return err_wrap(e, "waited %u s for a package (--wait-for-package-max)",
					c->wait_max_s);
		}
		ms = install_wait_next_ms(ms, c->wait_interval_s);
		/* The last check comes when the limit is reached, not a backoff after it. */
		if (c->wait_max_s > 0 &&
		    now + (int64_t)(ms / 1000u) - run->waiting.since > (int64_t)c->wait_max_s)
			ms = (uint64_t)(run->waiting.since + (int64_t)c->wait_max_s - now) * 1000u;
		run->waiting.last_check = now;
		run->waiting.next_check = now + (int64_t)((ms + 999u) / 1000u);
		record(run, calls, e);
		log_wait(run, ms);
		(void)nodeask_waiting(run->ask, &run->waiting);
		if (sleep_unlocked(run, ms, e) < 0)
			break;
		if (check(run, e) == 0) {
			wait_clear(run);
			run->has_waited = true;
			log_kv(LOG_INFO, "wait", "the repository serves this node's package",
			       "kernel", run->waiting.kernel, "version",
			       run->p.choice.driver->version,
			       U64("waited_s", time(NULL) - run->waiting.since), LOG_END);
			return 0;
		}
		if (!still_waiting(run, e))
			break;
	}
	wait_clear(run);
	return -1;
}
