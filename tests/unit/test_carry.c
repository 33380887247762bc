// SPDX-License-Identifier: Apache-2.0
/*
 * Other installers' files in lib64/, carried from one version to the next
 * (installer/stage/carry.h):
 * the list of a version's own files, the copy where a hard link cannot cross file systems
 * (the old version on /dev/shm's tmpfs, the new one in the scratch directory on /tmp), and
 * the rule for a version that has no list.
 */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/carry.h"
#include "scratch.h"

static char *read_text(int dirfd, const char *rel)
{
	static char buf[4096];
	int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void test_record_lists_files_and_links(void **state)
{
	struct scratch_fixture *f = *state;
	struct err e;

	assert_int_equal(scratch_write(f->fd, "lib64/libcuda.so.550.90.07", "elf"), 0);
	assert_int_equal(symlinkat("libcuda.so.550.90.07", f->fd, "lib64/libcuda.so.1"), 0);
	assert_int_equal(scratch_write(f->fd, "lib64/vdpau/libvdpau_nvidia.so", "elf"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "lib64/empty"), 0);
	assert_int_equal(carry_record(f->fd, &e), 0);
	/* Sorted, files and links only, relative to lib64/. */
	assert_string_equal(read_text(f->fd, CARRY_OWN_LIST),
			    "libcuda.so.1\nlibcuda.so.550.90.07\nvdpau/libvdpau_nvidia.so\n");
}

/* A version directory on /dev/shm (tmpfs: another file system than /tmp). */
static int shm_version(char *path, size_t size)
{
	snprintf(path, size, "/dev/shm/ndi-carry-XXXXXX");
	if (!mkdtemp(path))
		return -1;
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void test_copy_across_file_systems(void **state)
{
	struct scratch_fixture *f = *state;
	char shm[64];
	struct stat a, b;
	char target[256];
	ssize_t n;
	int from = shm_version(shm, sizeof(shm));

	if (from < 0)
		skip(); /* no /dev/shm: nothing to cross to */
	/* The old version: its own libcuda (listed), a plugin, a link out of the install dir. */
	assert_int_equal(scratch_write(from, "lib64/libcuda.so.1", "old"), 0);
	assert_int_equal(scratch_write(from, CARRY_OWN_LIST, "libcuda.so.1\n"), 0);
	assert_int_equal(scratch_write(from, "lib64/gib/libnccl-net.so", "plugin"), 0);
	/* Set-id bits are not copied: root's copy of another's set-id file would be root's. */
	assert_int_equal(fchmodat(from, "lib64/gib/libnccl-net.so", 04750, 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", from, "lib64/passwd"), 0);
	/* The new version, in the scratch directory. */
	assert_int_equal(scratch_write(f->fd, "lib64/libcuda.so.1", "new"), 0);
	assert_int_equal(scratch_write(f->fd, CARRY_OWN_LIST, "libcuda.so.1\n"), 0);

	assert_int_equal(carry_foreign(from, f->fd), 2);
	assert_string_equal(read_text(f->fd, "lib64/libcuda.so.1"), "new");
	assert_string_equal(read_text(f->fd, "lib64/gib/libnccl-net.so"), "plugin");
	assert_int_equal(fstatat(from, "lib64/gib/libnccl-net.so", &a, 0), 0);
	assert_int_equal(fstatat(f->fd, "lib64/gib/libnccl-net.so", &b, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(b.st_mode));
	assert_true(a.st_dev != b.st_dev); /* a copy: no link crosses file systems */
	assert_int_equal(b.st_mode & 07777, 0750);
	n = readlinkat(f->fd, "lib64/passwd", target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "/etc/passwd");
	/* No temporary left behind. */
	assert_int_equal(faccessat(f->fd, "lib64/gib/.nvidia-carry.tmp", F_OK, AT_SYMLINK_NOFOLLOW),
			 -1);

	/* Again (a rollback's way back): the carried file is replaced, not duplicated. */
	assert_int_equal(scratch_write(from, "lib64/gib/libnccl-net.so", "plugin v2"), 0);
	assert_int_equal(carry_foreign(from, f->fd), 2);
	assert_string_equal(read_text(f->fd, "lib64/gib/libnccl-net.so"), "plugin v2");
	close(from);
	assert_int_equal(scratch_remove(shm), 0);
}

static void test_no_list_keeps_nvidia_names(void **state)
{
	struct scratch_fixture *f = *state;
	struct err e;
	int from, to;

	assert_int_equal(scratch_mkdirs(f->fd, "old/lib64"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "new/lib64"), 0);
	from = openat(f->fd, "old", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	to = openat(f->fd, "new", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(from >= 0 && to >= 0);
	/* An older installer's version: no list. NVIDIA's names are the driver's. */
	assert_int_equal(scratch_write(from, "lib64/libnvidia-ml.so.535.261.03", "elf"), 0);
	assert_int_equal(scratch_write(from, "lib64/libcuda.so.535.261.03", "elf"), 0);
	assert_int_equal(scratch_write(from, "lib64/libnccl-net.so", "plugin"), 0);
	assert_int_equal(carry_record(to, &e), 0);
	assert_int_equal(carry_foreign(from, to), 1);
	assert_string_equal(read_text(to, "lib64/libnccl-net.so"), "plugin");
	assert_int_equal(faccessat(to, "lib64/libcuda.so.535.261.03", F_OK, 0), -1);
	assert_int_equal(faccessat(to, "lib64/libnvidia-ml.so.535.261.03", F_OK, 0), -1);
	close(from);
	close(to);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_record_lists_files_and_links),
		scratch_unit_test(test_copy_across_file_systems),
		scratch_unit_test(test_no_list_keeps_nvidia_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
