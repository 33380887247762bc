// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "cmd/config.h"
#include "cmd/config_check.h"
#include "stage/publish.h"

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
	assert_int_equal(config_set(&c.kernel_release, "6.1.0", &e), 0);
	/* Not UTF-8: a host path, a module argument, refused where they enter. */
	assert_int_equal(config_set(&c.cache_dir, "/var/cache/\xff", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_non_null(strstr(e.msg, "--cache-dir (NVIDIA_CACHE_DIR) is not UTF-8"));
	assert_int_equal(config_set(&c.cache_dir, "/var/cache/caf\xc3\xa9", &e), 0);
	assert_int_equal(config_validate(&c, &e), 0);
	assert_int_equal(strv_push(&c.module_args, "nvidia.NVreg_X=\xfe"), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_non_null(strstr(e.msg, "is not UTF-8"));
	assert_int_equal(e.code, EXIT_USAGE);
	config_done(&c);

	unsigned v = 7;
	assert_int_equal(config_set_uint(&v, "n", "12x", 0, 100, &e), -1);
	assert_int_equal(config_set_uint(&v, "n", "101", 0, 100, &e), -1);
	assert_int_equal(v, 7);
	assert_int_equal(config_set_uint(&v, "n", "100", 0, 100, &e), 0);
	assert_int_equal(v, 100);
}

/* Runs config_init with one variable set; returns its result. */
static int init_with(struct config *c, const char *name, const char *value, struct err *e)
{
	int r;

	err_clear(e);
	setenv(name, value, 1);
	r = config_init(c, e);
	unsetenv(name);
	return r;
}

static void test_bool_spellings(void **state)
{
	static const char *const yes[] = {"1", "true", "TRUE", "yes", "Yes"};
	static const char *const no[] = {"0", "false", "no", "NO", ""};
	static const char *const bad[] = {"on", "off", "y", "2", "enabled", " 1"};
	struct config c;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		assert_int_equal(init_with(&c, "NVIDIA_SKIP_MODULES", yes[i], &e), 0);
		assert_true(c.skip_modules);
		config_done(&c);
	}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
		assert_int_equal(init_with(&c, "NVIDIA_SKIP_MODULES", no[i], &e), 0);
		assert_false(c.skip_modules);
		config_done(&c);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(init_with(&c, "NVIDIA_CDI_REPLACE", bad[i], &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, "NVIDIA_CDI_REPLACE"));
		config_done(&c);
	}
}

/* --imex-channel0 (SPEC50 interface 4): a boolean from NVIDIA_IMEX_CHANNEL0, off by default. */
static void test_imex_channel0(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	assert_int_equal(init_with(&c, "NVIDIA_UNRELATED_X", "1", &e), 0);
	assert_false(c.imex_channel0);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_IMEX_CHANNEL0", "yes", &e), 0);
	assert_true(c.imex_channel0);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_IMEX_CHANNEL0", "maybe", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "NVIDIA_IMEX_CHANNEL0"));
	config_done(&c);
}

/* --rdma (SPEC51): off by default, four words, peermem and dmabuf not with --skip-modules. */
static void test_rdma(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	assert_int_equal(init_with(&c, "NVIDIA_UNRELATED_X", "1", &e), 0);
	assert_string_equal(c.rdma, "off");
	assert_int_equal(config_validate(&c, &e), 0);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_RDMA", "dma-buf", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "'dma-buf' is not off, auto, peermem or dmabuf"));
	config_done(&c);
	setenv("NVIDIA_SKIP_MODULES", "yes", 1);
	assert_int_equal(init_with(&c, "NVIDIA_RDMA", "peermem", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	assert_non_null(strstr(e.msg, "--skip-modules leaves the kernel, and so the RDMA path"));
	config_done(&c);
	/* auto with --skip-modules: nothing to do, and nothing refused. */
	assert_int_equal(init_with(&c, "NVIDIA_RDMA", "auto", &e), 0);
	err_clear(&e);
	assert_int_equal(config_validate(&c, &e), 0);
	config_done(&c);
	unsetenv("NVIDIA_SKIP_MODULES");
}

/*
 * --driver-capabilities: its own variable, NVIDIA_INSTALLER_DRIVER_CAPABILITIES; the
 * toolkit's NVIDIA_DRIVER_CAPABILITIES (words such as display, compat32) is left alone, as
 * is_toolkit_var promises. A junk list is refused before any command starts (exit 2).
 */
static void test_driver_capabilities(void **state)
{
	static const char *const bad[] = {"compute,,video", "video,",	     " ",
					  "display",	    "compute video", "graphics,compat32"};
	struct config c;
	struct err e;

	(void)state;
	assert_int_equal(init_with(&c, "NVIDIA_DRIVER_CAPABILITIES", "display,compat32", &e), 0);
	assert_string_equal(c.driver_capabilities, "compute,utility");
	assert_int_equal(c.env_unknown.n, 0);
	assert_int_equal(config_validate(&c, &e), 0);
	config_done(&c);
	assert_int_equal(
		init_with(&c, "NVIDIA_INSTALLER_DRIVER_CAPABILITIES", " video , graphics ", &e), 0);
	assert_string_equal(c.driver_capabilities, " video , graphics ");
	assert_int_equal(config_validate(&c, &e), 0);
	/* Given empty on the command line: refused; an empty variable is an unset one. */
	assert_int_equal(config_set(&c.driver_capabilities, "", &e), 0);
	assert_int_equal(config_validate(&c, &e), -1);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_INSTALLER_DRIVER_CAPABILITIES", "", &e), 0);
	assert_string_equal(c.driver_capabilities, "compute,utility");
	config_done(&c);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(init_with(&c, "NVIDIA_INSTALLER_DRIVER_CAPABILITIES", bad[i], &e),
				 0);
		assert_int_equal(config_validate(&c, &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(
			e.msg, "--driver-capabilities (NVIDIA_INSTALLER_DRIVER_CAPABILITIES)"));
		assert_non_null(strstr(
			e.msg, "is not a comma list of compute, utility, video, graphics or all"));
		config_done(&c);
	}
}

static void test_empty_values(void **state)
{
	static const char *const refused[] = {"ROOT_MOUNT_DIR",	  "NVIDIA_INSTALL_DIR_HOST",
					      "NVIDIA_CACHE_DIR", "NVIDIA_INSTALL_DIR_CONTAINER",
					      "NVIDIA_CDI_DIR",	  "NVIDIA_CDI_KIND"};
	struct config c;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		assert_int_equal(init_with(&c, refused[i], "", &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, refused[i]));
		assert_non_null(strstr(e.msg, "empty"));
		config_done(&c);
	}
	/* An optional value left empty is unset: the default stands, and it was read. */
	assert_int_equal(init_with(&c, "NVIDIA_KERNEL_RELEASE", "", &e), 0);
	assert_null(c.kernel_release);
	assert_int_equal(c.env_used.n, 1);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_FETCH_TIMEOUT", "", &e), 0);
	assert_int_equal(c.fetch_timeout_s, 600);
	config_done(&c);
}

/* Whether the setting of row O is the same in A and B. */
static bool same_setting(const struct config *a, const struct config *b,
			 const struct config_option *o)
{
	const void *fa = (const char *)a + o->offset, *fb = (const char *)b + o->offset;
	const struct strv *la = fa, *lb = fb;
	const char *sa, *sb;

	switch (o->kind) {
	case CONFIG_STRING:
		sa = *(char *const *)fa, sb = *(char *const *)fb;
		return (!sa && !sb) || (sa && sb && strcmp(sa, sb) == 0);
	case CONFIG_LIST:
		for (size_t i = 0; i < la->n && la->n == lb->n; i++)
			if (strcmp(la->v[i], lb->v[i]) != 0)
				return false;
		return la->n == lb->n;
	case CONFIG_BOOL:
		return *(const bool *)fa == *(const bool *)fb;
	case CONFIG_UINT:
	case CONFIG_MAX_AGE:
		return *(const unsigned *)fa == *(const unsigned *)fb;
	case CONFIG_LOG_FORMAT:
		return a->log_format == b->log_format;
	case CONFIG_SPEED_FLOOR:
		return a->speed_floor_bytes == b->speed_floor_bytes &&
		       a->speed_floor_s == b->speed_floor_s;
	case CONFIG_COUNT:
	case CONFIG_HELP:
	case CONFIG_VERSION:
		break;
	}
	return true;
}

/*
 * The empty-value rule, for every variable of the table (a new one cannot skip it): an
 * empty variable of a CONFIG_NONEMPTY row is refused, naming it; any other is as if unset,
 * every setting the default's, and the configuration passes as the default one does.
 */
static void test_empty_rule_every_variable(void **state)
{
	struct config base, c;
	struct err e;
	size_t n = 0;

	(void)state;
	err_clear(&e);
	assert_int_equal(config_init(&base, &e), 0);
	assert_int_equal(config_validate(&base, &e), 0);
	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *o = &config_options[i];

		if (!o->env)
			continue;
		n++;
		if (o->flags & CONFIG_NONEMPTY) {
			assert_int_equal(init_with(&c, o->env, "", &e), -1);
			assert_int_equal(e.code, EXIT_USAGE);
			assert_non_null(strstr(e.msg, o->env));
			assert_non_null(strstr(e.msg, "is set but empty"));
			config_done(&c);
			continue;
		}
		if (init_with(&c, o->env, "", &e) != 0)
			fail_msg("%s=\"\": refused (%s), but the table takes it as unset", o->env,
				 e.msg);
		for (size_t j = 0; j < config_n_options; j++)
			if (!same_setting(&base, &c, &config_options[j]))
				fail_msg("%s=\"\" changed --%s from its default", o->env,
					 config_options[j].name);
		if (config_validate(&c, &e) != 0)
			fail_msg("%s=\"\": refused later (%s)", o->env, e.msg);
		config_done(&c);
	}
	assert_true(n > 20);
	config_done(&base);
	/* The two docs/configuration.md names as examples (they were refused). */
	assert_int_equal(init_with(&c, "NVIDIA_WHEN_BUSY", "", &e), 0);
	assert_string_equal(c.when_busy, "fail");
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_KERNEL_MODULE_TYPE", "", &e), 0);
	assert_string_equal(c.kernel_module_type, "auto");
	config_done(&c);
}

static void test_kinds_and_limits(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	assert_int_equal(init_with(&c, "NVIDIA_FETCH_RETRIES", "100", &e), 0);
	assert_int_equal(c.fetch_retries, 100);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_FETCH_RETRIES", "101", &e), -1);
	assert_non_null(strstr(e.msg, "NVIDIA_FETCH_RETRIES: '101' is not a number from 0 to 100"));
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_FETCH_SPEED_FLOOR", "10:5", &e), 0);
	assert_int_equal(c.speed_floor_bytes, 10);
	assert_int_equal(c.speed_floor_s, 5);
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_FETCH_SPEED_FLOOR", "10", &e), -1);
	assert_non_null(strstr(e.msg, "NVIDIA_FETCH_SPEED_FLOOR"));
	config_done(&c);
	assert_int_equal(init_with(&c, "NVIDIA_INSTALLER_LOG_FORMAT", "yaml", &e), -1);
	assert_non_null(strstr(e.msg, "NVIDIA_INSTALLER_LOG_FORMAT"));
	config_done(&c);
	/* Defaults come from the table. */
	assert_int_equal(init_with(&c, "NVIDIA_UNRELATED_TEST", "x", &e), 0);
	assert_string_equal(c.root, "/");
	assert_string_equal(c.cache_dir, DEFAULT_CACHE_DIR);
	assert_string_equal(c.cdi_kind, "nvidia.com/gpu");
	assert_int_equal(c.fetch_retries, 5);
	assert_int_equal(c.speed_floor_bytes, 1024);
	assert_int_equal(c.log_format, LOG_FORMAT_TEXT);
	config_done(&c);
}

/* The command line's list replaces the environment's, and splits on commas as it does. */
static void test_list_rule(void **state)
{
	static const char *const lists[] = {"repo",    "repo-key",   "module-cert",
					    "modules", "module-arg", "host-mount"};
	struct config c;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		const struct config_option *o = config_option_find(lists[i], CFG_INSTALL);
		bool *cleared = calloc(config_n_options, sizeof(bool));
		struct strv *field;

		assert_non_null(o);
		assert_non_null(o->env);
		assert_int_equal(init_with(&c, o->env, "env1, env2", &e), 0);
		field = (struct strv *)((char *)&c + o->offset);
		assert_int_equal(field->n, 2);
		assert_int_equal(config_apply_arg(&c, o, "a,b", cleared, &e), 0);
		assert_int_equal(config_apply_arg(&c, o, "c", cleared, &e), 0);
		assert_int_equal(field->n, 3);
		assert_string_equal(field->v[0], "a");
		assert_string_equal(field->v[1], "b");
		assert_string_equal(field->v[2], "c");
		config_done(&c);
		free(cleared);
	}
}

static void test_near_miss(void **state)
{
	(void)state;
	assert_string_equal(config_near_miss("NVIDIA_DRIVER_VERSON"), "NVIDIA_DRIVER_VERSION");
	assert_string_equal(config_near_miss("NVIDIA_DRIVER_VRESION"), "NVIDIA_DRIVER_VERSION");
	assert_string_equal(config_near_miss("NVIDIA_DRIVR_REPO_KY"), "NVIDIA_DRIVER_REPO_KEY");
	assert_null(config_near_miss("NVIDIA_DRIVER_ROOT"));
	assert_null(config_near_miss("NVIDIA_INSTALL_DIR"));
	assert_null(config_near_miss("NVIDIA_FUTURE_OPTION"));
}

static void test_unknown_env(void **state)
{
	struct config c;
	struct err e;

	(void)state;
	err_clear(&e);
	setenv("NVIDIA_VISIBLE_DEVICES", "all", 1);
	setenv("NVIDIA_MIG_CONFIG_DEVICES", "all", 1);
	setenv("NVIDIA_REQUIRE_CUDA", "cuda>=12", 1);
	setenv("NVIDIA_DISABLE_REQUIRE", "1", 1);
	setenv("NVIDIA_DRIVER_VERSON", "550", 1);
	assert_int_equal(config_init(&c, &e), 0);
	assert_int_equal(c.env_unknown.n, 1);
	assert_string_equal(c.env_unknown.v[0], "NVIDIA_DRIVER_VERSON");
	/* install refuses the near miss; the other commands warn. */
	assert_int_equal(config_check_env(&c, true, &e), -1);
	assert_non_null(strstr(e.msg, "did you mean NVIDIA_DRIVER_VERSION"));
	err_clear(&e);
	assert_int_equal(config_check_env(&c, false, &e), 0);
	config_done(&c);
	unsetenv("NVIDIA_VISIBLE_DEVICES");
	unsetenv("NVIDIA_MIG_CONFIG_DEVICES");
	unsetenv("NVIDIA_REQUIRE_CUDA");
	unsetenv("NVIDIA_DISABLE_REQUIRE");
	unsetenv("NVIDIA_DRIVER_VERSON");
}

/* The table's own invariants: names, variables and json keys unique where they must be. */
static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *a = &config_options[i];

		assert_non_null(a->help);
		assert_true(!a->value || a->kind != CONFIG_LIST);
		for (size_t j = i + 1; j < config_n_options; j++) {
			const struct config_option *b = &config_options[j];

			if (strcmp(a->name, b->name) == 0)
				assert_int_equal(a->cmds & b->cmds, 0);
			if (a->env && b->env)
				assert_string_not_equal(a->env, b->env);
			if (a->json && b->json)
				assert_string_not_equal(a->json, b->json);
		}
	}
}

/*
 * Per-command wordings: each names commands that take the option, no command twice (the
 * first entry would hide the second), and config_option_help picks it for those commands
 * alone.
 */
static void test_help_for(void **state)
{
	const struct config_option *json = config_option_find("json", CFG_VERIFY);

	(void)state;
	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *o = &config_options[i];
		unsigned seen = 0;

		for (size_t k = 0; k < CONFIG_HELP_FOR_MAX && o->help_for[k].help; k++) {
			unsigned cmds = o->help_for[k].cmds;

			assert_int_not_equal(cmds, 0);
			assert_int_equal(cmds & ~o->cmds, 0);
			assert_int_equal(cmds & seen, 0);
			seen |= cmds;
			for (unsigned bit = 1; bit <= cmds; bit <<= 1) {
				if (cmds & bit)
					assert_ptr_equal(config_option_help(o, bit),
							 o->help_for[k].help);
			}
			assert_string_not_equal(o->help_for[k].help, o->help);
		}
		for (unsigned bit = 1; bit & CFG_ALL; bit <<= 1) {
			if (!(seen & bit))
				assert_ptr_equal(config_option_help(o, bit), o->help);
		}
	}
	/* --json means something else to install than to verify-module. */
	assert_non_null(json);
	assert_ptr_equal(json, config_option_find("json", CFG_INSTALL));
	assert_string_not_equal(config_option_help(json, CFG_INSTALL),
				config_option_help(json, CFG_VERIFY));
	assert_non_null(strstr(config_option_help(json, CFG_INSTALL), "--dry-run"));
}

/* --root or ROOT_MOUNT_DIR given, even as "/", is the operator's word (host/runenv.c). */
static void test_root_given(void **state)
{
	bool cleared[256] = {false};
	struct config c;
	struct err e;

	(void)state;
	assert_true(config_n_options <= 256);
	err_clear(&e);
	unsetenv("ROOT_MOUNT_DIR");
	assert_int_equal(config_init(&c, &e), 0);
	assert_false(c.root_given);
	assert_string_equal(c.root, "/");
	assert_int_equal(
		config_apply_arg(&c, config_option_find("root", CFG_INSTALL), "/", cleared, &e), 0);
	assert_true(c.root_given);
	config_done(&c);
	setenv("ROOT_MOUNT_DIR", "/", 1);
	assert_int_equal(config_init(&c, &e), 0);
	assert_true(c.root_given);
	config_done(&c);
	unsetenv("ROOT_MOUNT_DIR");
	/* Another option given is not --root. */
	assert_int_equal(config_init(&c, &e), 0);
	assert_int_equal(config_apply_arg(&c, config_option_find("cache-dir", CFG_INSTALL), "/x",
					  cleared, &e),
			 0);
	assert_false(c.root_given);
	config_done(&c);
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
		cmocka_unit_test(test_bool_spellings),
		cmocka_unit_test(test_imex_channel0),
		cmocka_unit_test(test_rdma),
		cmocka_unit_test(test_driver_capabilities),
		cmocka_unit_test(test_empty_values),
		cmocka_unit_test(test_kinds_and_limits),
		cmocka_unit_test(test_list_rule),
		cmocka_unit_test(test_near_miss),
		cmocka_unit_test(test_unknown_env),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_help_for),
		cmocka_unit_test(test_root_given),
		cmocka_unit_test(test_empty_rule_every_variable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
