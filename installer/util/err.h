/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one error type. A failing function fills a caller-owned struct err at
 * the failing call (operation, path in quotes, errno or library reason) and
 * returns a negative value; each stage above it prefixes its context with
 * err_wrap(). main() prints the result once and exits with err.code.
 *
 * The system cause travels inside the error (sys_errno, read with err_errnum()):
 * a caller that branches on it (a missing directory is not a failure) asks the
 * error, never the global errno, which any cleanup on the way back may change.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>

#include "util/cleanup.h"

/*
 * Where the image (Dockerfile) and `make install` put the reference documents that messages
 * and --help name (exit-codes.md, configuration.md, json.md, repository-format.md): a
 * message names DOC_DIR "/NAME.md", never a path of the source tree, which nodes lack.
 */
#ifndef INSTALLER_DOC_DIR
#define INSTALLER_DOC_DIR "/usr/share/doc/nvidia-driver-installer"
#endif
#define DOC_DIR INSTALLER_DOC_DIR

/* Documented in docs/exit-codes.md (DOC_DIR/exit-codes.md); stable. */
enum exit_code {
	EXIT_OK = 0,
	EXIT_UNEXPECTED = 1,	 /* a bug or an environment we did not foresee */
	EXIT_USAGE = 2,		 /* bad command line or configuration */
	EXIT_NO_MATCH = 3,	 /* no driver or package matches this host */
	EXIT_UNREACHABLE = 4,	 /* repository unreachable after retries */
	EXIT_VERIFY = 5,	 /* signature, size, digest or archive policy */
	EXIT_KERNEL_REFUSED = 6, /* the kernel refused, or cannot accept, a module */
	EXIT_IN_USE = 7,	 /* the loaded driver is in use */
	EXIT_DRIVER_CHECK = 8, /* the installed driver does not answer as it should (NVML, CUDA) */
	EXIT_UNHEALTHY = 9,    /* doctor: a check failed */
	EXIT_RESET_REQUIRED = 10, /* a GPU's MIG mode waits for a GPU reset or a reboot */
};

#define ERR_MSG_MAX 2048
#define ERR_HINT_MAX 512

struct err {
	int code;
	int sys_errno; /* the errno behind the failure, 0 when it has none */
	char msg[ERR_MSG_MAX];
	char hint[ERR_HINT_MAX]; /* what the user can do about it; may be empty */
};

struct archive;

void err_clear(struct err *e);
bool err_is_set(const struct err *e);
/*
 * The errno that caused the error: err_errno's ERRNUM, libmount's syscall errno, libarchive's
 * errno; 0 for causes that are not system errors (a digest mismatch, a bad index, curl).
 */
static inline int err_errnum(const struct err *e)
{
	return e->sys_errno;
}

/* All setters return -1 so that `return err_set(...)` reads naturally; each sets sys_errno. */
int err_set(struct err *e, int code, const char *fmt, ...) _printf_(3, 4);
/* Appends ": strerror(errnum)"; err_errnum() then returns ERRNUM. */
int err_errno(struct err *e, int code, int errnum, const char *fmt, ...) _printf_(4, 5);
/* Appends the first (most specific) reason from OpenSSL's error queue, then drains it. */
int err_openssl(struct err *e, int code, const char *fmt, ...) _printf_(3, 4);
/*
 * For the setters of a loaded library (util/dlib.h, dlib_err_*): the message from FMT, then
 * ": REASON" when REASON is not empty; carries SYS_ERRNO.
 */
int err_vset_reason(struct err *e, int code, int sys_errno, const char *reason, const char *fmt,
		    va_list ap) _printf_(5, 0);

/* Prefixes "context: " to the message; keeps code, hint and errno. Returns -1. */
int err_wrap(struct err *e, const char *fmt, ...) _printf_(2, 3);
/* Sets the hint unless a deeper layer already gave one. */
void err_hint(struct err *e, const char *fmt, ...) _printf_(2, 3);
