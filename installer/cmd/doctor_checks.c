// SPDX-License-Identifier: Apache-2.0
/* doctor's check list: a line set or added (cmd/doctor_checks.h). */
#include <stdarg.h>
#include <stdio.h>

#include "cmd/doctor_checks.h"

_printf_(5, 0) static void set_va(struct check *c, enum verdict v, const char *name,
				  const char *fix, const char *fmt, va_list ap)
{
	c->v = v;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->fix, sizeof(c->fix), "%s", v == V_OK || v == V_SKIP || !fix ? "" : fix);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
}

void doctor_set(struct check *c, enum verdict v, const char *name, const char *fix, const char *fmt,
		...)
{
	va_list ap;

	va_start(ap, fmt);
	set_va(c, v, name, fix, fmt, ap);
	va_end(ap);
}

void doctor_add(struct doctor *d, enum verdict v, const char *name, const char *fix,
		const char *fmt, ...)
{
	va_list ap;

	if (d->n == MAX_CHECKS)
		return;
	va_start(ap, fmt);
	set_va(&d->checks[d->n++], v, name, fix, fmt, ap);
	va_end(ap);
}
