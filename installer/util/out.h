/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text for a person at a terminal: the text forms of the commands (status, install
 * --dry-run, doctor, list-versions, coverage, verify-module), the final error line and
 * the text log. What they show comes from the host (a process's name, which any workload
 * sets; os-release; file names) and from the repository, and reaches the terminal as it
 * is unless it goes through here: each control character (C0, DEL, C1) and each byte that
 * is not UTF-8 is shown as '?', so no escape sequence in a value drives the terminal and
 * no newline in one makes a line of its own. The format is the program's and is trusted;
 * out_line() ends the line itself.
 */
#pragma once

#include <stdio.h>

#include "util/cleanup.h"

/* Writes S to F, neutralised as above. */
void out_text(FILE *f, const char *s);

/* One line: FMT with its arguments, neutralised, then "\n". FMT holds no newline. */
void out_line(FILE *f, const char *fmt, ...) _printf_(2, 3);

/* Part of a line, neutralised the same way; a later out_line() ends it. */
void out_part(FILE *f, const char *fmt, ...) _printf_(2, 3);
