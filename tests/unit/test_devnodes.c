// SPDX-License-Identifier: Apache-2.0
/*
 * GDRCopy's and GPUDirect Storage's device nodes (kernel/devnodes.c) on a scratch host root:
 * /dev/gdrdrv and /dev/nvidia-fs0..N-1 made with the majors of /proc/devices, mode 0666 and
 * root-owned as NVIDIA/gdrcopy insmod.sh and nvidia-fs's devnode callback make them, a
 * stale major (a reload moved it) replaced with its /dev/char link, and all removed on
 * uninstall. mknod works here (root on the build host: docs/testing.md).
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "kernel/devnodes.h"
#include "util/fs.h"

#define DEVICES "Character devices:\n  1 mem\n195 nvidia\n%d gdrdrv\n%d nvidia-fs\n"

static void host(struct scratch_fixture *f, int gdr, int nvfs, const char *max_devices)
{
	char devices[256];

	snprintf(devices, sizeof(devices), DEVICES, gdr, nvfs);
	assert_int_equal(scratch_write(f->fd, "proc/devices", devices), 0);
	assert_int_equal(scratch_write(f->fd, "proc/driver/nvidia/params",
				       "ModifyDeviceFiles: 1\nDeviceFileUID: 0\nDeviceFileGID: 0\n"
				       "DeviceFileMode: 438\n"),
			 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/driver/nvidia/gpus"), 0);
	if (max_devices)
		assert_int_equal(scratch_write(f->fd, "sys/module/nvidia_fs/parameters/max_devices",
					       max_devices),
				 0);
}

static void assert_node(struct scratch_fixture *f, const char *rel, unsigned major, unsigned minor)
{
	struct stat st;

	assert_int_equal(fstatat(f->fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(major(st.st_rdev), major);
	assert_int_equal(minor(st.st_rdev), minor);
	assert_int_equal(st.st_mode & 07777, 0666);
	assert_int_equal(st.st_uid, 0);
}

static void assert_link(struct scratch_fixture *f, const char *rel, const char *target)
{
	char buf[64];
	ssize_t n = readlinkat(f->fd, rel, buf, sizeof(buf) - 1);

	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, target);
}

static void test_made_from_proc_devices(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;
	struct err e;
	char rel[64];

	host(f, 510, 509, NULL);
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_node(f, "dev/gdrdrv", 510, 0);
	assert_link(f, "dev/char/510:0", "../gdrdrv");
	for (unsigned i = 0; i < 16; i++) {
		snprintf(rel, sizeof(rel), "dev/nvidia-fs%u", i);
		assert_node(f, rel, 509, i);
	}
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fs16", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_link(f, "dev/char/509:15", "../nvidia-fs15");
	/* Again: all kept. */
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_int_equal(r.created + r.replaced + r.fixed, 0);
}

static void test_max_devices_and_reload(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;
	struct err e;

	host(f, 510, 509, "2\n");
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_node(f, "dev/nvidia-fs1", 509, 1);
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fs2", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	/* A reload gave gdrdrv another major: the node replaced, the old /dev/char link gone. */
	host(f, 508, 509, "2\n");
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_int_equal(r.replaced, 1);
	assert_node(f, "dev/gdrdrv", 508, 0);
	assert_link(f, "dev/char/508:0", "../gdrdrv");
	assert_int_equal(faccessat(f->fd, "dev/char/510:0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
}

static void test_removed(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;
	struct err e;

	host(f, 510, 509, "2\n");
	assert_int_equal(scratch_write(f->fd, "dev/nvidia-fsx", "not ours\n"), 0);
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_int_equal(devnodes_remove(f->fd, false, &e), 0);
	assert_int_equal(faccessat(f->fd, "dev/gdrdrv", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fs0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "dev/char/510:0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fsx", F_OK, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_not_loaded(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;
	struct err e;

	assert_int_equal(scratch_write(f->fd, "proc/devices", "Character devices:\n195 nvidia\n"),
			 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/driver/nvidia/gpus"), 0);
	assert_int_equal(devnodes_sync(f->fd, false, false, &r, &e), 0);
	assert_int_equal(faccessat(f->fd, "dev/gdrdrv", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fs0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_made_from_proc_devices),
		scratch_unit_test(test_max_devices_and_reload),
		scratch_unit_test(test_removed),
		scratch_unit_test(test_not_loaded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
