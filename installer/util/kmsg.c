// SPDX-License-Identifier: Apache-2.0
#include "util/kmsg.h"

#include <ctype.h>
#include <stdbool.h>

/* The largest PRIORITY a record shows: an 8-bit facility and a 3-bit level. */
#define PRIO_MAX 2047ul

/* Skips the digits at *I; false when there are none, or none followed by a comma. */
static bool number_then_comma(const char *rec, size_t len, size_t *i, unsigned long *ret)
{
	size_t start = *i;
	unsigned long v = 0;

	/* Past any priority the value no longer matters: it stops growing there. */
	for (; *i < len && isdigit((unsigned char)rec[*i]); (*i)++)
		if (v <= PRIO_MAX * 10)
			v = v * 10 + (unsigned long)(rec[*i] - '0');
	if (*i == start || *i >= len || rec[*i] != ',')
		return false;
	(*i)++;
	*ret = v;
	return true;
}

int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *ret)
{
	unsigned long prio, seq, usec;
	size_t i = 0;

	if (!number_then_comma(rec, len, &i, &prio) || prio > PRIO_MAX ||
	    !number_then_comma(rec, len, &i, &seq) || !number_then_comma(rec, len, &i, &usec))
		return -1;
	/* FLAGS, and the fields a later kernel may add before the ';'. */
	while (i < len && rec[i] != ';' && rec[i] != '\n')
		i++;
	if (i >= len || rec[i] != ';')
		return -1;
	i++;
	*ret = (struct kmsg_record){.facility = (unsigned)(prio >> 3),
				    .level = (unsigned)(prio & 7),
				    .msg = rec + i,
				    .msg_len = len - i};
	return 0;
}
