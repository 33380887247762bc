/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Formatting into fixed buffers without silent cuts. A name, a path or a URL
 * that does not fit is an error the caller reports (str_fmt, checked); text
 * shown to a person may be cut, and then says so (str_fmt_cut ends in "...").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"

/*
 * snprintf into BUF of SIZE bytes. Returns 0, or -1 when the text would not fit (BUF then
 * holds the cut text, which the caller must not use as a name).
 */
_must_check_ int str_fmt(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* snprintf for text shown to a person: what does not fit is cut and replaced by "...". */
void str_fmt_cut(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* The time now, UTC, as the files and documents we write give it: "2026-12-01T14:38:59Z". */
#define STR_UTC_SIZE 32
void str_utc_now(char buf[STR_UTC_SIZE]);

/*
 * The length of the well-formed UTF-8 sequence at S (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), 1 for an ASCII byte, or 0 when S does not start one
 * (a NUL is not looked past: S[0] == 0 is a 1-byte sequence).
 */
size_t str_utf8_len(const char *s);
/* Whether all of S is well-formed UTF-8 (str_utf8_len). */
bool str_is_utf8(const char *s);
/* Frees S (may be NULL) after zeroing it: a password or token not left in freed memory. */
void str_free_wiped(char *s);

/* A growable list of owned strings, NULL-terminated once it has one. */
struct strv {
	char **v;
	size_t n;
};

/* Appends a copy of VALUE. Returns 0, or -ENOMEM (the list keeps what it had). */
_must_check_ int strv_push(struct strv *s, const char *value);
/* Pushes each non-empty element of LIST, separated by commas or white space. */
_must_check_ int strv_push_split(struct strv *s, const char *list);
void strv_clear(struct strv *s);

/* A growable buffer of bytes, kept NUL-terminated once it has some; the caller frees BUF. */
struct strbuf {
	char *buf;
	size_t len, cap;
};

/*
 * Appends N bytes of DATA, the buffer holding MAX bytes at most. Returns 0, -EFBIG when
 * they would not fit under MAX, or -ENOMEM; either way the buffer keeps what it had.
 */
_must_check_ int strbuf_append(struct strbuf *b, const void *data, size_t n, size_t max);
