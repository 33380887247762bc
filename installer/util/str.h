/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Formatting into fixed buffers without silent cuts. A name, a path or a URL
 * that does not fit is an error the caller reports (str_fmt, checked); text
 * shown to a person may be cut, and then says so (str_fmt_cut ends in "...").
 */
#pragma once

#include <stddef.h>

#include "util/cleanup.h"

/*
 * snprintf into BUF of SIZE bytes. Returns 0, or -1 when the text would not fit (BUF then
 * holds the cut text, which the caller must not use as a name).
 */
_must_check_ int str_fmt(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

/* snprintf for text shown to a person: what does not fit is cut and replaced by "...". */
void str_fmt_cut(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
