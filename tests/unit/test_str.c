// SPDX-License-Identifier: Apache-2.0
/* util/str.h: formatting into fixed buffers refuses, or visibly marks, what does not fit. */
#include "cmocka_prelude.h"

#include <string.h>

#include "util/str.h"

/* str_fmt: a text that fits exactly is 0; one byte more is refused, never cut quietly. */
static void test_fmt_checked(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(str_fmt(buf, sizeof(buf), "%s", "1234567"), 0);
	assert_string_equal(buf, "1234567");
	assert_int_equal(str_fmt(buf, sizeof(buf), "%s-%d", "abc", 1234), -1);
	assert_int_equal(str_fmt(buf, sizeof(buf), "%s", ""), 0);
	assert_string_equal(buf, "");
}

/* str_fmt_cut: text for people; a cut says so with "...", a fit is left alone. */
static void test_fmt_cut(void **state)
{
	char buf[8];

	(void)state;
	str_fmt_cut(buf, sizeof(buf), "%s", "1234567");
	assert_string_equal(buf, "1234567");
	str_fmt_cut(buf, sizeof(buf), "%s", "12345678");
	assert_string_equal(buf, "1234...");
	str_fmt_cut(buf, 3, "%s", "12345678"); /* too small for the mark: plain cut */
	assert_string_equal(buf, "12");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_checked),
		cmocka_unit_test(test_fmt_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
