// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/str.h"

_printf_(3, 0) static int str_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size, fmt, ap);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int str_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = str_vfmt(buf, size, fmt, ap);
	va_end(ap);
	return r;
}

void str_fmt_cut(char *buf, size_t size, const char *fmt, ...)
{
	static const char mark[] = "...";
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = str_vfmt(buf, size, fmt, ap);
	va_end(ap);
	if (r < 0 && size >= sizeof(mark))
		memcpy(buf + size - sizeof(mark), mark, sizeof(mark));
}
