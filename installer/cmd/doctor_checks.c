// SPDX-License-Identifier: Apache-2.0
/* doctor's check list: a line set or added (cmd/doctor_checks.h). */
#include <stdarg.h>
#include <stdio.h>

#include "agent/agent.h"
#include "cmd/config.h"
#include "cmd/doctor_checks.h"
#include "stage/stage.h"

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

int doctor_installed_subdir(int root_fd, const struct config *c, const struct nodestate *s,
			    const char *sub)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct err e;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0 || !dir)
		return -1;
	return publish_version_subdir(dir, s->install_id, sub, &e);
}
