// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "cmd/config.h"
#include "publish.h"

static void test_strv(void **state)
{
	struct strv s = {0};

	(void)state;
	assert_int_equal(strv_push_split(&s, "a, b,,c ,"), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[0], "a");
	assert_string_equal(s.v[1], "b");
	assert_string_equal(s.v[2], "c");
	assert_null(s.v[3]);
	strv_clear(&s);
	assert_int_equal(s.n, 0);
}

static void test_env(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	err_clear(&e);
	setenv("ROOT_MOUNT_DIR", "/root", 1);
	setenv("NVIDIA_DRIVER_REPO", "https://a/r,file:///b", 1);
	setenv("NVIDIA_DRIVER_VERSION", "550", 1);
	setenv("NVIDIA_FETCH_TIMEOUT", "30", 1);
	setenv("NVIDIA_SKIP_MODULES", "yes", 1);
	assert_int_equal(config_init(&c, &e), 0);
	assert_string_equal(c.root, "/root");
	assert_int_equal(c.repos.n, 2);
	assert_string_equal(c.repos.v[1], "file:///b");
	assert_string_equal(c.driver_version, "550");
	assert_int_equal(c.fetch_timeout_s, 30);
	assert_true(c.skip_modules);
	assert_string_equal(c.install_dir, DEFAULT_INSTALL_DIR);
	/* Unset, the repository's max_age decides. */
	assert_int_equal(c.index_max_age_s, INDEX_MAX_AGE_REPO);
	assert_int_equal(config_validate(&c, &e), 0);
	config_done(&c);

	setenv("NVIDIA_INDEX_MAX_AGE", "0", 1);
	assert_int_equal(config_init(&c, &e), 0);
	assert_int_equal(c.index_max_age_s, 0);
	config_done(&c);
	setenv("NVIDIA_INDEX_MAX_AGE", "86401", 1);
	assert_int_equal(config_init(&c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "NVIDIA_INDEX_MAX_AGE"));
	config_done(&c);
	unsetenv("NVIDIA_INDEX_MAX_AGE");

	setenv("NVIDIA_FETCH_TIMEOUT", "-5", 1);
	assert_int_equal(config_init(&c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "NVIDIA_FETCH_TIMEOUT"));
	config_done(&c);
	unsetenv("NVIDIA_FETCH_TIMEOUT");
	unsetenv("ROOT_MOUNT_DIR");
	unsetenv("NVIDIA_DRIVER_REPO");
	unsetenv("NVIDIA_DRIVER_VERSION");
	unsetenv("NVIDIA_SKIP_MODULES");
}

static void test_validate(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(config_init(&c, &e), 0);
	assert_int_equal(config_validate(&c, &e), 0);
	assert_int_equal(config_set(&c.install_dir, "/home/../etc", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_int_equal(config_set(&c.install_dir, "/home/..x/nvidia", &e), 0);
	assert_int_equal(config_validate(&c, &e), 0);
	assert_int_equal(config_set(&c.install_dir, "/", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_int_equal(config_set(&c.install_dir, "/opt/nvidia", &e), 0);
	assert_int_equal(strv_push(&c.repos, "s3://bucket"), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_non_null(strstr(e.msg, "s3://bucket"));
	strv_clear(&c.repos);
	assert_int_equal(config_set(&c.kernel_release, "../x", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	config_done(&c);

	unsigned v = 7;
	assert_int_equal(config_set_uint(&v, "n", "12x", 0, 100, &e), -1);
	assert_int_equal(config_set_uint(&v, "n", "101", 0, 100, &e), -1);
	assert_int_equal(v, 7);
	assert_int_equal(config_set_uint(&v, "n", "100", 0, 100, &e), 0);
	assert_int_equal(v, 100);
}

static void test_manifest(void **state)
{
	struct manifest m = {
		.driver_version = (char *)"550.90.07",
		.kernel_release = (char *)"6.1.0-57-amd64",
		.package_sha256 = (char *)"ab",
		.package_size = 123456789012ull,
		.installed_at = (char *)"2026-11-30T00:00:00Z",
		.repository = (char *)"https://m/\"quoted\"",
	};
	struct manifest back;
	char *json = manifest_to_json(&m);
	struct err e;

	(void)state;
	err_clear(&e);
	assert_non_null(json);
	assert_int_equal(manifest_parse(json, strlen(json), &back, &e), 0);
	assert_string_equal(back.driver_version, m.driver_version);
	assert_string_equal(back.repository, m.repository);
	assert_int_equal(back.package_size, m.package_size);
	assert_null(back.os_id);
	manifest_done(&back);
	free(json);
	assert_int_equal(manifest_parse("{\"driver_version\":\"1\"}", 22, &back, &e), -1);
	assert_non_null(strstr(e.msg, "kernel_release"));
	assert_int_equal(manifest_parse("nope", 4, &back, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_manifest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
