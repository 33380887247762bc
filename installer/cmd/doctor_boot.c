// SPDX-License-Identifier: Apache-2.0
/*
 * doctor's newest installed kernel check: a self-managed host that installed a kernel
 * newer than its boot loader default's (host_boot_next) boots it once a kernel update or
 * grub-mkconfig makes it the default; the next boot check covers the default entry itself.
 */
#include <string.h>

#include "agent/agent.h"
#include "cmd/doctor_checks.h"
#include "host/host.h"
#include "util/err.h"
#include "util/str.h"

void doctor_check_newest_kernel(struct doctor *d, const struct nodestate *s,
				const struct host_boot *b, const char *why)
{
	char fix[sizeof(d->checks[0].fix)];

	if (!b->newest_after_next || strcmp(b->newest, s->host.kernel) == 0)
		return;
	str_fmt_cut(
		fix, sizeof(fix),
		"build a package for kernel %s before the host boots it (a supply pass, or build-driver-package --kernel %s: " DOC_DIR
		"/building-packages.md), or remove kernel %s if the host is not to boot it",
		b->newest, b->newest, b->newest);
	doctor_add(d, V_WARN, "newest kernel", fix,
		   "kernel %s is installed and newer than the default entry's kernel %s, and %s",
		   b->newest, b->next, why);
}
