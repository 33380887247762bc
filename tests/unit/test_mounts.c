// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mounts.h"

/* A mountinfo of our own: /tmp is noexec, / is not. */
static void test_lookup(void **state)
{
	char mi[] = "/tmp/ndi-mountinfo-XXXXXX";
	struct mount_info m;
	struct err e;
	int fd = mkstemp(mi), dir;
	FILE *f = fdopen(fd, "w");

	(void)state;
	err_clear(&e);
	fprintf(f, "21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		   "22 21 0:20 / /tmp rw,nosuid,nodev,noexec,relatime shared:2 - tmpfs tmpfs rw\n");
	fclose(f);
	dir = open("/tmp", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mounts_lookup_fd(dir, mi, &m, &e), 0);
	assert_string_equal(m.target, "/tmp");
	assert_string_equal(m.fstype, "tmpfs");
	assert_true(m.noexec);
	close(dir);
	dir = open("/usr", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mounts_lookup_fd(dir, mi, &m, &e), 0);
	assert_string_equal(m.target, "/");
	assert_false(m.noexec);
	close(dir);
	assert_int_equal(mounts_lookup_fd(-1, mi, &m, &e), -1);
	unlink(mi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
