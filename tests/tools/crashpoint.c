// SPDX-License-Identifier: Apache-2.0
/*
 * LD_PRELOAD: kill the process with SIGKILL at its Nth file-system change, to test that a
 * crash at any point leaves a consistent host (tests/integration/t_crash.sh), or send it
 * SIGTERM there, to test that it stops at its next safe point (t_sigterm.sh).
 *
 *   CRASH_AT=N        the Nth counted call does not happen: the process dies instead
 *   CRASH_SIGNAL=TERM at the Nth call, the process sends itself SIGTERM, and the call
 *                     happens: what the handler does next is the program's
 *   CRASH_TRACE=FILE  at exit, write the count, and for each line the program wrote to
 *                     stderr, the count at that moment (so a test can tell the stages)
 *
 * Counted: creating or opening for writing, write/pwrite to a file (not stdin, stdout or
 * stderr), rename, unlink, mkdir, rmdir, symlink, link, truncate, chmod, fsync, mount.
 * Calls made by the fake kernel (tests/tools/fakekernel.c), whose writes model the kernel's
 * own atomic operations, are not counted: put this library first in LD_PRELOAD. Nor are
 * those of child processes (a forked ldconfig) or of the destructor writing the trace.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long counter, crash_at;
static int crash_signal = SIGKILL;
static pid_t self; /* children (a forked ldconfig) are not counted */
static bool initialised;
static FILE *trace;

static void init(void)
{
	const char *at, *path;

	/* First called from the main thread, before the installer starts any other. */
	if (initialised)
		return;
	initialised = true;
	self = getpid();
	at = getenv("CRASH_AT");
	crash_at = at ? strtoul(at, NULL, 10) : 0;
	if (getenv("CRASH_SIGNAL") && strcmp(getenv("CRASH_SIGNAL"), "TERM") == 0)
		crash_signal = SIGTERM;
	path = getenv("CRASH_TRACE");
	if (path) {
		int (*real_open)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
		int fd = real_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		trace = fd >= 0 ? fdopen(fd, "w") : NULL;
	}
}

__attribute__((destructor)) static void finish(void)
{
	if (trace) {
		fprintf(trace, "total %lu\n", counter);
		fclose(trace);
		trace = NULL;
	}
}

/* Calls from the fake kernel model the kernel: not counted. */
static bool from_fake_kernel(const void *caller)
{
	Dl_info info;

	return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "fakekernel");
}

static void tick(const void *caller)
{
	init();
	if (getpid() != self || from_fake_kernel(caller))
		return;
	/* The unpacker writes from its own thread while the download writes from the main. */
	if (__atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST) == crash_at) {
		kill(getpid(), crash_signal);
		if (crash_signal == SIGKILL)
			pause();
	}
}

#define REAL(ret, name, ...)                                                                       \
	static ret (*real_##name)(__VA_ARGS__);                                                    \
	if (!real_##name)                                                                          \
	real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static bool writes(int flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
}

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);

#define OPEN_LIKE(name, ...)                                                                       \
	{                                                                                          \
		mode_t mode = 0;                                                                   \
		if (flags & (O_CREAT | O_TMPFILE)) {                                               \
			va_list ap;                                                                \
			va_start(ap, flags);                                                       \
			mode = va_arg(ap, mode_t);                                                 \
			va_end(ap);                                                                \
		}                                                                                  \
		if (writes(flags))                                                                 \
			tick(__builtin_return_address(0));                                         \
		return real_##name(__VA_ARGS__, flags, mode);                                      \
	}

int open(const char *path, int flags, ...)
{
	REAL(int, open, const char *, int, ...);
	OPEN_LIKE(open, path)
}

int open64(const char *path, int flags, ...)
{
	REAL(int, open64, const char *, int, ...);
	OPEN_LIKE(open64, path)
}

int openat(int dirfd, const char *path, int flags, ...)
{
	REAL(int, openat, int, const char *, int, ...);
	OPEN_LIKE(openat, dirfd, path)
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	REAL(int, openat64, int, const char *, int, ...);
	OPEN_LIKE(openat64, dirfd, path)
}

ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(ssize_t, write, int, const void *, size_t);
	init();
	if (fd > 2)
		tick(__builtin_return_address(0));
	else if (fd == 2 && trace && n > 0)
		fprintf(trace, "%lu %.*s%s", counter, (int)(n > 100 ? 100 : n), (const char *)buf,
			n > 100 || ((const char *)buf)[n - 1] != '\n' ? "\n" : "");
	return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
	tick(__builtin_return_address(0));
	return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pwrite64, int, const void *, size_t, off_t);
	tick(__builtin_return_address(0));
	return real_pwrite64(fd, buf, n, off);
}

/* The rest: the same shape, one counted call each. */
#define COUNTED(ret, name, params, args)                                                           \
	ret name params                                                                            \
	{                                                                                          \
		static ret(*real) params;                                                          \
		if (!real)                                                                         \
			real = (ret(*) params)dlsym(RTLD_NEXT, #name);                             \
		tick(__builtin_return_address(0));                                                 \
		return real args;                                                                  \
	}

COUNTED(int, rename, (const char *a, const char *b), (a, b))
COUNTED(int, renameat, (int fa, const char *a, int fb, const char *b), (fa, a, fb, b))
COUNTED(int, renameat2, (int fa, const char *a, int fb, const char *b, unsigned fl),
	(fa, a, fb, b, fl))
COUNTED(int, unlink, (const char *p), (p))
COUNTED(int, unlinkat, (int d, const char *p, int fl), (d, p, fl))
COUNTED(int, mkdir, (const char *p, mode_t m), (p, m))
COUNTED(int, mkdirat, (int d, const char *p, mode_t m), (d, p, m))
COUNTED(int, rmdir, (const char *p), (p))
COUNTED(int, symlink, (const char *t, const char *p), (t, p))
COUNTED(int, symlinkat, (const char *t, int d, const char *p), (t, d, p))
COUNTED(int, link, (const char *a, const char *b), (a, b))
COUNTED(int, linkat, (int fa, const char *a, int fb, const char *b, int fl), (fa, a, fb, b, fl))
COUNTED(int, ftruncate, (int fd, off_t len), (fd, len))
COUNTED(int, fchmod, (int fd, mode_t m), (fd, m))
COUNTED(int, fchmodat, (int d, const char *p, mode_t m, int fl), (d, p, m, fl))
COUNTED(int, fsync, (int fd), (fd))
COUNTED(int, fdatasync, (int fd), (fd))
COUNTED(int, mount, (const char *s, const char *t, const char *f, unsigned long fl, const void *d),
	(s, t, f, fl, d))
COUNTED(int, umount2, (const char *t, int fl), (t, fl))
