// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "util/jsonfile.h"
#include "util/str.h"

/*
 * json-c passes bytes of 0x80 and above through as they are, so a string that is not UTF-8
 * (a module argument, a path, a host file's text) would make the whole document invalid.
 * Outside strings the text is ASCII: each ill-formed byte is inside one, and becomes the
 * escape of U+FFFD there, as in the JSON log lines.
 */
static char *utf8_only(const char *s)
{
	size_t bad = 0;
	char *out, *o;

	for (const char *p = s; *p;) {
		size_t n = str_utf8_len(p);

		bad += n == 0;
		p += n ? n : 1;
	}
	if (bad == 0)
		return strdup(s);
	out = o = malloc(strlen(s) + bad * 5 + 1);
	if (!out)
		return NULL;
	for (const char *p = s; *p;) {
		size_t n = str_utf8_len(p);

		if (n == 0) {
			memcpy(o, "\\ufffd", 6);
			o += 6, p++;
		} else {
			memcpy(o, p, n);
			o += n, p += n;
		}
	}
	*o = '\0';
	return out;
}

char *jsonfile_text(json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSONFILE_FORMAT);

	return s ? utf8_only(s) : NULL;
}
