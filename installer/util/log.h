/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One line per event on stderr:
 *   text: "INFO  fetch: package downloaded (bytes=1234 duration_ms=56)"
 *   json: {"ts":"...","level":"info","stage":"fetch","msg":"package downloaded","bytes":1234,...}
 * Key/value pairs are passed as strings, and a value is a JSON string whatever it
 * looks like ("550.90", "nan", "1e5" stay strings). The caller types a number:
 * U64("bytes", n) is the pair, written as a JSON number. Every line is valid JSON:
 * control characters are escaped and bytes that are not UTF-8 become U+FFFD. A text
 * line shows each control character and each byte that is not UTF-8 as '?' (out_text).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/cleanup.h"

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

void log_setup(enum log_format format, enum log_level max_level);
bool log_enabled(enum log_level level);
enum log_format log_get_format(void);

/* A message without fields. */
void log_msg(enum log_level level, const char *stage, const char *fmt, ...) _printf_(3, 4);
/* Ends the key/value list of log_kv(): a typed null pointer, as varargs need. */
#define LOG_END ((const char *)NULL)

/* A message followed by key, value pairs (strings, or U64 numbers), ended by LOG_END. */
void log_kv(enum log_level level, const char *stage, const char *msg, ...)
	__attribute__((sentinel));

/* Formats V in decimal into BUF (at least 21 bytes); returns BUF. */
char *fmt_u64(char *buf, uint64_t v);
/*
 * A number field of log_kv(): KEY (a string literal) and V, two arguments. The key
 * carries the type (LOG_NUMBER_MARK, never printed), so no value's shape decides it;
 * the decimal string is valid until the end of the enclosing block.
 */
#define LOG_NUMBER_MARK "\x01"
#define U64(key, v) LOG_NUMBER_MARK key, fmt_u64((char[24]){0}, (uint64_t)(v))

/*
 * Monotonic clock in nanoseconds, and milliseconds or microseconds elapsed since t0. The
 * microseconds are rounded up, at least 1: a step that ran (the select stage over a small
 * index, well under a microsecond) never reads as one that did not.
 */
uint64_t now_ns(void);
uint64_t ms_since(uint64_t t0_ns);
uint64_t us_since(uint64_t t0_ns);
/* This process's peak resident memory (VmHWM, KiB: what it touched, not its parent's
 * before exec), or 0 when /proc does not say. */
uint64_t peak_rss_kib(void);
