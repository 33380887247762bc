// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "util/jsonfile.h"

char *jsonfile_text(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_SPACED |
								  JSON_C_TO_STRING_NOSLASHESCAPE);

	return s ? strdup(s) : NULL;
}
