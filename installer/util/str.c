// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

size_t str_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		unsigned char lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		unsigned char lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80
			       ? 4
			       : 0;
	}
	return 0;
}

void str_free_wiped(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

bool str_is_utf8(const char *s)
{
	for (size_t n; *s; s += n) {
		if ((n = str_utf8_len(s)) == 0)
			return false;
	}
	return true;
}

int strv_push(struct strv *s, const char *value)
{
	char **v = reallocarray(s->v, s->n + 2, sizeof(char *));

	if (!v)
		return -ENOMEM;
	s->v = v;
	if (!(v[s->n] = strdup(value)))
		return -ENOMEM;
	v[++s->n] = NULL;
	return 0;
}

int strv_push_split(struct strv *s, const char *list)
{
	_cleanup_free_ char *copy = strdup(list);
	char *tok, *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
		if (strv_push(s, tok) < 0)
			return -ENOMEM;
	}
	return 0;
}

void strv_clear(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int strbuf_append(struct strbuf *b, const void *data, size_t n, size_t max)
{
	if (n > max || b->len > max - n)
		return -EFBIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 16384;
		char *nb;

		while (cap < b->len + n + 1)
			cap *= 2;
		nb = realloc(b->buf, cap);
		if (!nb)
			return -ENOMEM;
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

void str_utc_now(char buf[STR_UTC_SIZE])
{
	time_t t = time(NULL);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(buf, STR_UTC_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		buf[0] = '\0';
}
