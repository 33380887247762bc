// SPDX-License-Identifier: Apache-2.0
/* util/jsonfile.h: the one form of the JSON files written on the host. */
#include "cmocka_prelude.h"

#include <stdlib.h>

#include "util/cleanup.h"
#include "util/jsonfile.h"

static void test_form(void **state)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	_cleanup_free_ char *text = NULL;

	(void)state;
	json_object_object_add(o, "format", json_object_new_int(1));
	json_object_object_add(o, "path", json_object_new_string("/usr/lib/x"));
	json_object_array_add(a, json_object_new_string("a"));
	json_object_object_add(o, "list", a);
	text = jsonfile_text(o);
	json_object_put(o);
	/* Indented by two, a space after each colon, slashes as they are, no newline at the end. */
	assert_string_equal(text, "{\n"
				  "  \"format\": 1,\n"
				  "  \"path\": \"/usr/lib/x\",\n"
				  "  \"list\": [\n"
				  "    \"a\"\n"
				  "  ]\n"
				  "}");
}

/*
 * Always UTF-8: a byte of a string, key or value, that is not (a module argument, a path,
 * a host file's text) is the escape of U+FFFD; well-formed text is left as it is.
 */
static void test_only_utf8(void **state)
{
	json_object *o = json_object_new_object();
	_cleanup_free_ char *text = NULL;

	(void)state;
	json_object_object_add(o, "k\xff", json_object_new_string("/opt/\xfe\xc3("));
	json_object_object_add(o, "ok", json_object_new_string("caf\xc3\xa9 \xf0\x9f\x99\x82"));
	/* Overlong, a surrogate, past U+10FFFF, cut short: each byte replaced. */
	json_object_object_add(
		o, "bad",
		json_object_new_string("\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82"));
	text = jsonfile_text(o);
	json_object_put(o);
	assert_string_equal(text, "{\n"
				  "  \"k\\ufffd\": \"/opt/\\ufffd\\ufffd(\",\n"
				  "  \"ok\": \"caf\xc3\xa9 \xf0\x9f\x99\x82\",\n"
				  "  \"bad\": \"\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd "
				  "\\ufffd\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\"\n"
				  "}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form),
		cmocka_unit_test(test_only_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
