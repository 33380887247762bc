// SPDX-License-Identifier: Apache-2.0
/* util/tail.h: when the unpacker may read, and when what it read no longer counts. */
#include "cmocka_prelude.h"

#include <pthread.h>
#include <time.h>

#include "util/tail.h"

static void test_claims_what_is_written(void **state)
{
	struct tail t;

	(void)state;
	tail_init(&t);
	tail_written(&t, 1000);
	assert_int_equal(tail_claim(&t, 0, 256), 256);
	assert_int_equal(tail_claim(&t, 256, 4096), 744);
	tail_written(&t, 1500);
	assert_int_equal(tail_claim(&t, 1000, 4096), 500);
	tail_finish(&t, TAIL_COMPLETE);
	/* Past the end of a finished file: the end. */
	assert_int_equal(tail_claim(&t, 1500, 4096), 0);
	tail_destroy(&t);
}

static void test_cut_below_claim_is_stale(void **state)
{
	struct tail t;
	bool stale = false;

	(void)state;
	tail_init(&t);
	tail_written(&t, 1000);
	assert_int_equal(tail_claim(&t, 0, 600), 600);
	/* The server ignored the range: the file starts over under the reader. */
	tail_written(&t, 0);
	assert_int_equal(tail_claim(&t, 600, 100), -1);
	tail_written(&t, 5000);
	tail_finish(&t, TAIL_COMPLETE);
	assert_int_equal(tail_reader_done(&t, &stale), TAIL_COMPLETE);
	assert_true(stale);
	tail_destroy(&t);
}

static void test_cut_above_claim_is_not_stale(void **state)
{
	struct tail t;
	bool stale = true;

	(void)state;
	tail_init(&t);
	tail_written(&t, 1000);
	assert_int_equal(tail_claim(&t, 0, 300), 300);
	/* Cut back, but not below what was taken: those bytes are still the file's. */
	tail_written(&t, 300);
	tail_written(&t, 2000);
	assert_int_equal(tail_claim(&t, 300, 4096), 1700);
	tail_finish(&t, TAIL_COMPLETE);
	assert_int_equal(tail_reader_done(&t, &stale), TAIL_COMPLETE);
	assert_false(stale);
	tail_destroy(&t);
}

static void test_failed_writer(void **state)
{
	struct tail t;
	bool stale;

	(void)state;
	tail_init(&t);
	tail_written(&t, 100);
	tail_finish(&t, TAIL_FAILED);
	/* Even bytes that are there do not count once the download gave up. */
	assert_int_equal(tail_claim(&t, 0, 50), -1);
	assert_int_equal(tail_reader_done(&t, &stale), TAIL_FAILED);
	tail_destroy(&t);
}

struct writer {
	struct tail *t;
};

static void *slow_writer(void *ud)
{
	struct writer *w = ud;
	struct timespec ts = {0, 20 * 1000 * 1000};

	nanosleep(&ts, NULL);
	tail_written(w->t, 64);
	nanosleep(&ts, NULL);
	tail_finish(w->t, TAIL_COMPLETE);
	return NULL;
}

static void test_reader_waits_for_writer(void **state)
{
	struct tail t;
	struct writer w = {&t};
	pthread_t th;
	bool stale;

	(void)state;
	tail_init(&t);
	assert_int_equal(pthread_create(&th, NULL, slow_writer, &w), 0);
	/* Blocks until the writer has written something, then until it finished. */
	assert_int_equal(tail_claim(&t, 0, 4096), 64);
	assert_int_equal(tail_claim(&t, 64, 4096), 0);
	assert_int_equal(tail_reader_done(&t, &stale), TAIL_COMPLETE);
	assert_false(stale);
	pthread_join(th, NULL);
	tail_destroy(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claims_what_is_written),
		cmocka_unit_test(test_cut_below_claim_is_stale),
		cmocka_unit_test(test_cut_above_claim_is_not_stale),
		cmocka_unit_test(test_failed_writer),
		cmocka_unit_test(test_reader_waits_for_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
