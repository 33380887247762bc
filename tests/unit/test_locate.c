// SPDX-License-Identifier: Apache-2.0
/* stage/locate.h: a staged version shaped for the tools that look into a driver root. */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"
#include "stage/locate.h"

static void put_mode(int fd, const char *rel, const char *text, mode_t mode)
{
	assert_int_equal(scratch_write(fd, rel, text), 0);
	assert_int_equal(fchmodat(fd, rel, mode, 0), 0);
}

static ino_t ino(int fd, const char *rel)
{
	struct stat st;

	assert_int_equal(fstatat(fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

/* A tree as wrap_programs leaves it: a wrapped program, a static one, data, firmware. */
static void staged(int fd)
{
	put_mode(fd, "bin/.real/nvidia-smi", "ELF program", 0755);
	put_mode(fd, "bin/nvidia-smi", "launcher", 0755);
	put_mode(fd, "bin/nvidia-static", "static program", 0755);
	put_mode(fd, "bin/notes", "not a program", 0644);
	assert_int_equal(symlinkat("nvidia-smi", fd, "bin/smi-link"), 0);
	put_mode(fd, "firmware/nvidia/1.0/gsp_ga10x.bin", "fw", 0644);
}

static void test_shape(void **state)
{
	struct scratch_fixture *f = *state;
	char target[64] = "", text[256] = "";
	struct err e;
	ssize_t n;
	int icd;

	staged(f->fd);
	put_mode(f->fd, "share/vulkan/icd.d/nvidia_icd.json", "{\"ICD\": {}}", 0644);
	assert_int_equal(locate_shape(f->fd, &e), 0);
	/* usr/bin: the real programs, one inode with them; not the launcher, data or links. */
	assert_int_equal(ino(f->fd, "usr/bin/nvidia-smi"), ino(f->fd, "bin/.real/nvidia-smi"));
	assert_int_equal(ino(f->fd, "usr/bin/nvidia-static"), ino(f->fd, "bin/nvidia-static"));
	assert_int_not_equal(faccessat(f->fd, "usr/bin/notes", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_not_equal(faccessat(f->fd, "usr/bin/smi-link", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_not_equal(faccessat(f->fd, "usr/bin/.real", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	/* lib/firmware leads to firmware/. */
	n = readlinkat(f->fd, "lib/firmware", target, sizeof(target) - 1);
	assert_true(n > 0);
	assert_string_equal(target, "../firmware");
	assert_int_equal(faccessat(f->fd, "lib/firmware/nvidia/1.0/gsp_ga10x.bin", R_OK, 0), 0);
	/* The ICD file, a copy. */
	icd = openat(f->fd, "vulkan/icd.d/nvidia_icd.json", O_RDONLY | O_NOFOLLOW);
	assert_true(icd >= 0);
	assert_true(read(icd, text, sizeof(text) - 1) > 0);
	close(icd);
	assert_string_equal(text, "{\"ICD\": {}}");
	assert_int_not_equal(ino(f->fd, "vulkan/icd.d/nvidia_icd.json"),
			     ino(f->fd, "share/vulkan/icd.d/nvidia_icd.json"));
}

static void test_no_vulkan(void **state)
{
	struct scratch_fixture *f = *state;
	struct stat st;
	struct err e;

	staged(f->fd);
	assert_int_equal(locate_shape(f->fd, &e), 0);
	assert_int_equal(fstatat(f->fd, "vulkan/icd.d", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
}

static void rm(const struct scratch_fixture *f, const char *rel)
{
	char p[512];

	assert_int_equal(scratch_remove(scratch_path(f, rel, p, sizeof(p))), 0);
}

static void test_icd_refusals(void **state)
{
	struct scratch_fixture *f = *state;
	static const char *const bad[] = {"README", "link.json", "dir.json"};
	struct err e;

	staged(f->fd);
	assert_int_equal(scratch_mkdirs(f->fd, "share/vulkan/icd.d"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (i == 0)
			put_mode(f->fd, "share/vulkan/icd.d/README", "x", 0644);
		else if (i == 1)
			assert_int_equal(
				symlinkat("/etc/passwd", f->fd, "share/vulkan/icd.d/link.json"), 0);
		else
			assert_int_equal(scratch_mkdirs(f->fd, "share/vulkan/icd.d/dir.json"), 0);
		assert_int_equal(locate_shape(f->fd, &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
		assert_non_null(strstr(e.msg, bad[i]));
		rm(f, "share/vulkan/icd.d");
		assert_int_equal(scratch_mkdirs(f->fd, "share/vulkan/icd.d"), 0);
		/* Each run starts from the staged tree: what the last one made goes. */
		rm(f, "usr");
		rm(f, "lib");
		rm(f, "vulkan");
	}
}

/*
 * The loader files the CDI spec mounts alone (LOCATE_LOADER_FILES): a dangling link, a link
 * on the way, a folder or a FIFO in one's place is refused at unpack (runc would refuse
 * every GPU container of the node); a package without them passes.
 */
static void test_loader_refusals(void **state)
{
	struct scratch_fixture *f = *state;
	static const char *const bad[] = {
		"share/egl/egl_external_platform.d/15_nvidia_gbm.json",
		"share/glvnd/egl_vendor.d/10_nvidia.json",
		"share/nvidia/nvoptix.bin",
		"share/vulkan/implicit_layer.d/nvidia_layers.json",
	};
	struct err e;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		staged(f->fd);
		switch (i) {
		case 0: /* dangling */
			assert_int_equal(scratch_mkdirs(f->fd, "share/egl/egl_external_platform.d"),
					 0);
			assert_int_equal(symlinkat("../../../none.json", f->fd, bad[i]), 0);
			break;
		case 1: /* a link on the way, to a folder that holds the file */
			put_mode(f->fd, "elsewhere/egl_vendor.d/10_nvidia.json", "{}", 0644);
			assert_int_equal(scratch_mkdirs(f->fd, "share"), 0);
			assert_int_equal(symlinkat("../elsewhere", f->fd, "share/glvnd"), 0);
			break;
		case 2: /* a folder */
			assert_int_equal(scratch_mkdirs(f->fd, bad[i]), 0);
			break;
		default: /* a FIFO */
			assert_int_equal(scratch_mkdirs(f->fd, "share/vulkan/implicit_layer.d"), 0);
			assert_int_equal(mkfifoat(f->fd, bad[i], 0644), 0);
		}
		err_clear(&e);
		assert_int_equal(locate_shape(f->fd, &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
		if (!strstr(e.msg, bad[i]))
			fail_msg("'%s' lacks '%s'", e.msg, bad[i]);
		assert_non_null(strstr(e.msg, "must be a regular file, no link on its path"));
		for (const char *const *d =
			     (const char *const[]){"share", "usr", "lib", "vulkan", "bin",
						   "firmware", "elsewhere", NULL};
		     *d; d++) {
			if (faccessat(f->fd, *d, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
				rm(f, *d);
		}
	}
	/* Each of them a regular file: taken. */
	staged(f->fd);
	for (size_t i = 0; locate_loader_files[i]; i++)
		put_mode(f->fd, locate_loader_files[i], "{}", 0644);
	err_clear(&e);
	assert_int_equal(locate_shape(f->fd, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_shape),
		scratch_unit_test(test_no_vulkan),
		scratch_unit_test(test_icd_refusals),
		scratch_unit_test(test_loader_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
