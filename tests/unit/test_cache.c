// SPDX-License-Identifier: Apache-2.0
/*
 * The cache's record of when its index was fetched: what makes the index fresh or not; and
 * the OCI manifest the index came from, which makes a warm re-run ask a registry once.
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/cache.h"
#include "util/fs.h"

struct fixture {
	struct scratch_fixture s;
	struct cache *cache;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct err e;

	if (!f)
		return -1;
	*state = f;
	if (scratch_init(&f->s, "cache") < 0)
		return -1;
	return cache_open(f->s.fd, "/var/cache/ndi", true, &f->cache, &e) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	int r;

	cache_free(f->cache);
	r = scratch_fini(&f->s);
	free(f);
	return r;
}

static void put_file(struct fixture *f, const char *text)
{
	struct err e;
	int fd = fs_dir_in_root(f->s.fd, "/var/cache/ndi", false, &e);

	assert_true(fd >= 0);
	assert_int_equal(fs_write_atomic_at(fd, "index-fetched", text, strlen(text), 0644, &e), 0);
	close(fd);
}

static void test_fetch_record(void **state)
{
	struct fixture *f = *state;
	char a[] = "https://a.example/repo", b[] = "https://b.example/repo",
	     m[] = "file:///mnt/repo";
	char *two[] = {a, m}, *other[] = {b, m}, *swapped[] = {m, a};
	struct cache_index_fetch in = {.fetched_s = 1796011983, .max_age_s = 300, .served = 1};
	struct cache_index_fetch out;
	struct err e;

	err_clear(&e);
	/* None yet. */
	assert_int_equal(cache_index_fetch_get(f->cache, two, 2, &out), 0);
	assert_int_equal(cache_index_fetch_put(f->cache, two, 2, &in, &e), 0);
	memset(&out, 0, sizeof(out));
	assert_int_equal(cache_index_fetch_get(f->cache, two, 2, &out), 1);
	assert_int_equal(out.fetched_s, 1796011983);
	assert_int_equal(out.max_age_s, 300);
	assert_int_equal(out.served, 1);
	/* Only for exactly those mirrors, in that order. */
	assert_int_equal(cache_index_fetch_get(f->cache, other, 2, &out), 0);
	assert_int_equal(cache_index_fetch_get(f->cache, two, 1, &out), 0);
	assert_int_equal(cache_index_fetch_get(f->cache, swapped, 2, &out), 0);
	/* Dropped: none again; dropping none is no error. */
	assert_int_equal(cache_index_fetch_drop(f->cache, &e), 0);
	assert_int_equal(cache_index_fetch_get(f->cache, two, 2, &out), 0);
	assert_int_equal(cache_index_fetch_drop(f->cache, &e), 0);
}

static void test_fetch_record_damaged(void **state)
{
	static const char *const bad[] = {
		"",
		"fetched 1\nmax_age 300\nmirror m\n",		 /* no served */
		"fetched 1\nmax_age 300\nserved 1\nmirror m\n",	 /* served past the list */
		"fetched x\nmax_age 300\nserved 0\nmirror m\n",	 /* not a number */
		"fetched -1\nmax_age 300\nserved 0\nmirror m\n", /* before the epoch */
		"fetched -9223372036854775808\nmax_age 300\nserved 0\nmirror m\n",
		"fetched 99999999999999999999\nmax_age 300\nserved 0\nmirror m\n", /* overflows */
		"fetched 1\nmax_age 300junk\nserved 0\nmirror m\n",	   /* trailing bytes */
		"fetched 1\nmax_age 300\nserved 0\nmirror m\nmirror n\n",  /* another list */
		"fetched 1\nmax_age 300\nserved 0\nmirror m\nexpires 5\n", /* an unknown line */
		"fetched 1\nmax_age 300\nserved 0\nmirror m\n\0mirror n\n",
	};
	static const size_t bad_len[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50};
	struct fixture *f = *state;
	char m[] = "m", *one[] = {m};
	struct cache_index_fetch out;

	put_file(f, "fetched 1\nmax_age 300\nserved 0\nmirror m\n");
	assert_int_equal(cache_index_fetch_get(f->cache, one, 1, &out), 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad_len[i] ? bad_len[i] : strlen(bad[i]);
		struct err e;
		int fd = fs_dir_in_root(f->s.fd, "/var/cache/ndi", false, &e);

		assert_int_equal(fs_write_atomic_at(fd, "index-fetched", bad[i], len, 0644, &e), 0);
		close(fd);
		if (cache_index_fetch_get(f->cache, one, 1, &out) != 0)
			fail_msg("accepted record %zu", i);
	}
}

/* The record of an install that served from the cached index: put, read, removed. */
static void test_fallback_record(void **state)
{
	struct fixture *f = *state;
	char *text = NULL;
	struct err e;

	err_clear(&e);
	assert_int_equal(cache_fallback_get(f->cache, &text, &e), 1);
	assert_int_equal(cache_fallback_put(f->cache, "{\"reason\":\"not_found\"}", &e), 0);
	assert_int_equal(cache_fallback_get(f->cache, &text, &e), 0);
	assert_string_equal(text, "{\"reason\":\"not_found\"}");
	free(text);
	assert_int_equal(cache_fallback_put(f->cache, NULL, &e), 0);
	assert_int_equal(cache_fallback_get(f->cache, &text, &e), 1);
	/* Removing what is not there is no error (every run that used a mirror does it). */
	assert_int_equal(cache_fallback_put(f->cache, NULL, &e), 0);
}

static void test_manifest_record(void **state)
{
	struct fixture *f = *state;
	struct cache_manifest_kept k = {0};
	struct cache_manifest m = {.ref = "oci://r.example/drivers:latest",
				   .digest = "sha256:abc",
				   .auth = "bearer\thttps://auth.example/token\tr.example",
				   .buf = "{\"m\":1}",
				   .len = 7};
	struct err e;

	err_clear(&e);
	assert_int_equal(cache_manifest_get(f->cache, m.ref, &k), 0);
	assert_int_equal(cache_manifest_put(f->cache, &m, &e), 0);
	assert_int_equal(cache_manifest_get(f->cache, m.ref, &k), 1);
	assert_string_equal(k.digest, "sha256:abc");
	assert_string_equal(k.auth, m.auth);
	assert_int_equal(k.len, 7);
	assert_memory_equal(k.buf, m.buf, 7);
	free(k.buf);
	k.buf = NULL;
	/* Another mirror's reference, or one that only starts like it: none. */
	assert_int_equal(cache_manifest_get(f->cache, "oci://r.example/drivers:v2", &k), 0);
	assert_int_equal(cache_manifest_get(f->cache, "oci://r.example/drivers:late", &k), 0);
	/* No credentials asked for: an empty auth line. */
	m.auth = "";
	assert_int_equal(cache_manifest_put(f->cache, &m, &e), 0);
	assert_int_equal(cache_manifest_get(f->cache, m.ref, &k), 1);
	assert_string_equal(k.auth, "");
	free(k.buf);
	k.buf = NULL;
	/* A line break would forge the record's lines: not kept, the old one stays. */
	m.auth = "basic\ndigest sha256:evil";
	assert_int_equal(cache_manifest_put(f->cache, &m, &e), 0);
	assert_int_equal(cache_manifest_get(f->cache, m.ref, &k), 1);
	assert_string_equal(k.digest, "sha256:abc");
	free(k.buf);
	k.buf = NULL;
	/* Removed. */
	assert_int_equal(cache_manifest_put(f->cache, &(struct cache_manifest){0}, &e), 0);
	assert_int_equal(cache_manifest_get(f->cache, m.ref, &k), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fetch_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fetch_record_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallback_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manifest_record, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
