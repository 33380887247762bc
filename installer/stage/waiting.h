/* SPDX-License-Identifier: Apache-2.0 */
/* The wait's record (stage/waiting.c): its parsers, for the unit tests. */
#pragma once

#include "stage/stage.h"

/* "2026-12-06T18:00:00Z" into *RET; 0, or -1 when S is not that form. */
int waiting_time_parse(const char *s, int64_t *ret);
/* Parses the record's text BUF into *RET (untouched unless 0). 0 or -1 (EXIT_UNEXPECTED). */
_must_check_ int waiting_parse(const char *buf, struct waiting *ret, struct err *e);
