// SPDX-License-Identifier: Apache-2.0
/* Version order: dpkg's and rpm's, on their documented cases and kernel releases. */
#include "cmocka_prelude.h"

#include "util/vercmp.h"

static int sign(int v)
{
	return v < 0 ? -1 : v > 0;
}

/* WANT: -1, 0 or 1 for A against B, and the reverse for B against A. */
static void order(int (*cmp)(const char *, const char *), const char *a, const char *b, int want)
{
	if (sign(cmp(a, b)) != want || sign(cmp(b, a)) != -want)
		fail_msg("'%s' against '%s': %d and %d, expected %d", a, b, sign(cmp(a, b)),
			 sign(cmp(b, a)), want);
}

static void test_dpkg(void **state)
{
	(void)state;
	/* Debian Policy 5.6.12's examples: '~' before all, even the end. */
	order(vercmp_dpkg, "1.0~rc1", "1.0", -1);
	order(vercmp_dpkg, "1.0~~", "1.0~~a", -1);
	order(vercmp_dpkg, "1.0~~a", "1.0~", -1);
	order(vercmp_dpkg, "1.0a", "1.0", 1);
	order(vercmp_dpkg, "1.0+", "1.0a", 1); /* letters before other characters */
	order(vercmp_dpkg, "1.0", "1.0-0", 0);
	order(vercmp_dpkg, "1.0", "1.0-1", -1);
	order(vercmp_dpkg, "1.010", "1.10", 0);
	order(vercmp_dpkg, "1:0.1", "2.0", 1); /* the epoch first */
	order(vercmp_dpkg, "0:2.0", "2.0", 0);
	/* Kernel releases: numbers as numbers. */
	order(vercmp_dpkg, "6.1.0-9-amd64", "6.1.0-58-amd64", -1);
	order(vercmp_dpkg, "6.1.0-58-amd64", "6.12.0-1-amd64", -1);
	order(vercmp_dpkg, "6.8.0-86-generic", "6.8.0-100-generic", -1);
	order(vercmp_dpkg, "6.8.0-86-generic", "6.8.0-86-generic", 0);
}

static void test_rpm(void **state)
{
	(void)state;
	order(vercmp_rpm, "1.0", "1.0", 0);
	order(vercmp_rpm, "1.0", "2.0", -1);
	order(vercmp_rpm, "2.0.1", "2.0", 1);
	order(vercmp_rpm, "2_0", "2.0", 0); /* separators only separate */
	order(vercmp_rpm, "1.01", "1.1", 0);
	order(vercmp_rpm, "1.0a", "1.0.1", -1); /* a number is newer than letters */
	order(vercmp_rpm, "1.0a", "1.0", 1);
	order(vercmp_rpm, "a", "b", -1);
	order(vercmp_rpm, "1.0~rc1", "1.0", -1);
	order(vercmp_rpm, "1.0~rc1", "1.0~rc2", -1);
	order(vercmp_rpm, "1.0^", "1.0", 1);
	order(vercmp_rpm, "1.0^git1", "1.0.1", -1);
	order(vercmp_rpm, "1.0^git1", "1.0^git2", -1);
	order(vercmp_rpm, "5.14.0-427.el9.x86_64", "5.14.0-503.11.1.el9_5.x86_64", -1);
	order(vercmp_rpm, "5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.el9.x86_64", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg),
		cmocka_unit_test(test_rpm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
