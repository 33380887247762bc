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
	/* Indented by two, a space after each colon, the slashes as they are, no newline at the end. */
	assert_string_equal(text, "{\n"
				  "  \"format\": 1,\n"
				  "  \"path\": \"/usr/lib/x\",\n"
				  "  \"list\": [\n"
				  "    \"a\"\n"
				  "  ]\n"
				  "}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
