// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expose/ldcache.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/log.h"

/* The host's ldconfig, as a path inside ROOT, or NULL. */
static const char *host_ldconfig(int root_fd)
{
	static const char *const paths[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct err e;
		_cleanup_close_ int fd = fs_open_in_root(root_fd, paths[i], O_PATH, 0, 0, &e);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return paths[i];
	}
	return NULL;
}

static int run_ldconfig(int root_fd, const char *root_path, struct err *e)
{
	const char *host = host_ldconfig(root_fd);
	int status, r;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "ldconfig: fork");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		/* The host's ldconfig matches the host's glibc and cache format. */
		if (host) {
			if (chroot(root_path) == 0 && chdir("/") == 0)
				execl(host, "ldconfig", (char *)NULL);
			_exit(126);
		}
		execlp("ldconfig", "ldconfig", "-r", root_path, (char *)NULL);
		_exit(127);
	}
	/* ldconfig reads what the host's configuration includes: a FIFO there blocks it. */
	r = interrupt_waitpid(pid, &status);
	if (r == -EINTR) {
		/* It writes its cache to a temporary file and renames it: killed, none is half. */
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return interrupt_check(e, "the end of ldconfig");
	}
	if (r < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "ldconfig: wait");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(e, EXIT_UNEXPECTED, "ldconfig (%s) failed with status %d",
			       host ? host : "ldconfig -r",
			       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	log_kv(LOG_DEBUG, "ldcache", "ld cache rebuilt", "ldconfig", host ? host : "ldconfig -r",
	       LOG_END);
	return 0;
}

static bool mtime_of(int dir_fd, const char *name, struct timespec *ret)
{
	struct stat st;

	if (dir_fd < 0 || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	*ret = st.st_mtim;
	return true;
}

#define LDCACHE_MAX (64u << 20)

/* Whether the ld cache's bytes list INSTALL_DIR/lib64/SONAME. */
static bool cache_lists(const char *cache, size_t len, const char *install_dir, const char *soname)
{
	size_t il = strlen(install_dir), sl = strlen(soname);

	/* The cache's string table holds "SONAME\0...PATH\0"; look for PATH. */
	for (size_t i = 0; i + il + 7 + sl < len; i++) {
		if (memcmp(cache + i, install_dir, il) == 0 &&
		    memcmp(cache + i + il, "/lib64/", 7) == 0 &&
		    memcmp(cache + i + il + 7, soname, sl) == 0 && cache[i + il + 7 + sl] == '\0')
			return true;
	}
	return false;
}

/*
 * The cache was rebuilt after the current version became current (the switch
 * makes a fresh .current link) and lists our libraries: a re-run need not fork
 * ldconfig again. Where the host's /etc/ld.so.conf does not read ld.so.conf.d
 * (INCLUDED false), no run of ldconfig lists them: a cache rebuilt since the switch
 * is all a run could give.
 */
static bool cache_is_current(int root_fd, const char *install_dir, bool included)
{
	struct err e;
	_cleanup_close_ int etc = fs_dir_in_root(root_fd, "/etc", false, &e);
	_cleanup_close_ int dir = fs_dir_in_root(root_fd, install_dir, false, &e);
	struct timespec built, current;
	_cleanup_free_ char *cache = NULL;
	size_t len = 0;

	if (!mtime_of(etc, "ld.so.cache", &built) || !mtime_of(dir, ".current", &current))
		return false;
	if (built.tv_sec < current.tv_sec ||
	    (built.tv_sec == current.tv_sec && built.tv_nsec <= current.tv_nsec))
		return false;
	if (!included)
		return true;
	cache = fs_read_in_root(root_fd, "/etc/ld.so.cache", LDCACHE_MAX, &len);
	return cache && cache_lists(cache, len, install_dir, "libcuda.so.1") &&
	       cache_lists(cache, len, install_dir, "libnvidia-ml.so.1");
}

/*
 * File times come from the kernel's coarse clock (one tick, 4 ms on many kernels): on a
 * fast machine the cache just rebuilt can carry the very time of the switch, and a
 * re-run would find it "not newer" and rebuild it again; a clock set back would do the
 * same on every run. The order the times stand for is known here, so .current (our own
 * link, whose time nothing else reads) is dated just before the cache. Where the file
 * system cannot hold that time, nothing worse than that extra rebuild follows.
 */
static void order_after_switch(int root_fd, const char *install_dir)
{
	struct err e;
	_cleanup_close_ int etc = fs_dir_in_root(root_fd, "/etc", false, &e);
	_cleanup_close_ int dir = fs_dir_in_root(root_fd, install_dir, false, &e);
	struct timespec built, current, ts[2];

	if (!mtime_of(etc, "ld.so.cache", &built) || !mtime_of(dir, ".current", &current) ||
	    built.tv_sec > current.tv_sec ||
	    (built.tv_sec == current.tv_sec && built.tv_nsec > current.tv_nsec))
		return;
	ts[0] = (struct timespec){.tv_nsec = UTIME_OMIT};
	ts[1] = built;
	if (ts[1].tv_nsec > 0) {
		ts[1].tv_nsec--;
	} else {
		ts[1].tv_sec--;
		ts[1].tv_nsec = 999999999;
	}
	if (utimensat(dir, ".current", ts, AT_SYMLINK_NOFOLLOW) < 0)
		log_kv(LOG_DEBUG, "ldcache", "could not date the switch before the ld cache",
		       "errno", strerror(errno), LOG_END);
}

int ldcache_update(int root_fd, const char *root_path, const char *install_dir, struct err *e)
{
	_cleanup_free_ char *conf = NULL, *old = NULL, *main_conf = NULL;
	_cleanup_close_ int dir = -1;
	char libs[PATH_MAX];
	size_t len = 0;
	bool included;

	snprintf(libs, sizeof(libs), "%s/lib64", install_dir);
	if (asprintf(&conf, "# The NVIDIA driver, by nvidia-driver-installer.\n%s\n", libs) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "ldcache");
	dir = fs_dir_in_root(root_fd, "/etc/ld.so.conf.d", true, e);
	if (dir < 0)
		return err_wrap(e, "ldcache");
	old = fs_read_in_root(root_fd, LDCACHE_CONF, 1 << 16, &len);
	if ((!old || strcmp(old, conf) != 0) &&
	    fs_write_atomic_at(dir, "nvidia.conf", conf, strlen(conf), 0644, e) < 0)
		return err_wrap(e, "ldcache");
	main_conf = fs_read_in_root(root_fd, "/etc/ld.so.conf", 1 << 20, NULL);
	included = main_conf && strstr(main_conf, "ld.so.conf.d");
	if (old && strcmp(old, conf) == 0 && cache_is_current(root_fd, install_dir, included)) {
		log_kv(LOG_DEBUG, "ldcache", "ld cache already current", "libs", libs, LOG_END);
		return 0;
	}
	if (!included)
		log_kv(LOG_WARN, "ldcache",
		       "the host's /etc/ld.so.conf does not include /etc/ld.so.conf.d: workloads must find the libraries through LD_LIBRARY_PATH",
		       LOG_END);
	if (run_ldconfig(root_fd, root_path, e) < 0)
		return err_wrap(e, "ldcache");
	order_after_switch(root_fd, install_dir);
	log_kv(LOG_INFO, "ldcache", "ld cache updated", "conf", LDCACHE_CONF, "libs", libs,
	       LOG_END);
	return 0;
}

int ldcache_remove(int root_fd, const char *root_path, struct err *e)
{
	_cleanup_close_ int dir = fs_dir_in_root(root_fd, "/etc/ld.so.conf.d", false, e);

	if (dir < 0) {
		err_clear(e);
		return 0;
	}
	if (unlinkat(dir, "nvidia.conf", 0) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(e, EXIT_UNEXPECTED, errno, "ldcache: remove %s", LDCACHE_CONF);
	}
	return run_ldconfig(root_fd, root_path, e) < 0 ? err_wrap(e, "ldcache") : 0;
}

bool ldcache_has(int root_fd, const char *install_dir, const char *soname)
{
	size_t len = 0;
	_cleanup_free_ char *cache =
		fs_read_in_root(root_fd, "/etc/ld.so.cache", LDCACHE_MAX, &len);

	return cache && cache_lists(cache, len, install_dir, soname);
}
