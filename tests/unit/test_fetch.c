// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "source/fetch.h"
#include "util/log.h"

static void test_url_join(void **state)
{
	char *u;

	(void)state;
	u = fetch_url_join("https://m/repo/", "/index.json");
	assert_string_equal(u, "https://m/repo/index.json");
	free(u);
	u = fetch_url_join("file:///srv/repo", "packages/a.tar.zst");
	assert_string_equal(u, "file:///srv/repo/packages/a.tar.zst");
	free(u);
}

/* A scripted mirror: each call consumes the next result for that mirror. */
struct script {
	const char *base;
	enum fetch_result results[8];
	int codes[8];
	int calls;
};

static struct script scripts[3];

static enum fetch_result scripted(struct fetcher *f, const char *base, void *ud, struct err *e)
{
	(void)f;
	(void)ud;
	for (size_t i = 0; i < 3; i++) {
		struct script *s = &scripts[i];

		if (s->base && strcmp(s->base, base) == 0) {
			int n = s->calls++;

			if (s->results[n] != FETCH_OK)
				err_set(e, s->codes[n], "'%s': scripted failure %d", base, n);
			return s->results[n];
		}
	}
	fail_msg("unknown mirror %s", base);
	return FETCH_PERMANENT;
}

static int run(unsigned retries, size_t n, size_t first, size_t *ret_mirror, struct err *e)
{
	struct fetch_opts o = {.timeout_s = 30, .retries = retries};
	char *bases[3] = {(char *)"m0", (char *)"m1", (char *)"m2"};
	struct fetcher *f = NULL;
	int r;

	assert_int_equal(fetcher_new(&o, &f, e), 0);
	r = fetch_mirrors(
		f,
		&(struct fetch_request){
			.bases = bases, .n_bases = n, .first = first, .attempt = scripted},
		ret_mirror, e);
	fetcher_free(f);
	return r;
}

static void reset(void)
{
	memset(scripts, 0, sizeof(scripts));
	scripts[0].base = "m0";
	scripts[1].base = "m1";
	scripts[2].base = "m2";
}

static void test_failover(void **state)
{
	size_t used = 9;
	struct err e;

	(void)state;
	err_clear(&e);
	/* m0 transient, m1 answers: one round, no wait. */
	reset();
	scripts[0].results[0] = FETCH_TRANSIENT;
	scripts[0].codes[0] = EXIT_UNREACHABLE;
	assert_int_equal(run(3, 2, 0, &used, &e), 0);
	assert_int_equal(used, 1);
	assert_int_equal(scripts[0].calls, 1);

	/* Starting from mirror 1 (the one that served the index). */
	reset();
	assert_int_equal(run(3, 3, 1, &used, &e), 0);
	assert_int_equal(used, 1);
	assert_int_equal(scripts[0].calls, 0);

	/* A transient failure is retried in the next round; a permanent one is not. */
	reset();
	scripts[0].results[0] = FETCH_PERMANENT;
	scripts[0].codes[0] = EXIT_UNREACHABLE;
	scripts[1].results[0] = FETCH_TRANSIENT;
	scripts[1].codes[0] = EXIT_UNREACHABLE;
	assert_int_equal(run(2, 2, 0, &used, &e), 0);
	assert_int_equal(used, 1);
	assert_int_equal(scripts[0].calls, 1);
	assert_int_equal(scripts[1].calls, 2);
}

static void test_give_up(void **state)
{
	size_t used;
	struct err e;

	(void)state;
	err_clear(&e);
	/* All permanent: no second round, exit 4, both causes named. */
	reset();
	scripts[0].results[0] = scripts[1].results[0] = FETCH_PERMANENT;
	scripts[0].codes[0] = scripts[1].codes[0] = EXIT_UNREACHABLE;
	assert_int_equal(run(5, 2, 0, &used, &e), -1);
	assert_int_equal(e.code, EXIT_UNREACHABLE);
	assert_non_null(strstr(e.msg, "after 2 attempt(s)"));
	assert_non_null(strstr(e.msg, "'m0': scripted failure 0"));
	assert_non_null(strstr(e.msg, "'m1': scripted failure 0"));
	assert_non_null(strstr(e.hint, "--repo"));

	/* Bad content anywhere outranks unreachable mirrors. */
	reset();
	scripts[0].results[0] = FETCH_TRANSIENT;
	scripts[0].codes[0] = EXIT_UNREACHABLE;
	scripts[1].results[0] = FETCH_PERMANENT;
	scripts[1].codes[0] = EXIT_VERIFY;
	assert_int_equal(run(0, 2, 0, &used, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);

	/* Every mirror answered that the file is not there: a wrong URL, said apart. */
	reset();
	scripts[0].results[0] = scripts[1].results[0] = FETCH_MISSING;
	scripts[0].codes[0] = scripts[1].codes[0] = EXIT_UNREACHABLE;
	assert_int_equal(run(5, 2, 0, &used, &e), FETCH_ALL_MISSING);
	assert_int_equal(e.code, EXIT_UNREACHABLE);
	assert_int_equal(scripts[0].calls, 1);
	assert_non_null(strstr(e.msg, "every mirror answered that it has no such file"));
	assert_non_null(strstr(e.hint, "check the URL"));

	/* One missing, one down: an outage, not a typo. */
	reset();
	scripts[0].results[0] = FETCH_MISSING;
	scripts[0].codes[0] = EXIT_UNREACHABLE;
	scripts[1].results[0] = FETCH_TRANSIENT;
	scripts[1].codes[0] = EXIT_UNREACHABLE;
	assert_int_equal(run(0, 2, 0, &used, &e), -1);
	assert_int_equal(e.code, EXIT_UNREACHABLE);

	/* Retries exhausted on a transient fault: rounds = retries + 1. */
	reset();
	for (int i = 0; i < 3; i++) {
		scripts[0].results[i] = FETCH_TRANSIENT;
		scripts[0].codes[i] = EXIT_UNREACHABLE;
	}
	assert_int_equal(run(1, 1, 0, &used, &e), -1);
	assert_int_equal(scripts[0].calls, 2);
	assert_int_equal(e.code, EXIT_UNREACHABLE);
}

/* Origins as RFC 6454 compares them: what credentials and a challenge are held to. */
static void test_same_origin(void **state)
{
	(void)state;
	assert_true(fetch_same_origin("https://r.example/v2/a/", "https://R.Example:443/token"));
	assert_true(fetch_same_origin("http://r.example/x", "http://r.example:80"));
	assert_true(fetch_same_origin("https://[::1]:5000/v2/", "https://[::1]:5000/upload?x=1"));
	assert_true(fetch_same_origin("https://r.example?q", "https://r.example#f"));
	assert_false(fetch_same_origin("https://r.example/", "http://r.example/"));
	assert_false(fetch_same_origin("https://r.example/", "https://r.example:8443/"));
	assert_false(fetch_same_origin("https://r.example/", "https://s.example/"));
	assert_false(fetch_same_origin("https://r.example/", "https://r.example.evil/"));
	assert_false(fetch_same_origin("https://[::1]:5000/", "https://[::1]:5001/"));
	/* userinfo, no scheme, a bad port: no origin at all */
	assert_false(fetch_same_origin("https://u:p@r.example/", "https://r.example/"));
	assert_false(fetch_same_origin("r.example/v2/", "r.example/v2/"));
	assert_false(fetch_same_origin("https://r.example:99999/", "https://r.example:99999/"));
	assert_false(fetch_same_origin("https://r.example:44x/", "https://r.example:44x/"));
	assert_false(fetch_same_origin("https:///v2/", "https:///v2/"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_origin),
		cmocka_unit_test(test_url_join),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_give_up),
	};

	log_setup(LOG_FORMAT_TEXT, LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
