// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include "source/version.h"

static void test_valid(void **state)
{
	(void)state;
	assert_true(version_is_valid("550.90.07"));
	assert_true(version_is_valid("535"));
	assert_true(version_is_valid("1.2.3.4.5.6"));
	assert_false(version_is_valid("1.2.3.4.5.6.7"));
	assert_false(version_is_valid(""));
	assert_false(version_is_valid("550."));
	assert_false(version_is_valid(".550"));
	assert_false(version_is_valid("550..90"));
	assert_false(version_is_valid("v550"));
	assert_false(version_is_valid("550.90.07-beta"));
	assert_false(version_is_valid("1234567890"));
	assert_false(version_is_valid("550/90"));
	assert_false(version_is_valid(NULL));
}

static void test_compare(void **state)
{
	(void)state;
	assert_true(version_compare("550.90.07", "535.261.03") > 0);
	assert_true(version_compare("535.261.03", "550.90.07") < 0);
	/* Numeric, not lexical: 90 > 100 would be wrong. */
	assert_true(version_compare("550.100.1", "550.90.7") > 0);
	assert_int_equal(version_compare("550.90.07", "550.90.7"), 0);
	assert_true(version_compare("550", "550.90") < 0);
	assert_true(version_compare("550.90", "550") > 0);
	assert_int_equal(version_compare("1", "1"), 0);
}

static void test_matches(void **state)
{
	(void)state;
	assert_true(version_matches("550", "550.90.07"));
	assert_true(version_matches("550.90", "550.90.07"));
	assert_true(version_matches("550.90.7", "550.90.07"));
	assert_true(version_matches("550.90.07", "550.90.07"));
	assert_false(version_matches("55", "550.90.07"));
	assert_false(version_matches("550.9", "550.90.07"));
	assert_false(version_matches("550.90.07.1", "550.90.07"));
	assert_false(version_matches("535", "550.90.07"));
	assert_false(version_matches("x", "550.90.07"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_matches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
