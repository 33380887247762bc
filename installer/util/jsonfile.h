/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one form of the JSON files the installer writes on the host (a version's
 * manifest, the pending upgrade record, the CDI spec): indented, a space after each
 * colon, slashes unescaped (paths stay greppable). Tests and golden files compare these
 * texts byte for byte, so they come from here only.
 */
#pragma once

#include <json-c/json.h>

/* O in that form, without a trailing newline. Returns a malloc'd string, or NULL (ENOMEM). */
char *jsonfile_text(json_object *o);
