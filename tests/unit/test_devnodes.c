// SPDX-License-Identifier: Apache-2.0
/*
 * GDRCopy's and GPUDirect Storage's device nodes (kernel/devnodes.c) on a scratch host root:
 * /dev/gdrdrv and /dev/nvidia-fs0..N-1 made with the majors of /proc/devices, mode 0666 and
 * root-owned as NVIDIA/gdrcopy insmod.sh and nvidia-fs's devnode callback make them, a
 * stale major (a reload moved it) replaced with its /dev/char link, and all removed on
 * uninstall. Where mknod is refused (no CAP_MKNOD: the image's build stage under buildah's
 * chroot isolation), the tests that make nodes skip; the VM scenario gpudirect makes them.
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <sys/stat.h>
#include <dirent.h>
#include <limits.h>
#include <sys/sysmacros.h>

#include "kernel/devnodes.h"
#include "util/fs.h"

#define DEVICES "Character devices:\n  1 mem\n195 nvidia\n%s%s"
#define BOTH (DEVNODES_GDRDRV | DEVNODES_NVIDIA_FS)

/*
 * A host whose kernel has gdrdrv at major GDR and nvidia-fs at NVFS (0: not registered),
 * nvidia-fs having made N_NVFS devices (its class in sysfs), and nvidia.ko's params asking
 * uid 1000, gid 44, mode 0660 (so a root-owned 0666 node is told apart), MODIFY its
 * ModifyDeviceFiles.
 */
static void host(struct scratch_fixture *f, int gdr, int nvfs, unsigned n_nvfs, bool modify)
{
	char devices[256], g[32] = "", v[32] = "", path[96], dev[32];

	if (mknodat(f->fd, "mknod-probe", S_IFCHR | 0600, makedev(1, 3)) < 0)
		skip(); /* no CAP_MKNOD here */
	assert_int_equal(unlinkat(f->fd, "mknod-probe", 0), 0);
	if (gdr)
		snprintf(g, sizeof(g), "%d gdrdrv\n", gdr);
	if (nvfs)
		snprintf(v, sizeof(v), "%d nvidia-fs\n", nvfs);
	snprintf(devices, sizeof(devices), DEVICES, g, v);
	assert_int_equal(scratch_write(f->fd, "proc/devices", devices), 0);
	assert_int_equal(scratch_write(f->fd, "proc/driver/nvidia/params",
				       modify ? "ModifyDeviceFiles: 1\nDeviceFileUID: 1000\n"
						"DeviceFileGID: 44\nDeviceFileMode: 432\n"
					      : "ModifyDeviceFiles: 0\nDeviceFileUID: 1000\n"
						"DeviceFileGID: 44\nDeviceFileMode: 432\n"),
			 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/driver/nvidia/gpus"), 0);
	/* The writable parameter says 16 whatever was made (nvfs-core.c:2622). */
	assert_int_equal(
		scratch_write(f->fd, "sys/module/nvidia_fs/parameters/max_devices", "16\n"), 0);
	for (unsigned i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "sys/class/nvidia-fs-class/nvidia-fs%u/dev", i);
		if (i >= n_nvfs || !nvfs) {
			unlinkat(f->fd, path, 0);
			continue;
		}
		snprintf(dev, sizeof(dev), "%d:%u\n", nvfs, i);
		assert_int_equal(scratch_write(f->fd, path, dev), 0);
	}
}

/* devnodes_sync of WHICH on F's root, not a dry run: it must succeed; its report. */
static struct devnodes_report sync_ok(struct scratch_fixture *f, unsigned which)
{
	struct devnodes_report r;
	struct err e;

	if (devnodes_sync(f->fd, false, which, false, &r, &e) < 0)
		fail_msg("devnodes_sync: %s", e.msg);
	return r;
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
	assert_int_equal(st.st_gid, 0);
}

static void assert_absent(struct scratch_fixture *f, const char *rel)
{
	assert_int_equal(faccessat(f->fd, rel, F_OK, AT_SYMLINK_NOFOLLOW), -1);
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
	struct stat st;
	char rel[64];

	host(f, 510, 509, 16, true);
	r = sync_ok(f, BOTH);
	assert_node(f, "dev/gdrdrv", 510, 0);
	assert_link(f, "dev/char/510:0", "../gdrdrv");
	for (unsigned i = 0; i < 16; i++) {
		snprintf(rel, sizeof(rel), "dev/nvidia-fs%u", i);
		assert_node(f, rel, 509, i);
	}
	assert_absent(f, "dev/nvidia-fs16");
	assert_link(f, "dev/char/509:15", "../nvidia-fs15");
	/* nvidia.ko's own nodes take the params' owner and mode. */
	assert_int_equal(fstatat(f->fd, "dev/nvidiactl", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 44);
	assert_int_equal(st.st_mode & 07777, 0660);
	/* Again: all kept. */
	r = sync_ok(f, BOTH);
	assert_int_equal(r.created + r.replaced + r.fixed, 0);
}

/* The devices nvidia-fs made (its class in sysfs), not its writable max_devices. */
static void test_sysfs_devices_and_reload(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;

	host(f, 510, 509, 2, true);
	r = sync_ok(f, BOTH);
	assert_node(f, "dev/nvidia-fs1", 509, 1);
	assert_absent(f, "dev/nvidia-fs2");
	/* A reload gave gdrdrv another major: the node replaced, the old /dev/char link gone. */
	host(f, 508, 509, 2, true);
	r = sync_ok(f, BOTH);
	assert_int_equal(r.created + r.replaced, 1);
	assert_node(f, "dev/gdrdrv", 508, 0);
	assert_link(f, "dev/char/508:0", "../gdrdrv");
	assert_absent(f, "dev/char/510:0");
}

/*
 * A reload where gdrdrv is gone and nvidia-fs took its major: /dev/gdrdrv at 510:0 would
 * be nvidia-fs0 now, and nvidia-fs1 (509:1) names nothing of nvidia-fs: both removed with
 * their links.
 */
static void test_stale_removed(void **state)
{
	struct scratch_fixture *f = *state;

	host(f, 510, 509, 2, true);
	sync_ok(f, BOTH);
	host(f, 0, 510, 1, true);
	sync_ok(f, BOTH);
	assert_absent(f, "dev/gdrdrv");
	assert_absent(f, "dev/nvidia-fs1");
	assert_absent(f, "dev/char/509:0");
	assert_absent(f, "dev/char/509:1");
	assert_node(f, "dev/nvidia-fs0", 510, 0);
	assert_link(f, "dev/char/510:0", "../nvidia-fs0");
	assert_true(devnodes_gpudirect_live(f->fd, "nvidia-fs0", makedev(510, 0)));
	assert_false(devnodes_gpudirect_live(f->fd, "gdrdrv", makedev(510, 0)));
	assert_false(devnodes_gpudirect_live(f->fd, "nvidia-fs1", makedev(510, 1)));
}

/*
 * gdrdrv and nvidia-fs loaded by another (the GPU Operator's containers), not in our set:
 * no node of ours, and theirs at the live numbers left be.
 */
static void test_not_ours(void **state)
{
	struct scratch_fixture *f = *state;

	host(f, 510, 509, 2, true);
	sync_ok(f, 0);
	assert_absent(f, "dev/gdrdrv");
	assert_absent(f, "dev/nvidia-fs0");
	assert_int_equal(mknodat(f->fd, "dev/gdrdrv", S_IFCHR | 0600, makedev(510, 0)), 0);
	sync_ok(f, DEVNODES_NVIDIA_FS);
	assert_int_equal(faccessat(f->fd, "dev/gdrdrv", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_node(f, "dev/nvidia-fs0", 509, 0);
}

/* ModifyDeviceFiles is nvidia.ko's: GDRCopy's and GDS's nodes are made all the same. */
static void test_modify_device_files_off(void **state)
{
	struct scratch_fixture *f = *state;

	host(f, 510, 509, 1, false);
	sync_ok(f, BOTH);
	assert_node(f, "dev/gdrdrv", 510, 0);
	assert_node(f, "dev/nvidia-fs0", 509, 0);
	assert_absent(f, "dev/nvidiactl");
}

/*
 * Links planted where the nodes go, leading out of the root: never followed. A link at
 * dev/gdrdrv is replaced by the node; dev/char a link is refused; nothing lands outside.
 */
static void test_symlink_traps(void **state)
{
	struct scratch_fixture *f = *state;
	struct devnodes_report r;
	struct err e;
	char out[PATH_MAX], outfile[PATH_MAX + 16];
	struct stat st;
	int n;

	host(f, 510, 509, 1, true);
	snprintf(out, sizeof(out), "%s-outside", f->root);
	assert_int_equal(mkdir(out, 0755), 0);
	snprintf(outfile, sizeof(outfile), "%s/victim", out);
	assert_int_equal(close(open(outfile, O_WRONLY | O_CREAT | O_EXCL, 0644)), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "dev"), 0);
	assert_int_equal(symlinkat(outfile, f->fd, "dev/gdrdrv"), 0);
	assert_int_equal(symlinkat(out, f->fd, "dev/char"), 0);
	assert_int_equal(devnodes_sync(f->fd, false, BOTH, false, &r, &e), -1);
	assert_int_equal(stat(outfile, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	n = 0;
	for (DIR *d = opendir(out); d; d = (closedir(d), NULL))
		for (struct dirent *de; (de = readdir(d));)
			n += de->d_name[0] != '.';
	assert_int_equal(n, 1);
	assert_int_equal(unlinkat(f->fd, "dev/char", 0), 0);
	r = sync_ok(f, BOTH);
	assert_node(f, "dev/gdrdrv", 510, 0);
	assert_int_equal(stat(outfile, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(unlink(outfile), 0);
	assert_int_equal(rmdir(out), 0);
}

/* Uninstall takes ours; a character device named nvidia-fsx (no digits) is not ours. */
static void test_removed(void **state)
{
	struct scratch_fixture *f = *state;
	struct err e;

	host(f, 510, 509, 2, true);
	assert_int_equal(scratch_mkdirs(f->fd, "dev"), 0);
	assert_int_equal(mknodat(f->fd, "dev/nvidia-fsx", S_IFCHR | 0600, makedev(1, 3)), 0);
	sync_ok(f, BOTH);
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fsx", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(devnodes_remove(f->fd, false, &e), 0);
	assert_absent(f, "dev/gdrdrv");
	assert_absent(f, "dev/nvidia-fs0");
	assert_absent(f, "dev/char/510:0");
	assert_int_equal(faccessat(f->fd, "dev/nvidia-fsx", F_OK, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_not_loaded(void **state)
{
	struct scratch_fixture *f = *state;

	host(f, 0, 0, 0, true);
	sync_ok(f, BOTH);
	assert_absent(f, "dev/gdrdrv");
	assert_absent(f, "dev/nvidia-fs0");
}

/* A process with /dev/gdrdrv or /dev/nvidia-fsN open uses the driver (kmods_open_users). */
static void test_open_users(void **state)
{
	struct scratch_fixture *f = *state;
	char buf[512] = "";

	assert_int_equal(scratch_mkdirs(f->fd, "proc/42/fd"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/43/fd"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "proc/44/fd"), 0);
	assert_int_equal(symlinkat("/dev/gdrdrv", f->fd, "proc/42/fd/3"), 0);
	assert_int_equal(symlinkat("/dev/nvidia-fs0", f->fd, "proc/43/fd/4"), 0);
	assert_int_equal(symlinkat("/dev/null", f->fd, "proc/44/fd/1"), 0);
	assert_int_equal(scratch_write(f->fd, "proc/42/comm", "gdrcopy_copybw\n"), 0);
	assert_int_equal(kmods_open_users(f->fd, NULL, 0, buf, sizeof(buf)), 2);
	assert_non_null(strstr(buf, "/dev/gdrdrv open in pid 42 (gdrcopy_copybw)"));
	assert_non_null(strstr(buf, "/dev/nvidia-fs0 open in pid 43"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_made_from_proc_devices),
		scratch_unit_test(test_sysfs_devices_and_reload),
		scratch_unit_test(test_stale_removed),
		scratch_unit_test(test_not_ours),
		scratch_unit_test(test_modify_device_files_off),
		scratch_unit_test(test_symlink_traps),
		scratch_unit_test(test_removed),
		scratch_unit_test(test_not_loaded),
		scratch_unit_test(test_open_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
