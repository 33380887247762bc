// SPDX-License-Identifier: Apache-2.0
/*
 * util/str.h: formatting into fixed buffers refuses, or visibly marks, what does not fit;
 * a growable buffer stops at its bound.
 */
#include "cmocka_prelude.h"

#include <errno.h>
#include <stdlib.h>
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

/* str_utf8_len, str_is_utf8: RFC 3629 (no overlong forms, surrogates, or past U+10FFFF). */
static void test_utf8(void **state)
{
	static const char *const good[] = {"",
					   "ascii",
					   "caf\xc3\xa9",
					   "\xe2\x82\xac",
					   "\xf0\x9f\x99\x82",
					   "\xf4\x8f\xbf\xbf",
					   "\xed\x9f\xbf"};
	static const char *const bad[] = {"\xff",
					  "\x80",
					  "\xc0\xaf",
					  "\xc3",
					  "\xe0\x80\xaf",
					  "\xed\xa0\x80",
					  "\xf4\x90\x80\x80",
					  "\xf0\x9f\x99",
					  "a\xfe"
					  "b"};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!str_is_utf8(good[i]))
			fail_msg("refused good[%zu]", i);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (str_is_utf8(bad[i]))
			fail_msg("accepted bad[%zu]", i);
	assert_int_equal(str_utf8_len("a"), 1);
	assert_int_equal(str_utf8_len("\xc3\xa9"), 2);
	assert_int_equal(str_utf8_len("\xe2\x82\xac"), 3);
	assert_int_equal(str_utf8_len("\xf0\x9f\x99\x82"), 4);
	assert_int_equal(str_utf8_len("\xc3"), 0);
}

static void test_strbuf(void **state)
{
	struct strbuf b = {0};
	char big[20000];

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(strbuf_append(&b, "ab", 2, 10), 0);
	assert_int_equal(strbuf_append(&b, "", 0, 10), 0);
	assert_string_equal(b.buf, "ab");
	/* Up to MAX exactly, not a byte past it; what it had stays. */
	assert_int_equal(strbuf_append(&b, "cdefghij", 8, 10), 0);
	assert_int_equal(b.len, 10);
	assert_int_equal(strbuf_append(&b, "k", 1, 10), -EFBIG);
	assert_string_equal(b.buf, "abcdefghij");
	assert_int_equal(strbuf_append(&b, "k", 1, (size_t)-1), 0);
	assert_int_equal(strbuf_append(&b, "k", (size_t)-1, (size_t)-1), -EFBIG);
	/* Grows past its first allocation, NUL-terminated. */
	assert_int_equal(strbuf_append(&b, big, sizeof(big), 1 << 20), 0);
	assert_int_equal(b.len, 11 + sizeof(big));
	assert_true(b.cap > b.len && b.buf[b.len] == '\0');
	free(b.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_checked),
		cmocka_unit_test(test_fmt_cut),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_strbuf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
