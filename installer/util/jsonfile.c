// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "util/jsonfile.h"

char *jsonfile_text(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSONFILE_FORMAT);

	return s ? strdup(s) : NULL;
}
