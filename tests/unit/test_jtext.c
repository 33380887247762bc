// SPDX-License-Identifier: Apache-2.0
/*
 * util/jtext.h: JSON stepped over as text, by RFC 8259's grammar as Go's scanner holds it;
 * nesting bounded by the caller; an object's members in the order of the text.
 */
#include "cmocka_prelude.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/jtext.h"

/* Whether TEXT is one JSON value and nothing else but whitespace. */
static bool is_json(const char *text, size_t depth_max)
{
	const char *end = text + strlen(text), *after = jtext_value(text, end, depth_max);

	return after && jtext_ws(after, end) == end;
}

static void test_grammar(void **state)
{
	static const char *const good[] = {
		"0",
		"-0",
		"1",
		"-12.5e+3",
		"0.5E-1",
		"1e9",
		"1E+0",
		"\"\"",
		"\"a\\\"b\\\\/\\/\"",
		"\"\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
		"\"\xc3\xa9\"",
		"true",
		"false",
		"null",
		" \t\r\n[ ] ",
		"{}",
		"{ \"a\" : [1, {\"b\": null}, \"}\"], \"a\": {}}",
		"[[],[[]],{},{\"\":0}]",
	};
	/* What Go's scanner refuses, json-c takes some of it. */
	static const char *const bad[] = {
		"",	     " ",
		"01",	     "-",
		"+1",	     "1.",
		".5",	     "1e",
		"1e+",	     "0x10",
		"NaN",	     "Infinity",
		"-Infinity", "tru",
		"True",	     "nul",
		"'a'",	     "\"a",
		"\"a\tb\"",  "\"\\x\"",
		"\"\\u12\"", "\"\\u12g4\"",
		"\"\\",	     "[1,]",
		"[,1]",	     "[1 2]",
		"[1,,2]",    "{\"a\":1,}",
		"{,}",	     "{\"a\" 1}",
		"{\"a\":}",  "{a:1}",
		"{1:1}",     "{\"a\":1 \"b\":2}",
		"[}",	     "{]",
		"[[]",	     "[]]",
		"{\"a\":[}", "/* c */ 1",
		"1 // c",    "[1] [2]",
		"{} {}",     "1 2",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (!is_json(good[i], 8))
			fail_msg("refused: %s", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (is_json(bad[i], 8))
			fail_msg("taken: %s", bad[i]);
	/* A NUL byte is not JSON, in a string or between tokens. */
	assert_null(jtext_value("\"a\0b\"", "\"a\0b\"" + 5, 8));
	assert_null(jtext_value("[1,\0 2]", "[1,\0 2]" + 7, 8));
	/* Past the value, not past the whitespace after it; a number ends where its digits do. */
	{
		const char *t = " [1] , 2", *n = "12x", *q = "\"a\\\"b\" x";

		assert_ptr_equal(jtext_value(t, t + strlen(t), 8), t + 4);
		assert_ptr_equal(jtext_value(n, n + 3, 8), n + 2);
		assert_null(jtext_string(t + 1, t + strlen(t))); /* not a string */
		assert_ptr_equal(jtext_string(q, q + strlen(q)), q + 6);
	}
}

/* END bounds the text: whatever follows it is never read. */
static void test_end(void **state)
{
	static const char *const texts[] = {"[1]",  "{\"a\":1}", "\"abc\"",
					    "true", "-1.5e3",	 "\"\\u00e9\""};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		size_t n = strlen(texts[i]);
		char *copy = malloc(n);

		/* Exactly N bytes on the heap, no NUL after them: ASan sees a read past END. */
		assert_non_null(copy);
		memcpy(copy, texts[i], n);
		assert_ptr_equal(jtext_value(copy, copy + n, 8), copy + n);
		for (size_t cut = 0; cut < n; cut++) {
			const char *after = jtext_value(copy, copy + cut, 8);

			if (after && after > copy + cut)
				fail_msg("%s cut at %zu: read past its end", texts[i], cut);
		}
		free(copy);
	}
	/* Cut inside a bracket, a string or a literal: refused. */
	assert_null(jtext_value("[1]", "[1]" + 2, 8));
	assert_null(jtext_value("\"abc\"", "\"abc\"" + 4, 8));
	assert_null(jtext_value("true", "true" + 3, 8));
	assert_null(jtext_value("{\"a\":1}", "{\"a\":1}" + 6, 8));
}

/* N brackets of one kind opened, a value, N closed; objects as {"k":...}. */
static char *nested(size_t n, bool is_object)
{
	char *t = malloc(n * 6 + 2), *p = t;

	assert_non_null(t);
	for (size_t i = 0; i < n; i++) {
		size_t len = is_object ? 5 : 1;

		memcpy(p, is_object ? "{\"k\":" : "[", len);
		p += len;
	}
	*p++ = '1';
	for (size_t i = 0; i < n; i++)
		*p++ = is_object ? '}' : ']';
	*p = '\0';
	return t;
}

/* The caller's bound on the brackets open at once, exact at both sides, and the module's. */
static void test_depth(void **state)
{
	static const size_t bounds[] = {1, 2, 64, 65, 512};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bounds); i++) {
		for (int k = 0; k < 2; k++) {
			char *at = nested(bounds[i], k), *past = nested(bounds[i] + 1, k);

			if (!is_json(at, bounds[i]) || is_json(past, bounds[i]))
				fail_msg("bound %zu (%s) not held", bounds[i], k ? "{" : "[");
			free(at);
			free(past);
		}
	}
	/* 0: a scalar only. */
	assert_true(is_json("\"x\"", 0));
	assert_false(is_json("[]", 0));
	assert_false(is_json("{}", 0));
	/* Brackets closed do not count: depth is what is open at once. */
	assert_true(is_json("[[1],[2],{\"a\":[3]},[[]]]", 3));
	assert_false(is_json("[[1],[2],{\"a\":[[3]]},[[]]]", 3));
	/* Each closing bracket its own kind, at every depth of a mixed stack. */
	assert_true(is_json("[{\"a\":[{\"b\":[]}]}]", 5));
	assert_false(is_json("[{\"a\":[{\"b\":[]]}]}", 5));
	assert_false(is_json("[{\"a\":[{\"b\":[]}}]}", 5));
	/* A bound above the module's is the module's, crossed without recursion. */
	{
		char *at = nested(JTEXT_DEPTH_MAX, false),
		     *past = nested(JTEXT_DEPTH_MAX + 1, true);

		assert_true(is_json(at, SIZE_MAX));
		assert_false(is_json(past, SIZE_MAX));
		free(at);
		free(past);
	}
}

static bool span_is(struct jtext_span s, const char *text)
{
	return s.p && (size_t)(s.end - s.p) == strlen(text) && memcmp(s.p, text, strlen(text)) == 0;
}

/* The members in the order of the text, duplicates and all, each key and value as written. */
static void test_members(void **state)
{
	static const char *const want[][2] = {
		{"\"a\"", "1"},	   {"\"b\"", "[1, {\"c\": 2}]"}, {"\"a\"", "\"x\\\"y\""},
		{"\"A\"", "null"}, {"\"\\u0061\"", "{}"},
	};
	const char *t = " { \"a\": 1, \"b\" :[1, {\"c\": 2}],\"a\":\"x\\\"y\" , \"A\": null,"
			"\"\\u0061\":{} } ";
	const char *end = t + strlen(t);
	struct jtext_member m;
	struct jtext_walk w;
	size_t i = 0;
	int r;

	(void)state;
	assert_int_equal(jtext_walk_start(&w, t, end), 0);
	while ((r = jtext_walk_member(&w, 8, &m)) > 0) {
		assert_true(i < ARRAY_SIZE(want));
		if (!span_is(m.key, want[i][0]) || !span_is(m.value, want[i][1]))
			fail_msg("member %zu is not %s: %s", i, want[i][0], want[i][1]);
		i++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, ARRAY_SIZE(want));
	assert_ptr_equal(jtext_ws(w.p, end), end);
	assert_string_equal(w.p, " ");
}

/* An array's elements, a caller that steps over values itself, and a walk refused. */
static void test_walk(void **state)
{
	static const char *const bad[] = {"{\"a\":1,}", "{\"a\" 1}", "{,\"a\":1}", "[1 2]",
					  "[1,]",	"{\"a\":1]", "{\"a\":[}",  "[1"};
	const char *t = "[1, \"two\", {\"k\": [3]}, []]", *end = t + strlen(t);
	struct jtext_span key = {t, t};
	struct jtext_member m;
	struct jtext_walk w;
	size_t n = 0;
	int r;

	(void)state;
	assert_int_equal(jtext_walk_start(&w, t, end), 0);
	while ((r = jtext_walk_member(&w, 8, &m)) > 0) {
		assert_null(m.key.p);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 4);
	assert_ptr_equal(w.p, end);
	/* The caller moves past each value: here the first element's string only. */
	t = "{\"k\": \"v\", \"l\": 2}";
	end = t + strlen(t);
	assert_int_equal(jtext_walk_start(&w, t, end), 0);
	assert_int_equal(jtext_walk_next(&w, &key), 1);
	assert_true(span_is(key, "\"k\""));
	assert_string_equal(w.p, "\"v\", \"l\": 2}");
	w.p = jtext_string(w.p, end);
	assert_non_null(w.p);
	assert_int_equal(jtext_walk_next(&w, NULL), 1);
	assert_string_equal(w.p, "2}");
	w.p++;
	assert_int_equal(jtext_walk_next(&w, &key), 0);
	assert_ptr_equal(w.p, end);
	/* Not a container; a broken one refused where it breaks. */
	assert_int_equal(jtext_walk_start(&w, " 1", " 1" + 2), -1);
	assert_int_equal(jtext_walk_start(&w, "", "" + 0), -1);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		end = bad[i] + strlen(bad[i]);
		assert_int_equal(jtext_walk_start(&w, bad[i], end), 0);
		while ((r = jtext_walk_member(&w, 8, &m)) > 0)
			;
		if (r != -1)
			fail_msg("walked: %s", bad[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grammar), cmocka_unit_test(test_end),
		cmocka_unit_test(test_depth),	cmocka_unit_test(test_members),
		cmocka_unit_test(test_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
