// SPDX-License-Identifier: Apache-2.0
/*
 * The JSON log writer: every line is one valid JSON object (json-c's strict parser, with
 * UTF-8 validation, is the judge), a value is a string whatever it looks like, and only a
 * field the caller typed with U64() is a number.
 */
#include "cmocka_prelude.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

/* Runs one log_kv() with fields K=V (a string) and n=N (a number); returns the line. */
static char *capture(const char *k, const char *v, uint64_t n)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	char *line = calloc(1, 8192);
	size_t got;

	assert_non_null(tmp);
	assert_non_null(line);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	log_setup(LOG_FORMAT_JSON, LOG_INFO);
	log_kv(LOG_INFO, "test", "an event", k, v, U64("n", n), LOG_END);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(tmp);
	got = fread(line, 1, 8191, tmp);
	fclose(tmp);
	assert_true(got > 0 && line[got - 1] == '\n');
	line[got - 1] = '\0';
	assert_null(strchr(line, '\n')); /* one event, one line */
	return line;
}

/* The line, parsed strictly; fails the test when it is not JSON. */
static json_object *parse(const char *line)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, line, (int)strlen(line) + 1);
	if (!o || json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("not JSON: %s", line);
	json_tokener_free(tok);
	assert_true(json_object_is_type(o, json_type_object));
	return o;
}

/* V goes out as a string, and comes back as WANT. */
static void expect_str(const char *v, const char *want)
{
	char *line = capture("value", v, 7);
	json_object *o = parse(line), *f, *n;

	assert_true(json_object_object_get_ex(o, "value", &f));
	if (!json_object_is_type(f, json_type_string))
		fail_msg("'%s' is not a string: %s", v, line);
	assert_string_equal(json_object_get_string(f), want);
	assert_true(json_object_object_get_ex(o, "n", &n));
	assert_true(json_object_is_type(n, json_type_int));
	assert_int_equal(json_object_get_int64(n), 7);
	json_object_put(o);
	free(line);
}

static void test_number_shaped_strings_stay_strings(void **state)
{
	(void)state;
	expect_str("550.90", "550.90"); /* a driver version, not 550.9 */
	expect_str("535", "535");
	expect_str("nan", "nan"); /* os-release ID=nan: bare, the line was no JSON */
	expect_str("inf", "inf");
	expect_str("-inf", "-inf");
	expect_str("1e5", "1e5");
	expect_str("0x10", "0x10");
	expect_str("007", "007");
	expect_str("-1", "-1");
	expect_str("", "");
}

static void test_strings_escaped(void **state)
{
	(void)state;
	expect_str("say \"hi\"\\", "say \"hi\"\\");
	expect_str("tab\there\nnew\x01\x1f\x7f", "tab\there\nnew\x01\x1f\x7f");
	expect_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		   "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

/* Bytes that are not UTF-8 become U+FFFD; the rest of the string stays. */
static void test_invalid_utf8_replaced(void **state)
{
	(void)state;
	expect_str("a\xff"
		   "b",
		   "a\xef\xbf\xbd"
		   "b");
	expect_str("\xc3", "\xef\xbf\xbd");				    /* truncated */
	expect_str("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");		    /* overlong '/' */
	expect_str("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
	expect_str("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

/* U64 is a number, as large as it gets; its mark never shows in the key. */
static void test_u64_is_a_number(void **state)
{
	char *line = capture("s", "x", UINT64_MAX);
	json_object *o = parse(line), *n;

	(void)state;
	assert_non_null(strstr(line, "\"n\":18446744073709551615"));
	assert_true(json_object_object_get_ex(o, "n", &n));
	assert_true(json_object_is_type(n, json_type_int));
	assert_null(strchr(line, '\x01'));
	json_object_put(o);
	free(line);
}

/*
 * A step's time in microseconds is rounded up: a stage that ran never reads as taking
 * none (the select stage over a small index takes well under a microsecond).
 */
static void test_us_since_rounds_up(void **state)
{
	(void)state;
	assert_true(us_since(now_ns()) >= 1);
	assert_true(us_since(now_ns() - 1500) >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_number_shaped_strings_stay_strings),
		cmocka_unit_test(test_strings_escaped),
		cmocka_unit_test(test_invalid_utf8_replaced),
		cmocka_unit_test(test_u64_is_a_number),
		cmocka_unit_test(test_us_since_rounds_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
