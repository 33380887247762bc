/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json-c as the installer uses it: the library, json_object_putp for
 * _cleanup_(json_object_putp), which drops the reference a variable holds when it goes out
 * of scope (json_object_put on a non-NULL pointer), and the lookups that read a document
 * the API server sent, where any member may be absent or of another type.
 */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

#include "util/cleanup.h"

DEFINE_POINTER_CLEANUP(json_object, json_object_put)

/* O's member KEY; NULL when O is NULL or has none, so that lookups chain. */
static inline json_object *jsonc_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* O's member KEY when it is a string, else NULL. */
static inline const char *jsonc_str(json_object *o, const char *key)
{
	json_object *v = jsonc_get(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The length of A when it is an array, else 0 (absent, or not what the API server sends). */
static inline size_t jsonc_array_len(json_object *a)
{
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}
