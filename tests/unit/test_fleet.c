// SPDX-License-Identifier: Apache-2.0
/*
 * source/fleet.c: the fleet file coverage --fleet and scripts/build-fleet read. A row's
 * values and their defaults, and every refusal with the row and key it names.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "source/source.h"

static struct fleet *parse(const char *text, struct err *e)
{
	struct fleet *f = NULL;

	err_clear(e);
	if (fleet_parse(text, strlen(text), &f, e) < 0)
		return NULL;
	return f;
}

static void test_rows(void **state)
{
	struct err e;
	char label[128];
	struct fleet *f = parse(
		"{\"fleet\": 1, \"images\": ["
		"{\"name\": \"a100-pool\", \"os\": \"cos\", \"build\": \"18244.151.14\","
		" \"kernel\": \"6.1.100+\", \"arch\": \"aarch64\", \"driver_versions\": [\"535.261.03\","
		" \"default\"], \"flavours\": [\"open\", \"proprietary\"], \"gpus\": [\"10de:20b0\"],"
		" \"module_signer\": \"Google GPU\", \"build_args\": [\"--source\", \"/s/{version}\"]},"
		"{\"os\": \"ubuntu\", \"kernel\": \"6.8.0-86-generic\", \"driver_versions\": [\"550\"]}]}",
		&e);

	(void)state;
	assert_non_null(f);
	assert_int_equal(f->n_rows, 2);
	assert_string_equal(f->rows[0].os_build, "18244.151.14");
	assert_string_equal(f->rows[0].arch, "aarch64");
	assert_int_equal(f->rows[0].versions.n, 2);
	assert_string_equal(f->rows[0].versions.v[1], "default");
	assert_string_equal(f->rows[0].flavours.v[0], "open");
	assert_string_equal(f->rows[0].gpus.v[0], "10de:20b0");
	assert_string_equal(f->rows[0].module_signer, "Google GPU");
	fleet_row_label(&f->rows[0], label, sizeof(label));
	assert_string_equal(label, "a100-pool");
	/* Defaults: x86_64, the auto flavour, no build, no signer. */
	assert_null(f->rows[1].os_build);
	assert_null(f->rows[1].module_signer);
	assert_string_equal(f->rows[1].arch, "x86_64");
	assert_int_equal(f->rows[1].flavours.n, 1);
	assert_string_equal(f->rows[1].flavours.v[0], "auto");
	fleet_row_label(&f->rows[1], label, sizeof(label));
	assert_string_equal(label, "ubuntu kernel 6.8.0-86-generic (x86_64)");
	fleet_free(f);
}

static void refused(const char *text, const char *msg)
{
	struct err e;
	struct fleet *f = parse(text, &e);

	assert_null(f);
	assert_int_equal(e.code, EXIT_USAGE);
	if (!strstr(e.msg, msg))
		fail_msg("'%s' lacks '%s'", e.msg, msg);
}

#define ROW "\"os\": \"cos\", \"kernel\": \"6.1.100+\", \"driver_versions\": [\"535.261.03\"]"

static void test_refusals(void **state)
{
	(void)state;
	refused("[]", "is not a JSON object");
	refused("{\"fleet\": 1, \"images\": [{" ROW "}]} x", "not valid JSON at byte 97");
	refused("{\"fleet\": 1, \"images\": [{" ROW "},]}", "not valid JSON at byte");
	refused("{\"images\": [{" ROW "}]}", "does not say \"fleet\": 1");
	refused("{\"fleet\": 2, \"images\": [{" ROW "}]}", "does not say \"fleet\": 1");
	refused("{\"fleet\": 1, \"images\": []}", "is not a list of 1 to 4096 rows");
	refused("{\"fleet\": 1, \"images\": [{" ROW "}], \"imags\": 1}", "unknown key \"imags\"");
	refused("{\"fleet\": 1, \"images\": [{" ROW "}, {" ROW ", \"kernal\": \"x\"}]}",
		"images[1]: unknown key \"kernal\"");
	refused("{\"fleet\": 1, \"images\": [{\"kernel\": \"6.1.100+\", \"driver_versions\": "
		"[\"535.261.03\"]}]}",
		"images[0] has no \"os\"");
	refused("{\"fleet\": 1, \"images\": [{\"os\": \"cos\", \"kernel\": \"6.1.100+\"}]}",
		"images[0] has no \"driver_versions\"");
	refused("{\"fleet\": 1, \"images\": [{" ROW ", \"build\": \"\"}]}",
		"images[0]: \"build\" is not a string of 1 to 256 printable characters");
	refused("{\"fleet\": 1, \"images\": [{" ROW ", \"build\": 18244}]}",
		"\"build\" is not a string");
	refused("{\"fleet\": 1, \"images\": [{\"os\": \"cos\", \"kernel\": \"a\\nb\", "
		"\"driver_versions\": [\"1.2.3\"]}]}",
		"\"kernel\" is not a string");
	refused("{\"fleet\": 1, \"images\": [{\"os\": \"cos\", \"kernel\": \"k\", "
		"\"driver_versions\": []}]}",
		"\"driver_versions\" is not a list of 1 to 64 strings");
	refused("{\"fleet\": 1, \"images\": [{\"os\": \"cos\", \"kernel\": \"k\", "
		"\"driver_versions\": [\"1.2.3\", \"1.2.3\"]}]}",
		"\"driver_versions\" lists '1.2.3' twice");
	refused("{\"fleet\": 1, \"images\": [{" ROW ", \"flavours\": [\"closed\"]}]}",
		"images[0]: flavour 'closed' is not proprietary, open or auto");
	refused("{\"fleet\": 1, \"images\": [{" ROW ", \"gpus\": [3]}]}",
		"\"gpus\"[0] is not a printable string");
	refused("{\"fleet\": 1, \"images\": [{" ROW ", \"build_args\": \"--source x\"}]}",
		"\"build_args\" is not a list");
	refused("{\"fleet\": 1, \"images\": [7]}", "images[0] is not an object");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
