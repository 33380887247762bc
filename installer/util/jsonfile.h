/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one form of the JSON files the installer writes on the host (a version's
 * manifest, the pending upgrade record, the CDI spec) and of the commands' --json
 * documents: indented, a space after each colon, slashes unescaped (paths stay
 * greppable). Tests and golden files compare these texts byte for byte, so they come from
 * here only.
 */
#pragma once

#include <json-c/json.h>

/* json-c's flags for that form (the commands' --json documents are printed in it too). */
#define JSONFILE_FORMAT                                                                            \
	(JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/*
 * O in that form, without a trailing newline, and always UTF-8: a byte of a string that is
 * not is written as the escape of U+FFFD (the JSON log lines do the same). Returns a
 * malloc'd string, or NULL (ENOMEM).
 */
char *jsonfile_text(json_object *o);
