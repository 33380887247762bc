// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/dlib.h"
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

int err_curl(struct err *e, int code, int curl_rc, const char *errbuf, const char *fmt, ...)
{
	char reason[CURL_ERROR_SIZE + 64];
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	if (errbuf && *errbuf)
		snprintf(reason, sizeof(reason), "%s", errbuf);
	else
		snprintf(reason, sizeof(reason), "%s", sym_curl_easy_strerror((CURLcode)curl_rc));
	/* curl's buffer often ends with a newline; keep messages on one line. */
	reason[strcspn(reason, "\r\n")] = '\0';
	err_append(e, reason);
	return -1;
}

int err_libmount(struct err *e, int code, struct libmnt_context *cxt, int rc, const char *fmt, ...)
{
	char reason[512] = "";
	int sys = sym_mnt_context_get_syscall_errno(cxt);
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	if (!sys && rc < 0 && rc > -4096)
		sys = -rc;
	e->sys_errno = sys;
	if (sym_mnt_context_get_excode(cxt, rc, reason, sizeof(reason)) == 0 || !reason[0])
		snprintf(reason, sizeof(reason), "%s", strerror(sys ? sys : EIO));
	err_append(e, reason);
	return -1;
}

int err_archive(struct err *e, int code, struct archive *a, const char *fmt, ...)
{
	const char *reason = a ? sym_archive_error_string(a) : NULL;
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	e->sys_errno = a ? sym_archive_errno(a) : 0;
	if (e->sys_errno < 0)
		e->sys_errno = 0; /* ARCHIVE_ERRNO_MISC and friends are not system errors */
	err_append(e, reason ? reason : "unknown archive error");
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
