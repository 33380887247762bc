/* SPDX-License-Identifier: Apache-2.0 */
/* The wait's record (stage/waiting.c): its parsers, for the unit tests. */
#pragma once

#include "stage/stage.h"

/* Parses the record's text BUF into *RET (untouched unless 0). 0 or -1 (EXIT_UNEXPECTED). */
_must_check_ int waiting_parse(const char *buf, struct waiting *ret, struct err *e);
