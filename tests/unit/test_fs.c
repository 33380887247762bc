// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"
#include "scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fs.h"

/* The path, relative to the fixture root, of what fd names. */
static void where(struct scratch_fixture *f, int fd, char *out, size_t size)
{
	char proc[64], buf[512];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_memory_equal(buf, f->root, strlen(f->root));
	snprintf(out, size, "%s", buf[strlen(f->root)] ? buf + strlen(f->root) : "/");
}

/* The same answers whether the kernel resolves (openat2) or the installer walks. */
static void in_root(struct scratch_fixture *f)
{
	char path[512];
	struct err e;
	int fd;

	err_clear(&e);
	assert_int_equal(mkdirat(f->fd, "var", 0755), 0);
	assert_int_equal(mkdirat(f->fd, "var/home", 0755), 0);
	/* Absolute link: restarts at the root, not at the real /. */
	assert_int_equal(symlinkat("/var/home", f->fd, "home"), 0);
	/* ".." climbing above the root stays at the root. */
	assert_int_equal(symlinkat("../../../../../var", f->fd, "up"), 0);
	assert_int_equal(symlinkat("loop2", f->fd, "loop1"), 0);
	assert_int_equal(symlinkat("loop1", f->fd, "loop2"), 0);

	fd = fs_dir_in_root(f->fd, "/home/kubernetes/bin/nvidia", true, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/var/home/kubernetes/bin/nvidia");
	close(fd);

	fd = fs_dir_in_root(f->fd, "/../../up/home/./kubernetes/", false, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/var/home/kubernetes");
	close(fd);

	fd = fs_dir_in_root(f->fd, "/", false, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/");
	close(fd);

	assert_int_equal(fs_dir_in_root(f->fd, "/missing/dir", false, &e), -1);
	assert_int_equal(err_errnum(&e), ENOENT);
	assert_non_null(strstr(e.msg, "'/missing/dir'"));
	assert_int_equal(fs_dir_in_root(f->fd, "/loop1/x", true, &e), -1);
	assert_int_equal(err_errnum(&e), ELOOP);

	/* A file opened through an absolute link to a file. */
	fd = openat(f->fd, "var/home/os-release", O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlinkat("/var/home/os-release", f->fd, "os-release"), 0);
	fd = fs_open_in_root(f->fd, "/os-release", O_RDONLY, 0, 0, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fs_open_in_root(f->fd, "/os-release", O_RDONLY, 0, FS_NOFOLLOW_LAST, &e),
			 -1);
	assert_int_equal(err_errnum(&e), ELOOP);
	/* Creating a file follows a dangling absolute link into the root. */
	assert_int_equal(symlinkat("/var/new-file", f->fd, "dangling"), 0);
	fd = fs_open_in_root(f->fd, "dangling", O_WRONLY | O_CREAT, 0644, 0, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(faccessat(f->fd, "var/new-file", F_OK, 0), 0);
	/* A directory that is there is found, one that is not is made, through links. */
	fd = fs_dir_in_root(f->fd, "/home/kubernetes", true, &e);
	assert_true(fd >= 0);
	close(fd);
	fd = fs_dir_in_root(f->fd, "/up/made/here", true, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/var/made/here");
	close(fd);
	/* Not a directory, at the end and on the way. */
	assert_int_equal(fs_dir_in_root(f->fd, "/os-release", false, &e), -1);
	assert_int_equal(err_errnum(&e), ENOTDIR);
	assert_int_equal(fs_open_in_root(f->fd, "/os-release/x", O_RDONLY, 0, 0, &e), -1);
	assert_int_equal(err_errnum(&e), ENOTDIR);
	/* O_PATH with FS_NOFOLLOW_LAST, or with O_NOFOLLOW, opens the link itself. */
	fd = fs_open_in_root(f->fd, "/home", O_PATH, 0, FS_NOFOLLOW_LAST, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/home");
	close(fd);
	fd = fs_open_in_root(f->fd, "/home", O_PATH | O_NOFOLLOW, 0, 0, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/home");
	close(fd);
	/* A trailing slash on a directory, through a link. */
	fd = fs_dir_in_root(f->fd, "/home/kubernetes/", false, &e);
	assert_true(fd >= 0);
	where(f, fd, path, sizeof(path));
	assert_string_equal(path, "/var/home/kubernetes");
	close(fd);
}

/* Whether this kernel (and its seccomp filter) has openat2. */
static bool kernel_has_openat2(void)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

static void test_in_root(void **state)
{
	unsigned long before = fs_in_root_kernel_answers();

	fs_in_root_walk_only(false);
	in_root(*state);
	/* Where the kernel can, it answered: the cases above went through openat2. */
	if (kernel_has_openat2())
		assert_true(fs_in_root_kernel_answers() - before >= 8);
}

static void test_in_root_walked(void **state)
{
	unsigned long before = fs_in_root_kernel_answers();

	fs_in_root_walk_only(true);
	in_root(*state);
	fs_in_root_walk_only(false);
	assert_int_equal(fs_in_root_kernel_answers(), before);
}

static void test_atomic_write_and_rm(void **state)
{
	struct scratch_fixture *f = *state;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	struct err e;

	err_clear(&e);
	assert_int_equal(fs_write_atomic_at(f->fd, "state.json", "{}", 2, 0600, &e), 0);
	assert_int_equal(fs_write_atomic_at(f->fd, "state.json", "{\"a\":1}", 7, 0644, &e), 0);
	assert_int_equal(fs_read_at(f->fd, "state.json", 100, &buf, &len, &e), 0);
	assert_string_equal(buf, "{\"a\":1}");
	free(buf);
	assert_int_equal(fstatat(f->fd, "state.json", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(fs_read_at(f->fd, "state.json", 3, &buf, &len, &e), -1);
	assert_non_null(strstr(e.msg, "larger than"));

	/* rm -rf removes links, never what they point to. */
	assert_int_equal(mkdirat(f->fd, "victim", 0755), 0);
	assert_int_equal(mkdirat(f->fd, "tree", 0755), 0);
	assert_int_equal(mkdirat(f->fd, "tree/sub", 0755), 0);
	assert_int_equal(symlinkat("../../victim", f->fd, "tree/sub/link"), 0);
	close(openat(f->fd, "victim/keep", O_WRONLY | O_CREAT, 0644));
	assert_int_equal(fs_rm_rf_at(f->fd, "tree", &e), 0);
	assert_int_equal(faccessat(f->fd, "tree", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(f->fd, "victim/keep", F_OK, 0), 0);
	assert_int_equal(fs_rm_rf_at(f->fd, "tree", &e), 0); /* missing: fine */

	assert_int_equal(fs_symlink_replace_at(f->fd, "a", "cur", &e), 0);
	assert_true(fs_symlink_is(f->fd, "cur", "a"));
	assert_int_equal(fs_symlink_replace_at(f->fd, "b", "cur", &e), 0);
	assert_true(fs_symlink_is(f->fd, "cur", "b"));
	assert_false(fs_symlink_is(f->fd, "cur", "a"));
}

/*
 * The cause travels in the error, not in the global errno: each failure below is checked
 * after errno has been overwritten, as any cleanup on the way back up may do.
 */
static void test_errors_carry_errno(void **state)
{
	struct scratch_fixture *f = *state;
	char *buf = NULL, name[32];
	size_t len = 0;
	struct err e;
	pid_t pid;
	int status;

	err_clear(&e);
	assert_int_equal(symlinkat("target", f->fd, "link"), 0);
	assert_int_equal(mkdirat(f->fd, "private", 0700), 0);

	assert_int_equal(fs_read_at(f->fd, "missing", 100, &buf, &len, &e), -1);
	errno = 0;
	assert_int_equal(err_errnum(&e), ENOENT);
	assert_non_null(strstr(e.msg, "'missing'"));
	assert_null(buf);

	assert_int_equal(fs_read_at(f->fd, "link", 100, &buf, &len, &e), -1);
	errno = EBADF;
	assert_int_equal(err_errnum(&e), ELOOP);

	/* A FIFO (or any other non-file) is refused at once: opening it would wait for a writer. */
	assert_int_equal(mkfifoat(f->fd, "fifo", 0600), 0);
	alarm(10);
	assert_int_equal(fs_read_at(f->fd, "fifo", 100, &buf, &len, &e), -1);
	alarm(0);
	errno = 0;
	assert_int_equal(err_errnum(&e), EINVAL);
	assert_non_null(strstr(e.msg, "'fifo'"));
	assert_null(buf);
	assert_int_equal(fs_read_at(f->fd, "private", 100, &buf, &len, &e), -1);
	assert_int_equal(err_errnum(&e), EINVAL);

	assert_null(fs_opendir_at(f->fd, "missing", &e));
	errno = 0;
	assert_int_equal(err_errnum(&e), ENOENT);

	assert_int_equal(fs_mkdtemp_at(f->fd, "missing/x", name, sizeof(name), &e), -1);
	errno = 0;
	assert_int_equal(err_errnum(&e), ENOENT);

	/* Context added on the way up keeps the cause; a new error without one drops it. */
	err_wrap(&e, "stage");
	assert_int_equal(err_errnum(&e), ENOENT);
	err_set(&e, EXIT_VERIFY, "digest mismatch");
	assert_int_equal(err_errnum(&e), 0);
	err_errno(&e, EXIT_UNEXPECTED, EIO, "read");
	err_clear(&e);
	assert_int_equal(err_errnum(&e), 0);

	/* EACCES needs a process without root's override: a child that drops to nobody. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		fd = fs_open_in_root(f->fd, "/private/x", O_RDONLY, 0, 0, &e);
		errno = 0;
		_exit(fd == -1 && err_errnum(&e) == EACCES && e.code == EXIT_USAGE ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * The host-file reader under a root: a FIFO planted at a /proc or securityfs path is
 * refused at once, one past the limit says EFBIG, one that is not there ENOENT; and the
 * opener verify-module and status use refuses a FIFO the same way.
 */
static void test_read_in_root_regular_only(void **state)
{
	struct scratch_fixture *f = *state;
	char *buf = NULL, big[64];
	size_t len = 7;
	struct err e;
	int fd;

	err_clear(&e);
	assert_int_equal(mkdirat(f->fd, "proc", 0755), 0);
	assert_int_equal(mkfifoat(f->fd, "proc/cmdline", 0600), 0);
	alarm(10);
	assert_int_equal(fs_read_file_in_root(f->fd, "/proc/cmdline", 100, &buf, &len, &e), -1);
	assert_int_equal(err_errnum(&e), EINVAL);
	assert_non_null(strstr(e.msg, "'/proc/cmdline' is not a regular file"));
	assert_null(fs_read_in_root(f->fd, "/proc/cmdline", 100, NULL));
	assert_int_equal(fs_open_regular_at(f->fd, "proc/cmdline", 0, &e), -1);
	assert_int_equal(err_errnum(&e), EINVAL);
	alarm(0);
	assert_null(buf);
	assert_int_equal(len, 7);

	memset(big, 'x', sizeof(big));
	assert_int_equal(fs_write_atomic_at(f->fd, "policy", big, sizeof(big), 0644, &e), 0);
	assert_int_equal(fs_read_file_in_root(f->fd, "/policy", 63, &buf, &len, &e), -1);
	assert_int_equal(err_errnum(&e), EFBIG);
	assert_non_null(strstr(e.msg, "larger than 63 bytes"));
	assert_int_equal(fs_read_file_in_root(f->fd, "/missing", 63, &buf, &len, &e), -1);
	assert_int_equal(err_errnum(&e), ENOENT);
	assert_int_equal(fs_read_file_in_root(f->fd, "/../policy", 64, &buf, NULL, &e), 0);
	assert_int_equal(strlen(buf), 64);
	free(buf);

	/* The opener keeps the fd; FS_NOFOLLOW_LAST refuses a link at the end (ELOOP). */
	assert_int_equal(symlinkat("/policy", f->fd, "proc/link"), 0);
	fd = fs_open_regular_in_root(f->fd, "/proc/link", 0, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fs_open_regular_in_root(f->fd, "/proc/link", FS_NOFOLLOW_LAST, &e), -1);
	assert_int_equal(err_errnum(&e), ELOOP);
	alarm(10);
	assert_int_equal(fs_open_regular_in_root(f->fd, "/proc/cmdline", 0, &e), -1);
	alarm(0);
	assert_int_equal(err_errnum(&e), EINVAL);
}

/*
 * A directory others may make first (MPS's in /tmp): made with its mode whatever the umask,
 * taken again when ours alone, refused when another user's, writable by others, a link or
 * a file; looked at without CREATE, a missing one is ENOENT.
 */
static void test_own_dir(void **state)
{
	struct scratch_fixture *f = *state;
	struct stat st;
	struct err e;
	mode_t old;
	int fd;

	err_clear(&e);
	old = umask(077);
	fd = fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e);
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	close(fd);
	fd = fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fchmodat(f->fd, "tmp/mps", 0777, 0), 0);
	assert_int_equal(fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "with mode 0777, not "));
	assert_non_null(strstr(e.msg, "remove the directory"));
	if (geteuid() == 0) {
		assert_int_equal(fchmodat(f->fd, "tmp/mps", 0755, 0), 0);
		assert_int_equal(fchownat(f->fd, "tmp/mps", 65534, 65534, 0), 0);
		assert_int_equal(fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e), -1);
		assert_non_null(strstr(
			e.msg, "'/tmp/mps' is uid 65534's with mode 0755, not root's alone"));
	}
	assert_int_equal(unlinkat(f->fd, "tmp/mps", AT_REMOVEDIR), 0);
	assert_int_equal(symlinkat("/etc", f->fd, "tmp/mps"), 0);
	assert_int_equal(fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e), -1);
	assert_non_null(strstr(e.msg, "is not a directory (a link, or a file)"));
	assert_int_equal(unlinkat(f->fd, "tmp/mps", 0), 0);
	assert_int_equal(fs_own_dir_in_root(f->fd, "/tmp/mps", 0, false, &e), -1);
	assert_int_equal(err_errnum(&e), ENOENT);
	assert_int_equal(fs_own_dir_in_root(f->fd, "/nowhere/mps", 0, false, &e), -1);
	assert_int_equal(err_errnum(&e), ENOENT);
	/* A parent others may write without the sticky bit: ours could be renamed away. */
	fd = fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fchmodat(f->fd, "tmp", 0777, 0), 0);
	assert_int_equal(fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e), -1);
	assert_non_null(
		strstr(e.msg, "'/tmp/mps' can be replaced by another user: '/tmp' is uid "));
	assert_int_equal(fchmodat(f->fd, "tmp", 01777, 0), 0);
	fd = fs_own_dir_in_root(f->fd, "/tmp/mps", 0755, true, &e);
	assert_true(fd >= 0);
	close(fd);
	/* At the top of the root. */
	fd = fs_own_dir_in_root(f->fd, "/top", 0700, true, &e);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fstatat(f->fd, "top", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_in_root),
		scratch_unit_test(test_in_root_walked),
		scratch_unit_test(test_atomic_write_and_rm),
		scratch_unit_test(test_errors_carry_errno),
		scratch_unit_test(test_read_in_root_regular_only),
		scratch_unit_test(test_own_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
