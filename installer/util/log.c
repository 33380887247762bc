// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/out.h"
#include "util/str.h"

static enum log_format log_format = LOG_FORMAT_TEXT;
static enum log_level log_max = LOG_INFO;

static const char *const level_names[] = {
	[LOG_ERROR] = "error",
	[LOG_WARN] = "warn",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

static const char *const level_tags[] = {
	[LOG_ERROR] = "ERROR",
	[LOG_WARN] = "WARN ",
	[LOG_INFO] = "INFO ",
	[LOG_DEBUG] = "DEBUG",
};

void log_setup(enum log_format format, enum log_level max_level)
{
	log_format = format;
	log_max = max_level;
}

bool log_enabled(enum log_level level)
{
	return level <= log_max;
}

enum log_format log_get_format(void)
{
	return log_format;
}

char *fmt_u64(char *buf, uint64_t v)
{
	sprintf(buf, "%llu", (unsigned long long)v);
	return buf;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ms_since(uint64_t t0_ns)
{
	return (now_ns() - t0_ns) / 1000000u;
}

uint64_t us_since(uint64_t t0_ns)
{
	uint64_t us = (now_ns() - t0_ns + 999u) / 1000u;

	return us ? us : 1;
}

uint64_t peak_rss_kib(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long kib;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
			return kib;
	return 0;
}

/* S as a JSON string: quotes, backslashes and control characters escaped, bytes that are
 * not UTF-8 replaced by U+FFFD (a log pipeline rejects the line otherwise). */
static void json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		size_t n = str_utf8_len((const char *)p);

		if (n == 0) {
			fputs("\\ufffd", f);
			p++;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p++);
		} else if (*p == '\n') {
			fputs("\\n", f);
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
	fputc('"', f);
}

/* A key of log_kv() marked a number (U64): written without the mark. */
static bool key_is_number(const char **k)
{
	if (strncmp(*k, LOG_NUMBER_MARK, sizeof(LOG_NUMBER_MARK) - 1) != 0)
		return false;
	*k += sizeof(LOG_NUMBER_MARK) - 1;
	return true;
}

/* Decimal digits only, as U64 makes them: what may go out bare. */
static bool is_decimal(const char *v)
{
	if (!*v)
		return false;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

/*
 * One record, one write(2): lines from processes sharing a pipe (a node's log collector,
 * many installers under test) never interleave mid-line.
 */
static void write_record(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void log_emit(enum log_level level, const char *stage, const char *msg, va_list kv)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *k, *v;

	if (!f)
		return;
	if (log_format == LOG_FORMAT_JSON) {
		struct timespec ts;
		struct tm tm;
		char tbuf[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(f, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"stage\":", tbuf,
			ts.tv_nsec / 1000000, level_names[level]);
		json_string(f, stage);
		fputs(",\"msg\":", f);
		json_string(f, msg);
		while ((k = va_arg(kv, const char *)) && (v = va_arg(kv, const char *))) {
			bool number = key_is_number(&k);

			fputc(',', f);
			json_string(f, k);
			fputc(':', f);
			if (number && is_decimal(v))
				fputs(v, f);
			else
				json_string(f, v);
		}
		fputs("}\n", f);
	} else {
		bool first = true;

		fprintf(f, "%s %s: ", level_tags[level], stage);
		out_text(f, msg);
		while ((k = va_arg(kv, const char *)) && (v = va_arg(kv, const char *))) {
			fputs(first ? " (" : " ", f);
			first = false;
			key_is_number(&k);
			fprintf(f, "%s=", k);
			out_text(f, v);
		}
		fputs(first ? "\n" : ")\n", f);
	}
	if (fclose(f) == 0)
		write_record(buf, len);
	free(buf);
}

static void log_emit_kv(enum log_level level, const char *stage, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_emit(level, stage, msg, ap);
	va_end(ap);
}

void log_msg(enum log_level level, const char *stage, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_emit_kv(level, stage, msg, LOG_END);
}

void log_kv(enum log_level level, const char *stage, const char *msg, ...)
{
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, msg);
	log_emit(level, stage, msg, ap);
	va_end(ap);
}
