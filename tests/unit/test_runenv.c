// SPDX-License-Identifier: Apache-2.0
/* runenv_in_container: each documented signal alone is seen and named; none, nothing is. */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <string.h>

#include "host/host.h"
#include "util/cleanup.h"

static const struct runenv_vars no_vars = {NULL, NULL};

static void test_nothing(void **state)
{
	struct scratch_fixture *f = *state;
	/* Set but empty is unset: `container=` is no engine's. */
	const struct runenv_vars empty = {"", ""};
	char sig[128] = "stale";

	assert_false(runenv_in_container(f->root, &no_vars, sig, sizeof(sig)));
	assert_string_equal(sig, "");
	assert_false(runenv_in_container(f->root, &empty, sig, sizeof(sig)));
	/* Files of the same names elsewhere, or a directory named like one, are not signals. */
	assert_int_equal(scratch_write(f->fd, "etc/.dockerenv", ""), 0);
	assert_int_equal(scratch_write(f->fd, "run/containerenv", ""), 0);
	assert_false(runenv_in_container(f->root, &no_vars, sig, sizeof(sig)));
}

static void test_files(void **state)
{
	struct scratch_fixture *f = *state;
	static const char *const files[] = {"/.dockerenv", "/run/.containerenv",
					    "/run/systemd/container"};
	char sig[128];

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[256];

		assert_int_equal(scratch_write(f->fd, files[i], ""), 0);
		assert_true(runenv_in_container(f->root, &no_vars, sig, sizeof(sig)));
		assert_string_equal(sig, files[i]);
		assert_int_equal(unlink(scratch_path(f, files[i], path, sizeof(path))), 0);
	}
	/* systemd's file names the manager; a word that is not printable is left out. */
	assert_int_equal(scratch_write(f->fd, "run/systemd/container", "lxc\n"), 0);
	assert_true(runenv_in_container(f->root, &no_vars, sig, sizeof(sig)));
	assert_string_equal(sig, "/run/systemd/container (lxc)");
	assert_int_equal(scratch_write(f->fd, "run/systemd/container", "a\033[2Jb\n"), 0);
	assert_true(runenv_in_container(f->root, &no_vars, sig, sizeof(sig)));
	assert_string_equal(sig, "/run/systemd/container");
}

static void test_variables(void **state)
{
	struct scratch_fixture *f = *state;
	const struct runenv_vars podman = {"podman", NULL}, pod = {NULL, "10.0.0.1"},
				 both = {"systemd-nspawn", "10.0.0.1"};
	char sig[128];

	assert_true(runenv_in_container(f->root, &podman, sig, sizeof(sig)));
	assert_string_equal(sig, "container=podman");
	assert_true(runenv_in_container(f->root, &pod, sig, sizeof(sig)));
	assert_string_equal(sig, "KUBERNETES_SERVICE_HOST");
	/* The first signal in the documented order is the one named. */
	assert_true(runenv_in_container(f->root, &both, sig, sizeof(sig)));
	assert_string_equal(sig, "container=systemd-nspawn");
	assert_int_equal(scratch_write(f->fd, ".dockerenv", ""), 0);
	assert_true(runenv_in_container(f->root, &pod, sig, sizeof(sig)));
	assert_string_equal(sig, "/.dockerenv");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_nothing),
		scratch_unit_test(test_files),
		scratch_unit_test(test_variables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
