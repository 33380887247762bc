// SPDX-License-Identifier: Apache-2.0
/*
 * installer/stage/pending.h: what an install run does with a change that waits for idle GPUs
 * (the decisions, the record, its protection from the cleanup), and the idle check that
 * does not count the installer's own processes as users of the driver.
 */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/pending_failed.h"
#include "kernel/kmods.h"
#include "stage/pending.h"
#include "stage/publish.h"
#include "scratch.h"

static struct pending rec(const char *id, const char *reason)
{
	struct pending p;

	memset(&p, 0, sizeof(p));
	snprintf(p.id, sizeof(p.id), "%s", id);
	snprintf(p.driver_version, sizeof(p.driver_version), "%.*s", (int)strcspn(id, "-"), id);
	snprintf(p.reason, sizeof(p.reason), "%s", reason);
	return p;
}

/* Every branch of pending_decide. */
static void test_decide(void **state)
{
	struct pending v = rec("550.90.07-aaaaaaaaaaaa", PENDING_DRIVER_IN_USE),
		       a = rec("535.261.03-bbbbbbbbbbbb", PENDING_MODULE_ARGS), l;
	const char *cur = "535.261.03-bbbbbbbbbbbb", *pend = "550.90.07-aaaaaaaaaaaa",
		   *other = "560.1.1-cccccccccccc";
	struct pending_plan r;

	(void)state;
	/* Nothing waits: up to date, or a new version to stage. */
	r = pending_decide(true, cur, NULL, cur, false);
	assert_int_equal(r.action, PENDING_ENSURE);
	assert_false(r.clear);
	r = pending_decide(false, cur, NULL, other, false);
	assert_int_equal(r.action, PENDING_STAGE);
	assert_false(r.clear);
	/* The same request again: the staged version is used, the record kept. */
	r = pending_decide(false, cur, &v, pend, false);
	assert_int_equal(r.action, PENDING_USE_STAGED);
	assert_false(r.clear);
	/* A newer request: staged anew; its record will replace this one. */
	r = pending_decide(false, cur, &v, other, false);
	assert_int_equal(r.action, PENDING_STAGE);
	assert_false(r.clear);
	/* A reverted rollout (the current version asked again): the pending one goes. */
	r = pending_decide(true, cur, &v, cur, false);
	assert_int_equal(r.action, PENDING_ENSURE);
	assert_true(r.clear);
	r = pending_decide(true, cur, &v, cur, true);
	assert_int_equal(r.action, PENDING_RELOAD_ARGS);
	assert_true(r.clear);
	/* A crash after the switch left a record naming the current version: obsolete. */
	l = rec(cur, PENDING_DRIVER_IN_USE);
	r = pending_decide(true, cur, &l, cur, true);
	assert_int_equal(r.action, PENDING_RELOAD_ARGS);
	assert_true(r.clear);
	/* New parameters: they wait while they still differ, and go when reverted. */
	r = pending_decide(true, cur, NULL, cur, true);
	assert_int_equal(r.action, PENDING_RELOAD_ARGS);
	assert_false(r.clear);
	r = pending_decide(true, cur, &a, cur, true);
	assert_int_equal(r.action, PENDING_RELOAD_ARGS);
	assert_false(r.clear);
	r = pending_decide(true, cur, &a, cur, false);
	assert_int_equal(r.action, PENDING_ENSURE);
	assert_true(r.clear);
	/* A parameter record is no staged version: a new version is staged. */
	r = pending_decide(false, cur, &a, cur, false);
	assert_int_equal(r.action, PENDING_STAGE);
	/* The same package for another kernel is not current: it is staged again. */
	r = pending_decide(false, cur, NULL, cur, false);
	assert_int_equal(r.action, PENDING_STAGE);
	/*
	 * A GPU layout that waits: the run makes sure of the current version and its
	 * publication settles the record (made, or still busy), so it is not cleared here,
	 * with or without new parameters; a new version is staged beside it.
	 */
	l = rec(cur, PENDING_MIG_LAYOUT);
	r = pending_decide(true, cur, &l, cur, false);
	assert_int_equal(r.action, PENDING_ENSURE);
	assert_false(r.clear);
	r = pending_decide(true, cur, &l, cur, true);
	assert_int_equal(r.action, PENDING_RELOAD_ARGS);
	assert_false(r.clear);
	r = pending_decide(false, cur, &l, other, false);
	assert_int_equal(r.action, PENDING_STAGE);
}

/* The record: written atomically, read back whole; a damaged or hostile one is refused. */
static void test_record(void **state)
{
	struct scratch_fixture *f = *state;
	struct pending p = rec("550.90.07-aaaaaaaaaaaa", PENDING_DRIVER_IN_USE), q;
	struct err e;

	err_clear(&e);
	assert_int_equal(pending_read(f->fd, &q, &e), 1);
	snprintf(p.waiting_for, sizeof(p.waiting_for), "/dev/nvidiactl open in pid 7 (app \"x\")");
	snprintf(p.since, sizeof(p.since), "2026-12-01T12:00:00Z");
	assert_int_equal(pending_write(f->fd, &p, &e), 0);
	memset(&q, 0, sizeof(q));
	assert_int_equal(pending_read(f->fd, &q, &e), 0);
	assert_string_equal(q.id, p.id);
	assert_string_equal(q.driver_version, p.driver_version);
	assert_string_equal(q.reason, p.reason);
	assert_string_equal(q.waiting_for, p.waiting_for);
	assert_string_equal(q.since, p.since);
	assert_string_equal(q.module_type, "");
	assert_int_equal(
		scratch_write(
			f->fd, PENDING_FILE,
			"{\"id\": \"../x\", \"driver_version\": \"1\", \"reason\": \"driver_in_use\"}"),
		0);
	assert_int_equal(pending_read(f->fd, &q, &e), -1);
	assert_non_null(strstr(e.msg, "bad id '../x'"));
	err_clear(&e);
	assert_int_equal(
		scratch_write(f->fd, PENDING_FILE,
			      "{\"id\": \"a\", \"driver_version\": \"1\", \"reason\": \"whim\"}"),
		0);
	assert_int_equal(pending_read(f->fd, &q, &e), -1);
	err_clear(&e);
	assert_int_equal(scratch_write(f->fd, PENDING_FILE, "{\"id\""), 0);
	assert_int_equal(pending_read(f->fd, &q, &e), -1);
	err_clear(&e);
	assert_int_equal(pending_clear(f->fd, &e), 0);
	assert_int_equal(pending_clear(f->fd, &e), 0);
	assert_int_equal(pending_read(f->fd, &q, &e), 1);
}

/* The report of a withdrawn pending version: read back whole; a hostile one is damaged. */
static void test_failure_record(void **state)
{
	struct scratch_fixture *f = *state;
	struct pending_failure w = {.exit_code = 5}, q;
	static const char *const bad[] = {
		"[1]",
		"{\"driver_version\": 5, \"cause\": \"x\", \"exit_code\": 5}",
		"{\"driver_version\": \"1\", \"cause\": [], \"exit_code\": 5}",
		"{\"driver_version\": \"1\", \"cause\": \"x\", \"exit_code\": \"5\"}",
		"{\"driver_version\": \"1\", \"cause\": \"x\", \"exit_code\": 0}",
		"{\"driver_version\": \"1\", \"cause\": \"x\", \"exit_code\": 4294967301}",
		"{\"driver_version\": \"1\", \"cause\": \"x\"}",
	};
	char big[20 << 10];
	struct err e;

	err_clear(&e);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), 1);
	snprintf(w.driver_version, sizeof(w.driver_version), "550.90.07");
	snprintf(w.cause, sizeof(w.cause), "verify: module \"nvidia_uvm\": signature rejected");
	snprintf(w.failed_at, sizeof(w.failed_at), "2026-12-01T12:00:00Z");
	assert_int_equal(pending_failure_write(f->fd, &w, &e), 0);
	memset(&q, 0, sizeof(q));
	assert_int_equal(pending_failure_read(f->fd, &q, &e), 0);
	assert_string_equal(q.driver_version, w.driver_version);
	assert_string_equal(q.module_type, "");
	assert_string_equal(q.cause, w.cause);
	assert_string_equal(q.failed_at, w.failed_at);
	assert_int_equal(q.exit_code, 5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(scratch_write(f->fd, PENDING_FAILED_FILE, bad[i]), 0);
		q.exit_code = 99;
		assert_int_equal(pending_failure_read(f->fd, &q, &e), -1);
		assert_int_equal(q.exit_code, 99); /* untouched */
		err_clear(&e);
	}
	/* Larger than any report: refused, not parsed. */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	assert_int_equal(scratch_write(f->fd, PENDING_FAILED_FILE, big), 0);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), -1);
	err_clear(&e);
	/* A link to a sound report, and a FIFO (not waited on): neither is ours. */
	assert_int_equal(
		scratch_write(f->fd, "elsewhere.json",
			      "{\"driver_version\": \"1\", \"cause\": \"x\", \"exit_code\": 5}"),
		0);
	assert_int_equal(unlinkat(f->fd, PENDING_FAILED_FILE, 0), 0);
	assert_int_equal(symlinkat("elsewhere.json", f->fd, PENDING_FAILED_FILE), 0);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), -1);
	err_clear(&e);
	/* The install run's reader: a damaged report is removed (the link, not its target). */
	assert_int_equal(pfail_load(f->fd, f->fd, &q), 0);
	assert_int_equal(faccessat(f->fd, PENDING_FAILED_FILE, F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "elsewhere.json", F_OK, 0), 0);
	assert_int_equal(mkfifoat(f->fd, PENDING_FAILED_FILE, 0644), 0);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), -1);
	err_clear(&e);
	assert_int_equal(pfail_load(f->fd, f->fd, &q), 0);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), 1);
	assert_int_equal(pending_failure_write(f->fd, &w, &e), 0);
	assert_int_equal(pfail_load(f->fd, f->fd, &q), 1);
	assert_int_equal(pending_failure_clear(f->fd, &e), 0);
	assert_int_equal(pending_failure_clear(f->fd, &e), 0);
	assert_int_equal(pending_failure_read(f->fd, &q, &e), 1);
}

/* publish_cleanup keeps the current version and the pending one, and only those. */
static void test_cleanup_keeps_pending(void **state)
{
	struct scratch_fixture *f = *state;
	_cleanup_(publish_freep) struct installdir *d = NULL;
	struct pending p = rec("550.90.07-aaaaaaaaaaaa", PENDING_DRIVER_IN_USE);
	struct stat st;
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_mkdirs(f->fd, "idir/.versions/535.261.03-bbbbbbbbbbbb"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "idir/.versions/550.90.07-aaaaaaaaaaaa"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "idir/.versions/549.1.1-dddddddddddd"), 0);
	assert_int_equal(symlinkat(".versions/535.261.03-bbbbbbbbbbbb", f->fd, "idir/.current"), 0);
	assert_int_equal(publish_open(f->fd, "/idir", false, &d, &e), 0);
	assert_int_equal(pending_write(publish_fd(d), &p, &e), 0);
	assert_int_equal(publish_cleanup(d, &e), 0);
	assert_int_equal(fstatat(f->fd, "idir/.versions/535.261.03-bbbbbbbbbbbb", &st, 0), 0);
	assert_int_equal(fstatat(f->fd, "idir/.versions/550.90.07-aaaaaaaaaaaa", &st, 0), 0);
	assert_int_equal(fstatat(f->fd, "idir/.versions/549.1.1-dddddddddddd", &st, 0), -1);
	/* Withdrawn: the next cleanup removes it. */
	assert_int_equal(pending_clear(publish_fd(d), &e), 0);
	assert_int_equal(publish_cleanup(d, &e), 0);
	assert_int_equal(fstatat(f->fd, "idir/.versions/550.90.07-aaaaaaaaaaaa", &st, 0), -1);
	assert_int_equal(fstatat(f->fd, "idir/.versions/535.261.03-bbbbbbbbbbbb", &st, 0), 0);
}

/* The idle check names a workload's process, and not the installer's own. */
static void test_idle_ours(void **state)
{
	struct scratch_fixture *f = *state;
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	pid_t ours[] = {4242};
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_write(f->fd, "sys/module/nvidia/initstate", "live\n"), 0);
	assert_int_equal(scratch_write(f->fd, "sys/module/nvidia/refcnt", "0\n"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "sys/module/nvidia/holders"), 0);
	assert_int_equal(scratch_write(f->fd, "proc/4242/comm", "nvidia-driver-i\n"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/4242/fd"), 0);
	assert_int_equal(symlinkat("/dev/nvidiactl", f->fd, "proc/4242/fd/3"), 0);
	assert_int_equal(kmods_new(f->fd, "6.1.0-57-amd64", &k, &e), 0);
	assert_int_equal(kmods_check_idle(k, ours, 1, &e), 0);
	assert_int_equal(kmods_check_idle(k, NULL, 0, &e), -1);
	assert_int_equal(e.code, EXIT_IN_USE);
	assert_non_null(strstr(e.msg, "/dev/nvidiactl open in pid 4242 (nvidia-driver-i)"));
	err_clear(&e);
	assert_int_equal(scratch_write(f->fd, "proc/99/comm", "cuda-app\n"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/99/fd"), 0);
	assert_int_equal(symlinkat("/dev/nvidia0", f->fd, "proc/99/fd/4"), 0);
	assert_int_equal(kmods_check_idle(k, ours, 1, &e), -1);
	assert_non_null(strstr(e.msg, "/dev/nvidia0 open in pid 99 (cuda-app)"));
	assert_null(strstr(e.msg, "pid 4242"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		scratch_unit_test(test_record),
		scratch_unit_test(test_failure_record),
		scratch_unit_test(test_cleanup_keeps_pending),
		scratch_unit_test(test_idle_ours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
