// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <limits.h>
#include <string.h>

#include "unpack.h"

static int check(const char *name, char *out)
{
	struct err e;

	err_clear(&e);
	return unpack_check_path(name, out, PATH_MAX, &e);
}

static void test_paths_accepted(void **state)
{
	char out[PATH_MAX];

	(void)state;
	assert_int_equal(check("lib64/libcuda.so.1", out), 0);
	assert_string_equal(out, "lib64/libcuda.so.1");
	assert_int_equal(check("./kernel/nvidia.ko", out), 0);
	assert_string_equal(out, "kernel/nvidia.ko");
	assert_int_equal(check("firmware/nvidia/550.90.07/", out), 0);
	assert_string_equal(out, "firmware/nvidia/550.90.07");
	assert_int_equal(check("bin", out), 0);
	assert_int_equal(check("share/nvidia/..hidden", out), 0);
	/* The archive's own root carries nothing. */
	assert_int_equal(check("./", out), 1);
	assert_int_equal(check(".", out), 1);
}

static void test_paths_refused(void **state)
{
	static const char *const bad[] = {
		"/lib64/x",	  "../lib64/x", "lib64/../../x", "lib64/../bin/x", "lib64//x",
		"lib64/./x",	  "etc/passwd", "libs/x",	 "lib64x/y",	   "lib64/a\nb",
		"lib64/\x1b[31m", "..",		"kernel/..",	 "./../bin/x",	   "",
	};
	char out[PATH_MAX], longname[PATH_MAX + 8];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = check(bad[i], out);

		if (bad[i][0] == '\0') {
			assert_int_equal(r, 1);
			continue;
		}
		if (r != -1)
			fail_msg("'%s' was accepted", bad[i]);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	memcpy(longname, "lib64/", 6);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(check(longname, out), -1);
	memset(longname + 6, 'a', 300);
	longname[306] = '\0';
	assert_int_equal(check(longname, out), -1); /* component > NAME_MAX */
}

static int link_ok(const char *name, const char *target)
{
	struct err e;

	err_clear(&e);
	return unpack_check_symlink(name, target, &e);
}

static void test_symlinks(void **state)
{
	(void)state;
	assert_int_equal(link_ok("lib64/libcuda.so", "libcuda.so.1"), 0);
	assert_int_equal(link_ok("lib64/libcuda.so.1", "./libcuda.so.550"), 0);
	assert_int_equal(link_ok("bin/tool", "../lib64/tool"), 0);
	assert_int_equal(link_ok("firmware/nvidia/current", "550.90.07"), 0);
	assert_int_equal(link_ok("firmware/nvidia/x/y", "../../../bin/z"), 0);
	assert_int_equal(link_ok("bin/up", ".."), 0); /* the package root: inside */

	assert_int_equal(link_ok("bin/up", "../.."), -1);
	assert_int_equal(link_ok("lib64/l", "/etc/passwd"), -1);
	assert_int_equal(link_ok("lib64/l", ""), -1);
	assert_int_equal(link_ok("lib64/l", "a/../.."), -1);
	assert_int_equal(link_ok("lib64/l", "a/.."), -1);
	assert_int_equal(link_ok("lib64/a/b/c", "../../../../x"), -1);
	assert_int_equal(link_ok("lib64/l", "x\ny"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_accepted),
		cmocka_unit_test(test_paths_refused),
		cmocka_unit_test(test_symlinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
