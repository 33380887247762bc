// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>

#include "source/version.h"

/* Parses up to VERSION_MAX_COMPONENTS numbers; returns the count, or -1 if invalid. */
static int version_parse(const char *s, unsigned long out[VERSION_MAX_COMPONENTS])
{
	int n = 0;

	if (!s)
		return -1;
	for (;;) {
		unsigned long v = 0;
		int digits = 0;

		while (*s >= '0' && *s <= '9') {
			if (++digits > 9)
				return -1;
			v = v * 10 + (unsigned long)(*s++ - '0');
		}
		if (digits == 0 || n == VERSION_MAX_COMPONENTS)
			return -1;
		out[n++] = v;
		if (*s == '\0')
			return n;
		if (*s++ != '.')
			return -1;
	}
}

bool version_is_valid(const char *s)
{
	unsigned long c[VERSION_MAX_COMPONENTS];

	return version_parse(s, c) > 0;
}

int version_compare(const char *a, const char *b)
{
	unsigned long ca[VERSION_MAX_COMPONENTS], cb[VERSION_MAX_COMPONENTS];
	int na = version_parse(a, ca), nb = version_parse(b, cb);

	for (int i = 0; i < na && i < nb; i++) {
		if (ca[i] != cb[i])
			return ca[i] < cb[i] ? -1 : 1;
	}
	return (na > nb) - (na < nb);
}

bool version_matches(const char *spec, const char *version)
{
	unsigned long cs[VERSION_MAX_COMPONENTS], cv[VERSION_MAX_COMPONENTS];
	int ns = version_parse(spec, cs), nv = version_parse(version, cv);

	if (ns < 0 || nv < 0 || ns > nv)
		return false;
	for (int i = 0; i < ns; i++) {
		if (cs[i] != cv[i])
			return false;
	}
	return true;
}
