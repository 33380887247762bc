// SPDX-License-Identifier: Apache-2.0
/*
 * util/out.h: text for a terminal. What a value carries (a process's name, an index's
 * tag) is shown, but no control character in it reaches the terminal and no newline in
 * it starts a line of its own; UTF-8 that is text stays as it is.
 */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/out.h"

/* What out_text() writes for S. */
static char *shown(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	out_text(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect_shown(const char *s, const char *want)
{
	char *got = shown(s);

	assert_string_equal(got, want);
	free(got);
}

/* C0 controls, ESC's sequences among them, and DEL: one '?' each. */
static void test_c0_and_del(void **state)
{
	(void)state;
	expect_shown("x\033]0;owned\a\033[2Jy", "x?]0;owned??[2Jy");
	expect_shown("a\tb\rc\nd\177e\001", "a?b?c?d?e?");
	expect_shown("", "");
	expect_shown("plain text, 550.90.07 (open)", "plain text, 550.90.07 (open)");
}

/* C1 controls in UTF-8 (U+0080..U+009F; xterm obeys U+009B as CSI): one '?' per character. */
static void test_c1(void **state)
{
	(void)state;
	expect_shown("a\302\233"
		     "2Jb",
		     "a?2Jb");
	expect_shown("\302\200\302\237", "??");
	expect_shown("\302\240", "\302\240"); /* U+00A0, no-break space: text */
}

/* Bytes that are not UTF-8 (an 8-bit terminal reads 0x9b as CSI): one '?' per byte. */
static void test_not_utf8(void **state)
{
	(void)state;
	expect_shown("a\233b", "a?b");
	expect_shown("\377\376", "??");
	expect_shown("\300\257", "??");		/* overlong '/' */
	expect_shown("\355\240\200", "???");	/* a surrogate */
	expect_shown("cut \342\202", "cut ??"); /* a sequence cut by the end */
}

/* UTF-8 text is shown as it is: a GPU's or an OS's name may carry it. */
static void test_utf8_text(void **state)
{
	(void)state;
	expect_shown("Caf\303\251 \342\202\254 \360\237\232\200",
		     "Caf\303\251 \342\202\254 \360\237\232\200");
}

/* out_line: the format's text and its arguments, neutralised, and one newline of its own. */
static void test_line_and_part(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	out_part(f, "%s:", "a\nb");
	out_line(f, " %-6s|%d", "v\033", 7);
	out_line(f, "%s", "fake\nready: yes");
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "a?b: v?    |7\nfake?ready: yes\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c0_and_del),    cmocka_unit_test(test_c1),
		cmocka_unit_test(test_not_utf8),      cmocka_unit_test(test_utf8_text),
		cmocka_unit_test(test_line_and_part),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
