/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup, in the manner of systemd and crun: a variable declared
 * with _cleanup_(f) has f(&var) run when it leaves scope. Ownership is handed
 * out with TAKE_PTR/TAKE_FD, which return the value and disarm the cleanup.
 * Also the attribute shorthands every module uses (_printf_, _must_check_, ...).
 */
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
/*
 * A result that must be looked at (kmod's _must_check_): every function that reports failure
 * through a struct err. gcc warns even through a (void) cast, so a result dropped on purpose
 * is tested and the reason written beside it.
 */
#define _must_check_ __attribute__((warn_unused_result))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp_ = (p);                                                          \
		(p) = NULL;                                                                        \
		_tp_;                                                                              \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _tfd_ = (fd);                                                                  \
		(fd) = -1;                                                                         \
		_tfd_;                                                                             \
	})

/* Declares name##p(type **), calling func on a non-NULL pointer. */
#define DEFINE_POINTER_CLEANUP(type, func)                                                         \
	static inline void func##p(type **p)                                                       \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
