// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"
#include "scratch.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "expose/mounts.h"

/* A mountinfo of our own: /tmp is noexec, / is not. */
static void test_lookup(void **state)
{
	struct scratch_fixture *f = *state;
	struct mount_info m;
	struct err e;
	char mi[128];
	int dir;

	err_clear(&e);
	assert_int_equal(
		scratch_write(
			f->fd, "mountinfo",
			"21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
			"22 21 0:20 / /tmp rw,nosuid,nodev,noexec,relatime shared:2 - tmpfs tmpfs rw\n"),
		0);
	scratch_path(f, "mountinfo", mi, sizeof(mi));
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
