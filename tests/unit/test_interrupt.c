// SPDX-License-Identifier: Apache-2.0
/* util/interrupt.h: SIGTERM and SIGINT are recorded, not obeyed, until a safe point asks. */
#include "cmocka_prelude.h"

#include <signal.h>
#include <string.h>

#include "util/interrupt.h"

/* Before any signal a safe point lets the run go on; after SIGTERM it stops it, exit 143. */
static void test_sigterm_stops_at_check(void **state)
{
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(interrupt_setup(), 0);
	assert_int_equal(interrupt_signal(), 0);
	assert_int_equal(interrupt_check(&e, "the switch"), 0);
	assert_false(err_is_set(&e));
	/* The default action would end this test here. */
	assert_int_equal(raise(SIGTERM), 0);
	assert_int_equal(interrupt_signal(), SIGTERM);
	assert_int_equal(interrupt_check(&e, "the switch"), -1);
	assert_int_equal(e.code, 143);
	assert_string_equal(e.msg, "stopped by SIGTERM before the switch");
	assert_non_null(strstr(e.hint, "the next run completes"));
	/* A second signal, another one even, does not change why the run stops. */
	assert_int_equal(raise(SIGINT), 0);
	assert_int_equal(interrupt_signal(), SIGTERM);
	/* pause: a signal already received ends the wait at once. */
	assert_int_equal(interrupt_wait(), SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigterm_stops_at_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
