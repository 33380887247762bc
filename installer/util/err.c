// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"
#include "util/str.h"

void err_clear(struct err *e)
{
	e->code = EXIT_OK;
	e->sys_errno = 0;
	e->msg[0] = '\0';
	e->hint[0] = '\0';
}

bool err_is_set(const struct err *e)
{
	return e->msg[0] != '\0';
}

_printf_(3, 0) static void err_vset(struct err *e, int code, const char *fmt, va_list ap)
{
	e->code = code;
	e->sys_errno = 0;
	e->hint[0] = '\0';
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

static void err_append(struct err *e, const char *reason)
{
	size_t len = strlen(e->msg);

	if (reason && *reason)
		snprintf(e->msg + len, sizeof(e->msg) - len, ": %s", reason);
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

int err_errno(struct err *e, int code, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	e->sys_errno = errnum;
	err_append(e, strerror(errnum));
	/*
	 * A host the installer cannot write (a read-only root mount, a run without root) is
	 * the deployment's to fix, not a bug: exit 2, with what to change.
	 */
	if (code == EXIT_UNEXPECTED && (errnum == EROFS || errnum == EACCES)) {
		e->code = EXIT_USAGE;
		err_hint(
			e,
			errnum == EROFS
				? "mount the host's / read-write at --root (the DaemonSet's hostPath volume, not readOnly)"
				: "run the installer as root (a privileged init container, as the DaemonSet does)");
	}
	if (errnum == ENOSPC || errnum == EDQUOT)
		err_hint(
			e,
			"a file system is full: free space on the one holding the file named (the install dir or the cache dir), or move --install-dir / --cache-dir");
	return -1;
}

int err_openssl(struct err *e, int code, const char *fmt, ...)
{
	char reason[256] = "";
	unsigned long l;
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	/* The first entry is the innermost cause; later ones are callers' echoes. */
	l = ERR_get_error();
	if (l != 0)
		ERR_error_string_n(l, reason, sizeof(reason));
	ERR_clear_error();
	err_append(e, reason);
	return -1;
}

int err_vset_reason(struct err *e, int code, int sys_errno, const char *reason, const char *fmt,
		    va_list ap)
{
	err_vset(e, code, fmt, ap);
	e->sys_errno = sys_errno;
	err_append(e, reason);
	return -1;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	char prefix[512], old[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	str_fmt_cut(e->msg, sizeof(e->msg), "%s: %s", prefix, old);
	if (e->code == EXIT_OK)
		e->code = EXIT_UNEXPECTED;
	return -1;
}

void err_hint(struct err *e, const char *fmt, ...)
{
	va_list ap;

	if (e->hint[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(e->hint, sizeof(e->hint), fmt, ap);
	va_end(ap);
}
