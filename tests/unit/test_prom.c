// SPDX-License-Identifier: Apache-2.0
/*
 * util/prom: a family's HELP and TYPE lines, samples with and without labels, label values
 * escaped as the text exposition format requires (backslash, double quote, line feed; a
 * NULL value empty), and values printed with the family's decimals.
 */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/prom.h"

static const struct prom_family gauge = {"x_ready", PROM_GAUGE, "Whether it is ready."},
				counter = {"x_total", PROM_COUNTER, "Things, counted."},
				seconds = {"x_seconds", PROM_GAUGE, "Time.", 3};

/* What WRITE put in a stream, malloc'd. */
static char *written(void (*write)(FILE *f))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	write(f);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void heads(FILE *f)
{
	prom_head(f, &gauge);
	prom_head(f, &counter);
}

static void test_head(void **state)
{
	char *text = written(heads);

	(void)state;
	assert_string_equal(text, "# HELP x_ready Whether it is ready.\n"
				  "# TYPE x_ready gauge\n"
				  "# HELP x_total Things, counted.\n"
				  "# TYPE x_total counter\n");
	free(text);
}

static void samples(FILE *f)
{
	prom_sample(f, &counter, NULL, 0, 18446744073709.0);
	prom_sample(f, &counter, (const struct prom_label[]){{"gpu", "0000:3b:00"}, {"xid", "79"}},
		    2, 2);
	prom_sample(f, &gauge, &(struct prom_label){"version", NULL}, 1, 0);
	prom_single(f, &seconds, 3.5);
	prom_single(f, &seconds, 0.0004);
}

static void test_samples(void **state)
{
	char *text = written(samples);

	(void)state;
	assert_string_equal(text, "x_total 18446744073709\n"
				  "x_total{gpu=\"0000:3b:00\",xid=\"79\"} 2\n"
				  "x_ready{version=\"\"} 0\n"
				  "# HELP x_seconds Time.\n"
				  "# TYPE x_seconds gauge\n"
				  "x_seconds 3.500\n"
				  "# HELP x_seconds Time.\n"
				  "# TYPE x_seconds gauge\n"
				  "x_seconds 0.000\n");
	free(text);
}

static void escaped(FILE *f)
{
	prom_sample(f, &gauge,
		    (const struct prom_label[]){{"v", "a\\b\"c\nd"},
						{"k", "\\\\\"\"\n\n"},
						{"plain", "550.90.07 (open)"}},
		    3, 1);
}

/* Each of the three is escaped, each occurrence, and nothing else is touched. */
static void test_escape(void **state)
{
	char *text = written(escaped);

	(void)state;
	assert_string_equal(
		text,
		"x_ready{v=\"a\\\\b\\\"c\\nd\",k=\"\\\\\\\\\\\"\\\"\\n\\n\",plain=\"550.90.07 (open)\"} 1\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
