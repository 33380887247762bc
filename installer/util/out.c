// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/out.h"
#include "util/str.h"

void out_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = str_utf8_len((const char *)p);
		/* U+0080..U+009F are C1 controls: xterm obeys CSI (U+009B) as it obeys ESC [. */
		bool is_control = n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f)) ||
				  (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);

		if (is_control)
			fputc('?', f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
	}
}

_printf_(2, 0) static void out_vprint(FILE *f, const char *fmt, va_list ap)
{
	_cleanup_free_ char *text = NULL;

	if (vasprintf(&text, fmt, ap) < 0) {
		text = NULL;
		fputs("(out of memory)", f);
		return;
	}
	out_text(f, text);
}

void out_line(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_vprint(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

void out_part(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_vprint(f, fmt, ap);
	va_end(ap);
}
